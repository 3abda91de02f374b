"""The engine: the one place that knows every stage and wires discover -> chunk -> tokenize -> store ->
retrieve -> format. The CLI, the JSON-RPC sidecar and the MCP server all talk to `Engine`.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import msgspec

from .config import Config, index_dir, load_config
from .git import current_branch
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
        indexer = Indexer(self.root, self.config, self.store, workers=self.workers)
        return indexer.run(self.branch(), force=force, progress=progress)

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
            rows = (DocRow(*r) for r in store.iter_branch_postings(branch))
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
