"""The index's state as `status` reports it: files, chunks, skipped files, embeddings, the code graph
and the search-time dependencies, read from the store without touching the files.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import msgspec

from .. import literal_index, problems
from ..embedder import (
    META_MODEL,
    META_RATE,
    EmbeddingStatus,
    embedding_status,
    model_mismatch,
    provider_endpoint,
)
from ..graph.refresher import extraction_running
from ..graph.store import GraphStore
from ..processing import graph_enabled
from ..resilience import DependencyHealth
from ..store import SkippedRow

if TYPE_CHECKING:
    from .engine import Engine

# Files with reason "error" that `status` names (all of them are counted).
STATUS_ERRORS = 20


class IndexStatus(msgspec.Struct):
    root: str
    index_dir: str
    branch: str
    indexed: bool
    files: int
    chunks: int
    vocabulary: int
    skipped: dict[str, int]
    size_bytes: int
    last_indexed_at: float | None
    embeddings: EmbeddingStatus | None = None
    graph: GraphStatus | None = None
    # Files something raised on, each with the exception's one line: reason "error" (not indexed, counted
    # in `skipped`, retried by the next run), "chunk-fallback" (indexed as line windows) or "graph-error"
    # (indexed without a code graph).
    errors: list[SkippedRow] = msgspec.field(default_factory=list)
    # Search-time dependencies (query embedding, reranker) with a recorded failure: last error and when.
    dependencies: list[DependencyHealth] = msgspec.field(default_factory=list)
    # Why the exact-literal index (FTS5 trigram) does not answer, None when it does: without it, exact
    # text is looked for among the best keyword candidates only.
    literal_index: str | None = None
    # Settings of an untrusted project configuration file that are not used, and how to trust it.
    config_notice: str | None = None
    # Files skipped as secrets (credentials by name or content), the first STATUS_ERRORS of them; all
    # are counted in `skipped["secret"]`.
    secrets: list[str] = msgspec.field(default_factory=list)


class GraphStatus(msgspec.Struct):
    """Code-graph extraction of the branch's files (graph languages only): `pending` wait for the
    background step, `unavailable` of them had no matching file on disk at the last attempt (changed
    since: the next run re-indexes them); `elsewhere`: pending contents held only by other branches."""

    files: int
    extracted: int
    pending: int
    unavailable: int
    elsewhere: int
    building: bool = False
    errors: int = 0


def status(engine: Engine) -> IndexStatus:
    """What the index holds on the current branch (an unindexed root: zeros)."""
    branch = engine.branch()
    exists = (engine.index_dir / "codebase.db").exists()
    if not exists:
        return IndexStatus(
            root=str(engine.root),
            index_dir=str(engine.index_dir),
            branch=branch,
            indexed=False,
            files=0,
            chunks=0,
            vocabulary=0,
            skipped={},
            size_bytes=0,
            last_indexed_at=None,
            config_notice=engine.config_notice,
        )
    store = engine.store
    counts = store.counts(branch)
    skipped = store.skipped(branch)
    last = store.get_meta("last_indexed_at")
    provider = engine.embedding_provider()
    model = provider.model_id if provider is not None else store.get_meta(META_MODEL)
    catalogs = engine.embedding_catalogs(branch)
    embedded, total, failures, last_failure = embedding_status(store, catalogs, model)
    rate = store.get_meta(META_RATE)
    embeddings = EmbeddingStatus(
        provider=model.split(":", 1)[0] if model else None,
        model=model,
        dimensions=provider.dimensions if provider is not None else None,
        embedded=embedded,
        total=total,
        failures=failures,
        rate=float(rate) if rate else None,
        error=engine.embedding_error(),
        last_failure=last_failure,
        rebuild_needed=model_mismatch(store, provider) if provider is not None else None,
        endpoint=provider_endpoint(provider) if provider is not None else None,
        backend=getattr(provider, "backend", None),
        backend_note=getattr(provider, "backend_note", None),
        model_note=engine.model_note,
    )
    graph = None
    if graph_enabled():
        graph = GraphStatus(
            **GraphStore(store.conn).extraction_counts(branch),
            building=engine.graphs.busy() or extraction_running(engine.index_dir),
            errors=engine.graphs.extract_errors,
        )
    return IndexStatus(
        root=str(engine.root),
        index_dir=str(engine.index_dir),
        branch=branch,
        indexed=last is not None,
        files=counts["files"],
        chunks=counts["chunks"],
        vocabulary=counts["vocabulary"],
        skipped=dict(Counter(s.reason for s in skipped)),
        errors=([s for s in skipped if s.reason == "error"] + problems.load(store, branch))[:STATUS_ERRORS],
        size_bytes=store.size_on_disk(),
        last_indexed_at=float(last) if last else None,
        embeddings=embeddings,
        graph=graph,
        dependencies=engine.dependency_health(),
        literal_index=literal_index.status(store),
        config_notice=engine.config_notice,
        secrets=[s.path for s in skipped if s.reason == "secret"][:STATUS_ERRORS],
    )
