"""The learned ranker: its features, the shipped weights and the fit that produced them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from codebase_index.ranking import Candidate, parse_query
from codebase_index.ranking.fit import fit, load_table, mrr_by_style
from codebase_index.ranking.learned import (
    FEATURES,
    WEIGHTS_FILE,
    Evidence,
    LinearModel,
    feature_matrix,
    file_aggregates,
    load_model,
    rank_learned,
)

TABLE = Path(__file__).parent / "fixtures" / "ranker" / "table.npz"


@pytest.fixture(scope="module")
def table() -> dict[str, np.ndarray]:
    return load_table(TABLE)


@pytest.fixture(scope="module")
def fitted(table: dict[str, np.ndarray]) -> LinearModel:
    return fit(table)


def test_the_shipped_weights_are_what_the_training_script_fits_on_its_table(fitted: LinearModel) -> None:
    # `make train-ranker EXTRACT=0` rewrites weights.json from this table (bench/train_ranker.py fit);
    # the fit is deterministic, so the shipped file must be what it produces.
    fitted_json = fitted.to_json()
    shipped = json.loads(WEIGHTS_FILE.read_text())
    assert shipped["features"] == list(FEATURES) == fitted_json["features"]
    np.testing.assert_allclose(shipped["weights"], fitted_json["weights"], atol=2e-6)
    assert shipped["bias"] == pytest.approx(fitted_json["bias"], abs=2e-6)


def test_the_fit_learns_the_table_better_than_no_model(
    table: dict[str, np.ndarray], fitted: LinearModel
) -> None:
    by_model = mrr_by_style(table, fitted.scores(table["x"].astype(np.float64)))
    # Candidates in fused order (no model): the first stage alone.
    first_stage = mrr_by_style(table, -np.arange(len(table["qid"]), dtype=np.float64))
    assert by_model["ALL"] > first_stage["ALL"] + 0.05
    # And better than the hand-set scorer on the same candidates (on its own training table: what the
    # model is worth on unseen repositories is bench/validate.py's to say).
    rules = mrr_by_style(table, -table["rules_rank"].astype(np.float64))
    assert by_model["ALL"] > rules["ALL"]


def test_features_read_each_retriever_and_the_query_style() -> None:
    cands = [
        Candidate(1, "src/router.py", "Router", "class", 2.0),
        Candidate(2, "tests/test_router.py", "test_router", "function", 1.0),
        Candidate(3, "src/router.py", "Router.add", "method", 0.5),
    ]
    evidence = Evidence({1: (10.0, 0), 2: (5.0, 1)}, {2: (0.8, 0), 3: (0.6, 1)}, frozenset({3}))
    x = feature_matrix(cands, parse_query("Router"), evidence)
    col = {name: i for i, name in enumerate(FEATURES)}
    assert x[:, col["kw"]].tolist() == [1.0, 0.5, 0.0]
    assert x[:, col["sem"]].tolist() == pytest.approx([0.0, 0.8, 0.6])
    assert x[:, col["both"]].tolist() == [0.0, 1.0, 0.0]
    assert x[:, col["definition"]].tolist() == [1.0, 0.0, 0.7]
    assert x[:, col["test"]].tolist() == [0.0, 1.0, 0.0]
    assert x[:, col["relation"]].tolist() == [0.0, 0.0, 1.0]
    assert x[:, col["file_best"]].tolist() == [1.0, 1.0, 0.0]
    # Whole-file evidence: router.py's best keyword score is its class's, its best cosine its method's;
    # router.py leads the files by keyword and by fused score, the test file by cosine.
    assert x[:, col["file_kw"]].tolist() == [1.0, 0.5, 1.0]
    assert x[:, col["file_sem"]].tolist() == pytest.approx([0.6, 0.8, 0.6])
    assert x[:, col["file_kw_rr"]].tolist() == [1.0, 0.5, 1.0]
    assert x[:, col["file_sem_rr"]].tolist() == [0.5, 1.0, 0.5]
    assert x[:, col["file_fused_rr"]].tolist() == [1.0, 0.5, 1.0]
    assert x[:, col["file_count"]].tolist() == pytest.approx([np.log(3), np.log(2), np.log(3)])
    assert (x[:, col["style_identifier"]] == 1.0).all() and (x[:, col["style_description"]] == 0.0).all()
    # Crossed features repeat a signal in the query style's own block only.
    assert x[:, col["definition*identifier"]].tolist() == [1.0, 0.0, 0.7]
    assert not x[:, col["definition*description"]].any()


def test_file_aggregates_group_by_query_and_file() -> None:
    # Two queries, each with a file 0 and a file 1: the groups never mix across queries, and a file
    # without a vector candidate has no cosine rank.
    x = np.zeros((5, len(FEATURES)))
    kw, sem = FEATURES.index("kw"), FEATURES.index("sem")
    x[:, kw] = [0.2, 0.9, 0.4, 1.0, 0.3]
    x[:, sem] = [0.5, 0.0, 0.0, 0.0, 0.7]
    file_aggregates(x, np.array([0, 1, 0, 0, 1]), np.array([0, 0, 0, 1, 1]))
    assert x[:, FEATURES.index("file_kw")].tolist() == [0.4, 0.9, 0.4, 1.0, 0.3]
    assert x[:, FEATURES.index("file_kw_rr")].tolist() == [0.5, 1.0, 0.5, 1.0, 0.5]
    assert x[:, FEATURES.index("file_sem_rr")].tolist() == [1.0, 0.0, 1.0, 0.0, 1.0]
    assert x[:, FEATURES.index("file_count")].tolist() == pytest.approx(np.log1p([2, 1, 2, 1, 1]))


def test_the_file_level_term_learns_which_file_when_the_chunk_term_cannot() -> None:
    # Each query: a target file (a target chunk + a sibling) and another file. "kw" ranks the target
    # chunk above its sibling but below the other file's chunk; "file_kw" (the file's evidence) marks
    # the target file. The chunk pairs alone are satisfied by either feature; the file pairs (each
    # file's best chunk) need the target file's best chunk above the other file's.
    rng = np.random.default_rng(0)
    rows = []
    for _ in range(200):
        a, b = sorted(rng.uniform(0.1, 1.0, 2))
        # (kw, file_kw, gain, file): the sibling outranks the target chunk by kw; the other file leads it
        rows += [(a, 0.6, 1.0, 0), (b, 0.6, 0.25, 0), (min(1.0, b + 0.1), 0.4, 0.0, 1)]
    n_q = len(rows) // 3
    x = np.zeros((len(rows), len(FEATURES)), dtype=np.float32)
    x[:, FEATURES.index("kw")] = [r[0] for r in rows]
    x[:, FEATURES.index("file_kw")] = [r[1] for r in rows]
    table = {
        "features": np.asarray(FEATURES),
        "x": x,
        "gain": np.array([r[2] for r in rows], dtype=np.float32),
        "qid": np.repeat(np.arange(n_q), 3),
        "file_id": np.array([r[3] for r in rows], dtype=np.int16),
        "style": np.zeros(n_q, dtype=np.int8),
    }
    chunk_only = fit(table, file_loss=0.0)
    with_files = fit(table, file_loss=1.0)
    fk = FEATURES.index("file_kw")
    assert with_files.weights[fk] > chunk_only.weights[fk]
    s = with_files.scores(x.astype(np.float64)).reshape(n_q, 3)
    # The target file's best chunk now leads the other file in every query.
    assert (s[:, :2].max(axis=1) > s[:, 2]).all()


def test_rank_learned_orders_by_the_model_and_diversifies() -> None:
    cands = [
        Candidate(1, "a.py", "", "text", 1.0),
        Candidate(2, "a.py", "", "text", 0.9),
        Candidate(3, "b.py", "", "text", 0.5),
    ]
    evidence = Evidence({1: (3.0, 0), 2: (2.7, 1), 3: (1.5, 2)}, {})
    only_kw = LinearModel(FEATURES, np.array([1.0 if n == "kw" else 0.0 for n in FEATURES]))
    # a.py's second chunk sinks below b.py's first once a.py has a result (repeat decay).
    assert [r.doc for r in rank_learned(cands, parse_query("x y"), evidence, model=only_kw)] == [1, 3, 2]


def test_weights_files_are_checked_against_the_feature_list(tmp_path: Path) -> None:
    bad = tmp_path / "w.json"
    bad.write_text(json.dumps({"features": ["kw", "no_such_feature"], "weights": [1.0, 2.0]}))
    with pytest.raises(ValueError, match="no_such_feature"):
        load_model(bad)
    short = tmp_path / "s.json"
    short.write_text(json.dumps({"features": ["kw"], "weights": [1.0, 2.0]}))
    with pytest.raises(ValueError, match="one weight per feature"):
        load_model(short)
    # A file naming fewer features (fitted before some existed) gives the others weight 0.
    old = tmp_path / "o.json"
    old.write_text(json.dumps({"features": ["kw"], "weights": [2.0], "bias": 0.5}))
    model = load_model(old)
    assert model.weights[FEATURES.index("kw")] == 2.0 and model.weights.sum() == 2.0 and model.bias == 0.5


def test_a_drawn_negative_weighs_as_many_head_rows_as_it_stands_for() -> None:
    # One relevant row and one negative per query; the negative beats it on "kw" and loses on "sem".
    # Weighted 1 the fit is free to lean on either; weighted 50 (a drawn row standing for 50 head
    # rows) the negative's pair dominates a second, easy negative, so "sem" must gain weight.
    n_q = 50
    x = np.zeros((3 * n_q, len(FEATURES)), dtype=np.float32)
    kw, sem = FEATURES.index("kw"), FEATURES.index("sem")
    x[0::3, kw], x[0::3, sem] = 0.5, 0.9  # relevant
    x[1::3, kw], x[1::3, sem] = 0.9, 0.1  # hard negative
    x[2::3, kw], x[2::3, sem] = 0.1, 0.5  # easy negative
    base = {
        "features": np.asarray(FEATURES),
        "x": x,
        "gain": np.tile(np.array([1.0, 0.0, 0.0], dtype=np.float32), n_q),
        "qid": np.repeat(np.arange(n_q), 3),
        "file_id": np.tile(np.arange(3, dtype=np.int16), n_q),
        "style": np.zeros(n_q, dtype=np.int8),
    }
    light = fit(base | {"weight": np.ones(3 * n_q, dtype=np.float32)}, steps=50)
    heavy = fit(base | {"weight": np.tile(np.array([1, 50, 1], dtype=np.float32), n_q)}, steps=50)
    assert heavy.weights[sem] - heavy.weights[kw] > light.weights[sem] - light.weights[kw]
