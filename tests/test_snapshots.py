"""Incremental keyword snapshots: an overlay (base + delta with tombstones) must rank like a full rebuild,
never return a tombstoned document, and keep hybrid search aligned. Real files, git, SQLite, and a real
HTTP embedding server on 127.0.0.1 for the hybrid case."""

from __future__ import annotations

import random
import subprocess
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from codebase_index.bm25 import Vocabulary
from codebase_index.search import DocRow, FieldWeights, Filters, KeywordSnapshot
from codebase_index.service import Engine
from codebase_index.tokens import tokenize
from provider_server import serve
from test_vectors import remote_config

NAMES = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()  # noqa: SIM905
WORDS = "parse config user session token cache http server retry payment route render file path".split()  # noqa: SIM905


def _rows(files: dict[str, list[str]], vocab: Vocabulary, first_id: int = 0) -> list[DocRow]:
    out: list[DocRow] = []
    cid = first_id
    for path in sorted(files):
        for ordinal, text in enumerate(files[path]):
            counts = Counter(tokenize(text))
            ids, tfs = vocab.encode_counts(counts)
            symbol = text.split()[0]
            out.append(
                DocRow(cid, path, "python", ordinal, ordinal * 10 + 1, ordinal * 10 + 9, "function", symbol,
                       sum(counts.values()), ids.tobytes(), tfs.tobytes())
            )  # fmt: skip
            cid += 1
    return out


def _corpus(rng: random.Random, n_files: int) -> dict[str, list[str]]:
    return {
        f"pkg/mod_{i}.py": [
            " ".join(rng.choices(WORDS, k=rng.randint(3, 12))) for _ in range(rng.randint(1, 4))
        ]
        for i in range(n_files)
    }


def _by_key(snap: KeywordSnapshot, scores: np.ndarray) -> dict[tuple[str, int], float]:
    return {
        (d.path, d.ordinal): float(scores[i])
        for i, d in enumerate(snap.docs)
        if snap.is_live(i) and scores[i] > 0
    }


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_overlay_scores_equal_a_full_rebuild_when_lengths_do_not_matter(seed: int) -> None:
    """With b=0 (no length normalisation) the overlay's IDF recomputation is exact, fields included."""
    rng = random.Random(seed)
    vocab = Vocabulary()
    before = _corpus(rng, 40)
    after = dict(before)
    changed = rng.sample(sorted(before), 6)
    for path in changed[:4]:
        after[path] = [" ".join(rng.choices(WORDS, k=6)) + " brandnew"]
    for path in changed[4:]:
        del after[path]
    after["pkg/added.py"] = ["token cache brandnew", "server route"]
    base = KeywordSnapshot(_rows(before, vocab), k1=1.2, b=0.0)
    delta_files = {p: after[p] for p in [*changed[:4], "pkg/added.py"]}
    overlay = base.overlay(changed, _rows(delta_files, vocab, first_id=10_000))
    full = KeywordSnapshot(_rows(after, vocab), k1=1.2, b=0.0)
    assert overlay.base is base and len(overlay) == len(full)
    weights = FieldWeights(path=1.0, symbol=1.0, file=0.0)
    for query in (["brandnew"], ["token", "cache"], ["mod_3", "parse"], ["added", "route"], WORDS[:5]):
        ids = [i for i in (vocab.get(t) for t in query) if i is not None]
        got = _by_key(overlay, overlay.enriched_scores(query, ids, weights))
        want = _by_key(full, full.enriched_scores(query, ids, weights))
        assert got.keys() == want.keys()
        for key, score in want.items():
            assert got[key] == pytest.approx(score, rel=1e-5), (query, key)


