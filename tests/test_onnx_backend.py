"""The ONNX Runtime int8 backend of the embedded model: graph built from the shipped safetensors, fused,
quantised, cached; vectors checked against the numpy fp32 path on real code."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import msgspec
import numpy as np
import pytest

from codebase_index.config import Config
from codebase_index.embeddings import EMBEDDED_MODEL_ID, EmbeddingError, create_embedded_provider
from codebase_index.embeddings.minilm import MiniLMEmbedder, _read_json, default_model_dir
from codebase_index.embeddings.onnx_backend import (
    BUILDER_VERSION,
    OnnxEmbedder,
    cached_int8_model,
    model_key,
    onnxruntime_version,
)
from codebase_index.service import Engine

pytest.importorskip("onnxruntime")


def stdlib_texts(count: int) -> list[str]:
    """Real code of different lengths: functions and classes cut from stdlib modules by blank lines."""
    texts: list[str] = []
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("textwrap.py", "shlex.py", "fnmatch.py", "glob.py", "bisect.py", "colorsys.py"):
        blocks = (stdlib / name).read_text(encoding="utf-8").split("\n\n\n")
        texts.extend(b.strip() for b in blocks if len(b.strip()) > 40)
    return texts[:count]


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("onnx-cache")


@pytest.fixture(scope="module")
def onnx_embedder(cache: Path) -> OnnxEmbedder:
    return OnnxEmbedder(threads=2, cache=cache)


@pytest.fixture(scope="module")
def numpy_embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder(threads=2)


def test_fp32_graph_reproduces_the_numpy_forward(numpy_embedder: MiniLMEmbedder) -> None:
    """The graph builder alone (no fusion, no quantisation) computes the same BERT as minilm.py."""
    import onnxruntime as ort

    from codebase_index.embeddings.onnx_graph import build_bert_graph

    model_dir = default_model_dir()
    graph = build_bert_graph(model_dir, _read_json(model_dir / "config.json"))
    session = ort.InferenceSession(graph.SerializeToString(), providers=["CPUExecutionProvider"])
    texts = stdlib_texts(6)
    token_ids = numpy_embedder._encode(numpy_embedder._loaded(), texts)
    length = max(len(t) for t in token_ids)
    ids = np.zeros((len(texts), length), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, toks in enumerate(token_ids):
        ids[row, : len(toks)] = toks
        mask[row, : len(toks)] = 1
    states = session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": 0 * ids})[0]
    pooled = (states * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    cos = (pooled * numpy_embedder.embed_documents(texts)).sum(1)
    assert cos.min() >= 0.9999  # the numpy path uses tanh GELU (cos 0.999998 vs erf); the graph uses erf


def test_build_fuses_every_block_and_is_cached(onnx_embedder: OnnxEmbedder, cache: Path) -> None:
    onnx_embedder.embed_query("warm up")
    built = list(cache.rglob("model.int8.onnx"))
    assert len(built) == 1
    fusions = json.loads((built[0].parent / "fusions.json").read_text())
    layers = 6
    assert fusions == {
        "Attention": layers,
        "BiasGelu": layers,
        "EmbedLayerNormalization": 1,
        "SkipLayerNormalization": 2 * layers,
    }
    stamp = built[0].stat().st_mtime_ns
    again = OnnxEmbedder(threads=1, cache=cache)  # a second process-like instance loads, never rebuilds
    assert again.embed_query("warm up") @ onnx_embedder.embed_query("warm up") > 0.9999
    assert built[0].stat().st_mtime_ns == stamp
    assert not list(cache.rglob("*.partial"))


def test_cache_key_follows_runtime_builder_and_weights(tmp_path: Path) -> None:
    model_dir = default_model_dir()
    key = model_key(model_dir, "1.32.0")
    assert key == model_key(model_dir, "1.32.0")
    assert key != model_key(model_dir, "1.33.0")
    copy = tmp_path / "model"
    copy.mkdir()
    for name in ("config.json", "tokenizer.json", "model.safetensors"):
        os.symlink(model_dir / name, copy / name)
    assert model_key(copy, "1.32.0") != key  # another folder
    assert BUILDER_VERSION


def test_a_killed_build_leaves_its_scratch_in_the_cache_and_the_next_build_removes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build SIGKILLed midway leaves its scratch folder beside the model, not in /tmp; the next build (under
    the folder's lock) deletes it and the partial model, and a normal build leaves nothing but its output:
    no scratch folder in the cache, nothing in the temporary directory."""
    model_dir = default_model_dir()
    root = tmp_path / "cache"
    folder = root / "onnx" / f"{model_dir.name}-{model_key(model_dir, onnxruntime_version())}"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; "
            "from codebase_index.embeddings.minilm import default_model_dir; "
            "from codebase_index.embeddings.onnx_backend import cached_int8_model; "
            "cached_int8_model(default_model_dir(), Path(sys.argv[1]))",
            str(root),
        ]
    )
    try:
        deadline = time.monotonic() + 600  # a bound on a hang, not a speed check
        while not list(folder.glob("build-*/fp32.onnx")):
            assert child.poll() is None, f"the build ended (exit {child.returncode}) before it was killed"
            assert time.monotonic() < deadline, "the build never wrote its scratch folder"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    left = sorted(p.name for p in folder.glob("build-*"))
    assert left, "the killed build left no scratch folder: the test no longer simulates a kill"
    (folder / "model.999999.partial").write_bytes(b"half a model")  # as a kill during quantisation leaves

    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))  # anything the build puts in "/tmp" lands here
    path = cached_int8_model(model_dir, root)

    assert path == folder / "model.int8.onnx" and path.stat().st_size > 0
    assert sorted(p.name for p in folder.iterdir()) == ["build.lock", "fusions.json", "model.int8.onnx"]
    assert list(private_tmp.iterdir()) == []

    # A builder killed while it deleted its scratch (the model already in place): the next load removes it.
    (folder / "build-killed").mkdir()
    (folder / "build-killed" / "fused.onnx").write_bytes(b"stale")
    stamp = path.stat().st_mtime_ns
    assert cached_int8_model(model_dir, root) == path and path.stat().st_mtime_ns == stamp  # not rebuilt
    assert sorted(p.name for p in folder.iterdir()) == ["build.lock", "fusions.json", "model.int8.onnx"]


