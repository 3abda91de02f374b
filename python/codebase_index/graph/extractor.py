"""Code-graph extraction after the index run, off its critical path (like embeddings).

Index runs write files, chunks and terms and only MARK contents of graph languages (`graph_pending`, in
the transaction of their chunks: a killed run or sidecar leaves marks the next one finishes). This step
re-reads each pending content's file, extracts its graph only if the file still hashes to the content key
(a file changed since gets a new key from the watcher or the next run), and writes the rows in short
transactions, releasing the writer lock between batches so saves are not held up. Contents with no
matching file on disk right now (changed since, or only on another branch) stay pending: flagged
`unavailable` and counted by status until a run finds them on disk.

The tree is parsed exactly as the chunker parses it (same gate for empty and minified files, same
grammar and source bytes), so the rows equal those of the former in-run extraction.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

import msgspec
from tree_sitter import Tree

from .. import problems
from ..isolate import run_isolated, spawn_context
from ..store import SkippedRow, Store
from .store import EncodedGraph, GraphStore, encode_rows

log = logging.getLogger(__name__)

# Files per worker call and per write transaction: small enough that the writer lock is held for
# milliseconds, large enough that process round trips do not dominate.
BATCH_FILES = 24
# Below this many contents a worker process costs more (spawn + grammar warm-up, ~0.6 s) than it saves.
INLINE_MAX_FILES = 48

ProgressFn = Callable[[str, int, int], None]
# (content key, language, root, candidate paths relative to root)
WorkItem = tuple[str, str, str, list[str]]
# (content key, "ok" | "unavailable" | "error", encoded graph or None, error detail)
WorkResult = tuple[str, str, EncodedGraph | None, str]


class ExtractReport(msgspec.Struct):
    """What one extraction pass did: contents extracted (with or without a graph), left unavailable,
    failed (stored without a graph, logged), and whether it was stopped before the end."""

    extracted: int = 0
    unavailable: int = 0
    errors: int = 0
    seconds: float = 0.0
    cancelled: bool = False


def graph_tree(path: str, text: str, language: str) -> Tree | None:
    """The tree the chunker would parse for this file, or None where it parses none (empty, minified)."""
    from ..chunking import _MINIFIED_LINE_CHARS
    from ..chunking.code import parse_source, parser_for
    from ..chunking.languages import SPECS, is_cpp_header

    if not text.strip():
        return None
    lines = text.splitlines()
    if language == "c" and path.lower().endswith(".h") and is_cpp_header(text):
        language = "cpp"
    if len(text) > _MINIFIED_LINE_CHARS * len(lines):
        return None
    spec = SPECS.get(language)
    if spec is None:
        return None
    return parser_for(spec.grammar).parse(parse_source(text))


def extract_content(item: WorkItem) -> WorkResult:
    """Extract one pending content from the first of its paths whose text still has that content key.
    Never raises: whatever one file does to the reader, parser or extractor is an "error" result."""
    from .. import files as discovery
    from ..isolate import one_line
    from ..processing import content_key
    from .extract import extract_rows

    key, language, root, paths = item
    rel = paths[0] if paths else "?"
    try:
        for rel in paths:
            text = discovery.read_inside(root, rel, None)  # no link followed, FIFOs and devices refused
            if not isinstance(text, str) or content_key(language, text) != key:
                continue
            tree = graph_tree(rel, text, language)
            rows = extract_rows(rel, text, language, tree) if tree is not None else None
            return key, "ok", None if rows is None else encode_rows(rows), ""
    except Exception as exc:  # a grammar surprise: counted and logged by the caller
        return key, "error", None, f"{rel}: {one_line(exc)}"
    return key, "unavailable", None, ""


def _failed(item: WorkItem, why: str) -> WorkResult:
    paths = item[3]
    return item[0], "error", None, f"{paths[0] if paths else '?'}: worker process failed ({why})"


def _lower_priority(niceness: int) -> None:
    """Worker initializer of background passes: the first search after an index run (building the keyword
    snapshot) and later searches win the CPU over graph parsing."""
    os.nice(niceness)


def _extract_many(items: list[WorkItem]) -> list[WorkResult]:
    return [extract_content(item) for item in items]


def pending_work(store: Store, catalogs: Sequence[tuple[str, Path]]) -> list[WorkItem]:
    """Every pending content held by a file of these catalogs (each with the root its paths are under)."""
    graphs = GraphStore(store.conn)
    seen: set[str] = set()
    work: list[WorkItem] = []
    for catalog, root in catalogs:
        for key, (language, paths) in graphs.pending_files(catalog).items():
            if key not in seen:
                seen.add(key)
                work.append((key, language, str(root), paths))
    return work


def extract_pending(
    store: Store,
    catalogs: Sequence[tuple[str, Path]],
    *,
    workers: int = 1,
    lock_wait: float | None = 30.0,
    progress: ProgressFn | None = None,
    stop: threading.Event | None = None,
    niceness: int = 0,
) -> ExtractReport:
    """Extract every pending content of `catalogs`: parsing in `workers` processes (0: in this one; 1 in
    the sidecar, so the other core stays free for searches), writing here, one short transaction per batch.
    `niceness` lowers the workers' priority (background passes)."""
    started = time.perf_counter()
    report = ExtractReport()
    work = pending_work(store, catalogs)
    total = len(work)
    if not work:
        return report
    say = progress or (lambda phase, done, total: None)
    say("graph", 0, total)
    batches = [work[i : i + BATCH_FILES] for i in range(0, total, BATCH_FILES)]
    done = 0

    def write(results: list[WorkResult]) -> None:
        nonlocal done
        finished: list[tuple[str, EncodedGraph | None]] = []
        unavailable: list[str] = []
        failed: list[SkippedRow] = []
        for key, status, graph, detail in results:
            if status == "unavailable":
                unavailable.append(key)
                continue
            if status == "error":
                report.errors += 1
                log.warning("code graph not extracted (stored without one): %s", detail)
                path, _, why = detail.partition(": ")
                failed.append(SkippedRow(path, "graph-error", why))
            finished.append((key, graph))
        with store.write_lock(timeout=lock_wait), store.transaction():
            report.extracted += GraphStore(store.conn).finish_pending(finished, unavailable)
            if failed:
                for catalog, _ in catalogs:
                    problems.record(store, catalog, (), failed)
        report.unavailable += len(unavailable)
        done += len(results)
        say("graph", done, total)

    if workers <= 0 or total <= INLINE_MAX_FILES:
        for batch in batches:
            if stop is not None and stop.is_set():
                report.cancelled = True
                break
            write(_extract_many(batch))
    else:
        context = spawn_context()
        with ProcessPoolExecutor(
            max_workers=max(1, workers),
            mp_context=context,
            initializer=_lower_priority,
            initargs=(niceness,),
        ) as pool:
            futures: list[Future[list[WorkResult]]] = [pool.submit(_extract_many, b) for b in batches]
            try:
                for batch, future in zip(batches, futures, strict=True):
                    if stop is not None and stop.is_set():
                        report.cancelled = True
                        break
                    try:
                        results = future.result()
                    except Exception as exc:  # the worker died (or the pool broke): only its file is lost
                        log.warning(
                            "a graph worker failed (%s); redoing its %d files one by one", exc, len(batch)
                        )
                        results = run_isolated(
                            extract_content, batch, _failed, initializer=_lower_priority, initargs=(niceness,)
                        )
                    write(results)
            finally:
                for future in futures:
                    future.cancel()
    report.seconds = round(time.perf_counter() - started, 3)
    return report


__all__ = ["ExtractReport", "extract_content", "extract_pending", "graph_tree", "pending_work"]
