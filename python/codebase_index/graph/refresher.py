"""Resolving call edges off the save path, and answering graph queries from one consistent state.

Index runs only MARK what changed (`GraphStore.mark_dirty`, in the transaction that writes the files), so
a save becomes searchable without waiting for cross-file resolution (1.3 s for a leaf file of the stdlib,
~6 s for a widely imported one). The edges are brought up to date afterwards, by `refresh()`:

1. plan: in one read transaction on a private connection, without the writer lock, read the marks and
   the branch's graph and resolve the affected files (the slow part: saves keep landing meanwhile);
2. apply: under the writer lock, in one short transaction, replace those files' edges and consume the
   marks the plan read. Marks added by runs that landed during the plan stay pending for the next round.

Before resolving, the same background pass extracts contents the index runs left pending
(`graph.extractor`: parsing in one worker process, rows written in short transactions).

The guarantee for queries (`read()`): an answer is computed inside one read transaction in which the
branch has no pending marks, i.e. edges, definitions and files are of the same committed state. Edges may
lag a save until the background refresh (or the query itself) catches up; they are never a mix.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from ..locks import file_lock
from ..store import Store, StoreError
from .extractor import ExtractReport, ProgressFn, extract_pending
from .store import EdgeRefresh, GoModules, GraphStore

log = logging.getLogger(__name__)
T = TypeVar("T")
# Rounds before giving up when index runs keep landing between a plan and its apply, or a query and its
# freshness check.
MAX_ROUNDS = 5
# Priority of the background extraction worker (os.nice increment).
BACKGROUND_NICENESS = 10


EXTRACT_LOCK_NAME = "graph-extract.lock"


@contextmanager
def _extract_flock(index_dir: Path, wait: bool) -> Iterator[bool]:
    """Whether this caller holds the index's extraction lock: two passes over the same pending contents
    would parse everything twice."""
    with file_lock(index_dir / EXTRACT_LOCK_NAME, wait=wait) as mine:
        yield mine


def extraction_running(index_dir: Path) -> bool:
    """Whether some engine (this process or another) is extracting pending contents of this index now."""
    if not (index_dir / EXTRACT_LOCK_NAME).exists():
        return False
    with _extract_flock(index_dir, wait=False) as mine:
        return not mine


@contextmanager
def _read_transaction(store: Store) -> Iterator[GraphStore]:
    store.conn.execute("BEGIN")
    try:
        yield GraphStore(store.conn)
    finally:
        store.conn.execute("COMMIT")


class GraphRefresher:
    """Owns the deferred edge refresh of one index: on demand, or in a background thread."""

    def __init__(
        self,
        index_dir: Path,
        store: Callable[[], Store],
        *,
        lock_wait: float | None = 30.0,
        catalogs: Callable[[], list[tuple[str, Path]]] | None = None,
        go_modules: GoModules | None = None,
    ) -> None:
        self._go_modules = go_modules
        self.index_dir = index_dir
        self._store = store
        self.lock_wait = lock_wait
        # The catalogs whose pending contents the background pass extracts, each with its root folder.
        self._catalogs = catalogs
        self._extract_lock = threading.Lock()
        self.last_extract: ExtractReport | None = None
        self.extract_errors = 0  # contents whose extraction failed since start (stored without a graph)
        self.extracting = False
        self.last: EdgeRefresh | None = None
        self.errors = 0
        self.last_error: str | None = None
        self._refresh_lock = threading.Lock()
        self._query_lock = threading.Lock()
        self._planner: Store | None = None
        self._querier: Store | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._branch: Callable[[], str] | None = None
        self._busy = False

    def refresh(self, branch: str) -> EdgeRefresh | None:
        """Bring `branch`'s edges up to date; None when they already were."""
        with self._refresh_lock:
            for _ in range(MAX_ROUNDS):
                if self._planner is None:
                    self._planner = Store.open(self.index_dir)
                with _read_transaction(self._planner) as graphs:
                    plan = graphs.plan_refresh(branch, self._go_modules)
                if plan is None:
                    return None
                store = self._store()
                with store.write_lock(timeout=self.lock_wait), store.transaction():
                    done = GraphStore(store.conn).apply_refresh(branch, plan)
                if done is not None:
                    self.last = done
                    return done
            raise StoreError(
                "the code graph could not be brought up to date: another process keeps resolving it"
            )

    def extract(
        self, *, workers: int = 1, progress: ProgressFn | None = None, wait: bool = True, niceness: int = 0
    ) -> ExtractReport | None:
        """Extract the pending contents of the catalogs (see `graph.extractor`). One pass at a time per
        index, across engines and processes (a flock): with `wait=False`, None when another pass runs."""
        if self._catalogs is None:
            return ExtractReport()
        with self._extract_lock, _extract_flock(self.index_dir, wait) as mine:
            if not mine:
                return None
            self.extracting = True
            try:
                report = extract_pending(
                    self._store(),
                    self._catalogs(),
                    workers=workers,
                    lock_wait=self.lock_wait,
                    progress=progress,
                    stop=self._stop,
                    niceness=niceness,
                )
            finally:
                self.extracting = False
            self.extract_errors += report.errors
            self.last_extract = report
            return report

    def read_as_is(self, branch: str, query: Callable[[GraphStore], T]) -> T:
        """`query` over what is stored now, in one read transaction, without waiting for extraction or
        edges (the answer says the graph is incomplete)."""
        with self._query_lock:
            if self._querier is None:
                self._querier = Store.open(self.index_dir)
            with _read_transaction(self._querier) as graphs:
                return query(graphs)

    def read(self, branch: str, query: Callable[[GraphStore], T]) -> T:
        """`query` run against a state whose edges match its files exactly (refreshing first if needed)."""
        for _ in range(MAX_ROUNDS):
            self.refresh(branch)
            with self._query_lock:
                if self._querier is None:
                    self._querier = Store.open(self.index_dir)
                with _read_transaction(self._querier) as graphs:
                    if graphs.is_fresh(branch):
                        return query(graphs)
        raise StoreError("the code graph kept changing while answering (files are being indexed); try again")

    # -- background -------------------------------------------------------------------------------------

    def schedule(self, branch: Callable[[], str]) -> None:
        """Extract pending contents, then refresh edges, soon in the background thread (started on first
        use); bursts coalesce."""
        self._branch = branch
        if self._thread is None or not self._thread.is_alive():
            self._stop.clear()
            self._thread = threading.Thread(target=self._loop, name="codebase-index-graph", daemon=True)
            self._thread.start()
        self._wake.set()

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until no refresh is queued or running (CLI exit, tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        while (
            (self._wake.is_set() or self._busy)
            and self._thread is not None
            and self._thread.is_alive()
            and time.monotonic() < deadline
        ):
            time.sleep(0.01)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            if self._stop.is_set():
                return
            self._busy = True  # before clearing the wake-up, so wait_idle never sees neither
            self._wake.clear()
            branch = self._branch
            try:
                if branch is not None:
                    # One worker process parses, at a lower priority: the other core (and the CPU
                    # whenever a search needs it) stays with searches.
                    self.extract(workers=1, niceness=BACKGROUND_NICENESS)
                    self.refresh(branch())
            except Exception as exc:  # reported in status; the next query or save retries
                self.errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("code graph refresh failed: %s", self.last_error)
            finally:
                self._busy = False

    def busy(self) -> bool:
        """A background extraction or refresh is queued or running."""
        return (self._wake.is_set() or self._busy) and self._thread is not None and self._thread.is_alive()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
            self._thread = None
        for reader in (self._planner, self._querier):
            if reader is not None:
                reader.close()
        self._planner = self._querier = None
