"""The embedded model on ONNX Runtime with int8 matmuls: the fast path for indexing and queries.

At first use the BERT graph is built from the model's own safetensors (onnx_graph.py), fused by
onnxruntime's transformer optimizer (EmbedLayerNormalization, Attention, SkipLayerNormalization,
BiasGelu) and its MatMul weights quantised to int8 per output channel (dynamic activations). The result
is cached in the user cache, keyed by the model files, the onnxruntime version and BUILDER_VERSION, so
later processes only load it. Nothing is downloaded.

Quantisation moves vectors a little: against the numpy fp32 path, cos >= 0.99 on every text of the test
fixture; on 500 stdlib chunks (bench/bench_onnx.py) min 0.986, p1 0.991, median 0.995, 2 below 0.99,
every chunk's nearest fp32 neighbour itself. So both backends keep the fp32 model's id and may share an
index (the numpy path serves wherever onnxruntime cannot load, with no re-embedding); a quantisation
that agreed less would need its own id. See bench/onnx_int8.md.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from .base import EmbeddingError
from .minilm import (
    _BATCH_TOKENS,
    _CHARS_PER_TOKEN_CAP,
    _load_tokenizer,
    _plan_batches,
    _read_json,
    check_model_dir,
    default_model_dir,
)

# Bump whenever the graph, the fusions or the quantisation change: a new key rebuilds the cached model.
BUILDER_VERSION = "2"
# int8 weights per output channel for the MatMuls and the fused Attention's QKV projection (QAttention), in
# every layer but the first, which stays float. Measured on 167 stdlib chunks against fp32 (one thread,
# chunks per CPU-second / cos min / median): all layers MatMul only 20.0 / 0.988 / 0.994; + Attention
# 21.7 / 0.985 / 0.993; both without layer 0: 20.6 / 0.991 / 0.995 (chosen); MatMul only without layer 0
# 18.1 / 0.992 / 0.996; per-tensor scales: cos median 0.94; reduce_range (7-bit) no better on AVX2.
_QUANT_OPS = ("MatMul", "Attention")
_FLOAT_LAYERS: tuple[int, ...] = (0,)
# A build's scratch folder (the fp32 and fused graphs, ~250 MB) is made beside the model it builds, not in
# /tmp: a build killed midway (a sidecar stopped while it warms up) leaves it in the model's cache folder,
# where the next build, holding that folder's build lock, knows no one else uses it and deletes it.
_SCRATCH_PREFIX = "build-"
_log = logging.getLogger(__name__)


def cache_root() -> Path:
    """Where built models live: $CODEBASE_INDEX_CACHE, else $XDG_CACHE_HOME or ~/.cache, /codebase-index."""
    explicit = os.environ.get("CODEBASE_INDEX_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codebase-index"


def onnxruntime_version() -> str:
    """The importable onnxruntime's version; raises EmbeddingError (with the reason) when it cannot load."""
    try:
        import onnxruntime
    except Exception as exc:  # ImportError, or a broken native library (OSError)
        raise EmbeddingError(f"onnxruntime cannot load ({type(exc).__name__}: {exc})") from exc
    return str(onnxruntime.__version__)


def model_key(model_dir: Path, ort_version: str) -> str:
    """Cache key: the builder version, onnxruntime's version and the model files' identity (size and
    mtime of the weights, the configs' contents), so any change rebuilds."""
    h = hashlib.sha256()
    h.update(f"builder={BUILDER_VERSION}\0ort={ort_version}\0dir={model_dir.resolve()}\0".encode())
    weights = (model_dir / "model.safetensors").stat()
    h.update(f"{weights.st_size}:{weights.st_mtime_ns}\0".encode())
    for name in ("config.json", "tokenizer.json"):
        h.update((model_dir / name).read_bytes())
    return h.hexdigest()[:20]


def _quiet_optimizer_logs() -> None:
    # The optimizer warns that the producer is not "pytorch" and that shape inference is off; both are
    # expected here (the graph is ours, its shapes are known).
    # Its modules log under their bare names (the package puts its folder on sys.path).
    for name in ("onnxruntime", "optimizer", "onnx_model", "onnx_model_bert", "fusion_base", "fusion_utils"):
        logging.getLogger(name).setLevel(logging.ERROR)
    for name in ("attention", "embedlayer", "skiplayernorm", "skip_group_norm", "options", "shape"):
        logging.getLogger("fusion_" + name).setLevel(logging.ERROR)


