"""What every tool call runs on: the transport's `CallContext` (progress, cancellation) and the project's
`Runtime` (lazily built reader and writer engines, locks, background embedding, the watcher, metrics and
logs). Cheap to import: the engine is loaded on first use.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ..files import stat_inside
from ..git import current_branch
from ..vocabulary import TOOLS, Vocabulary
from .protocol import Cancelled, ConfigProblem
from .schema import IndexSummary

if TYPE_CHECKING:
    from ..backends.local import LocalBackend
    from ..service import Engine
    from ..watcher import Watcher

log = logging.getLogger("codebase_index.tools")

EMBED_PROGRESS_INTERVAL = 0.5  # seconds between two background "embed" progress notifications
DEFAULT_INDEX_SUBDIR = (".codebase-index",)  # index_home.INDEX_DIR_NAME; used when the config is unreadable

# -- call context: progress and cancellation from the transport ---------------------------------------

ProgressFn = Callable[[str, int, int], None]


class CallContext:
    """Per-call hooks a transport passes in: where progress goes and how to tell the call was cancelled."""

    def __init__(
        self,
        progress: ProgressFn | None = None,
        cancelled: Callable[[], bool] | None = None,
        request_id: int | str | None = None,
        words: Vocabulary = TOOLS,
    ) -> None:
        self._progress = progress
        self._cancelled = cancelled or (lambda: False)
        self.request_id = request_id  # the transport's id: background work it starts reports under it
        self.words = words  # how the face spells tools and parameters in the messages it shows
        self.notes: list[str] = []  # one-line notes the answer leads with (indexed first, freshness)
        self.freshness: Any = None  # `freshness.Freshness` of what the answer was read from

    def is_cancelled(self) -> bool:
        return self._cancelled()

    def check_cancelled(self) -> None:
        if self._cancelled():
            raise Cancelled("request cancelled")

    def progress(self, phase: str, done: int, total: int) -> None:
        """Report progress, and stop the work here if the caller cancelled it."""
        self.check_cancelled()
        if self._progress is not None:
            self._progress(phase, done, total)


# -- runtime state shared by every call ---------------------------------------------------------------


class Metrics:
    """Per-method call counts and latencies since start (bounded samples, percentiles on demand)."""

    SAMPLES = 2048

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = collections.Counter()
        self._errors: dict[str, int] = collections.Counter()
        self._latencies: dict[str, collections.deque[float]] = {}
        self.started_at = time.time()

    def record(self, method: str, seconds: float, ok: bool) -> None:
        with self._lock:
            self._counts[method] += 1
            if not ok:
                self._errors[method] += 1
            self._latencies.setdefault(method, collections.deque(maxlen=self.SAMPLES)).append(seconds)

    def snapshot(self) -> dict[str, dict[str, float | int]]:
        with self._lock:
            out: dict[str, dict[str, float | int]] = {}
            for method, count in sorted(self._counts.items()):
                samples = sorted(self._latencies.get(method, ()))
                out[method] = {
                    "count": count,
                    "errors": self._errors.get(method, 0),
                    "p50Ms": round(percentile(samples, 50) * 1000, 3),
                    "p95Ms": round(percentile(samples, 95) * 1000, 3),
                }
            return out


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile of an already sorted sequence (0.0 when empty).

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.0
    >>> percentile([1.0, 2.0, 3.0, 4.0], 95)
    4.0
    """
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * pct // 100))
    return float(sorted_values[int(rank) - 1])


class LogRecordOut(msgspec.Struct):
    time: float
    level: str
    logger: str
    message: str


LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


class LogBuffer(logging.Handler):
    """The last records in memory, so `index_logs` answers without reading the log file."""

    def __init__(self, capacity: int = 2000) -> None:
        super().__init__()
        self._records: collections.deque[LogRecordOut] = collections.deque(maxlen=capacity)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            if record.exc_info and record.exc_info[0] is not None:
                message += f" ({record.exc_info[0].__name__}: {record.exc_info[1]})"
            self._records.append(LogRecordOut(record.created, record.levelname.lower(), record.name, message))
        except Exception:  # a log handler must never raise into the caller
            self.handleError(record)

    def tail(self, limit: int, level: str | None = None) -> list[LogRecordOut]:
        floor = LEVELS.get(level or "debug", logging.DEBUG)
        picked = [r for r in list(self._records) if LEVELS.get(r.level, logging.CRITICAL) >= floor]
        return picked[-limit:]