@pytest.mark.parametrize("seed", [1, 2])
def test_weighted_terms_scale_their_share_in_base_and_overlay_alike(seed: int) -> None:
    """A term at weight w adds w times its unweighted score, in every field; an overlay agrees with a
    full rebuild under weights too."""
    rng = random.Random(seed)
    vocab = Vocabulary()
    before = _corpus(rng, 30)
    after = dict(before)
    changed = rng.sample(sorted(before), 4)
    for path in changed:
        after[path] = [" ".join(rng.choices(WORDS, k=6))]
    base = KeywordSnapshot(_rows(before, vocab), k1=1.2, b=0.0)
    overlay = base.overlay(changed, _rows({p: after[p] for p in changed}, vocab, first_id=10_000))
    full = KeywordSnapshot(_rows(after, vocab), k1=1.2, b=0.0)
    fields = FieldWeights(path=1.0, symbol=1.0, file=0.0)
    terms = ["token", "cache"]
    ids = [vocab.get(t) or 0 for t in terms]
    for snap in (base, overlay, full):
        one = snap.enriched_scores(["token"], ids[:1], fields)
        two = snap.enriched_scores(["cache"], ids[1:], fields)
        weighted = snap.enriched_scores(terms, ids, fields, None, [1.0, 0.5], [1.0, 0.5])
        assert np.allclose(weighted, one + 0.5 * two, rtol=1e-5, atol=1e-6)
    got = _by_key(overlay, overlay.enriched_scores(terms, ids, fields, None, [1.0, 0.25], [1.0, 0.25]))
    want = _by_key(full, full.enriched_scores(terms, ids, fields, None, [1.0, 0.25], [1.0, 0.25]))
    assert got.keys() == want.keys()
    for key, score in want.items():
        assert got[key] == pytest.approx(score, rel=1e-5), key
    with pytest.raises(ValueError, match="parallel"):
        base.enriched_scores(terms, ids, fields, None, [1.0], None)


def test_overlay_never_returns_tombstoned_docs_and_keeps_base_numbering() -> None:
    vocab = Vocabulary()
    base = KeywordSnapshot(_rows({"a.py": ["alpha shared"], "b.py": ["beta shared", "gamma"]}, vocab))
    overlay = base.overlay(["b.py"], _rows({"b.py": ["delta shared"]}, vocab, first_id=50))
    assert overlay.docs[: len(base.docs)] == base.docs, "base documents keep their numbers"
    assert len(overlay) == 2 and overlay.delta_docs == 1
    ids = [vocab.get("shared")]
    hits = overlay.enriched_hits(["shared"], [i for i in ids if i is not None], 10, FieldWeights())
    assert sorted(overlay.docs[h.doc].chunk_id for h in hits) == [0, 50]
    assert not overlay.enriched_hits(["beta"], [vocab.get("beta") or 0], 10, FieldWeights())
    mask = overlay.candidate_mask(Filters(file_type="py"))
    assert mask is not None and mask.tolist() == [True, False, False, True]
    with pytest.raises(ValueError, match="base snapshot"):
        overlay.overlay([], [])