def build_int8_model(model_dir: Path, dest: Path) -> dict[str, int]:
    """Writes the fused, int8-quantised graph to `dest`; returns the fused-operator counts. The
    intermediate graphs live in a scratch folder beside `dest`, removed when the build ends or fails."""
    import onnx
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    from .onnx_graph import build_bert_graph

    config = _read_json(model_dir / "config.json")
    graph = build_bert_graph(model_dir, config)
    _quiet_optimizer_logs()
    options = FusionOptions("bert")
    # Symbolic shape inference needs sympy; our graph's shapes are consistent by construction.
    options.enable_shape_inference = False
    with tempfile.TemporaryDirectory(prefix=_SCRATCH_PREFIX, dir=dest.parent) as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        onnx.save(graph, str(fp32))
        fused = optimizer.optimize_model(
            str(fp32),
            model_type="bert",
            num_heads=int(config["num_attention_heads"]),
            hidden_size=int(config["hidden_size"]),
            optimization_options=options,
            opt_level=0,
        )
        stats = {k: int(v) for k, v in fused.get_fused_operator_statistics().items() if v}
        fused_path = Path(tmp) / "fused.onnx"
        fused.save_model_to_file(str(fused_path))
        hint = _DropPreprocessHint()
        logging.getLogger().addFilter(hint)  # quantize_dynamic logs this advice on the root logger
        try:
            _quantize(fused_path, dest)
        finally:
            logging.getLogger().removeFilter(hint)
    return stats


