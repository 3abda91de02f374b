"""The search backend interface and the records that cross it.

A backend answers one question: given a parsed query (its weighted terms and, when vectors exist, its
embedding), which chunks of which repositories are the candidates, each with its payload and its
first-stage (fused) score. Ranking and formatting happen after, in `federated`, the same for every
backend.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Protocol

import msgspec
import numpy as np

from ..search import Filters

# Point ids are UUIDv5 in this namespace over (repo, path, start line, content hash): the same chunk
# gets the same id on every machine, so a publisher can tell what the collection already holds.
POINT_NAMESPACE = uuid.UUID("5d0f3c52-8f0e-4b8e-9a55-0c0de1dec0de")


class BackendError(Exception):
    """The backend cannot answer (unreachable, misconfigured, wrong model): said in one line."""


class ChunkPayload(msgspec.Struct, frozen=True, omit_defaults=True):
    """One chunk of one repository as a backend holds it: everything ranking and formatting read."""

    repo: str
    path: str
    start_line: int
    end_line: int
    kind: str
    symbol: str
    language: str
    content_hash: str
    text: str
    branches: tuple[str, ...] = ()
    chunk_id: int = -1  # the local index's chunk id, when the chunk came from one

    @property
    def point_id(self) -> str:
        return point_id(self.repo, self.path, self.start_line, self.content_hash)


def point_id(repo: str, path: str, start_line: int, content_hash: str) -> str:
    return str(uuid.uuid5(POINT_NAMESPACE, f"{repo}\0{path}\0{start_line}\0{content_hash}"))


class RepoInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    """A repository a backend can search: its name and the branch searched by default."""

    name: str
    branch: str
    chunks: int = 0
    root: str | None = None
    model: str | None = None


class QueryInput(msgspec.Struct, frozen=True):
    """The query as both retrievers need it, parsed once (`federated.parse_query`): the distinct keyword
    terms of `ranking.query.keyword_query` with their summed weights, and the fusion constant."""

    text: str
    terms: tuple[str, ...]
    weights: tuple[float, ...]
    rrf_k: int = 60


# The query's embedding for a model id, computed once per search (None: no provider for that model).
EmbedQuery = Callable[[str], "np.ndarray | None"]


class Candidates(msgspec.Struct):
    """Candidates with their fused first-stage scores (best first) and what ran."""

    chunks: list[tuple[ChunkPayload, float]]
    strategy: str  # "hybrid", or "keyword-fallback" when no vector side could run (`notice` says why)
    notice: str | None = None


class SearchBackend(Protocol):
    """Where multi-repository candidates come from: `local.LocalBackend` or `qdrant.QdrantBackend`."""

    name: str

    def repos(self) -> list[RepoInfo]: ...

    def model_id(self) -> str | None:
        """The embedding model whose vectors the backend holds (None: none yet)."""
        ...

    def candidates(
        self, query: QueryInput, repos: Sequence[RepoInfo], filters: Filters, pool: int, embed: EmbedQuery
    ) -> Candidates:
        """Up to `pool` keyword and `pool` vector candidates of `repos` (each on its `branch`), fused by
        reciprocal rank (1 / (rrf_k + rank from 0), Qdrant's formula), best first; ties by point id."""
        ...

    def close(self) -> None: ...
