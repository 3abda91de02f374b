"""The sidecar's file watcher: turns saves into path-level re-indexes and checkouts into full ones.

What is watched (watchdog's InotifyObserver here), chosen so ignored trees cost no inotify watches:
each root (the project and every knowledge base) non-recursively, each of its top-level folders that
the ignore rules let through recursively (so `node_modules`, `.venv`, build output and `.git` are never
walked), and, for git, this checkout's git dir (HEAD, packed-refs) plus the common dir's `refs` tree.

Events are filtered by the same rules discovery uses (`patterns.IgnoreRules`), coalesced for `debounce`
seconds after the last one, then handed over as one batch: changed paths to `reindex_paths`, or, when
HEAD or a ref moved, a full `reindex_all` (which reads the new branch first). Watches never follow
symlinks, so nothing outside the roots is walked.

When the OS refuses watches (inotify limits: ENOSPC / EMFILE, or permissions), the watcher says so in
its status and falls back to calling `reindex_all` every `poll_interval` seconds: a stat scan, cheap
with the indexer's no-change path.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import msgspec
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers.api import BaseObserver

from . import git
from .patterns import IGNORE_FILE_NAMES, IgnoreRules

log = logging.getLogger("codebase_index.watcher")

DEBOUNCE_S = 0.1
POLL_INTERVAL_S = 5.0
GIT_REF_NAMES = frozenset({"HEAD", "packed-refs"})

WatchMode = Literal["stopped", "watching", "polling", "disabled"]


class WatcherStatus(msgspec.Struct, rename="camel"):
    state: WatchMode
    reason: str | None  # why polling or disabled
    roots: list[str]
    watches: int
    events: int  # accepted (not ignored) events since start
    ignored_events: int
    reindexes: int
    branch_switches: int
    errors: int
    last_error: str | None
    last_reindex_at: float | None


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory and event.event_type == "modified":
            return  # a folder's listing changed: the entry's own event says which
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if raw:
                path = os.fsdecode(raw)
                self.watcher.observe(path, bool(event.is_directory))


def default_observer() -> BaseObserver:
    from watchdog.observers import Observer

    return Observer()


class Watcher:
    """Watch `roots` (project first) and the project's git files; call back with debounced batches.

    Callbacks run on the watcher's own thread, one at a time; an exception is logged, counted and shown
    in the status, never raised into watchdog.
    """

    def __init__(
        self,
        roots: Sequence[Path],
        *,
        reindex_paths: Callable[[list[str]], object],
        reindex_all: Callable[[], object],
        exclude: Sequence[str] = (),
        debounce: float = DEBOUNCE_S,
        poll_interval: float = POLL_INTERVAL_S,
        observer_factory: Callable[[], BaseObserver] = default_observer,
    ) -> None:
        if not roots:
            raise ValueError("the watcher needs at least one root")
        self.roots = [Path(r).resolve() for r in roots]
        self._rules = {
            str(r): IgnoreRules.load(r, exclude=exclude if i == 0 else ()) for i, r in enumerate(self.roots)
        }
        self.reindex_paths = reindex_paths
        self.reindex_all = reindex_all
        self.debounce = debounce
        self.poll_interval = poll_interval
        self.observer_factory = observer_factory
        self._git_dirs: list[str] = []
        gdir = git.git_dir(self.roots[0])
        if gdir is not None:
            self._git_dirs = [str(gdir.resolve()), str(git.common_dir(gdir).resolve())]
        self._observer: BaseObserver | None = None
        self._watched: dict[str, object] = {}  # folder -> ObservedWatch
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._pending: set[str] = set()
        self._branch_moved = False
        self._last_event = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.status = WatcherStatus(
            "stopped", None, [str(r) for r in self.roots], 0, 0, 0, 0, 0, 0, None, None
        )

    # -- life cycle -------------------------------------------------------------------------------------

    def start(self) -> WatcherStatus:
        """Start watching (or polling, if the OS refuses); returns the resulting status."""
        self._stop.clear()
        try:
            self._start_observer()
            self.status.state = "watching"
            self.status.reason = None
        except OSError as exc:
            self._stop_observer()
            self.status.state = "polling"
            self.status.reason = _why(exc)
            log.warning(
                "file watching unavailable (%s); re-scanning every %.0fs",
                self.status.reason,
                self.poll_interval,
            )
        self._thread = threading.Thread(target=self._loop, name="codebase-index-watcher", daemon=True)
        self._thread.start()
        return self.status

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            self._wake.notify_all()
        self._stop_observer()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        self.status.state = "stopped"

    def _start_observer(self) -> None:
        observer = self.observer_factory()
        self._observer = observer
        handler = _Handler(self)
        for root in self.roots:
            self._schedule(handler, root, recursive=False)
            rules = self._rules[str(root)]
            with os.scandir(root) as it:
                entries = [e for e in it if e.is_dir(follow_symlinks=False)]
            for entry in entries:
                if not rules.is_ignored(entry.name, is_dir=True):
                    self._schedule(handler, Path(entry.path), recursive=True)
        if self._git_dirs:
            self._schedule(handler, Path(self._git_dirs[0]), recursive=False)
            refs = Path(self._git_dirs[1]) / "refs"
            if self._git_dirs[1] != self._git_dirs[0]:
                self._schedule(handler, Path(self._git_dirs[1]), recursive=False)
            if refs.is_dir():
                self._schedule(handler, refs, recursive=True)
        observer.start()

    def _schedule(self, handler: FileSystemEventHandler, path: Path, *, recursive: bool) -> None:
        assert self._observer is not None
        key = str(path)
        if key in self._watched:
            return
        self._watched[key] = self._observer.schedule(handler, key, recursive=recursive)
        self.status.watches = len(self._watched)

    def _stop_observer(self) -> None:
        observer, self._observer = self._observer, None
        self._watched.clear()
        self.status.watches = 0
        if observer is None:
            return
        try:
            observer.stop()
            if observer.is_alive():
                observer.join(timeout=5)
        except (OSError, RuntimeError) as exc:
            log.debug("watcher stop: %s", exc)

    def pending_count(self) -> int:
        """Saves seen and not re-indexed yet (an answer's freshness line counts them)."""
        with self._lock:
            return len(self._pending)

    # -- events -----------------------------------------------------------------------------------------

    def observe(self, path: str, is_dir: bool) -> None:
        """One raw event path: keep it if it matters, then (re)start the debounce window."""
        kind = self._classify(path, is_dir)
        with self._lock:
            if kind is None:
                self.status.ignored_events += 1
                return
            self.status.events += 1
            if kind == "branch":
                self._branch_moved = True
            else:
                self._pending.add(path)
            self._last_event = time.monotonic()
            self._wake.notify_all()
        if kind == "new-top-dir" and self._observer is not None:
            try:
                self._schedule(_Handler(self), Path(path), recursive=True)
            except OSError as exc:
                self._record_error(f"cannot watch new folder {path}: {_why(exc)}")

    def _classify(self, path: str, is_dir: bool) -> str | None:
        for gdir in self._git_dirs:
            if path.startswith(gdir + os.sep) or path == gdir:
                rel = path[len(gdir) + 1 :]
                if rel in GIT_REF_NAMES or rel.startswith("refs" + os.sep):
                    return "branch"
                return None  # objects, index, logs, lock files: not ours
        for root in self.roots:
            base = str(root)
            if not path.startswith(base + os.sep):
                continue
            rel = path[len(base) + 1 :].replace(os.sep, "/")
            if rel.rpartition("/")[2] in IGNORE_FILE_NAMES:
                self._rules[base].invalidate()
            if self._rules[base].is_ignored(rel, is_dir=is_dir):
                return None
            if is_dir and "/" not in rel and os.path.isdir(path):
                return "new-top-dir"
            return "path"
        return None

    def _record_error(self, message: str) -> None:
        with self._lock:
            self.status.errors += 1
            self.status.last_error = message
        log.warning("%s", message)

    # -- the worker -------------------------------------------------------------------------------------

    def _loop(self) -> None:
        next_poll = time.monotonic() + self.poll_interval
        while not self._stop.is_set():
            with self._lock:
                now = time.monotonic()
                busy = self._pending or self._branch_moved
                if busy and now - self._last_event < self.debounce:
                    self._wake.wait(self.debounce - (now - self._last_event))
                    continue
                if not busy:
                    timeout = next_poll - now if self.status.state == "polling" else None
                    if timeout is None or timeout > 0:
                        self._wake.wait(timeout)
                        continue
                paths = sorted(self._pending)
                branch = self._branch_moved
                self._pending.clear()
                self._branch_moved = False
            if self._stop.is_set():
                return
            if self.status.state == "polling" and not paths and not branch:
                next_poll = time.monotonic() + self.poll_interval
                self._run(self.reindex_all, "periodic re-scan")
            elif branch:
                self.status.branch_switches += 1
                self._run(self.reindex_all, "branch change")
            else:
                self._run(functools.partial(self.reindex_paths, paths), f"{len(paths)} changed path(s)")

    def _run(self, job: Callable[[], object], what: str) -> None:
        try:
            job()
        except Exception as exc:
            self._record_error(f"re-index after {what} failed: {type(exc).__name__}: {exc}")
            return
        with self._lock:
            self.status.reindexes += 1
            self.status.last_reindex_at = time.time()


def _why(exc: OSError) -> str:
    if exc.errno == errno.ENOSPC:
        return "inotify watch limit reached (raise fs.inotify.max_user_watches)"
    if exc.errno == errno.EMFILE:
        return "inotify instance limit reached (raise fs.inotify.max_user_instances)"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied: {exc.filename or exc}"
    return f"{type(exc).__name__}: {exc}"
