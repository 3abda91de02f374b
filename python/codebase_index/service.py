"""The engine: the one place that knows every stage and wires discover -> chunk -> tokenize -> store ->
retrieve -> format. The CLI, the JSON-RPC sidecar and the MCP server all talk to `Engine`.
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import msgspec
import numpy as np

from . import embedder, knowledge, problems, repair, upkeep
from .config import Config, index_dir, load_config
from .embedder import (
    META_MODEL,
    META_RATE,
    EmbeddingJob,
    EmbeddingMismatchError,
    EmbeddingStatus,
    EmbedProgressFn,
    EmbedReport,
    check_model,
    embedding_status,
    model_mismatch,
    provider_endpoint,
    shared_provider,
    switch_model,
)
from .embeddings.base import EmbeddingError
from .git import current_branch
from .graph.extractor import INLINE_MAX_FILES, ExtractReport
from .graph.query import CallGraph, ImplementationLookup, incomplete_notice
from .graph.refresher import GraphRefresher, extraction_running
from .graph.store import DefinitionRow, EdgeRefresh, GraphStore
from .indexer import Indexer, IndexReport, ProgressFn, graph_enabled
from .models import SearchResult
from .ranking import (
    ParsedQuery,
    exact_matches,
    is_quotation,
    may_hold_message,
    may_quote,
    merge_external,
    parse_query,
    quotes_query,
    rank_hits,
    verbatim_spans,
)
from .ranking.query import MESSAGE_CANDIDATES, VERBATIM_CANDIDATES, VERBATIM_MIN_WORDS
from .resilience import (
    QUERY_EMBEDDING,
    RERANKER,
    STATE_FILE,
    Breaker,
    DependencyHealth,
    cooling_down,
    endpoint_key,
    read_all,
)
from .search import DocRow, FieldWeights, Filters, KeywordSnapshot, preview, top_hits
from .snapshots import SnapshotCache, Source
from .store import SkippedRow, Store, StoreError
from .vectors import AnnIndex, Hit, VectorCheck, VectorSnapshot

if TYPE_CHECKING:
    from .context.assemble import ContextPack
    from .embeddings.base import EmbeddingProvider
    from .graph.paths import CallPath, Impact
    from .rerank_providers import Reranker

__all__ = ["Engine", "IndexReport", "IndexStatus", "SearchResponse"]

T = TypeVar("T")
log = logging.getLogger("codebase_index.search")
SEARCH_MODES = ("keyword", "semantic", "hybrid")
QUERY_CACHE_SIZE = 256
# Candidates each retriever hands to fusion, at least; more when more results are asked for.
CANDIDATE_POOL = 50
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


class SearchResponse(msgspec.Struct, omit_defaults=True):
    """`strategy` says what actually ran: keyword, semantic, hybrid, hybrid-partial (vectors still
    arriving: chunks without one come from BM25 alone) or keyword-fallback (no usable vectors, or the
    provider failed on the query). `note`: one line on anything that degraded the answer and why."""

    query: str
    strategy: str
    top_k: int
    results: list[SearchResult]
    note: str | None = None


class QueryEmbeddingError(Exception):
    """The query could not be embedded (provider failed or cooling down); the message is search's note."""


def _join(*notes: str | None) -> str:
    return "; ".join(n for n in notes if n)


def _stored_path(path: str, kb_prefixes: Sequence[str]) -> str:
    """A document's path as its catalog stores it (a knowledge-base result without `kb:<label>/`)."""
    for prefix in kb_prefixes:
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def fuse(
    parsed: ParsedQuery,
    snap: KeywordSnapshot,
    keyword_hits: Sequence[Hit],
    semantic_hits: Sequence[Hit],
    config: Config,
    keyword_scores: np.ndarray | None = None,
    verbatim: bool = False,
    relation: Sequence[int] = (),
    exact: Sequence[int] = (),
    spans: Mapping[int, int] | None = None,
) -> list[Hit]:
    """THE fusion/ranking entry point of every search: candidates from both retrievers in (either list
    may be empty), final order out: fusion, then the code-aware rerank of `ranking.rank_hits`.
    `keyword_scores` (every document's keyword score) lets fusion score vector candidates that are
    outside the keyword top list; `verbatim`: a keyword candidate quotes the query (`quotes_query`)."""

    def keyword_score(docs: Sequence[int]) -> list[float]:
        assert keyword_scores is not None
        return keyword_scores[np.asarray(docs, dtype=np.int64)].tolist()

    ranked = rank_hits(
        parsed,
        snap,
        keyword_hits,
        semantic_hits,
        config.search,
        keyword_score=keyword_score if keyword_scores is not None else None,
        verbatim=verbatim,
        relation=relation,
        exact=exact,
        spans=spans,
    )
    return [Hit(d, s) for d, s in ranked]


_DOCS_BY_PATH: weakref.WeakKeyDictionary[KeywordSnapshot, tuple[int, dict[str, list[int]]]] = (
    weakref.WeakKeyDictionary()
)


def _docs_by_path(snap: KeywordSnapshot) -> dict[str, list[int]]:
    """A snapshot's live documents per path, built once per snapshot (the graph retriever's lookup)."""
    cached = _DOCS_BY_PATH.get(snap)
    if cached is None or cached[0] != len(snap.docs):
        out: dict[str, list[int]] = {}
        for doc, row in enumerate(snap.docs):
            if snap.is_live(doc):
                out.setdefault(row.path, []).append(doc)
        cached = (len(snap.docs), out)
        _DOCS_BY_PATH[snap] = cached
    return cached[1]


def _innermost(snap: KeywordSnapshot, docs: Sequence[int], line: int) -> int | None:
    """The smallest of `docs` whose lines cover `line`."""
    best: int | None = None
    best_span = 0
    for doc in docs:
        row = snap.docs[doc]
        if row.start_line <= line <= row.end_line:
            span = row.end_line - row.start_line
            if best is None or span < best_span:
                best, best_span = doc, span
    return best


