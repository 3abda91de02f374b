"""What keeps a served project alive, whatever face serves it (the OpenCode sidecar, the MCP server):
the warm-up that resumes pending embeddings and graph work, the file watcher, and change notifications
debounced into one incremental index run. The faces only wire their transport to it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor

from .protocol import IndexBusy, ToolError
from .runtime import CallContext, Runtime

log = logging.getLogger("codebase_index.serve")

DEBOUNCE_SECONDS = 1.0


class ServeCore:
    """Background upkeep of one served project. `start()` after the face is up, `close()` on the way out."""

    def __init__(self, runtime: Runtime, *, debounce: float = DEBOUNCE_SECONDS) -> None:
        self.rt = runtime
        self.debounce = debounce
        runtime.watch_enabled = True  # a served project is watched, whatever the face
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="serve")
        self._stopping = threading.Event()
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._changed_paths: set[str] = set()  # from the face's change notifications
        self._full_reindex = False

    def start(self) -> None:
        """Warm up in the background: the face answers meanwhile."""
        self._submit(self.warm_up)

    def warm_up(self) -> None:
        """Load the engine and the keyword snapshot so the first search does not pay for it; resume what
        an earlier session left pending (embeddings, graph); watch an indexed project."""
        rt = self.rt
        try:
            with rt.read_lock:
                engine = rt.reader()
                indexed = engine.has_index()
                if indexed:
                    engine.snapshot()
            if indexed and not self._stopping.is_set():
                rt.start_embedding()  # resumes whatever a previous session left pending
                rt.start_graph()  # likewise for code-graph extraction
                log.info("file watcher: %s", rt.start_watcher())
        except Exception as exc:
            log.warning("engine warm-up failed: %s", exc)

    def files_changed(self, paths: Iterable[str] | None) -> None:
        """A face heard of changed files (None or empty: changes it cannot name, a branch switch)."""
        picked = [str(p) for p in paths or () if isinstance(p, str) and p]
        with self._lock:
            if picked:
                self._changed_paths.update(picked)
            else:
                self._full_reindex = True
        self._schedule_reindex()

    def branch_changed(self) -> None:
        self.files_changed(None)

    def close(self) -> None:
        """Stop taking work, let background work reach a stopping point."""
        self._stopping.set()
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
        self._pool.shutdown(wait=True)

    # -- debounced re-indexing ----------------------------------------------------------------------

    def _submit(self, fn: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # shut down already
            self._pool.submit(fn)

    def _schedule_reindex(self) -> None:
        """Debounce bursts of change events into one incremental index run."""
        if self._stopping.is_set():
            return
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce, self._submit, (self._background_index,))
            self._timer.daemon = True
            self._timer.start()

    def _background_index(self) -> None:
        from .registry import call

        if self._stopping.is_set():
            return
        if not self.rt.summary().indexed:
            log.info("files changed but the project is not indexed yet; the first search indexes it")
            return
        with self._lock:
            paths = sorted(self._changed_paths)
            full = self._full_reindex or not paths
            self._changed_paths.clear()
            self._full_reindex = False
        if not full:
            try:
                self.rt.reindex_paths(paths)
            except Exception as exc:
                log.warning("path-level re-index of %d notified path(s) failed: %s", len(paths), exc)
            return
        ctx = CallContext(cancelled=self._stopping.is_set)
        for _ in range(600):  # a user-started run may hold the index; wait for it, then catch up
            try:
                result = call(self.rt, "index", {}, ctx)
                log.info("incremental index after file changes: %s", result.text)
                return
            except IndexBusy:
                if self._stopping.wait(self.debounce):
                    return
            except ToolError as exc:
                log.info("incremental index stopped: %s", exc.message)
                return
            except Exception:
                log.exception("incremental index after file changes failed")
                return
