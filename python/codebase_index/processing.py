"""Per-file work of an index run: chunk, tokenize, (optionally) extract the code graph of one file's
text and embed its chunks with the pass model, in this process or in spawned worker processes, slice by
slice (`chunk_slices`), with every failure contained to its file.

Runs in the workers: keep it free of store and engine state (arguments and results are pickled).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import msgspec
import numpy as np
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
BATCH_BYTES = 256 * 1024
"""Text per worker task: small enough that both workers stay busy to the end of a slice."""
LOOKAHEAD = 2
"""Slices submitted to the workers beyond the one being written: the workers never wait for the writer,
and a run holds at most this many slices' texts and chunks besides the current one."""

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
    vectors: bytes = b""
    """The records' vectors as float16 rows, when the pass model embedded them (`PassEmbedding`)."""


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


class PassEmbedding(NamedTuple):
    """The model that embeds chunks inside the index pass, beside chunking: the built-in static model
    (cheap enough to run in the chunk workers, which load it once from `folder`). `model` is this
    process's instance, for files chunked here."""

    folder: str
    model_id: str
    model: Any


_pass_models: dict[str, Any] = {}


def _pass_model(folder: str) -> Any:
    """The worker's copy of the pass model, loaded (and its sha256 checked) once per process."""
    model = _pass_models.get(folder)
    if model is None:
        from .embeddings.static import StaticEmbedder

        model = _pass_models[folder] = StaticEmbedder(Path(folder))
    return model


def attach_vectors(model: Any, paths: Sequence[str], done: Sequence[ProcessedFile]) -> None:
    """Each file's chunk vectors (float16 rows in chunk order, `ProcessedFile.vectors`) from one model
    call over the batch, on exactly the text the embedding job would embed. A model failure only leaves
    the vectors to the embedding pass that follows the write."""
    from .embedder import embedding_text, header_for

    header = header_for(model)
    texts = [
        embedding_text(path, r.span.symbol, r.span.kind, r.span.text, header=header)
        for path, item in zip(paths, done, strict=True)
        for r in item.records
    ]
    if not texts:
        return
    try:
        vectors = np.asarray(model.embed_documents(texts), dtype=np.float16)
    except Exception as exc:
        log.warning("embedding in the index pass failed (%s); the embedding pass will retry", one_line(exc))
        return
    offset = 0
    for item in done:
        n = len(item.records)
        item.vectors = vectors[offset : offset + n].tobytes()
        offset += n


def _chunk_batch(
    items: Sequence[tuple[str, str, str]], extract_graph: bool, model: Any
) -> list[ProcessedFile]:
    done = [process_file(path, text, language, extract_graph) for path, text, language in items]
    if model is not None:
        attach_vectors(model, [path for path, _, _ in items], done)
    return done


def _chunk_many(
    items: list[tuple[str, str, str]], extract_graph: bool = False, embed_folder: str = ""
) -> list[ProcessedFile]:
    """A worker's batch: chunked, and embedded with the pass model when `embed_folder` names one (a model
    that cannot load here leaves the vectors to the embedding pass after the write, not the files lost)."""
    model = None
    if embed_folder:
        try:
            model = _pass_model(embed_folder)
        except Exception as exc:
            log.warning("the pass model did not load in a chunk worker (%s); embedding after the write", exc)
    return _chunk_batch(items, extract_graph, model)


def _process_item(item: tuple[str, str, str, bool]) -> ProcessedFile:
    return process_file(*item)


def _chunk_alone(
    items: Sequence[tuple[str, str, str]], extract_graph: bool, cause: str
) -> list[ProcessedFile]:
    """The files of a batch whose worker failed (died: killed, out of memory, a crash in native code),
    each in a worker of its own, so a file that kills its worker again is the only one lost: it comes
    back as an error, the others as usual (without vectors: the embedding pass makes them)."""
    log.warning("a chunking worker failed (%s); redoing its %d files one by one", cause, len(items))
    return isolate.run_isolated(
        _process_item,
        [(path, text, language, extract_graph) for path, text, language in items],
        lambda item, why: ProcessedFile([], error=f"worker process failed on this file ({why})"),
    )


Work = list[tuple[str, tuple[str, str, str]]]
"""One slice's files to chunk: (content key, (path, text, language))."""

SliceT = TypeVar("SliceT")


def chunk_slices(
    slices: Iterable[tuple[SliceT, Work]],
    *,
    parallel: bool,
    workers: int,
    extract_graph: bool,
    embedding: PassEmbedding | None,
    report: Callable[[str, int, int], None],
    total: int,
) -> Iterator[tuple[SliceT, dict[str, ProcessedFile]]]:
    """Each slice's files processed, by content key, in slice order: in this process, or (`parallel`
    with more than one worker) in `workers` spawned processes kept for the whole run, with the next
    LOOKAHEAD slices in flight while the caller writes the current one. So a run holds a few slices'
    texts and chunks at a time, whatever the project's size, and the workers chunk while the writer
    writes. A batch whose worker fails is redone one file per process (`_chunk_alone`)."""
    done = 0
    report("chunk", 0, total)
    if not parallel or workers <= 1:
        model = embedding.model if embedding is not None else None
        for payload, work in slices:
            out: dict[str, ProcessedFile] = {}
            for batch_keys, batch in _batches_by_size(work, target_bytes=BATCH_BYTES):
                out.update(zip(batch_keys, _chunk_batch(batch, extract_graph, model), strict=True))
                done += len(batch_keys)
                report("chunk", done, total)
            yield payload, out
        return
    folder = embedding.folder if embedding is not None else ""
    context = isolate.spawn_context()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    inflight: deque[tuple[SliceT, list[tuple[list[str], list[tuple[str, str, str]], Future[Any]]]]] = deque()
    pending_slices = iter(slices)

    def submit_next() -> bool:
        nonlocal pool
        nxt = next(pending_slices, None)
        if nxt is None:
            return False
        payload, work = nxt
        futures = []
        for batch_keys, batch in _batches_by_size(work, target_bytes=BATCH_BYTES):
            try:
                future = pool.submit(_chunk_many, batch, extract_graph, folder)
            except BrokenProcessPool:  # a worker died earlier: a fresh pool for what comes next
                pool.shutdown(wait=False, cancel_futures=True)
                pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
                future = pool.submit(_chunk_many, batch, extract_graph, folder)
            futures.append((batch_keys, batch, future))
        inflight.append((payload, futures))
        return True

    try:
        for _ in range(LOOKAHEAD + 1):
            if not submit_next():
                break
        while inflight:
            payload, futures = inflight.popleft()
            out = {}
            for batch_keys, batch, future in futures:
                try:
                    results = future.result()
                except Exception as exc:  # the worker died or the pool broke: isolate the batch's files
                    results = _chunk_alone(batch, extract_graph, one_line(exc))
                out.update(zip(batch_keys, results, strict=True))
                done += len(batch_keys)
                report("chunk", done, total)
            submit_next()
            yield payload, out
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _batches_by_size(
    work: Work, *, target_bytes: int
) -> Iterator[tuple[list[str], list[tuple[str, str, str]]]]:
    """Group files into batches of roughly equal text size so both workers stay busy."""
    batch: list[tuple[str, str, str]] = []
    batch_keys: list[str] = []
    size = 0
    for key, item in work:
        batch.append(item)
        batch_keys.append(key)
        size += len(item[1])
        if size >= target_bytes:
            yield batch_keys, batch
            batch, batch_keys, size = [], [], 0
    if batch:
        yield batch_keys, batch
