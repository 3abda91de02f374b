"""Run work items one per task in a one-worker process pool, so an item that kills its worker (a crash in
native code, the OOM killer) or raises is the only one lost. The fallback of the indexer's chunking pool
and of the code-graph extraction pool when a batch fails: slow (a process round trip per item, a new
worker after each death) but only ever used for the items of a failed batch."""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def one_line(exc: BaseException, limit: int = 300) -> str:
    """An exception as one short line: `Type: first line of its message`."""
    message = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {message[0]}" if message else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def spawn_context() -> multiprocessing.context.SpawnContext:
    """The context of every worker pool. A spawned worker starts as `python -c ...` in this process's
    working folder, usually the project, and would import a repository's own `multiprocessing/` from
    there before anything of ours runs; PYTHONSAFEPATH (Python 3.11+, inherited by the workers) keeps
    that folder off their sys.path. Python 3.10 has no such switch (SECURITY.md)."""
    os.environ["PYTHONSAFEPATH"] = "1"
    return multiprocessing.get_context("spawn")


def run_isolated(
    fn: Callable[[T], R],
    items: Sequence[T],
    on_failure: Callable[[T, str], R],
    *,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> list[R]:
    """`fn(item)` for every item, each in a spawned worker; a failed item gives `on_failure(item, why)`."""
    out: list[R] = []
    context = spawn_context()
    pool: ProcessPoolExecutor | None = None
    try:
        for item in items:
            if pool is None:
                pool = ProcessPoolExecutor(
                    max_workers=1, mp_context=context, initializer=initializer, initargs=initargs
                )
            try:
                out.append(pool.submit(fn, item).result())
            except Exception as exc:  # the worker died or raised: this item only
                out.append(on_failure(item, one_line(exc)))
                pool.shutdown(wait=False, cancel_futures=True)
                pool = None
    finally:
        if pool is not None:
            pool.shutdown()
    return out
