"""Per-file work of an index run: chunk, tokenize and (optionally) extract the code graph of one file's
text, in this process or in spawned worker processes, with every failure contained to its file.

Runs in the workers: keep it free of store and engine state (arguments and results are pickled).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor

import msgspec
from tree_sitter import Tree

from . import isolate
from .chunking import chunk_text
from .graph import language_spec
from .graph.extract import extract_rows
from .graph.store import EncodedGraph, encode_rows
from .store import ChunkRecord
from .tokens import tokenize

log = logging.getLogger("codebase_index.indexer")  # the index run's log, as before the module split

# Below this much text to chunk, worker processes cost more than they save. Measured on 2 cores
# (bench_fresh.py pool_crossover, stdlib files): starting 2 spawned workers and warming their grammars
# costs ~0.6 s while one process chunks ~3 MB/s, so the pool can win only above ~4 MB on an idle machine
# (under load 3.4 serial still won at 8 MB: 2.7 s vs 3.8 s). A file count was a poor proxy: the first
# switch to a branch with 98 changed stdlib files (1.4 MB) took 1.2-1.5 s in the pool, 0.6 s serially.
PARALLEL_THRESHOLD_BYTES = 4_000_000

GRAPH_ENV = "CODEBASE_INDEX_NO_GRAPH"


def graph_enabled() -> bool:
    """The code graph is on unless CODEBASE_INDEX_NO_GRAPH=1 (benchmarks measure the index without it)."""
    return os.environ.get(GRAPH_ENV, "") not in ("1", "true", "yes")


def graph_language(language: str) -> bool:
    return language_spec(language) is not None and graph_enabled()


def content_key(language: str, text: str) -> str:
    """Identity of a file's content as the chunker sees it.

    The language is part of it: the same text under another extension chunks differently.
    """
    return hashlib.blake2b(f"{language}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def chunk_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


ERROR_DETAIL_CHARS = 300


def one_line(exc: BaseException) -> str:
    """An exception as the one line status and `index --verbose` show: `Type: first line of message`."""
    return isolate.one_line(exc, ERROR_DETAIL_CHARS)


class ProcessedFile(msgspec.Struct):
    """One file's chunks, plus its code graph when extracted in the run (`graph_error`: why it failed).

    `error` set: the file could not be chunked or tokenized at all (no records; the run skips it under
    reason "error" and retries it next time). `fallback` set: its chunker raised and the file was cut
    into line windows instead (indexed; the run logs it)."""

    records: list[ChunkRecord]
    graph: EncodedGraph | None = None
    graph_error: str = ""
    error: str = ""
    fallback: str = ""


def process_file(path: str, text: str, language: str, extract_graph: bool = False) -> ProcessedFile:
    """Chunk and tokenize one file; with `extract_graph`, also extract its code graph from the chunker's
    own parse (files the chunker does not parse, minified code cut into windows, get no graph).

    Never raises: whatever one file does to the chunker, tokenizer or graph extractor is contained here
    (in the worker process when there is one) and reported in the result."""
    trees: list[Tree] = []
    on_tree = trees.append if extract_graph and graph_language(language) else None
    fallback: list[str] = []
    try:
        spans = chunk_text(
            path, text, language, on_tree=on_tree, on_error=lambda e: fallback.append(one_line(e))
        )
        records = [
            ChunkRecord(span, chunk_hash(span.text), dict(Counter(tokenize(span.text)))) for span in spans
        ]
    except Exception as exc:  # even line windows or the tokenizer failed: the file is skipped, not the run
        return ProcessedFile([], error=one_line(exc))
    done = ProcessedFile(records, fallback=fallback[0] if fallback else "")
    if not trees:
        return done
    try:
        rows = extract_rows(path, text, language, trees[0])
        done.graph = None if rows is None else encode_rows(rows)
    except Exception as exc:  # a grammar surprise must not lose the file's chunks; counted and logged
        done.graph_error = one_line(exc)
    return done


def _chunk_many(items: list[tuple[str, str, str]], extract_graph: bool = False) -> list[ProcessedFile]:
    return [process_file(path, text, language, extract_graph) for path, text, language in items]


def _process_item(item: tuple[str, str, str, bool]) -> ProcessedFile:
    return process_file(*item)


def _chunk_alone(
    items: Sequence[tuple[str, str, str]], extract_graph: bool, cause: str
) -> list[ProcessedFile]:
    """The files of a batch whose worker failed (died: killed, out of memory, a crash in native code),
    each in a worker of its own, so a file that kills its worker again is the only one lost: it comes
    back as an error, the others as usual."""
    log.warning("a chunking worker failed (%s); redoing its %d files one by one", cause, len(items))
    return isolate.run_isolated(
        _process_item,
        [(path, text, language, extract_graph) for path, text, language in items],
        lambda item, why: ProcessedFile([], error=f"worker process failed on this file ({why})"),
    )


def chunk_all(
    work: Sequence[tuple[str, str, str]],
    keys: Sequence[str],
    *,
    workers: int,
    extract_graph: bool,
    report: Callable[[str, int, int], None],
) -> dict[str, ProcessedFile]:
    """Process every (path, text, language) of `work`, by its content key: in this process below
    PARALLEL_THRESHOLD_BYTES of text or with one worker, else in `workers` spawned processes, batches
    of similar size; a batch whose worker fails is redone one file per process (`_chunk_alone`)."""
    out: dict[str, ProcessedFile] = {}
    total = len(work)
    report("chunk", 0, total)
    if workers <= 1 or sum(len(item[1]) for item in work) < PARALLEL_THRESHOLD_BYTES:
        for i, (key, item) in enumerate(zip(keys, work, strict=True)):
            out[key] = process_file(*item, extract_graph)
            if (i + 1) % 50 == 0 or i + 1 == total:
                report("chunk", i + 1, total)
        return out
    batches = list(_batches_by_size(work, keys, target_bytes=256 * 1024))
    done = 0
    context = isolate.spawn_context()
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = [
            (batch_keys, pool.submit(_chunk_many, batch, extract_graph)) for batch_keys, batch in batches
        ]
        for (batch_keys, future), (_, batch) in zip(futures, batches, strict=True):
            try:
                results = future.result()
            except Exception as exc:  # the worker died or the pool broke: isolate the batch's files
                results = _chunk_alone(batch, extract_graph, one_line(exc))
            for key, records in zip(batch_keys, results, strict=True):
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