def default_index_dir(root: Path, index_dir: Path | None = None) -> tuple[Path, str | None]:
    """Where the index lives: the explicit path, else the config's (default <root>/.codebase-index).

    Returns the path and a config error message, if the config could not be read (the sidecar still
    starts so it can tell the agent what is wrong).
    """
    if index_dir is not None:
        return index_dir.resolve(), None
    try:
        from ..config import index_dir as config_index_dir
        from ..config import load_config

        return Path(config_index_dir(root, load_config(root))).resolve(), None
    except ImportError:
        return root.joinpath(*DEFAULT_INDEX_SUBDIR).resolve(), None
    except Exception as exc:  # ConfigError and friends: reported on every call that needs the engine
        return root.joinpath(*DEFAULT_INDEX_SUBDIR).resolve(), str(exc)


class Runtime:
    """Everything the tools share for one project: lazily built engines, locks, metrics and logs.

    Two engines, two SQLite connections: `reader` answers searches (WAL lets it read while the writer
    commits), `writer` runs index jobs, one at a time. Reads serialize on `read_lock` (they are fast);
    they never wait for an index run.
    """

    def __init__(self, root: Path, *, index_dir: Path | None = None, logs: LogBuffer | None = None) -> None:
        self.root = root.resolve()
        self.index_dir, self.config_error = default_index_dir(self.root, index_dir)
        from ..config import config_notice

        # Settings of an untrusted project file that are not used: one line in every answer.
        self.config_notice = config_notice(self.root)
        self.metrics = Metrics()
        self.logs = logs or LogBuffer()
        self.read_lock = threading.Lock()
        self.index_lock = threading.Lock()
        self._engines_lock = threading.Lock()
        self._reader: Engine | None = None
        self._writer: Engine | None = None
        self.index_runs = 0
        self._embed_thread: threading.Thread | None = None
        self.watcher: Watcher | None = None
        self.watch_enabled = False  # set by ServeCore (sidecar and MCP); one-shot callers do not watch
        self.watch_note: str | None = None  # why the watcher is off or degraded
        self._embed_stop = threading.Event()
        self._embed_again = threading.Event()
        self.last_embed_error: str | None = None
        # Set by the sidecar: where the background embedding job's progress goes (`$/progress`, phase
        # "embed"), with the id of the request that started it (None: a watcher or a resumed job).
        self.embed_progress: Callable[[dict[str, Any]], None] | None = None
        self._embed_request: int | str | None = None
        self._savings: Any = None
        self._repos: LocalBackend | None = None
        self._changed: set[str] = set()  # paths answers found changed on disk, waiting for a re-index
        self._changed_thread: threading.Thread | None = None

    @property
    def savings(self) -> Any:
        """This session's savings ledger (`context.savings.Savings`), made on first use."""
        with self._engines_lock:
            if self._savings is None:
                from ..context.savings import Savings

                def read(path: str) -> str | None:
                    lines = self.reader().file_lines(path)
                    return None if lines is None else "\n".join(lines)

                self._savings = Savings(self.index_dir, read)
            return self._savings

    def record_savings(self, tool: str, text: str, paths: Sequence[str]) -> dict[str, int] | None:
        """Count an answer's tokens against the whole files it points into; None if that failed."""

        def stat(path: str) -> Any:
            if path.startswith("kb:"):
                return None
            return stat_inside(self.root, path)  # as `Engine.file_lines` reads: no link followed

        try:
            return dict(self.savings.record(tool, text, paths, stat))
        except Exception as exc:  # savings are bookkeeping: never fail the answer
            log.warning("savings not recorded for %s: %s", tool, exc)
            return None

    def start_embedding(self, request_id: int | str | None = None) -> bool:
        """Embed pending chunks in a background thread (keyword search keeps answering meanwhile); a call
        while one runs makes it go round once more, so chunks from the latest index run are not missed.
        `request_id`: the request whose work this finishes; progress is reported under it."""
        with self._engines_lock:
            if request_id is not None:
                self._embed_request = request_id
            if self._embed_thread is not None and self._embed_thread.is_alive():
                self._embed_again.set()
                return False
            self._embed_stop.clear()
            self._embed_again.clear()
            self._embed_thread = threading.Thread(target=self._embed_loop, name="embed", daemon=True)
            self._embed_thread.start()
            return True

    def embedding_running(self) -> bool:
        thread = self._embed_thread
        return thread is not None and thread.is_alive()

    def _embed_reporter(self) -> Callable[[int, int], None] | None:
        """The job's (done, total) as `$/progress` params with the rate and the time left, at most one
        every EMBED_PROGRESS_INTERVAL seconds plus the last."""
        sink = self.embed_progress
        if sink is None:
            return None
        started = time.monotonic()
        first: list[int] = []
        last = [0.0]

        def report(done: int, total: int) -> None:
            now = time.monotonic()
            if not first:
                first.append(done)
            if done < total and now - last[0] < EMBED_PROGRESS_INTERVAL:
                return
            last[0] = now
            params: dict[str, Any] = {"requestId": self._embed_request, "phase": "embed", "done": done}
            params["total"] = total
            elapsed, moved = now - started, done - first[0]
            if elapsed > 0 and moved > 0:
                rate = moved / elapsed
                params["rate"] = round(rate, 2)
                params["etaSeconds"] = round(max(0, total - done) / rate, 1)
            with contextlib.suppress(Exception):  # a closed client must not stop the job
                sink(params)

        return report

    def _embed_loop(self) -> None:
        while not self._embed_stop.is_set():
            self._embed_again.clear()
            try:
                report = self.writer().embed(
                    progress=self._embed_reporter(), stop=self._embed_stop, wait_for_lock=False
                )
                self.last_embed_error = report.error if report is not None else None
                if report is not None:
                    log.info(
                        "embedded %d chunks (%d failed, %d pending) in %.1fs",
                        report.embedded,
                        report.failed,
                        report.pending,
                        report.seconds,
                    )
            except Exception as exc:  # reported by status; the keyword index is unaffected
                self.last_embed_error = str(exc)
                log.warning("background embedding failed: %s", exc)
                return
            if not self._embed_again.is_set():
                return

    def start_graph(self) -> None:
        """Extract the code graph that earlier runs left pending (a killed sidecar, `index --keyword-only`)
        and bring edges up to date, in the writer's background thread."""
        from ..processing import graph_enabled

        engine = self.writer()
        if graph_enabled() and engine.has_index():
            engine.graphs.schedule(engine.branch)

    def stop_embedding(self, timeout: float = 10.0) -> None:
        self._embed_stop.set()
        thread = self._embed_thread
        if thread is not None:
            thread.join(timeout)

    def _make_engine(self) -> Engine:
        if self.config_error:
            raise ConfigProblem(f"the project configuration is invalid: {self.config_error}")
        from ..service import Engine

        try:
            engine = Engine(self.root, index_path=self.index_dir)
        except FileNotFoundError as exc:
            raise ConfigProblem(str(exc)) from exc
        # The sidecar resolves call edges in the background after index() returns (a branch switch is
        # searchable sooner; graph queries wait for the edges); one-shot tool calls resolve at once.
        engine.graph_in_background = self.watch_enabled
        return engine

    def reader(self) -> Engine:
        with self._engines_lock:
            if self._reader is None:
                self._reader = self._make_engine()
            return self._reader

    def writer(self) -> Engine:
        with self._engines_lock:
            if self._writer is None:
                self._writer = self._make_engine()
            return self._writer

    def repo_backend(self) -> LocalBackend:
        """The multi-repository backend of this runtime, kept so other repositories' snapshots are
        built once; this project's engine is the reader."""
        from ..backends.local import LocalBackend
        from ..repos import RegistryError, resolve

        if self._repos is None:
            self._repos = LocalBackend({})
        with contextlib.suppress(RegistryError):
            own = resolve(["."], current=self.root)[0].name
            self._repos.engines.setdefault(own, self.reader())
        return self._repos

    def backend_only(self) -> bool:
        """A read-only client of a shared backend: `backend` configured, no local index."""
        if self.config_error or (self.index_dir / "codebase.db").exists():
            return False
        return self.reader().config.backend is not None

    def engine_loaded(self) -> bool:
        return self._reader is not None

    def summary(self) -> IndexSummary:
        """Index counts straight from SQLite (read-only, no numpy), for a fast `initialize`."""
        return light_summary(self.root, self.index_dir)

    # -- the file watcher (sidecar-owned) --------------------------------------------------------------

    def start_watcher(self) -> str:
        """Start watching the project and its knowledge bases unless config or the folder says not to;
        returns the watcher state or why it is off. Idempotent."""
        from ..git import project_marker
        from ..watcher import Watcher

        with self._engines_lock:
            if self.watcher is not None:
                return self.watcher.status.state
        engine = self.writer()
        cfg = engine.config.indexing
        if not cfg.watch_files:
            self.watch_note = "off: indexing.watchFiles is false"
        elif cfg.require_project_marker and project_marker(self.root) is None:
            self.watch_note = "off: no project marker (.git, package.json, pyproject.toml, ...) in the root"
        else:
            roots = [self.root, *(Path(kb.path) for kb in engine.knowledge_bases() if Path(kb.path).is_dir())]
            watcher = Watcher(
                roots,
                reindex_paths=self.reindex_paths,
                reindex_all=self.reindex_all,
                exclude=engine.config.exclude,
            )
            with self._engines_lock:
                self.watcher = watcher
            watcher.start()
            self.watch_note = watcher.status.reason
            return watcher.status.state
        return self.watch_note

    def stop_watcher(self) -> None:
        with self._engines_lock:
            watcher, self.watcher = self.watcher, None
        if watcher is not None:
            watcher.stop()

    def watcher_status(self) -> dict[str, Any]:
        watcher = self.watcher
        if watcher is None:
            return {"state": "disabled" if self.watch_note else "stopped", "reason": self.watch_note}
        return dict(msgspec.to_builtins(watcher.status))

    def reindex_paths(self, paths: Sequence[str]) -> None:
        """Path-level re-index (watcher, plugin notifications); waits for a running index call."""
        with self.index_lock:
            report = self.writer().index_paths(list(paths))
            self.index_runs += 1
        if report.files_changed or report.files_removed:
            log.info(
                "re-indexed %d changed path(s): %d changed, %d removed",
                len(paths),
                report.files_changed,
                report.files_removed,
            )
            self.start_embedding()

    def reindex_changed(self) -> None:
        """Re-index, in the background, the files an answer could not read as indexed (`Engine.
        take_changed`: swapped for a link, FIFO, device or folder, gone or grown too large)."""
        reader = self._reader
        paths = reader.take_changed() if reader is not None else []
        if not paths:
            return
        with self._engines_lock:
            self._changed.update(paths)
            if self._changed_thread is not None:
                return  # the running thread takes them on its next round
            self._changed_thread = threading.Thread(target=self._reindex_changed_loop, name="reindex-changed")
            self._changed_thread.daemon = True
            self._changed_thread.start()

    def _reindex_changed_loop(self) -> None:
        while True:
            with self._engines_lock:
                paths = sorted(self._changed)
                self._changed.clear()
                if not paths:
                    self._changed_thread = None
                    return
            try:
                self.reindex_paths(paths)
            except Exception as exc:  # the next answer that meets them queues them again
                log.warning("re-indexing %d changed file(s) failed: %s", len(paths), exc)

    def wait_reindexed(self, timeout: float = 30.0) -> None:
        """Wait for the re-index `reindex_changed` started (tests, and `close`)."""
        thread = self._changed_thread
        if thread is not None:
            thread.join(timeout)

    def reindex_all(self) -> None:
        """Full incremental run under the branch HEAD names now (a checkout, or a polling re-scan)."""
        with self.index_lock:
            report = self.writer().index()
            self.index_runs += 1
        if report.files_changed or report.files_removed:
            log.info(
                "re-indexed branch %s: %d changed, %d removed",
                report.branch,
                report.files_changed,
                report.files_removed,
            )
            self.start_embedding()

    def close(self) -> None:
        self.stop_watcher()
        self.wait_reindexed()
        self.stop_embedding()
        with self._engines_lock:
            others = list(self._repos.engines.values()) if self._repos is not None else []
            for engine in (self._reader, self._writer, *others):
                if engine is not None:
                    with contextlib.suppress(Exception):
                        engine.close()
            self._reader = self._writer = None
            self._repos = None


def light_summary(root: Path, index_dir: Path) -> IndexSummary:
    branch = current_branch(root)
    db = index_dir / "codebase.db"
    base = IndexSummary(str(root), str(index_dir), branch, False, 0, 0, None)
    if not db.exists():
        return base
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5.0)
        try:
            last = conn.execute("SELECT value FROM meta WHERE key='last_indexed_at'").fetchone()
            files = conn.execute("SELECT COUNT(*) FROM files WHERE branch=?", (branch,)).fetchone()[0]
            chunks = conn.execute(
                "SELECT COALESCE(SUM(c.n_chunks), 0) FROM files f JOIN contents c ON c.key = f.content_key "
                "WHERE f.branch=?",
                (branch,),
            ).fetchone()[0]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        base.error = f"index unreadable: {exc}"
        return base
    base.indexed = last is not None
    base.files = int(files)
    base.chunks = int(chunks)
    base.last_indexed_at = float(last[0]) if last else None
    return base