def test_spread_gives_each_chunk_its_files_value_in_any_document_order() -> None:
    """`spread` repeats per-file values over runs of chunks; it must equal the plain gather on a base,
    an overlay (tombstones, appended files) and rows whose files are not contiguous."""
    vocab = Vocabulary()
    files = {"a.py": ["alpha one", "alpha two"], "b.py": ["beta"], "c.py": ["gamma x", "gamma y", "gamma z"]}
    base = KeywordSnapshot(_rows(files, vocab))
    overlay = base.overlay(["b.py"], _rows({"b.py": ["beta new"], "d.py": ["delta"]}, vocab, first_id=50))
    rows = _rows(files, vocab)
    unordered = KeywordSnapshot([rows[0], rows[2], rows[1], rows[0]])  # a.py b.py a.py a.py
    empty = KeywordSnapshot([])
    for snap in (base, overlay, unordered, empty):
        per_file = np.arange(1, len(snap.file_paths) + 1, dtype=np.float32) * np.float32(0.5)
        assert snap.spread(per_file).tolist() == per_file[snap.doc_file].tolist()
    assert unordered.spread(np.array([1.0, 2.0], np.float32)).tolist() == [1.0, 2.0, 1.0, 1.0]


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True,
                   capture_output=True)  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    for i, name in enumerate(NAMES):
        (root / "src" / f"mod{i}.py").write_text(f"def {name}(request):\n    return request.{name}value\n")
    (root / "src" / "keep.py").write_text("def stable_function():\n    return 'stable'\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    return root


def _paths(engine: Engine, query: str) -> list[str]:
    return [r.path for r in engine.search(query, mode="keyword").results]


def test_saves_overlay_the_snapshot_and_searches_see_exactly_the_new_state(
    project: Path, tmp_path: Path
) -> None:
    engine = Engine(project, index_path=tmp_path / "idx")
    try:
        engine.index()
        base = engine.snapshot()
        assert base.base is None
        target = project / "src" / "mod3.py"
        original = target.read_text()
        target.write_text("def renamed_entry(request):\n    return request.freshvalue\n")
        engine.index_paths([target])
        snap = engine.snapshot()
        assert snap.base is base, "a save overlays the base instead of rebuilding it"
        assert _paths(engine, "freshvalue") == ["src/mod3.py"]
        assert _paths(engine, "delta") == [], "the old version of the file is tombstoned"
        assert engine.search("freshvalue", mode="keyword").results[0].content.startswith("def renamed_entry")
        # Undo: the old content comes back under its old key but with new chunk rows.
        target.write_text(original)
        engine.index_paths([target])
        results = engine.search("delta", mode="keyword").results
        assert [r.path for r in results] == ["src/mod3.py"] and "deltavalue" in results[0].content
        (project / "src" / "mod5.py").unlink()
        engine.index_paths([project / "src" / "mod5.py"])
        assert _paths(engine, "foxtrot") == []
        assert len(engine.snapshot()) == engine.status().chunks
        # A forced run rewrites chunk rows in place: the base is dropped, results still carry their text.
        engine.index(force=True)
        forced = engine.search("stable_function", mode="keyword").results
        assert engine.snapshot().base is None and forced and "stable" in forced[0].content
    finally:
        engine.close()


def test_branch_switch_overlays_and_shows_only_the_current_branch(project: Path, tmp_path: Path) -> None:
    engine = Engine(project, index_path=tmp_path / "idx")
    try:
        engine.index()
        assert _paths(engine, "stable_function") == ["src/keep.py"]
        git(project, "checkout", "-q", "-b", "feature")
        (project / "src" / "mod1.py").write_text("def feature_only_thing():\n    return 1\n")
        (project / "src" / "keep.py").unlink()
        git(project, "commit", "-qam", "feature")
        report = engine.index()
        # Files the checkout did not rewrite keep their stat: known from main without being read.
        assert report.files_changed == 1 and report.files == len(NAMES)
        assert engine.snapshot().base is not None
        assert _paths(engine, "feature_only_thing") == ["src/mod1.py"]
        assert _paths(engine, "stable_function") == [] and _paths(engine, "bravo") == []
        git(project, "checkout", "-q", "main")
        engine.index()
        assert _paths(engine, "stable_function") == ["src/keep.py"]
        assert _paths(engine, "bravo") == ["src/mod1.py"] and _paths(engine, "feature_only_thing") == []
    finally:
        engine.close()


def test_background_merge_builds_a_new_base(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import codebase_index.snapshots as snapshots

    monkeypatch.setattr(snapshots, "MERGE_MIN_DOCS", 1)
    engine = Engine(project, index_path=tmp_path / "idx")
    try:
        engine.index()
        first = engine.snapshot()
        (project / "src" / "mod2.py").write_text("def merged_later():\n    return 2\n")
        engine.index_paths(["src/mod2.py"])
        assert engine.snapshot().base is first
        cache = engine._snapshots
        assert cache is not None and cache._merging is not None
        cache._merging.join(timeout=30)
        assert cache.stats.merges == 1
        (project / "src" / "mod4.py").write_text("def after_merge():\n    return 4\n")
        engine.index_paths(["src/mod4.py"])
        snap = engine.snapshot()
        assert snap.base is not None and snap.base is not first, "the next overlay sits on the merged base"
        assert snap.delta_docs == 1
        assert _paths(engine, "merged_later") == ["src/mod2.py"] and _paths(engine, "after_merge") == [
            "src/mod4.py"
        ]
    finally:
        engine.close()


def test_hybrid_search_stays_aligned_across_overlays(project: Path, tmp_path: Path) -> None:
    with serve(dims=8) as server:
        engine = Engine(project, remote_config(server.base_url), index_path=tmp_path / "idx")
        try:
            engine.index()
            engine.embed()
            assert engine.search("stable_function").strategy == "hybrid"
            (project / "src" / "mod7.py").write_text("def hybrid_fresh_name():\n    return 7\n")
            engine.index_paths(["src/mod7.py"])
            partial = engine.search("hybrid_fresh_name")
            assert partial.strategy == "hybrid-partial" and partial.results[0].path == "src/mod7.py"
            engine.embed()
            snap = engine.snapshot()
            vecs = engine.vector_snapshot(snap)
            assert vecs is not None and snap.base is not None and vecs.n_docs == len(snap.docs)
            assert len(vecs) == len(snap), "every live document has its vector, tombstoned ones none"
            dead = [i for i in range(len(snap.docs)) if not snap.is_live(i)]
            assert dead and not vecs.present[dead].any()
            found = engine.search("hybrid_fresh_name")
            assert found.strategy == "hybrid"
            assert all("hotel" not in r.content for r in found.results)
            semantic = engine.search("request user", mode="semantic", top_k=50).results
            assert all(r.content for r in semantic), "no semantic hit points at a purged chunk"
            assert "hotel" not in " ".join(r.content for r in semantic)
        finally:
            engine.close()