class _DropPreprocessHint(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def float_nodes(model: Any, layers: Sequence[int]) -> list[str]:
    """Names of the quantisable nodes of encoder `layers` (kept float): their MatMuls by weight name, their
    fused Attention by position (the optimizer sorts the graph, so the n-th Attention is layer n)."""
    prefixes = tuple(f"encoder.layer.{i}." for i in layers)
    names = [n.name for n in model.graph.node if n.op_type == "MatMul" and n.input[1].startswith(prefixes)]
    attention = [n.name for n in model.graph.node if n.op_type == "Attention"]
    return names + [attention[i] for i in layers if i < len(attention)]


def _quantize(source: Path, dest: Path) -> None:
    """int8 weights per output channel, activations quantised at run time, the _FLOAT_LAYERS left float."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(source),
        str(dest),
        op_types_to_quantize=list(_QUANT_OPS),
        nodes_to_exclude=float_nodes(onnx.load(str(source)), _FLOAT_LAYERS),
        per_channel=True,
        reduce_range=False,
        weight_type=QuantType.QInt8,
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


def cached_int8_model(model_dir: Path, root: Path | None = None) -> Path:
    """The int8 model for `model_dir`, built once per key (under a file lock, written atomically)."""
    from ..locks import file_lock
    from ..private_files import chmod_private, make_private_dir, write_private

    key = model_key(model_dir, onnxruntime_version())
    folder = (root or cache_root()) / "onnx" / f"{model_dir.name}-{key}"
    path = folder / "model.int8.onnx"
    if path.is_file():
        if any(folder.glob(_SCRATCH_PREFIX + "*")):  # a builder killed while it cleaned up
            with contextlib.suppress(OSError), file_lock(folder / "build.lock", wait=False) as held:
                if held:
                    remove_killed_builds(folder)
        return path
    try:
        make_private_dir(folder)
        with file_lock(folder / "build.lock", wait=True):
            if path.is_file():
                return path
            remove_killed_builds(folder)
            partial = folder / f"model.{os.getpid()}.partial"
            try:
                # The optimizer prints progress to stdout, which is the sidecar's JSON-RPC channel.
                with contextlib.redirect_stdout(sys.stderr):
                    stats = build_int8_model(model_dir, partial)
                chmod_private(partial)  # onnx writes with the umask's mode
                os.replace(partial, path)
            finally:
                partial.unlink(missing_ok=True)
            fusions = "{" + ", ".join(f'"{k}": {v}' for k, v in sorted(stats.items())) + "}\n"
            write_private(folder / "fusions.json", fusions.encode("utf-8"))
    except EmbeddingError:
        raise
    except Exception as exc:
        raise EmbeddingError(f"cannot build the ONNX model in {folder}: {type(exc).__name__}: {exc}") from exc
    return path


def remove_killed_builds(folder: Path) -> list[str]:
    """Delete the scratch folders and partial models that killed builds left in a model's cache folder;
    returns their names. Call it holding the folder's build lock: then no build is running there."""
    removed: list[str] = []
    for entry in sorted(folder.glob(_SCRATCH_PREFIX + "*")):
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry.name)
    for entry in sorted(folder.glob("model.*.partial")):
        entry.unlink(missing_ok=True)
        removed.append(entry.name)
    if removed:
        _log.info("removed what killed model builds left in %s: %s", folder, ", ".join(removed))
    return removed


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class OnnxEmbedder:
    """`EmbeddingProvider` for a BERT sentence-transformers folder on ONNX Runtime, int8 matmuls.

    `threads` workers each run whole length-sorted batches through one shared session (one intra-op
    thread each, no spinning): on these small matmuls that beats ORT's own intra-op split, and a busy
    machine loses no CPU to spin-waits. Batches group texts of similar token length, padded only to the
    batch's longest text, so padding costs next to nothing.
    """

    backend = "onnx-int8"
    backend_note: str | None = None

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        threads: int = 2,
        batch_size: int = 32,
        batch_tokens: int = 2 * _BATCH_TOKENS,
        cache: Path | None = None,
    ) -> None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        self._version = onnxruntime_version()  # fails fast when the runtime cannot load
        self._model_dir = check_model_dir(Path(model_dir) if model_dir is not None else default_model_dir())
        self._threads = threads
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._cache = cache
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._max_length = 0
        config = _read_json(self._model_dir / "config.json")
        self._dimensions = int(config["hidden_size"])
        from . import EMBEDDED_MODEL_ID

        # The fp32 model's id: the vectors agree (see the module docstring).
        self._model_id = EMBEDDED_MODEL_ID if model_dir is None else f"embedded:{self._model_dir.name}"

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        return self._dimensions

    @property
    def model_dir(self) -> Path:
        return self._model_dir

    @property
    def threads(self) -> int:
        return self._threads

    def describe(self) -> str:
        return f"onnxruntime {self._version} int8, {self._threads} thread(s)"

    def _loaded(self) -> Any:
        session = self._session
        if session is None:
            with self._lock:
                session = self._session
                if session is None:
                    session = self._open()
                    self._session = session
        return session

    def _open(self) -> Any:
        import onnxruntime as ort

        from .minilm import _pooling_mode

        if _pooling_mode(self._model_dir) != "mean":
            raise EmbeddingError(f"{self._model_dir}: the ONNX backend implements mean pooling only")
        path = cached_int8_model(self._model_dir, self._cache)
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise EmbeddingError(f"onnxruntime cannot open {path}: {exc}") from exc
        st_path = self._model_dir / "sentence_bert_config.json"
        config = _read_json(self._model_dir / "config.json")
        max_positions = int(config.get("max_position_embeddings", 512))
        max_length = (
            int(_read_json(st_path).get("max_seq_length", max_positions)) if st_path.is_file() else 512
        )
        self._max_length = min(max_length, max_positions)
        self._tokenizer = _load_tokenizer(self._model_dir / "tokenizer.json", self._max_length)
        self._inputs = {i.name for i in session.get_inputs()}
        return session

    def _encode(self, texts: Sequence[str]) -> list[list[int]]:
        cap = self._max_length * _CHARS_PER_TOKEN_CAP
        try:
            return [self._tokenizer.encode(t if len(t) <= cap else t[:cap]).ids for t in texts]
        except Exception as exc:
            raise EmbeddingError(f"tokenizer failed: {exc}") from exc

    def _embed_ids(self, session: Any, token_ids: list[list[int]]) -> np.ndarray:
        length = max(len(t) for t in token_ids)
        ids = np.zeros((len(token_ids), length), dtype=np.int64)
        mask = np.zeros((len(token_ids), length), dtype=np.int64)
        for row, toks in enumerate(token_ids):
            ids[row, : len(toks)] = toks
            mask[row, : len(toks)] = 1
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        try:
            states = session.run(None, {k: v for k, v in feed.items() if k in self._inputs})[0]
        except Exception as exc:
            raise EmbeddingError(f"onnxruntime failed: {exc}") from exc
        weights = mask.astype(np.float32)
        pooled = np.einsum("bld,bl->bd", states, weights)
        pooled /= np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1e-9))
        pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), np.float32(1e-12))
        return pooled.astype(np.float32, copy=False)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Batches texts by token length across worker threads; rows come back in input order."""
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of strings, not one string")
        if len(texts) == 0:
            return np.zeros((0, self._dimensions), dtype=np.float32)
        session = self._loaded()
        token_ids = self._encode(texts)
        order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
        batches = _plan_batches([len(token_ids[i]) for i in order], self._batch_size, self._batch_tokens)
        batches = [[order[i] for i in batch] for batch in batches]
        out = np.empty((len(texts), self._dimensions), dtype=np.float32)

        def run(batch: list[int]) -> None:
            out[batch] = self._embed_ids(session, [token_ids[i] for i in batch])

        workers = min(self._threads, len(batches))
        if workers <= 1:
            for batch in batches:
                run(batch)
        else:
            # Longest batches first, so the pool does not idle on a straggler at the end.
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="onnx-embed") as pool:
                for future in [pool.submit(run, b) for b in reversed(batches)]:
                    future.result()
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """One text in the calling thread: no pool, no batching."""
        session = self._loaded()
        return self._embed_ids(session, self._encode([text]))[0]