class Engine:
    """Index and search one project root. Thread-safe for one writer and many readers."""

    def __init__(
        self,
        root: Path,
        config: Config | None = None,
        *,
        index_path: Path | None = None,
        workers: int | None = None,
    ) -> None:
        self.root = root.resolve()
        if not self.root.is_dir():
            raise FileNotFoundError(f"project root {root} is not a directory")
        self.config = config if config is not None else load_config(self.root)
        self.index_dir = index_path.resolve() if index_path else index_dir(self.root, self.config)
        self.workers = workers if workers is not None else max(1, min(2, os.cpu_count() or 1))
        self._store: Store | None = None
        self._snapshots: SnapshotCache | None = None
        self._graphs: GraphRefresher | None = None
        # The sidecar sets this: index() then leaves edge resolution to a background thread too (a branch
        # switch is searchable sooner); the CLI resolves before index() returns.
        self.graph_in_background = False
        self._graph_wait = True  # index(graph=False) leaves the graph pending for a later pass
        self._indexers: dict[str, Indexer] = {}  # per root: each remembers its last walk
        self._reranker: Reranker | None = None
        self.reranker_error: str | None = None
        self._provider: EmbeddingProvider | None = None
        self._provider_error: str | None = None
        self._provider_ready = False
        self._vectors: tuple[KeywordSnapshot, VectorSnapshot] | None = None
        self._vectors_lock = threading.Lock()
        self._query_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._breakers: dict[str, Breaker] = {}

    # -- lifecycle ----------------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store.open(self.index_dir)
        return self._store

    @property
    def graphs(self) -> GraphRefresher:
        """The deferred code-graph extraction and refresh of this index (see `graph.refresher`)."""
        if self._graphs is None:
            from .graph.gomod import modules_for

            self._graphs = GraphRefresher(
                self.index_dir,
                lambda: self.store,
                catalogs=self._graph_catalogs,
                go_modules=functools.partial(modules_for, self.root),
            )
        return self._graphs

    def _graph_catalogs(self) -> list[tuple[str, Path]]:
        """Catalogs whose pending graph contents are extracted, with the folder their paths are under."""
        kbs = [(kb.catalog, Path(kb.path)) for kb in self.knowledge_bases() if Path(kb.path).is_dir()]
        return [(self.branch(), self.root), *kbs]

    def finish_graph(self, progress: ProgressFn | None = None) -> tuple[ExtractReport, EdgeRefresh | None]:
        """Extract every pending content (all worker processes) and resolve the branch's edges: what
        one-shot commands wait for so their graph answers are complete."""
        # Waits for another pass holding the extraction lock, then finishes what it left.
        extracted = self.graphs.extract(workers=self.workers, progress=progress) or ExtractReport()
        return extracted, self.graphs.refresh(self.branch())

    def close(self) -> None:
        if self._graphs is not None:
            self._graphs.close()
            self._graphs = None
        if self._snapshots is not None:
            self._snapshots.close()
            self._snapshots = None
        if self._store is not None:
            self._store.close()
            self._store = None

    def has_index(self) -> bool:
        return (self.index_dir / "codebase.db").exists() and self.store.get_meta(
            "last_indexed_at"
        ) is not None

    def branch(self) -> str:
        return current_branch(self.root)

    # -- indexing -----------------------------------------------------------------------------------

    def index(
        self, *, force: bool = False, progress: ProgressFn | None = None, graph: bool = True
    ) -> IndexReport:
        """Keyword index at once; vectors come from `embed()` (the CLI waits for it, the sidecar runs it
        in the background). `force` also makes the configured embedding model the index's model.
        The code graph is extracted after the keyword write: in the background in the sidecar, before
        returning otherwise, or left pending with `graph=False` (the next graph query extracts it)."""
        # The branch is read from .git/HEAD now, before anything is written: after a checkout the
        # new branch's catalog is built under the new name, never under the old one.
        self._graph_wait = graph
        try:
            try:
                report = self.indexer(self.root).run(self.branch(), force=force, progress=progress)
            except (sqlite3.DatabaseError, StoreError) as exc:
                # A damaged database: `force` means rebuild, so it is moved aside and rebuilt from the
                # files (keeping the embeddings it can still read); otherwise say what to run.
                damage = exc.__cause__ if isinstance(exc, StoreError) else exc
                if damage is None or not repair.is_corruption(damage):
                    raise
                if not force:
                    raise StoreError(repair.damaged_message(damage)) from exc
                aside, kept, lost = repair.replace_database(self)
                log.warning("damaged index moved aside to %s (%d vectors kept, %d lost)", aside, kept, lost)
                report = self.indexer(self.root).run(self.branch(), force=force, progress=progress)
            report.knowledge_bases = self._index_knowledge_bases(force=force, progress=progress)
        finally:
            self._graph_wait = True
        if graph_enabled():
            # After the keyword write has committed: searchable first, edges next.
            if self.graph_in_background:
                self.graphs.schedule(self.branch)
            elif graph:
                # The run extracted what it chunked (no re-parse: this call waits anyway); the pass picks
                # up what earlier runs left pending (--keyword-only, a killed sidecar).
                extracted, report.graph = self.finish_graph(progress)
                report.graph_errors += extracted.errors
        if report.files_changed or report.files_removed:
            self.maybe_gc()
        self._register(report.branch)
        provider = self.embedding_provider() if force else None
        if provider is not None:
            old = self.store.get_meta(META_MODEL)
            switch_model(self.store, provider)
            if old and old != provider.model_id:
                AnnIndex.remove(self.index_dir, old)
        return report

    def _register(self, branch: str) -> None:
        """List this project in the registry of indexed repositories (`repos`); a registry that cannot
        be written costs multi-repository search this entry, never the index run."""
        from . import repos

        try:
            repos.register(self.root, self.index_dir, branch)
        except OSError as exc:
            log.warning("could not record %s in the repository registry: %s", self.root, exc)

    def indexer(self, root: Path) -> Indexer:
        """The indexer of the project or of one knowledge base, kept so no-change runs stay stat-only."""
        key = str(root)
        found = self._indexers.get(key)
        if found is None or found.store is not self.store:
            found = Indexer(root, self.config, self.store, workers=self.workers)
            self._indexers[key] = found
        # Callers that wait for the graph get it extracted in the run, from the chunker's parse; the
        # sidecar and `index --keyword-only` mark contents for the background pass instead.
        found.extract_graph = self._graph_wait and not self.graph_in_background
        return found

    def index_paths(self, paths: Sequence[str | Path], *, progress: ProgressFn | None = None) -> IndexReport:
        """Re-index just these files or folders (absolute, or relative to the project root): what the
        watcher calls on a save. Paths inside a knowledge base update that knowledge base."""
        project: list[str] = []
        per_kb: dict[str, list[str]] = {}
        kbs = self.knowledge_bases()
        for raw in paths:
            path = Path(raw) if Path(raw).is_absolute() else self.root / raw
            for kb in kbs:
                if path == Path(kb.path) or Path(kb.path) in path.parents:
                    per_kb.setdefault(kb.path, []).append(path.relative_to(kb.path).as_posix())
                    break
            else:
                if path == self.root or self.root in path.parents:
                    project.append(path.relative_to(self.root).as_posix())
        report = self.indexer(self.root).run_paths(self.branch(), project, progress=progress)
        for kb in kbs:
            if kb.path in per_kb:
                kb_report = self.indexer(Path(kb.path)).run_paths(kb.catalog, per_kb[kb.path])
                report.knowledge_bases[kb.label] = kb_report.files
        if graph_enabled() and (report.files_changed or report.files_removed or report.graph is None):
            self.graphs.schedule(self.branch)  # edges follow in the background; queries wait for them
        return report

    # -- knowledge bases, upkeep ----------------------------------------------------------------------

    def knowledge_bases(self) -> list[knowledge.KnowledgeBase]:
        store = self.store if (self.index_dir / "codebase.db").exists() else None
        return knowledge.list_knowledge_bases(self.root, self.config, store)

    def _index_knowledge_bases(self, *, force: bool, progress: ProgressFn | None) -> dict[str, int]:
        out: dict[str, int] = {}
        for kb in self.knowledge_bases():
            if not Path(kb.path).is_dir():
                out[kb.label] = 0  # gone: listed with 0 files until removed; its rows stay for GC
                continue
            out[kb.label] = self.indexer(Path(kb.path)).run(kb.catalog, force=force, progress=progress).files
        return out

    def add_knowledge_base(self, path: str) -> tuple[knowledge.KnowledgeBase, IndexReport]:
        """Register a folder and index it at once; re-adding a known one just re-indexes it."""
        store = self.store
        with store.write_lock(timeout=3.0), store.transaction():
            kb, _ = knowledge.add(self.root, self.config, store, path)
        report = self.indexer(Path(kb.path)).run(kb.catalog)
        return kb, report

    def remove_knowledge_base(self, path: str) -> knowledge.KnowledgeBase:
        store = self.store
        with store.write_lock(timeout=3.0), store.transaction():
            kb = knowledge.remove(self.root, self.config, store, path)
            store.purge_unreferenced_contents()
            store.bump_generation()
        self._indexers.pop(kb.path, None)
        return kb

    def gc(self) -> upkeep.GcReport:
        """Drop stale branches, removed knowledge bases, orphaned contents and embeddings."""
        return upkeep.collect_garbage(self.root, self.config, self.store)

    def maybe_gc(self) -> upkeep.GcReport | None:
        """Run `gc()` when the `indexing.autoGc` policy says it is due."""
        if upkeep.auto_gc_due(self.root, self.config, self.store):
            return self.gc()
        return None

    def estimate(self, *, force: bool = False) -> upkeep.Estimate:
        """Files, chunks, tokens and embedding cost per provider of an index run, doing none of it."""
        store = self.store if self.has_index() else None
        return upkeep.estimate(self.root, self.config, store, self.branch(), force=force)

    # -- embeddings ---------------------------------------------------------------------------------

    def embedding_provider(self) -> EmbeddingProvider | None:
        """The configured provider, built once; None (with `embedding_error()`) when none is usable."""
        if not self._provider_ready:
            from .embeddings.base import EmbeddingError

            try:
                self._provider = shared_provider(self.config)  # one per process per setup
                if self._provider is None:
                    self._provider_error = "no embedding provider available (keyword search only)"
            except EmbeddingError as exc:
                self._provider_error = str(exc)
            self._provider_ready = True
        return self._provider

    def embedding_error(self) -> str | None:
        self.embedding_provider()
        return self._provider_error

    def embed(
        self,
        *,
        progress: EmbedProgressFn | None = None,
        stop: threading.Event | None = None,
        wait_for_lock: bool = True,
    ) -> EmbedReport | None:
        """Embed the current branch's pending chunks (committed batch by batch) and bring the ANN index
        up to date; None when no provider is usable. Raises EmbeddingMismatchError on a model change."""
        provider = self.embedding_provider()
        if provider is None:
            return None
        job = EmbeddingJob(self.index_dir, self.embedding_catalogs(), provider, stop=stop)
        report = job.run(progress, wait_for_lock=wait_for_lock)
        if not report.cancelled and report.error is None:
            count = self.store.conn.execute(
                "SELECT COUNT(*) FROM embeddings WHERE model_id = ?", (provider.model_id,)
            ).fetchone()[0]
            if count >= self.ann_threshold():
                AnnIndex.sync(self.store, self.index_dir, provider.model_id, provider.dimensions)
        return report

    def embedding_catalogs(self, branch: str | None = None) -> list[str]:
        """What the embedding job covers, in order: the branch, then each knowledge base (search covers
        both, so semantic and hybrid results include knowledge-base chunks once they are embedded)."""
        return [branch or self.branch(), *(kb.catalog for kb in self.knowledge_bases())]

    def ann_threshold(self) -> int:
        from . import vectors

        return vectors.ANN_THRESHOLD

    def query_vector(self, text: str) -> np.ndarray:
        """The query's embedding, cached per text (agents repeat and refine queries). Raises
        QueryEmbeddingError (its message is the note search shows) when the provider fails, within the
        remote query budget (`search.queryEmbeddingTimeoutMs`, one try), or is cooling down after failing."""
        provider = self.embedding_provider()
        if provider is None:
            raise StoreError(self._provider_error or "no embedding provider")
        key = (provider.model_id, text)
        cached = self._query_vectors.get(key)
        if cached is not None:
            self._query_vectors.move_to_end(key)
            return cached
        breaker = self._breaker(QUERY_EMBEDDING)
        endpoint = self._provider_endpoint(provider)
        blocked = breaker.allow(endpoint)
        if blocked is not None:
            raise QueryEmbeddingError(f"keyword results only: the embedding provider {cooling_down(blocked)}")
        try:
            vector = provider.embed_query(text)
        except Exception as exc:  # a dead, slow or misconfigured provider never fails the search
            error = str(exc) if isinstance(exc, EmbeddingError) else f"{type(exc).__name__}: {exc}"
            health = breaker.failure(endpoint, error)
            log.warning("query embedding failed (%d in a row), keyword results: %s", health.failures, error)
            note = f"keyword results only: the embedding provider failed ({error})"
            raise QueryEmbeddingError(note) from None
        breaker.success(endpoint)
        self._query_vectors[key] = vector
        while len(self._query_vectors) > QUERY_CACHE_SIZE:
            self._query_vectors.popitem(last=False)
        return vector

    def _breaker(self, name: str) -> Breaker:
        found = self._breakers.get(name)
        if found is None:
            found = self._breakers[name] = Breaker(self.index_dir, name)
        return found

    @staticmethod
    def _provider_endpoint(provider: EmbeddingProvider) -> str:
        """Identity of the configured provider for the breaker: another URL or key starts afresh."""
        settings = getattr(provider, "settings", None)
        return endpoint_key(
            provider.model_id, getattr(settings, "base_url", ""), getattr(settings, "api_key", "")
        )

    def dependency_health(self) -> list[DependencyHealth]:
        """The last recorded failure of each search-time dependency (query embedding, reranker)."""
        return list(read_all(self.index_dir / STATE_FILE).values())

    def vector_snapshot(self, snap: KeywordSnapshot | None = None) -> VectorSnapshot | None:
        """Vectors of the current keyword snapshot's documents, topped up with embeddings committed since
        the last call; None without a provider. Raises EmbeddingMismatchError on a model change."""
        provider = self.embedding_provider()
        if provider is None:
            return None
        snap = snap or self.snapshot()
        with self._vectors_lock:
            cached = self._vectors
            if cached is not None and cached[0] is snap and cached[1].model_id == provider.model_id:
                vecs = cached[1]
            else:
                check_model(self.store, provider, record=False)
                ids = [d.chunk_id for d in snap.docs]
                hashes = self._chunk_hashes(ids)
                # Tombstoned documents of an overlay snapshot get no vector (their chunks may be gone).
                prefixes = self._kb_prefixes()
                live = [
                    self._embedding_key(d, hashes[d.chunk_id], prefixes)
                    if snap.is_live(n) and d.chunk_id in hashes
                    else ""
                    for n, d in enumerate(snap.docs)
                ]
                vecs = VectorSnapshot(live, provider.dimensions, provider.model_id)
                self._vectors = (snap, vecs)
            if len(snap.docs) >= self.ann_threshold():
                vecs.reload_ann(self.index_dir)  # one stat unless the embedding side saved a new file
            vecs.refresh(self.store)
            return vecs

    def repair(
        self,
        *,
        full: bool = True,
        before_rebuild: Callable[[], None] | None = None,
        progress: ProgressFn | None = None,
    ) -> repair.RepairReport:
        """Check the index (SQLite pages, files without chunks, chunks without a file, vectors) and repair
        it, rebuilding from the files around the readable embeddings when the pages are damaged."""
        return repair.run(self, full=full, before_rebuild=before_rebuild, progress=progress)

    def verify_vectors(self, *, sample: int = 64) -> VectorCheck | None:
        """Check the index model's vectors (SQLite rows, the ANN file) and repair what disagrees, without
        re-embedding or loading any model; None when nothing was ever embedded here."""
        from .embedder import META_DIMENSIONS
        from .vectors import verify_vectors

        if not (self.index_dir / "codebase.db").exists():
            return None
        model = self.store.get_meta(META_MODEL)
        dims = self.store.get_meta(META_DIMENSIONS)
        if model is None or dims is None:
            return None
        return verify_vectors(
            self.store, self.index_dir, model, int(dims), threshold=self.ann_threshold(), sample=sample
        )

    @staticmethod
    def _embedding_key(doc: DocRow, chunk_hash: str, kb_prefixes: Sequence[str]) -> str:
        """The embedding cache key of a snapshot document (`embedder.embedding_key`); the header names the
        stored path, so knowledge-base documents drop their `kb:<label>/` display prefix."""
        if not embedder.EMBED_HEADER:
            return chunk_hash
        path = _stored_path(doc.path, kb_prefixes)
        return embedder.embedding_key(path, doc.symbol, doc.kind, chunk_hash)

    def _kb_prefixes(self) -> list[str]:
        """Display prefixes (`kb:<label>/`) of the knowledge bases, longest first."""
        if not embedder.EMBED_HEADER:
            return []
        return sorted(
            (knowledge.display_path(kb, "") for kb in self.knowledge_bases()), key=len, reverse=True
        )

    def _chunk_hashes(self, chunk_ids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        unique = list(dict.fromkeys(chunk_ids))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            marks = ",".join("?" * len(part))
            out.update(
                self.store.conn.execute(f"SELECT id, chunk_hash FROM chunks WHERE id IN ({marks})", part)
            )
        return out

    # -- searching ----------------------------------------------------------------------------------

    def snapshot(self) -> KeywordSnapshot:
        """The in-memory keyword index for the current branch: cached per store generation, refreshed
        after a change by overlaying the changed files on a base (see `snapshots.SnapshotCache`)."""
        store = self.store
        branch = self.branch()
        generation = store.generation()
        if self._snapshots is None:
            bm25 = self.config.search.bm25
            self._snapshots = SnapshotCache(self.index_dir, k1=bm25.k1, b=bm25.b)

        def sources() -> list[Source]:
            kbs: list[Source] = [
                (kb.catalog, functools.partial(knowledge.display_path, kb)) for kb in self.knowledge_bases()
            ]
            return [(branch, None), *kbs]

        return self._snapshots.get(branch, generation, sources)

    def search(
        self, query: str, *, top_k: int = 10, filters: Filters | None = None, mode: str | None = None
    ) -> SearchResponse:
        """`mode` None means hybrid when vectors exist for the active model, else keyword. A provider
        that fails (or cools down after failing) while embedding the query, in any mode, gives keyword
        results (`keyword-fallback`) with a note naming the cause; a failing reranker keeps the
        deterministic order."""
        if mode is not None and mode not in SEARCH_MODES:
            raise ValueError(f"unknown search mode {mode!r}; available: {', '.join(SEARCH_MODES)}")
        snap = self.snapshot()
        parsed = parse_query(query)
        mask = snap.candidate_mask(filters or Filters())
        pool = max(CANDIDATE_POOL, top_k * 3, self.config.search.rerank_top_n)
        keyword_hits: list[Hit] = []
        keyword_scores: np.ndarray | None = None  # every document's, for fusion (see ranking.fusion)
        if mode != "semantic":
            keyword_scores, keyword_hits = self._keyword_candidates(parsed, snap, mask, pool)
        relation = self._relation_candidates(parsed, snap, mask)
        texts = self._head_texts(parsed, snap, keyword_hits)
        exact = exact_matches(parsed, texts.items()) if is_quotation(parsed) else []
        spans = verbatim_spans(parsed, texts.items()) if may_hold_message(parsed) else {}

        def keyword_only(strategy: str, note: str = "") -> SearchResponse:
            hits = keyword_hits
            if mode == "semantic":  # a semantic search whose query could not be embedded
                hits = self._keyword_candidates(parsed, snap, mask, pool)[1]
            ranked, rerank_note = self._external_rerank(
                query,
                snap,
                fuse(parsed, snap, hits, [], self.config, relation=relation, exact=exact, spans=spans),
            )
            return self._response(query, strategy, top_k, snap, ranked[:top_k], _join(note, rerank_note))

        if mode == "keyword":
            return keyword_only("keyword")
        vecs, note = self._usable_vectors(snap, required=mode == "semantic")
        if vecs is None:
            return keyword_only("keyword-fallback", note)
        try:
            query_vector = self.query_vector(query)
        except QueryEmbeddingError as exc:
            return keyword_only("keyword-fallback", str(exc))
        semantic_hits = vecs.semantic_hits(query_vector, pool, mask)
        if mode == "semantic":
            ranked, rerank_note = self._external_rerank(
                query, snap, fuse(parsed, snap, [], semantic_hits, self.config)
            )
            return self._response(query, "semantic", top_k, snap, ranked[:top_k], rerank_note)
        verbatim = self._quotes_query(parsed, snap, texts)
        fused, rerank_note = self._external_rerank(
            query,
            snap,
            fuse(
                parsed,
                snap,
                keyword_hits,
                semantic_hits,
                self.config,
                keyword_scores,
                verbatim,
                relation=relation,
                exact=exact,
                spans=spans,
            ),
        )
        strategy = "hybrid" if len(vecs) >= len(snap) else "hybrid-partial"
        return self._response(query, strategy, top_k, snap, fused[:top_k], rerank_note)

    def _keyword_candidates(
        self, parsed: ParsedQuery, snap: KeywordSnapshot, mask: np.ndarray | None, pool: int
    ) -> tuple[np.ndarray | None, list[Hit]]:
        """The keyword retriever: every document's BM25 score over the chunk text, symbol and path
        fields for the parsed query's weighted terms, and its best `pool` hits."""
        terms, term_weights = list(parsed.terms), list(parsed.term_weights)
        ids = self.store.term_ids(terms)
        term_ids = [ids[t] for t in terms if t in ids]
        id_weights = [w for t, w in zip(terms, term_weights, strict=True) if t in ids]
        if not terms or not len(snap.docs):
            return None, []
        scores = snap.enriched_scores(terms, term_ids, FieldWeights(), mask, term_weights, id_weights)
        return scores, [Hit(d, s) for d, s in top_hits(scores, pool)]

    def _relation_candidates(
        self, parsed: ParsedQuery, snap: KeywordSnapshot, mask: np.ndarray | None
    ) -> list[int]:
        """The code-graph retriever: for a relation question ("who calls X", "what does X call", "where
        is X used") the chunks holding the answer (each call site's enclosing chunk for callers and
        references, each callee's definition for callees), resolved calls first, then calls matched by
        name only. Empty for other queries, without a graph, or when the graph cannot be read."""
        rel = parsed.relation
        if rel is None:
            return []
        direction = "callees" if rel.kind == "callees" else "callers"
        try:
            graph = self.call_graph(rel.name, direction=direction, include_name_matches=True, limit=60)
        except Exception:  # a graph that cannot answer leaves the other retrievers' answer as it is
            return []
        if direction == "callers":
            sites = [(e.caller_path, e.line) for e in [*graph.edges, *graph.name_matches]]
        else:
            sites = [(e.callee_path, e.callee_line) for e in [*graph.edges, *graph.name_matches]]
        by_path = _docs_by_path(snap)
        out: list[int] = []
        for path, line in sites:
            doc = _innermost(snap, by_path.get(path, ()), line)
            if doc is not None and (mask is None or mask[doc]) and doc not in out:
                out.append(doc)
        return out

    def _head_texts(
        self, parsed: ParsedQuery, snap: KeywordSnapshot, keyword_hits: Sequence[Hit]
    ) -> dict[int, str]:
        """The texts of the best keyword candidates (the exact-text retriever's evidence), read only for a
        query some literal check applies to (`exact_matches`, `verbatim_spans`, `_quotes_query`): three or
        more words or pasted code, and quoted, pasted or a possible message. Descriptions read nothing."""
        if len(parsed.plain_words) < VERBATIM_MIN_WORDS and not parsed.code_like:
            return {}
        if not (is_quotation(parsed) or may_hold_message(parsed) or may_quote(parsed)):
            return {}
        docs = [h.doc for h in keyword_hits[:MESSAGE_CANDIDATES]]
        texts = self._chunk_texts([snap.docs[d].chunk_id for d in docs])
        return {d: texts.get(snap.docs[d].chunk_id, "") for d in docs}

    def _quotes_query(self, parsed: ParsedQuery, snap: KeywordSnapshot, texts: dict[int, str]) -> bool:
        """Whether one of the best keyword candidates holds the query verbatim (`ranking.quotes_query`):
        hybrid fusion then leans on keywords as for pasted code."""
        if not may_quote(parsed):
            return False
        best = list(texts.items())[:VERBATIM_CANDIDATES]
        return quotes_query(parsed, ((snap.docs[d].path, text) for d, text in best))

    def _external_rerank(self, query: str, snap: KeywordSnapshot, hits: list[Hit]) -> tuple[list[Hit], str]:
        """Let the configured rerank API reorder the head of the deterministic order; on ANY failure
        (no key, network, timeout, bad answer) keep the deterministic order, remember and log why, and
        return the note to show. A reranker that keeps failing is skipped for a cool-down."""
        cfg = self.config.reranker
        if not cfg.enabled or not hits:
            return hits, ""
        from .rerank_providers import RerankError, RerankSettings, create_reranker

        breaker = self._breaker(RERANKER)
        endpoint = endpoint_key(cfg.provider, cfg.model, cfg.base_url, cfg.api_key)
        blocked = breaker.allow(endpoint)
        if blocked is not None:
            self.reranker_error = blocked.error
            return hits, f"reranker skipped: it {cooling_down(blocked)}; results in the built-in order"
        top_n = min(cfg.top_n, len(hits))
        try:
            if self._reranker is None:
                self._reranker = create_reranker(
                    RerankSettings(
                        provider=cfg.provider,
                        model=cfg.model,
                        api_key=cfg.api_key,
                        base_url=cfg.base_url,
                        top_n=cfg.top_n,
                        timeout_ms=cfg.timeout_ms,
                    )
                )
            ids = [snap.docs[h.doc].chunk_id for h in hits[:top_n]]
            texts = self._chunk_texts(ids)
            documents = [
                f"{snap.docs[h.doc].path}\n{texts.get(i, '')}" for h, i in zip(hits, ids, strict=False)
            ]
            answer = self._reranker.rerank(query, documents, top_n)
            merged = [Hit(d, s) for d, s in merge_external(hits, answer, top_n)]
        except Exception as exc:  # any failure means: keep the deterministic order
            error = str(exc) if isinstance(exc, (RerankError, ValueError)) else f"{type(exc).__name__}: {exc}"
            self.reranker_error = error
            health = breaker.failure(endpoint, error)
            log.warning("reranker failed (%d in a row), built-in order kept: %s", health.failures, error)
            return hits, f"reranker failed ({error}); results in the built-in order"
        self.reranker_error = None
        breaker.success(endpoint)
        return merged, ""

    def _usable_vectors(self, snap: KeywordSnapshot, *, required: bool) -> tuple[VectorSnapshot | None, str]:
        """The vector snapshot if it holds any vector, else None and why; `required` raises instead."""
        try:
            vecs = self.vector_snapshot(snap)
        except EmbeddingMismatchError as exc:
            if required:
                raise
            return None, str(exc)
        if vecs is None:
            reason = self.embedding_error() or "no embedding provider"
        elif len(vecs) == 0:
            reason = "no embeddings yet for this branch (they are computed after indexing)"
            failed = self.store.conn.execute(
                "SELECT error FROM embedding_failures WHERE model_id = ? ORDER BY last_attempt DESC LIMIT 1",
                (vecs.model_id,),
            ).fetchone()
            if failed is not None:
                reason = f"no embeddings yet: embedding failed ({failed[0]}); retried on the next index run"
        else:
            return vecs, ""
        if required:
            raise StoreError(f"semantic search is unavailable: {reason}")
        return None, reason

    def similar(
        self,
        *,
        snippet: str | None = None,
        at: tuple[str, int] | None = None,
        top_k: int = 10,
        filters: Filters | None = None,
    ) -> SearchResponse:
        """Chunks nearest in meaning to a code snippet or to the chunk at (path, line), never the source.

        For a snippet, chunks whose text is exactly the snippet count as the source."""
        if (snippet is None) == (at is None):
            raise ValueError("give either a code snippet or a path:line location, not both")
        snap = self.snapshot()
        vecs, note = self._usable_vectors(snap, required=True)
        assert vecs is not None
        provider = self.embedding_provider()
        assert provider is not None
        if at is not None:
            source = self.doc_at(snap, *at)
            vector = vecs.vector_of(source)
            if vector is None:
                row = snap.docs[source]
                text = self._chunk_texts([row.chunk_id]).get(row.chunk_id, "")
                path = _stored_path(row.path, self._kb_prefixes())
                text = embedder.embedding_text(path, row.symbol, row.kind, text)
                vector = provider.embed_documents([text])[0]

            def exclude(doc: int) -> bool:
                return doc == source

            label = f"{at[0]}:{at[1]}"
        else:
            assert snippet is not None
            if not snippet.strip():
                raise ValueError("the code snippet is empty")
            vector = provider.embed_documents([snippet])[0]
            from .indexer import chunk_hash

            target = chunk_hash(snippet)
            hashes = self._chunk_hashes([d.chunk_id for d in snap.docs])
            same = {cid for cid, h in hashes.items() if h == target}

            def exclude(doc: int) -> bool:
                return snap.docs[doc].chunk_id in same

            label = snippet if len(snippet) <= 80 else snippet[:77] + "..."
        mask = snap.candidate_mask(filters or Filters())
        hits = vecs.semantic_hits(vector, top_k, mask, exclude=exclude)
        return self._response(label, "similar", top_k, snap, hits, note or None)

    def doc_at(self, snap: KeywordSnapshot, path: str, line: int) -> int:
        """The innermost chunk of `path` covering `line` (1-based); ValueError naming what is missing."""
        wanted = path.replace("\\", "/").removeprefix("./")
        best: int | None = None
        seen_path = False
        for doc, row in enumerate(snap.docs):
            if row.path != wanted or not snap.is_live(doc):
                continue
            seen_path = True
            span = row.end_line - row.start_line
            if row.start_line <= line <= row.end_line and (
                best is None or span < snap.docs[best].end_line - snap.docs[best].start_line
            ):
                best = doc
        if best is None:
            if not seen_path:
                raise ValueError(f"{wanted} is not in the index (check the path, relative to the root)")
            raise ValueError(f"no chunk of {wanted} covers line {line}")
        return best

    def _response(
        self,
        query: str,
        strategy: str,
        top_k: int,
        snap: KeywordSnapshot,
        hits: Sequence[Hit],
        note: str | None = None,
    ) -> SearchResponse:
        return SearchResponse(
            query=query,
            strategy=strategy,
            top_k=top_k,
            results=self._results(snap, [(h.doc, h.score) for h in hits]),
            note=note or None,
        )

    def _results(self, snap: KeywordSnapshot, hits: Sequence[tuple[int, float]]) -> list[SearchResult]:
        docs = [snap.docs[doc] for doc, _ in hits]
        texts = self._chunk_texts([d.chunk_id for d in docs])
        results = []
        for doc, (_, score) in zip(docs, hits, strict=True):
            text = texts.get(doc.chunk_id, "")
            results.append(
                SearchResult(
                    id=doc.chunk_id,
                    score=round(score, 6),
                    path=doc.path,
                    start_line=doc.start_line,
                    end_line=doc.end_line,
                    kind=doc.kind,
                    symbol=doc.symbol,
                    language=doc.language,
                    chunk=doc.ordinal,
                    preview=preview(text),
                    content=text,
                )
            )
        return results

    def _chunk_texts(self, chunk_ids: Sequence[int]) -> dict[int, str]:
        if not chunk_ids:
            return {}
        marks = ",".join("?" * len(chunk_ids))
        rows = self.store.conn.execute(f"SELECT id, text FROM chunks WHERE id IN ({marks})", list(chunk_ids))
        return dict(rows)

    # -- status -------------------------------------------------------------------------------------

    def status(self) -> IndexStatus:
        branch = self.branch()
        exists = (self.index_dir / "codebase.db").exists()
        if not exists:
            return IndexStatus(
                root=str(self.root),
                index_dir=str(self.index_dir),
                branch=branch,
                indexed=False,
                files=0,
                chunks=0,
                vocabulary=0,
                skipped={},
                size_bytes=0,
                last_indexed_at=None,
            )
        store = self.store
        counts = store.counts(branch)
        skipped = store.skipped(branch)
        last = store.get_meta("last_indexed_at")
        provider = self.embedding_provider()
        model = provider.model_id if provider is not None else store.get_meta(META_MODEL)
        catalogs = self.embedding_catalogs(branch)
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
            error=self._provider_error,
            last_failure=last_failure,
            rebuild_needed=model_mismatch(store, provider) if provider is not None else None,
            endpoint=provider_endpoint(provider) if provider is not None else None,
            backend=getattr(provider, "backend", None),
            backend_note=getattr(provider, "backend_note", None),
        )
        graph = None
        if graph_enabled():
            graph = GraphStatus(
                **GraphStore(store.conn).extraction_counts(branch),
                building=self.graphs.busy() or extraction_running(self.index_dir),
                errors=self.graphs.extract_errors,
            )
        return IndexStatus(
            root=str(self.root),
            index_dir=str(self.index_dir),
            branch=branch,
            indexed=last is not None,
            files=counts["files"],
            chunks=counts["chunks"],
            vocabulary=counts["vocabulary"],
            skipped=dict(Counter(s.reason for s in skipped)),
            errors=([s for s in skipped if s.reason == "error"] + problems.load(store, branch))[
                :STATUS_ERRORS
            ],
            size_bytes=store.size_on_disk(),
            last_indexed_at=float(last) if last else None,
            embeddings=embeddings,
            graph=graph,
            dependencies=self.dependency_health(),
        )

    def skipped_files(self) -> list[SkippedRow]:
        return self.store.skipped(self.branch())

    def problem_files(self) -> list[SkippedRow]:
        """Indexed files the last runs met a contained failure in (problems.REASONS)."""
        return problems.load(self.store, self.branch())

    # -- code graph ---------------------------------------------------------------------------------

    def call_graph(
        self,
        target: str,
        *,
        direction: str = "callers",
        depth: int = 1,
        include_name_matches: bool = False,
        limit: int = 100,
    ) -> CallGraph:
        """Callers or callees of a symbol (name, `Class.method` or `path#qualified` id) on this branch."""
        from .graph.query import call_graph  # validates direction and depth

        branch = self.branch()
        found, notice = self._graph_read(
            branch,
            lambda graphs: call_graph(
                graphs,
                branch,
                target,
                direction="callers" if direction == "callers" else "callees",
                depth=depth,
                include_name_matches=include_name_matches,
                limit=limit,
            ),
        )
        found.incomplete = notice
        return found

    def _graph_read(self, branch: str, query: Callable[[GraphStore], T]) -> tuple[T, str | None]:
        """Graph answers come from one state whose edges match its files (refreshed first if a save
        left them behind); with the graph disabled, from whatever is stored. While contents wait for
        extraction, from what is there, with the notice that says how incomplete it is."""
        if not graph_enabled():
            return query(GraphStore(self.store.conn)), None
        if not GraphStore(self.store.conn).has_pending(branch):
            return self.graphs.read(branch, query), None
        counts = GraphStore(self.store.conn).extraction_counts(branch)
        # A few saved files: extracting them here costs milliseconds and makes the answer complete.
        few = 0 < counts["pending"] - counts["unavailable"] <= INLINE_MAX_FILES
        if few and self.graphs.extract(workers=0, wait=False) is not None:
            counts = GraphStore(self.store.conn).extraction_counts(branch)
        if not counts["pending"]:
            return self.graphs.read(branch, query), None
        # Extraction still running (or never finished: a killed run): answer from what is there, say so.
        if counts["pending"] > counts["unavailable"]:
            self.graphs.schedule(self.branch)
        return self.graphs.read_as_is(branch, query), incomplete_notice(counts)

    def call_path(self, source: str, target: str) -> CallPath:
        """The shortest chain of resolved calls between two symbols (see `graph.paths.call_path`)."""
        from .graph.paths import call_path

        branch = self.branch()
        found, notice = self._graph_read(branch, lambda graphs: call_path(graphs, branch, source, target))
        found.incomplete = notice
        return found

    def impact(self, diff: str | None = None, *, depth: int = 2) -> Impact:
        """What a change reaches: `diff` is a git range (`main..HEAD`, `HEAD~3..HEAD`), one revision
        (its diff to the working tree) or None (uncommitted changes vs HEAD). Line numbers are matched
        against the index, which is the working tree: index first when files changed since."""
        from .changes import changed_lines
        from .graph.paths import impact

        spec = (diff or "HEAD").strip()
        since, dots, until = spec.partition("..")
        changes = changed_lines(self.root, since or "HEAD", until.lstrip(".") or None if dots else None)
        branch = self.branch()
        found, notice = self._graph_read(
            branch,
            lambda graphs: impact(
                graphs, branch, changes.lines, range_=diff or "", base=changes.base, depth=depth
            ),
        )
        found.incomplete = notice
        return found

    def implementation_lookup(self, query: str, *, limit: int = 5) -> ImplementationLookup:
        """Where something is really implemented: definitions first, then search (not tests/docs/stubs)."""
        from .graph.query import implementation_lookup

        def search(q: str, top_k: int) -> list[SearchResult]:
            return self.search(q, top_k=top_k).results

        branch = self.branch()
        found, notice = self._graph_read(
            branch,
            lambda graphs: implementation_lookup(
                graphs, branch, query, search=search, read=self._read_lines, limit=limit
            ),
        )
        found.incomplete = notice
        return found

    def _read_lines(self, path: str, start: int, end: int) -> str | None:
        """Lines start..end of a project file as it is on disk now (None when it is gone or unreadable)."""
        try:
            with open(self.root / path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:
            return None
        return "\n".join(lines[start - 1 : end])

    # -- evidence packs -----------------------------------------------------------------------------

    def definitions(self, name: str, *, limit: int = 5) -> list[DefinitionRow]:
        """Definitions named `name` (a name, `Class.method`, `path#qualified`), implementation first."""
        from .graph.query import caller_counts, rank_definitions

        branch = self.branch()

        def query(graphs: GraphStore) -> list[DefinitionRow]:
            defs = graphs.definitions(branch, name.strip())
            return rank_definitions(defs, name, caller_counts(graphs, branch, defs[:50]))[:limit]

        found, _ = self._graph_read(branch, query)
        return found

    def definitions_in(self, path: str) -> list[DefinitionRow]:
        """Every definition of one file on this branch, in line order."""
        branch = self.branch()
        found, _ = self._graph_read(branch, lambda graphs: graphs.definitions_in(branch, path))
        return found

    def edit_context(self, target: str, *, max_tokens: int = 1500) -> ContextPack:
        """Evidence before editing `target` (see `context.edit`)."""
        from .context.edit import build_edit_context

        return build_edit_context(self, target, max_tokens=max_tokens)

    def file_lines(self, path: str) -> list[str] | None:
        """A project file's lines as on disk now (None for knowledge-base paths, gone or unreadable)."""
        if path.startswith("kb:"):
            return None
        try:
            with open(self.root / path, encoding="utf-8", errors="replace") as handle:
                return handle.read().splitlines()
        except OSError:
            return None

    def context(
        self,
        query: str,
        *,
        max_tokens: int = 1500,
        filters: Filters | None = None,
        allow: Callable[[str, int, int], bool] | None = None,
        search: Callable[[str, int, Filters], SearchResponse] | None = None,
        own_repo: str | None = None,
    ) -> ContextPack:
        """A token-budgeted evidence pack for `query` (see `context.assemble`); `search` replaces the
        search step (a multi-repository search), `own_repo` names this repository among its results."""
        from .context.assemble import build_context

        return build_context(
            self, query, max_tokens=max_tokens, filters=filters, allow=allow, search=search, own_repo=own_repo
        )