def test_int8_vectors_agree_with_fp32_on_real_code(
    onnx_embedder: OnnxEmbedder, numpy_embedder: MiniLMEmbedder
) -> None:
    texts = stdlib_texts(40)
    fast = onnx_embedder.embed_documents(texts)
    reference = numpy_embedder.embed_documents(texts)
    assert fast.shape == reference.shape == (len(texts), 384)
    assert fast.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)
    cos = (fast * reference).sum(1)
    # The condition for sharing the fp32 model id (onnx_backend's docstring): every vector within cos 0.99.
    assert cos.min() >= 0.99, cos.min()
    assert np.median(cos) >= 0.993
    # Retrieval is preserved: each text's nearest fp32 neighbour among all is itself.
    assert (np.argmax(fast @ reference.T, axis=1) == np.arange(len(texts))).all()


def test_order_truncation_and_empty(onnx_embedder: OnnxEmbedder) -> None:
    texts = ["short", "def f(x):\n    return x * 2\n" * 40, "a bit longer text about files", "x " * 2000]
    together = onnx_embedder.embed_documents(texts)
    for i, text in enumerate(texts):
        alone = onnx_embedder.embed_documents([text])[0]
        assert alone @ together[i] > 0.98  # int8 activation scales depend a little on batch-mates
    assert onnx_embedder.embed_documents([]).shape == (0, 384)
    with pytest.raises(TypeError):
        onnx_embedder.embed_documents("one string")  # type: ignore[arg-type]
    # Truncated at max_seq_length (256): text beyond it changes nothing.
    long = "def f(x):\n    return x * 2\n" * 200
    assert onnx_embedder.embed_query(long) @ onnx_embedder.embed_query(long + "\nmore") > 0.9999


