"""The indexing pipeline: discover -> read -> chunk + tokenize (worker processes) -> store.

Stat-first change detection: a file whose size, mtime and inode are unchanged is not read; a changed file
whose content hash is already stored (another branch, another path, a touched file) is re-pointed, not
re-chunked. Writes go in batches of files, each one transaction.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import msgspec

from . import files as discovery
from .bm25 import tokenize
from .chunking import chunk_text, language_for_path
from .config import Config
from .store import ChunkRecord, FileRow, SkippedRow, Store

ProgressFn = Callable[[str, int, int], None]

# Below this many files to chunk, worker processes cost more to start than they save.
PARALLEL_THRESHOLD = 64
WRITE_BATCH_FILES = 200
# A writer that is briefly busy (another run finishing, a schema set-up) is waited for this long.
LOCK_WAIT_S = 3.0


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


class Indexer:
    """Brings one branch's rows in the store up to date with the files under `root`."""

    def __init__(self, root: Path, config: Config, store: Store, *, workers: int) -> None:
        self.root = root
        self.config = config
        self.store = store
        self.workers = workers

    def run(self, branch: str, *, force: bool = False, progress: ProgressFn | None = None) -> IndexReport:
        started = time.perf_counter()
        store = self.store
        report = progress or (lambda phase, done, total: None)
        with store.write_lock(timeout=LOCK_WAIT_S):
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
