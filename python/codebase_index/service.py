"""The engine: the one place that knows every stage and wires discover -> chunk -> tokenize -> store ->
retrieve -> format. The CLI, the JSON-RPC sidecar and the MCP server all talk to `Engine`.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import msgspec

from . import knowledge, upkeep
from .config import Config, index_dir, load_config
from .git import current_branch
from .graph.query import CallGraph, ImplementationLookup
from .graph.store import GraphStore
from .indexer import Indexer, IndexReport, ProgressFn
from .models import SearchResult
from .search import DocRow, Filters, KeywordSnapshot, preview, query_terms
from .store import SkippedRow, Store

__all__ = ["Engine", "IndexReport", "IndexStatus", "SearchResponse"]


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


class SearchResponse(msgspec.Struct):
    query: str
    strategy: str
    top_k: int
    results: list[SearchResult]


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
        self._snapshot: tuple[str, int, KeywordSnapshot] | None = None
        self._snapshot_lock = threading.Lock()
        self._indexers: dict[str, Indexer] = {}  # per root: each remembers its last walk

    # -- lifecycle ----------------------------------------------------------------------------------

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store.open(self.index_dir)
        return self._store

    def close(self) -> None:
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

    def index(self, *, force: bool = False, progress: ProgressFn | None = None) -> IndexReport:
        # The branch is read from .git/HEAD now, before anything is written: after a checkout the
        # new branch's catalog is built under the new name, never under the old one.
        report = self.indexer(self.root).run(self.branch(), force=force, progress=progress)
        report.knowledge_bases = self._index_knowledge_bases(force=force, progress=progress)
        if report.files_changed or report.files_removed:
            self.maybe_gc()
        return report

    def indexer(self, root: Path) -> Indexer:
        """The indexer of the project or of one knowledge base, kept so no-change runs stay stat-only."""
        key = str(root)
        found = self._indexers.get(key)
        if found is None or found.store is not self.store:
            found = Indexer(root, self.config, self.store, workers=self.workers)
            self._indexers[key] = found
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

    # -- searching ----------------------------------------------------------------------------------

    def snapshot(self) -> KeywordSnapshot:
        """The in-memory keyword index for the current branch, rebuilt when the store changed."""
        store = self.store
        branch = self.branch()
        generation = store.generation()
        with self._snapshot_lock:
            cached = self._snapshot
            if cached is not None and cached[0] == branch and cached[1] == generation:
                return cached[2]
            rows = itertools.chain(
                (DocRow(*r) for r in store.iter_branch_postings(branch)),
                *(
                    (
                        DocRow(*r)._replace(path=knowledge.display_path(kb, r[1]))
                        for r in store.iter_branch_postings(kb.catalog)
                    )
                    for kb in self.knowledge_bases()
                ),
            )
            bm25 = self.config.search.bm25
            snap = KeywordSnapshot(rows, k1=bm25.k1, b=bm25.b)
            self._snapshot = (branch, generation, snap)
            return snap

    def search(
        self, query: str, *, top_k: int = 10, filters: Filters | None = None, mode: str = "keyword"
    ) -> SearchResponse:
        if mode != "keyword":
            raise ValueError(f"unknown search mode {mode!r}; available: keyword")
        snap = self.snapshot()
        terms = query_terms(query)
        ids = self.store.term_ids(terms)
        term_ids = [ids[t] for t in terms if t in ids]
        mask = snap.candidate_mask(filters or Filters())
        hits = snap.keyword_hits(term_ids, top_k, mask)
        return SearchResponse(query=query, strategy="keyword", top_k=top_k, results=self._results(snap, hits))

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
        last = store.get_meta("last_indexed_at")
        return IndexStatus(
            root=str(self.root),
            index_dir=str(self.index_dir),
            branch=branch,
            indexed=last is not None,
            files=counts["files"],
            chunks=counts["chunks"],
            vocabulary=counts["vocabulary"],
            skipped=dict(Counter(s.reason for s in store.skipped(branch))),
            size_bytes=store.size_on_disk(),
            last_indexed_at=float(last) if last else None,
        )

    def skipped_files(self) -> list[SkippedRow]:
        return self.store.skipped(self.branch())

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
        from .graph.query import call_graph

        if direction not in ("callers", "callees"):
            raise ValueError(f"direction must be 'callers' or 'callees', not {direction!r}")
        return call_graph(
            GraphStore(self.store.conn),
            self.branch(),
            target,
            direction="callers" if direction == "callers" else "callees",
            depth=depth,
            include_name_matches=include_name_matches,
            limit=limit,
        )

    def implementation_lookup(self, query: str, *, limit: int = 5) -> ImplementationLookup:
        """Where something is really implemented: definitions first, then search (not tests/docs/stubs)."""
        from .graph.query import implementation_lookup

        def search(q: str, top_k: int) -> list[SearchResult]:
            return self.search(q, top_k=top_k).results

        return implementation_lookup(
            GraphStore(self.store.conn),
            self.branch(),
            query,
            search=search,
            read=self._read_lines,
            limit=limit,
        )

    def _read_lines(self, path: str, start: int, end: int) -> str | None:
        """Lines start..end of a project file as it is on disk now (None when it is gone or unreadable)."""
        try:
            with open(self.root / path, encoding="utf-8", errors="replace") as handle:
                lines = handle.read().splitlines()
        except OSError:
            return None
        return "\n".join(lines[start - 1 : end])
