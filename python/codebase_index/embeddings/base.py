"""The contract every embedding provider meets, embedded or remote."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


class EmbeddingError(Exception):
    """A provider could not embed: the message says what failed and what to do."""


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed width.

    `model_id` names provider and model (e.g. "embedded:all-MiniLM-L6-v2", "openai:text-embedding-3-small")
    so stored vectors are never mixed across models.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Shape (len(texts), dimensions), float32, rows L2-normalised."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Shape (dimensions,), float32, L2-normalised."""
        ...
