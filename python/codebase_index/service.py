"""The engine: the one place that knows every stage and wires discover -> chunk -> tokenize -> store ->
retrieve -> format. The CLI, the JSON-RPC sidecar and the MCP server all talk to `Engine`.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import msgspec

from . import files as discovery
from .bm25 import tokenize
from .chunking import chunk_text, language_for_path
from .config import Config, index_dir, load_config
from .git import current_branch
from .models import SearchResult
from .search import DocRow, Filters, KeywordSnapshot, preview, query_terms
from .store import ChunkRecord, FileRow, SkippedRow, Store

ProgressFn = Callable[[str, int, int], None]

# Below this many files to chunk, worker processes cost more to start than they save.
PARALLEL_THRESHOLD = 64
WRITE_BATCH_FILES = 200


class IndexReport(msgspec.Struct):
    branch: str
    files: int
    files_changed: int
    files_unchanged: int
    files_removed: int
    chunks: int
    chunks_added: int
    skipped: dict[str, int]
    seconds: float


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


def content_key(language: str, text: str) -> str:
    """Identity of a file's content as the chunker sees it.

    The language is part of it: the same text under another extension chunks differently.
    """
    return hashlib.blake2b(f"{language}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def chunk_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def chunk_and_tokenize(path: str, text: str, language: str) -> list[ChunkRecord]:
    """The CPU-heavy per-file work, run in worker processes for big batches."""
    records = []
    for span in chunk_text(path, text, language):
        records.append(ChunkRecord(span, chunk_hash(span.text), dict(Counter(tokenize(span.text)))))
    return records


def _chunk_many(items: list[tuple[str, str, str]]) -> list[list[ChunkRecord]]:
    return [chunk_and_tokenize(path, text, language) for path, text, language in items]


class _Pending(msgspec.Struct):
    row: FileRow
    text: str | None  # None: content already stored, only the file row changes


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
        started = time.perf_counter()
        store = self.store
        report = progress or (lambda phase, done, total: None)
        with store.write_lock(wait=False):
            branch = self.branch()
            report("discover", 0, 0)
            found = discovery.discover(
                self.root,
                include=self.config.include or None,
                additional_include=self.config.additional_include,
                exclude=self.config.exclude,
                max_file_size=self.config.indexing.max_file_size,
            )
            existing = store.file_rows(branch)
            skipped = [SkippedRow(s.path, s.reason, s.detail) for s in found.skipped]

            pending: list[_Pending] = []
            unchanged = 0
            discovered_paths = set()
            for entry in found.files:
                discovered_paths.add(entry.path)
                old = existing.get(entry.path)
                if (
                    not force
                    and old is not None
                    and (old.size, old.mtime_ns, old.inode) == (entry.size, entry.mtime_ns, entry.inode)
                ):
                    unchanged += 1
                    continue
                language = language_for_path(entry.path)
                if language is None:
                    skipped.append(SkippedRow(entry.path, "unsupported", "no chunker for this file type"))
                    continue
                text = discovery.read_text(entry.abs_path, entry.path)
                if not isinstance(text, str):
                    skipped.append(SkippedRow(entry.path, text.reason, text.detail))
                    continue
                key = content_key(language, text)
                row = FileRow(entry.path, entry.size, entry.mtime_ns, entry.inode, key, language)
                if old is not None and old.content_key == key and not force:
                    pending.append(_Pending(row, None))  # touched but not changed
                else:
                    pending.append(_Pending(row, text))
            removed = sorted(set(existing) - discovered_paths)

            known = store.known_contents({p.row.content_key for p in pending if p.text is not None})
            if force:
                known = set()
            to_chunk: dict[str, _Pending] = {}
            for item in pending:
                if item.text is not None and item.row.content_key not in known:
                    to_chunk.setdefault(item.row.content_key, item)

            chunks_added = self._write(store, branch, pending, to_chunk, removed, skipped, force, report)
            counts = store.counts(branch)
        skipped_counts = dict(Counter(s.reason for s in skipped))
        return IndexReport(
            branch=branch,
            files=counts["files"],
            files_changed=sum(1 for p in pending if p.text is not None),
            files_unchanged=unchanged + sum(1 for p in pending if p.text is None),
            files_removed=len(removed),
            chunks=counts["chunks"],
            chunks_added=chunks_added,
            skipped=skipped_counts,
            seconds=round(time.perf_counter() - started, 3),
        )

    def _write(
        self,
        store: Store,
        branch: str,
        pending: list[_Pending],
        to_chunk: dict[str, _Pending],
        removed: list[str],
        skipped: list[SkippedRow],
        force: bool,
        report: ProgressFn,
    ) -> int:
        vocab = store.vocabulary()
        chunked = self._chunk_all(list(to_chunk.values()), report)
        chunks_added = 0
        total = len(pending)
        for start in range(0, max(total, 1), WRITE_BATCH_FILES):
            batch = pending[start : start + WRITE_BATCH_FILES]
            with store.transaction():
                for item in batch:
                    records = chunked.get(item.row.content_key)
                    if records is not None:
                        # Forced runs replace stored chunks content by content, inside each batch's
                        # transaction, so a killed run still leaves a usable index.
                        store.add_content(
                            item.row.content_key, item.row.language, records, vocab, replace=force
                        )
                        chunks_added += len(records)
                        del chunked[item.row.content_key]  # one content, stored once
                    store.upsert_file(branch, item.row)
            report("write", min(start + len(batch), total), total)
        with store.transaction():
            store.delete_files(branch, removed)
            store.purge_unreferenced_contents()
            store.replace_skipped(branch, skipped)
            store.bump_generation()
        return chunks_added

    def _chunk_all(self, items: Sequence[_Pending], report: ProgressFn) -> dict[str, list[ChunkRecord]]:
        work = [(p.row.path, p.text or "", p.row.language) for p in items]
        keys = [p.row.content_key for p in items]
        out: dict[str, list[ChunkRecord]] = {}
        total = len(work)
        report("chunk", 0, total)
        if total < PARALLEL_THRESHOLD or self.workers <= 1:
            for i, (key, item) in enumerate(zip(keys, work, strict=True)):
                out[key] = chunk_and_tokenize(*item)
                if (i + 1) % 50 == 0 or i + 1 == total:
                    report("chunk", i + 1, total)
            return out
        batches = _batches_by_size(work, keys, target_bytes=256 * 1024)
        import multiprocessing

        done = 0
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=context) as pool:
            futures = [(batch_keys, pool.submit(_chunk_many, batch)) for batch_keys, batch in batches]
            for batch_keys, future in futures:
                for key, records in zip(batch_keys, future.result(), strict=True):
                    out[key] = records
                done += len(batch_keys)
                report("chunk", done, total)
        return out

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


def _batches_by_size(
    work: Sequence[tuple[str, str, str]], keys: Sequence[str], *, target_bytes: int
) -> Iterator[tuple[list[str], list[tuple[str, str, str]]]]:
    """Group files into batches of roughly equal text size so both workers stay busy."""
    batch: list[tuple[str, str, str]] = []
    batch_keys: list[str] = []
    size = 0
    for key, item in zip(keys, work, strict=True):
        batch.append(item)
        batch_keys.append(key)
        size += len(item[1])
        if size >= target_bytes:
            yield batch_keys, batch
            batch, batch_keys, size = [], [], 0
    if batch:
        yield batch_keys, batch
