"""The engine: the one place that knows every stage and wires discover -> chunk -> tokenize -> store ->
retrieve -> format. The CLI, the JSON-RPC sidecar and the MCP server all talk to `Engine`.

`Engine` holds the state (store, snapshots, graph refresher, provider, caches) and runs indexing and
upkeep itself; searching, the vector side, status and graph reads are wired in the modules beside it
(`retrieval`, `embedding`, `status`, `graph_reads`), which take the engine as their first argument.
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import knowledge, problems, repair, upkeep
from ..config import Config, index_dir, load_config_report
from ..embedder import META_MODEL, EmbedProgressFn, EmbedReport, switch_model
from ..files import read_inside
from ..git import BranchReader
from ..graph.extractor import ExtractReport
from ..graph.refresher import GraphRefresher
from ..graph.store import EdgeRefresh
from ..indexer import Indexer, IndexReport, ProgressFn
from ..processing import graph_enabled
from ..resilience import STATE_FILE, Breaker, DependencyHealth, read_all
from ..search import Filters, KeywordSnapshot
from ..snapshots import SnapshotCache, Source
from ..store import SkippedRow, Store, StoreError
from ..vectors import AnnIndex, VectorCheck, VectorSnapshot
from . import embedding, graph_reads, retrieval, status
from .retrieval import SearchResponse
from .status import IndexStatus

if TYPE_CHECKING:
    from ..context.assemble import ContextPack
    from ..embeddings.base import EmbeddingProvider
    from ..graph.paths import CallPath, Impact
    from ..graph.query import CallGraph, ImplementationLookup
    from ..graph.store import DefinitionRow
    from ..rerank_providers import Reranker

log = logging.getLogger("codebase_index.search")


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
        self._branch_reader = BranchReader(self.root)
        # Settings an untrusted project file asked for and did not get (config.withhold_untrusted): said
        # in status, index output and tool answers. A config passed in is the caller's own.
        self.config_notice: str | None = None
        if config is None:
            loaded = load_config_report(self.root)
            config, self.config_notice = loaded.config, loaded.notice()
        self.config = config
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
        # An index MiniLM embedded keeps MiniLM until `index(force=True)` (embedding.stored_model_kept);
        # `model_note` says so in status.
        self.keep_stored_model = True
        self.model_note: str | None = None
        self._vectors: tuple[KeywordSnapshot, VectorSnapshot] | None = None
        self._vectors_lock = threading.Lock()
        self._query_vectors: OrderedDict[tuple[str, str], np.ndarray] = OrderedDict()
        self._query_vectors_lock = threading.Lock()
        self._search_executor: ThreadPoolExecutor | None = None  # `embedding.beside`
        self._breakers: dict[str, Breaker] = {}
        self._changed: set[str] = set()  # paths `file_lines` found changed on disk (`take_changed`)
        self._changed_lock = threading.Lock()

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
            from ..graph.gomod import modules_for

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
        if self._search_executor is not None:
            self._search_executor.shutdown(wait=True)
            self._search_executor = None
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
        return self._branch_reader()

    # -- indexing -----------------------------------------------------------------------------------

    def index(
        self,
        *,
        force: bool = False,
        progress: ProgressFn | None = None,
        graph: bool = True,
        embed: bool = True,
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
                indexer = self.indexer(self.root, embed=embed)
                report = indexer.run(self.branch(), force=force, progress=progress)
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
                indexer = self.indexer(self.root, embed=embed)
                report = indexer.run(self.branch(), force=force, progress=progress)
            report.knowledge_bases = self._index_knowledge_bases(force=force, progress=progress, embed=embed)
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
        if force and self.keep_stored_model:
            self.keep_stored_model = False  # the configured (default) model from now on
            if self.model_note is not None:  # the provider built was the stored model's
                self._provider_ready = False
        provider = self.embedding_provider() if force else None
        if provider is not None:
            old = self.store.get_meta(META_MODEL)
            switch_model(self.store, provider)
            if old and old != provider.model_id:
                AnnIndex.remove(self.index_dir, old)
        if embed:
            report.embedded = self._embed_inline(progress, report.embedded)
        return report

    def _embed_inline(self, progress: ProgressFn | None, in_pass: int = 0) -> int:
        """Embed what an index pass wrote, in the pass, when the model is in-process and cheap enough
        (`inline` on the provider: the static code model): the index is hybrid-ready when the pass
        returns and never partly embedded. Slower models (MiniLM, remote APIs) embed in the background
        job instead. Vectors of an earlier static model release were replaced before the run
        (`embedding.pass_embedding`); any other model mismatch is left to `status` (rebuild needed) and
        the background job. `in_pass`: chunks the index pass embedded already (beside chunking); returns
        those plus what this embeds."""
        if not embedding.embeds_inline(self):
            return in_pass
        provider = self.embedding_provider()
        if provider is None or not getattr(provider, "inline", False):
            return in_pass
        try:
            # The ANN index (above ANN_THRESHOLD vectors) is only a query accelerator: search is exact
            # without it, so its build is left to the background round after the pass (the sidecar)
            # or to `sync_ann_index` (the CLI), not counted as part of becoming hybrid-ready.
            done = self.embed(
                progress=(lambda d, t: progress("embed", in_pass + d, in_pass + t)) if progress else None,
                sync_ann=False,
            )
        except StoreError as exc:  # EmbeddingMismatchError: the index holds another model's vectors
            log.info("inline embedding skipped: %s", exc)
            return in_pass
        embedded = in_pass + (done.embedded if done is not None else 0)
        if progress is not None and embedded:
            progress("embed", embedded, embedded)
        return embedded

    def _register(self, branch: str) -> None:
        """List this project in the registry of indexed repositories (`repos`); a registry that cannot
        be written costs multi-repository search this entry, never the index run."""
        from .. import repos

        try:
            repos.register(self.root, self.index_dir, branch)
        except OSError as exc:
            log.warning("could not record %s in the repository registry: %s", self.root, exc)

    def indexer(self, root: Path, *, embed: bool = False) -> Indexer:
        """The indexer of the project or of one knowledge base, kept so no-change runs stay stat-only;
        `embed`: its runs embed with the static model beside chunking where that is the index's model."""
        key = str(root)
        found = self._indexers.get(key)
        if found is None or found.store is not self.store:
            found = Indexer(root, self.config, self.store, workers=self.workers)
            self._indexers[key] = found
        # Callers that wait for the graph get it extracted in the run, from the chunker's parse; the
        # sidecar and `index --keyword-only` mark contents for the background pass instead.
        found.extract_graph = self._graph_wait and not self.graph_in_background
        found.pass_embedding = embedding.pass_embedding(self) if embed else None
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
        report = self.indexer(self.root, embed=True).run_paths(self.branch(), project, progress=progress)
        for kb in kbs:
            if kb.path in per_kb:
                kb_report = self.indexer(Path(kb.path), embed=True).run_paths(kb.catalog, per_kb[kb.path])
                report.knowledge_bases[kb.label] = kb_report.files
        if graph_enabled() and (report.files_changed or report.files_removed or report.graph is None):
            self.graphs.schedule(self.branch)  # edges follow in the background; queries wait for them
        report.embedded = self._embed_inline(progress, report.embedded)
        return report

    # -- knowledge bases, upkeep ----------------------------------------------------------------------

    def knowledge_bases(self) -> list[knowledge.KnowledgeBase]:
        store = self.store if (self.index_dir / "codebase.db").exists() else None
        return knowledge.list_knowledge_bases(self.root, self.config, store)

    def _index_knowledge_bases(
        self, *, force: bool, progress: ProgressFn | None, embed: bool
    ) -> dict[str, int]:
        out: dict[str, int] = {}
        for kb in self.knowledge_bases():
            if not Path(kb.path).is_dir():
                out[kb.label] = 0  # gone: listed with 0 files until removed; its rows stay for GC
                continue
            kb_indexer = self.indexer(Path(kb.path), embed=embed)
            out[kb.label] = kb_indexer.run(kb.catalog, force=force, progress=progress).files
        return out

    def knowledge_base_note(self) -> str | None:
        """What the index says about knowledge bases that is not used (`knowledge.legacy_note`)."""
        return knowledge.legacy_note(self.store) if self.has_index() else None

    def add_knowledge_base(
        self, path: str, *, agent: bool = False
    ) -> tuple[knowledge.KnowledgeBase, IndexReport]:
        """Register a folder and index it at once; re-adding a known one just re-indexes it. `agent`: asked
        by a tool call, which may add only folders the project or the configuration already covers."""
        store = self.store
        with store.write_lock(timeout=3.0), store.transaction():
            kb, _ = knowledge.add(self.root, self.config, store, path, agent=agent)
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
        from ..embedder import pending_by_path

        store = self.store if self.has_index() else None
        branch = self.branch()
        pending = None
        if store is not None and not force:
            provider = self.embedding_provider()
            if provider is not None:
                pending = pending_by_path(store, branch, provider.model_id)
        return upkeep.estimate(self.root, self.config, store, branch, force=force, pending=pending)

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

    # -- embeddings (wired in `embedding`) -----------------------------------------------------------

    def embedding_provider(self) -> EmbeddingProvider | None:
        """The configured provider, built once; None (with `embedding_error()`) when none is usable."""
        return embedding.embedding_provider(self)

    def embedding_error(self) -> str | None:
        self.embedding_provider()
        return self._provider_error

    def embed(
        self,
        *,
        progress: EmbedProgressFn | None = None,
        stop: threading.Event | None = None,
        wait_for_lock: bool = True,
        sync_ann: bool = True,
    ) -> EmbedReport | None:
        """Embed the branch's pending chunks and bring the ANN index up to date (`embedding.embed`)."""
        return embedding.embed(
            self, progress=progress, stop=stop, wait_for_lock=wait_for_lock, sync_ann=sync_ann
        )

    def sync_ann_index(self) -> str | None:
        """Build or update the ANN index over the vectors (after an index pass that embedded inline);
        None when there is no provider or too few vectors for one (`embedding.sync_ann_index`)."""
        provider = self.embedding_provider()
        return embedding.sync_ann_index(self, provider) if provider is not None else None

    def embedding_catalogs(self, branch: str | None = None) -> list[str]:
        """What the embedding job covers, in order: the branch, then each knowledge base (search covers
        both, so semantic and hybrid results include knowledge-base chunks once they are embedded)."""
        return [branch or self.branch(), *(kb.catalog for kb in self.knowledge_bases())]

    def ann_threshold(self) -> int:
        from .. import vectors

        return vectors.ANN_THRESHOLD

    def query_vector(self, text: str) -> np.ndarray:
        """The query's embedding, cached per text; QueryEmbeddingError when the provider fails or cools
        down (`embedding.query_vector`)."""
        return embedding.query_vector(self, text)

    def dependency_health(self) -> list[DependencyHealth]:
        """The last recorded failure of each search-time dependency (query embedding, reranker)."""
        return list(read_all(self.index_dir / STATE_FILE).values())

    def vector_snapshot(self, snap: KeywordSnapshot | None = None) -> VectorSnapshot | None:
        """Vectors of the keyword snapshot's documents, up to date (`embedding.vector_snapshot`)."""
        return embedding.vector_snapshot(self, snap)

    def verify_vectors(self, *, sample: int = 64) -> VectorCheck | None:
        """Check and repair the index model's vectors without re-embedding (`embedding.verify_vectors`)."""
        return embedding.verify_vectors(self, sample=sample)

    # -- searching (wired in `retrieval`) ---------------------------------------------------------------

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

    def loaded_snapshot(self) -> tuple[str, int, int] | None:
        """(branch, store generation, documents) of the keyword snapshot in memory; None before the
        first search (nothing is loaded to answer this)."""
        return None if self._snapshots is None else self._snapshots.loaded()

    def search(
        self, query: str, *, top_k: int = 10, filters: Filters | None = None, mode: str | None = None
    ) -> SearchResponse:
        """`mode` None means hybrid when vectors exist for the active model, else keyword; a failing
        provider or reranker degrades the answer with a note, never fails it (`retrieval.search`)."""
        return retrieval.search(self, query, top_k=top_k, filters=filters, mode=mode)

    def similar(
        self,
        *,
        snippet: str | None = None,
        at: tuple[str, int] | None = None,
        top_k: int = 10,
        filters: Filters | None = None,
    ) -> SearchResponse:
        """Chunks nearest in meaning to a code snippet or to the chunk at (path, line), never the source
        (`retrieval.similar`)."""
        return retrieval.similar(self, snippet=snippet, at=at, top_k=top_k, filters=filters)

    # -- status ---------------------------------------------------------------------------------------

    def status(self) -> IndexStatus:
        return status.status(self)

    def skipped_files(self) -> list[SkippedRow]:
        return self.store.skipped(self.branch())

    def problem_files(self) -> list[SkippedRow]:
        """Indexed files the last runs met a contained failure in (problems.REASONS)."""
        return problems.load(self.store, self.branch())

    # -- code graph (wired in `graph_reads`) ----------------------------------------------------------

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
        return graph_reads.call_graph(
            self,
            target,
            direction=direction,
            depth=depth,
            include_name_matches=include_name_matches,
            limit=limit,
        )

    def call_path(self, source: str, target: str) -> CallPath:
        """The shortest chain of resolved calls between two symbols (see `graph.paths.call_path`)."""
        return graph_reads.call_path(self, source, target)

    def impact(self, diff: str | None = None, *, depth: int = 2) -> Impact:
        """What a change reaches: `diff` is a git range, one revision or None (uncommitted changes vs
        HEAD); see `graph_reads.impact`."""
        return graph_reads.impact(self, diff, depth=depth)

    def implementation_lookup(self, query: str, *, limit: int = 5) -> ImplementationLookup:
        """Where something is really implemented: definitions first, then search (not tests/docs/stubs)."""
        return graph_reads.implementation_lookup(self, query, limit=limit)

    def definitions(self, name: str, *, limit: int = 5) -> list[DefinitionRow]:
        """Definitions named `name` (a name, `Class.method`, `path#qualified`), implementation first."""
        return graph_reads.definitions(self, name, limit=limit)

    def definitions_in(self, path: str) -> list[DefinitionRow]:
        """Every definition of one file on this branch, in line order."""
        return graph_reads.definitions_in(self, path)

    # -- evidence packs -------------------------------------------------------------------------------

    def edit_context(self, target: str, *, max_tokens: int = 1500) -> ContextPack:
        """Evidence before editing `target` (see `context.edit`)."""
        from ..context.edit import build_edit_context

        return build_edit_context(self, target, max_tokens=max_tokens)

    def file_lines(self, path: str) -> list[str] | None:
        """A project file's lines as on disk now, read only through `files.read_inside` (a regular file
        inside the root, no link followed, size-bounded); None for knowledge-base paths.

        A file that cannot be read so (swapped for a link, FIFO, device or folder since it was indexed,
        gone, grown too large) answers with its indexed lines instead (None when not indexed) and is
        remembered for a re-index: `take_changed` hands those paths to the caller that can run one."""
        if path.startswith("kb:"):
            return None
        text = read_inside(self.root, path, self.config.indexing.max_file_size)
        if isinstance(text, str):
            return text.splitlines()
        if not self.has_index():
            return None
        log.info("answering from the index for %s: %s", path, text.detail)
        with self._changed_lock:
            self._changed.add(path)
        return lines_from_chunks(self.store.file_chunks(self.branch(), path))

    def take_changed(self) -> list[str]:
        """The paths `file_lines` could not read since the last call (each to be re-indexed once)."""
        with self._changed_lock:
            changed, self._changed = sorted(self._changed), set()
        return changed

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
        from ..context.assemble import build_context

        return build_context(
            self, query, max_tokens=max_tokens, filters=filters, allow=allow, search=search, own_repo=own_repo
        )


def lines_from_chunks(chunks: Sequence[tuple[int, str]]) -> list[str] | None:
    """A file's lines rebuilt from its stored chunks ((start line, text) pairs); lines no chunk covers
    stay empty, so line numbers still match. None when there are no chunks."""
    if not chunks:
        return None
    lines: list[str] = []
    for start, text in chunks:
        for n, line in enumerate(text.splitlines(), start):
            if n > len(lines):
                lines.extend([""] * (n - len(lines)))
            lines[n - 1] = line
    return lines