def test_both_backends_share_the_model_id(onnx_embedder: OnnxEmbedder) -> None:
    assert onnx_embedder.model_id == EMBEDDED_MODEL_ID
    assert onnx_embedder.backend == "onnx-int8"
    numpy_provider = create_embedded_provider(backend="numpy")
    assert numpy_provider.model_id == EMBEDDED_MODEL_ID
    assert getattr(numpy_provider, "backend", None) == "numpy-fp32"


def test_auto_falls_back_to_numpy_when_onnxruntime_cannot_load() -> None:
    """A child process where `import onnxruntime` fails: auto serves numpy and says why; onnx refuses."""
    code = (
        "import sys; sys.modules['onnxruntime'] = None\n"
        "from codebase_index.embeddings import create_embedded_provider, EmbeddingError\n"
        "p = create_embedded_provider(backend='auto')\n"
        "print(p.backend, p.model_id, '|', p.backend_note)\n"
        "try:\n"
        "    create_embedded_provider(backend='onnx')\n"
        "except EmbeddingError as exc:\n"
        "    print('refused:', exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    first, second = out.strip().splitlines()
    assert first.startswith(f"numpy-fp32 {EMBEDDED_MODEL_ID} | onnxruntime cannot load")
    assert "using the numpy fp32 path" in first
    assert second.startswith("refused: onnxruntime cannot load")


def test_config_switch_and_status_show_the_backend(tmp_path: Path, cache: Path) -> None:
    os.environ["CODEBASE_INDEX_CACHE"] = str(cache)  # reuse the module's build
    try:
        root = tmp_path / "proj"
        root.mkdir()
        (root / "calc.py").write_text("def add(a, b):\n    '''Sum two numbers.'''\n    return a + b\n")
        config = msgspec.convert(
            {"embeddingProvider": "embedded", "embeddingModel": "minilm", "embeddedBackend": "onnx"}, Config
        )
        engine = Engine(root, config, index_path=tmp_path / "index")
        engine.index()
        engine.embed()
        status = engine.status().embeddings
        assert status is not None
        assert status.backend == "onnx-int8"
        assert status.model == EMBEDDED_MODEL_ID
        assert status.embedded == status.total > 0
        hits = engine.search("sum two numbers", mode="semantic").results
        assert hits and hits[0].path == "calc.py"
        engine.close()
        with pytest.raises(msgspec.ValidationError):
            msgspec.convert({"embeddedBackend": "gpu"}, Config)
    finally:
        del os.environ["CODEBASE_INDEX_CACHE"]


def test_an_fp32_index_serves_int8_queries_and_resumes_with_int8(tmp_path: Path, cache: Path) -> None:
    """Same model id: an index the numpy path embedded is searched, and extended, by the int8 backend
    with no re-embedding (and the other way round, wherever onnxruntime cannot load)."""
    os.environ["CODEBASE_INDEX_CACHE"] = str(cache)
    try:
        root = tmp_path / "proj"
        root.mkdir()
        (root / "calc.py").write_text('def add(a, b):\n    """Sum two numbers."""\n    return a + b\n')
        fp32 = msgspec.convert(
            {"embeddingProvider": "embedded", "embeddingModel": "minilm", "embeddedBackend": "numpy"}, Config
        )
        engine = Engine(root, fp32, index_path=tmp_path / "index")
        engine.index()
        engine.embed()
        engine.close()
        (root / "io.py").write_text("def read_lines(path):\n    return open(path).read().splitlines()\n")
        int8 = msgspec.structs.replace(fp32, embedded_backend="onnx")
        engine = Engine(root, int8, index_path=tmp_path / "index")
        engine.index()
        report = engine.embed()
        assert report is not None and report.error is None
        assert report.embedded == 1  # only the new file's chunk; the fp32 vectors stay
        status = engine.status().embeddings
        assert status is not None and status.embedded == status.total == 2 and not status.rebuild_needed
        assert engine.search("sum two numbers", mode="semantic").results[0].path == "calc.py"
        assert engine.search("read a file's lines", mode="semantic").results[0].path == "io.py"
        engine.close()
    finally:
        del os.environ["CODEBASE_INDEX_CACHE"]


def test_explicit_onnx_backend_error_names_the_model_folder(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="missing"):
        OnnxEmbedder(tmp_path)
