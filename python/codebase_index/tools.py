"""The agent-facing tools, defined once and served three ways (JSON-RPC sidecar, MCP, generated TypeScript).

Each tool is a msgspec params Struct (camelCase on the wire, unknown fields refused) plus a `ToolSpec`
(name, RPC method, description for the model, handler). `call()` validates raw params against the Struct,
runs the handler on a shared `Runtime` and records metrics; the transports only move bytes.

This module must stay cheap to import: the sidecar answers `initialize` from it before numpy, tree-sitter
or the engine are loaded (they are imported inside the handlers that need them).

`python -m codebase_index.tools --emit json|ts|markdown` prints the JSON Schemas, writes the TypeScript
face, or prints the README's tool table.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import logging
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec

from . import __version__
from .git import current_branch
from .models import ChunkKind

if TYPE_CHECKING:
    from .backends.local import LocalBackend
    from .service import Engine
    from .watcher import Watcher

log = logging.getLogger("codebase_index.tools")

PROTOCOL_VERSION = 1
EMBED_PROGRESS_INTERVAL = 0.5  # seconds between two background "embed" progress notifications
SERVER_NAME = "codebase-index"
DEFAULT_INDEX_SUBDIR = (".opencode", "index")

# -- errors (codes are the JSON-RPC ones; documented in plugin/PROTOCOL.md) --------------------------

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
INDEX_BUSY = -32001
SIDECAR_LOCKED = -32002
NOT_INDEXED = -32003
CONFIG_ERROR = -32004


class ToolError(Exception):
    """A failure the caller should see as-is: a JSON-RPC error code plus a one-line message."""

    code = INTERNAL_ERROR

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidParams(ToolError):
    code = INVALID_PARAMS


class MethodNotFound(ToolError):
    code = METHOD_NOT_FOUND


class IndexBusy(ToolError):
    code = INDEX_BUSY


class NotIndexed(ToolError):
    code = NOT_INDEXED


class ConfigProblem(ToolError):
    code = CONFIG_ERROR


class Cancelled(ToolError):
    code = REQUEST_CANCELLED


# -- params: the single source of every face's schema -------------------------------------------------

SearchMode = Literal["keyword", "semantic", "hybrid"]
LogLevel = Literal["debug", "info", "warning", "error"]

_Query = Annotated[
    str, msgspec.Meta(min_length=1, description="What to look for: words, identifiers, a phrase.")
]
_FileType = Annotated[str, msgspec.Meta(description="Only files with this extension, e.g. 'py' or '.ts'.")]
_Directory = Annotated[
    str, msgspec.Meta(description="Only files under this directory, relative to the root.")
]
_ChunkType = Annotated[ChunkKind, msgspec.Meta(description="Only chunks of this kind.")]
_Repos = Annotated[
    list[Annotated[str, msgspec.Meta(min_length=1)]],
    msgspec.Meta(
        min_length=1,
        max_length=50,
        description="Search these indexed repositories together, one ranking, each result labelled with its "
        "repository: names from `codebase-index repos list`, '.' for this one, '*' for all.",
    ),
]


class _Params(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    pass


_MaxTokens = Annotated[
    int,
    msgspec.Meta(
        ge=128,
        le=8000,
        description="Hard cap on the answer's tokens, counted with a real tokenizer (default 1500).",
    ),
]
_ChangedSince = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        description="Only code changed after this commit or date (`HEAD~5`, `v2.1`, `2026-11-01`).",
    ),
]
_ChangedBefore = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        description="Only code unchanged since this commit or date (git blame: older code only).",
    ),
]


class SearchParams(_Params):
    """Search the indexed code and return the best matching chunks with their code."""

    query: _Query
    limit: (
        Annotated[
            int,
            msgspec.Meta(ge=1, le=50, description="How many results (default: config search.maxResults)."),
        ]
        | None
    ) = None
    file_type: _FileType | None = None
    directory: _Directory | None = None
    chunk_type: _ChunkType | None = None
    min_score: Annotated[float, msgspec.Meta(description="Drop results scoring below this.")] | None = None
    context_lines: (
        Annotated[int, msgspec.Meta(ge=0, le=50, description="Extra file lines shown around each result.")]
        | None
    ) = None
    mode: (
        Annotated[SearchMode, msgspec.Meta(description="Retrieval strategy (default: the best available).")]
        | None
    ) = None
    changed_since: _ChangedSince | None = None
    changed_before: _ChangedBefore | None = None
    repos: _Repos | None = None


class PeekParams(_Params):
    """Like search, but locations only: cheap to scan, then read the files you need."""

    query: _Query
    limit: Annotated[int, msgspec.Meta(ge=1, le=100, description="How many locations (default 20).")] = 20
    file_type: _FileType | None = None
    directory: _Directory | None = None
    chunk_type: _ChunkType | None = None
    changed_since: _ChangedSince | None = None
    changed_before: _ChangedBefore | None = None
    repos: _Repos | None = None


class SimilarParams(_Params):
    """Find code similar in meaning to a snippet or to the chunk at path:line."""

    snippet: (
        Annotated[str, msgspec.Meta(min_length=1, description="A code snippet to find look-alikes of.")]
        | None
    ) = None
    path: (
        Annotated[str, msgspec.Meta(description="Instead of a snippet: a file, relative to the root.")] | None
    ) = None
    line: (
        Annotated[
            int, msgspec.Meta(ge=1, le=10_000_000, description="With path: a line inside the example chunk.")
        ]
        | None
    ) = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=50, description="How many results (default 10).")] = 10
    file_type: _FileType | None = None
    directory: _Directory | None = None
    chunk_type: _ChunkType | None = None


class IndexParams(_Params):
    """Build or update the index."""

    force: Annotated[bool, msgspec.Meta(description="Re-chunk every file instead of only changed ones.")] = (
        False
    )
    estimate_only: Annotated[bool, msgspec.Meta(description="Only count what an index run would do.")] = False
    verbose: Annotated[bool, msgspec.Meta(description="List skipped files with their reasons.")] = False


class StatusParams(_Params):
    """No parameters."""


_KbPath = Annotated[
    str,
    msgspec.Meta(
        min_length=1, description="The folder: absolute, or relative to the project root (or its label)."
    ),
]


class AddKnowledgeBaseParams(_Params):
    """Index an extra folder (docs, a sibling library) with the project."""

    path: _KbPath


class ListKnowledgeBasesParams(_Params):
    """No parameters."""


class RemoveKnowledgeBaseParams(_Params):
    """Stop indexing an extra folder and drop its chunks."""

    path: _KbPath


class HealthCheckParams(_Params):
    """No parameters."""


class MetricsParams(_Params):
    """No parameters."""


class LogsParams(_Params):
    """Recent log records of the index service."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=1000, description="How many records (default 50).")] = 50
    level: Annotated[LogLevel, msgspec.Meta(description="Only records at this level or above.")] | None = None


GraphDirection = Literal["callers", "callees", "path", "impact"]


class CallGraphParams(_Params):
    """Who calls a function, method or class across files, or what it calls. Give `name` or `symbolId`."""

    name: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1, description="Function, method or class: `parse`, `Session.send`, `Foo::new`."
            ),
        ]
        | None
    ) = None
    symbol_id: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1, description="One exact symbol from an earlier result: `path#Qualified.name`."
            ),
        ]
        | None
    ) = None
    direction: Annotated[
        GraphDirection,
        msgspec.Meta(
            description="callers: who calls it (default); callees: what it calls; path: the shortest call "
            "path to `to`; impact: what a git change reaches (changed symbols, callers, tests; no name)."
        ),
    ] = "callers"
    to: (
        Annotated[str, msgspec.Meta(min_length=1, description="With direction path: the symbol to reach.")]
        | None
    ) = None
    diff: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1,
                description="With direction impact: a git range (`main..HEAD`) or revision; default: "
                "uncommitted changes vs HEAD.",
            ),
        ]
        | None
    ) = None
    depth: Annotated[int, msgspec.Meta(ge=1, le=3, description="Hops to follow (default 1).")] = 1
    include_name_matches: Annotated[
        bool, msgspec.Meta(description="Also list call sites matched by name only (receiver type unknown).")
    ] = False
    limit: Annotated[int, msgspec.Meta(ge=1, le=500, description="Most calls returned (default 100).")] = 100


class ImplementationLookupParams(_Params):
    """Where something is really implemented: an identifier or a description of a definition."""

    query: _Query
    limit: Annotated[int, msgspec.Meta(ge=1, le=20, description="How many definitions (default 5).")] = 5


class ContextParams(_Params):
    """The smallest set of code that answers a question, within a token budget."""

    query: _Query
    max_tokens: _MaxTokens = 1500
    file_type: _FileType | None = None
    directory: _Directory | None = None
    changed_since: _ChangedSince | None = None
    changed_before: _ChangedBefore | None = None
    repos: _Repos | None = None


class EditContextParams(_Params):
    """What to read before changing a symbol: definition, callers, callees, tests, similar code."""

    target: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            description="The symbol to change (`parse`, `Session.send`, `path#Qualified.name`) or path:line.",
        ),
    ]
    max_tokens: _MaxTokens = 1500


class SavingsParams(_Params):
    """No parameters."""


# -- results ------------------------------------------------------------------------------------------


class ToolResult(msgspec.Struct):
    """What every tool returns: `text` for the model, `data` for programs."""

    text: str
    data: Any


class Hit(msgspec.Struct, rename="camel"):
    path: str
    start_line: int
    end_line: int
    kind: str
    symbol: str
    language: str
    score: float
    id: int
    content: str | None = None


class RepoHit(Hit, rename="camel"):
    """A multi-repository result: a hit and the repository it is from."""

    repo: str = ""


class IndexSummary(msgspec.Struct, rename="camel"):
    """The index state as `initialize` reports it, read without loading the engine."""

    root: str
    index_dir: str
    branch: str
    indexed: bool
    files: int
    chunks: int
    last_indexed_at: float | None
    error: str | None = None


# -- call context: progress and cancellation from the transport ---------------------------------------

ProgressFn = Callable[[str, int, int], None]


class CallContext:
    """Per-call hooks a transport passes in: where progress goes and how to tell the call was cancelled."""

    def __init__(
        self,
        progress: ProgressFn | None = None,
        cancelled: Callable[[], bool] | None = None,
        request_id: int | str | None = None,
    ) -> None:
        self._progress = progress
        self._cancelled = cancelled or (lambda: False)
        self.request_id = request_id  # the transport's id: background work it starts reports under it

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
    """Where the index lives: the explicit path, else the config's, else <root>/.opencode/index.

    Returns the path and a config error message, if the config could not be read (the sidecar still
    starts so it can tell the agent what is wrong).
    """
    if index_dir is not None:
        return index_dir.resolve(), None
    try:
        from .config import index_dir as config_index_dir
        from .config import load_config

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
        self.watch_enabled = False  # set by the sidecar: MCP and tests do not watch
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

    @property
    def savings(self) -> Any:
        """This session's savings ledger (`context.savings.Savings`), made on first use."""
        with self._engines_lock:
            if self._savings is None:
                from .context.savings import Savings

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
            try:
                return (self.root / path).stat()
            except OSError:
                return None

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
        from .indexer import graph_enabled

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
        from .service import Engine

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
        from .backends.local import LocalBackend
        from .repos import RegistryError, resolve

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
        from .git import project_marker
        from .watcher import Watcher

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


# -- handlers -----------------------------------------------------------------------------------------


def _require_index(engine: Engine) -> None:
    if not engine.has_index():
        raise NotIndexed("this project is not indexed yet; call index_codebase first")


def _filters(file_type: str | None, directory: str | None, kind: str | None) -> Any:
    from .search import Filters

    return Filters(file_type=file_type or None, directory=directory or None, kind=kind)


# With a time filter, search looks this many times deeper and keeps the results that pass it.
TIME_FILTER_DEPTH = 10


def _time_filter(rt: Runtime, changed_since: str | None, changed_before: str | None) -> Any:
    """The (path, start, end) predicate of `changedSince` / `changedBefore`, or None."""
    if not changed_since and not changed_before:
        return None
    from .changes import GitError, time_filter

    try:
        return time_filter(rt.root, changed_since, changed_before)
    except GitError as exc:
        raise InvalidParams(f"invalid params: `changedSince`/`changedBefore`: {exc}") from exc


def _run_search(
    rt: Runtime,
    query: str,
    limit: int,
    filters: Any,
    mode: str | None,
    allow: Any = None,
    repos: Sequence[str] | None = None,
) -> Any:
    if not query.strip():
        raise InvalidParams("invalid params: `query` is empty")
    if repos or rt.backend_only():
        if allow is not None:
            raise InvalidParams(
                "invalid params: `changedSince`/`changedBefore` read this repository's git history; "
                "they do not combine with `repos`"
            )
        return _search_repos(rt, query, limit, filters, mode, repos or ())
    depth = limit if allow is None else min(500, limit * TIME_FILTER_DEPTH)
    with rt.read_lock:
        engine = rt.reader()
        _require_index(engine)
        try:
            if mode is None:
                response = engine.search(query, top_k=depth, filters=filters)
            else:
                response = engine.search(query, top_k=depth, filters=filters, mode=mode)
        except ValueError as exc:
            raise InvalidParams(f"invalid params: `mode`: {exc}") from exc
    if allow is not None:
        response.results = [r for r in response.results if allow(r.path, r.start_line, r.end_line)][:limit]
    return response


def _search_repos(
    rt: Runtime, query: str, limit: int, filters: Any, mode: str | None, repos: Sequence[str]
) -> Any:
    """Several repositories (local indexes from the registry), or the shared backend when this project
    has only `backend` configured; `repos` empty means this one."""
    from . import multirepo
    from .backends.base import BackendError
    from .repos import RegistryError

    if mode not in (None, "hybrid"):
        raise InvalidParams("invalid params: `mode`: a multi-repository search is hybrid")
    with rt.read_lock:
        try:
            return multirepo.search(
                rt.root, query, repos=repos, top_k=limit, filters=filters, local=rt.repo_backend()
            )
        except RegistryError as exc:
            raise InvalidParams(f"invalid params: `repos`: {exc}") from exc
        except BackendError as exc:
            raise ToolError(f"shared backend: {exc}") from exc


def _hits(results: Sequence[Any], *, content: bool) -> list[Hit]:
    return [
        (RepoHit if r.repo else Hit)(
            path=r.path,
            start_line=r.start_line,
            end_line=r.end_line,
            kind=r.kind,
            symbol=r.symbol,
            language=r.language,
            score=r.score,
            id=r.id,
            content=r.content if content else None,
            **({"repo": r.repo} if r.repo else {}),
        )
        for r in results
    ]


def handle_search(rt: Runtime, p: SearchParams, call: CallContext) -> ToolResult:
    from .format import format_peek, format_search

    defaults = rt.reader().config.search  # unset params fall back to the project's `search` config
    limit = p.limit if p.limit is not None else min(defaults.max_results, 50)
    min_score = p.min_score if p.min_score is not None else defaults.min_score
    context_lines = p.context_lines if p.context_lines is not None else defaults.context_lines
    allow = _time_filter(rt, p.changed_since, p.changed_before)
    filters = _filters(p.file_type, p.directory, p.chunk_type)
    response = _run_search(rt, p.query, limit, filters, p.mode, allow, p.repos)
    results = [r for r in response.results if r.score >= min_score]
    call.check_cancelled()
    if defaults.include_context:
        text = format_search(results, root=rt.root, context_lines=context_lines, query=p.query)
    else:
        text = format_peek(results, query=p.query)
    data = {"query": p.query, "strategy": response.strategy, "results": _hits(results, content=False)}
    data["savings"] = rt.record_savings("codebase_search", text, [r.path for r in results])
    return _with_note(ToolResult(text, data), response.note)


def _with_note(result: ToolResult, note: str | None) -> ToolResult:
    """A degraded answer (keyword fallback, reranker skipped) says so first, in `text` and `data.note`."""
    if note:
        result.data["note"] = note
        result.text = f"note: {note}\n\n{result.text}"
    return result


def handle_peek(rt: Runtime, p: PeekParams, call: CallContext) -> ToolResult:
    from .format import format_peek

    allow = _time_filter(rt, p.changed_since, p.changed_before)
    filters = _filters(p.file_type, p.directory, p.chunk_type)
    response = _run_search(rt, p.query, p.limit, filters, None, allow, p.repos)
    call.check_cancelled()
    data = {
        "query": p.query,
        "strategy": response.strategy,
        "results": _hits(response.results, content=False),
    }
    text = format_peek(response.results, query=p.query)
    data["savings"] = rt.record_savings("codebase_peek", text, [r.path for r in response.results])
    return _with_note(ToolResult(text, data), response.note)


def handle_context(rt: Runtime, p: ContextParams, call: CallContext) -> ToolResult:
    if not p.query.strip():
        raise InvalidParams("invalid params: `query` is empty")
    allow = _time_filter(rt, p.changed_since, p.changed_before)
    search, own = None, None
    if p.repos:
        if allow is not None:
            raise InvalidParams(
                "invalid params: `changedSince`/`changedBefore` read this repository's git history; "
                "they do not combine with `repos`"
            )
        search, own = _repos_search(rt, p.repos)
    with rt.read_lock:
        engine = rt.reader()
        _require_index(engine)
        found = engine.context(
            p.query,
            max_tokens=p.max_tokens,
            filters=_filters(p.file_type, p.directory, None),
            allow=allow,
            search=search,
            own_repo=own,
        )
    call.check_cancelled()
    data = context_data(found)
    data["savings"] = rt.record_savings("codebase_context", found.text, found.files)
    return ToolResult(found.text, data)


def handle_edit_context(rt: Runtime, p: EditContextParams, call: CallContext) -> ToolResult:
    if not p.target.strip():
        raise InvalidParams("invalid params: `target` is empty")
    with rt.read_lock:
        engine = rt.reader()
        _require_index(engine)
        found = engine.edit_context(p.target, max_tokens=p.max_tokens)
    call.check_cancelled()
    data = context_data(found)
    data["savings"] = rt.record_savings("codebase_edit_context", found.text, found.files)
    return ToolResult(found.text, data)


def _repos_search(rt: Runtime, repos: Sequence[str]) -> tuple[Any, str | None]:
    """The multi-repository search step of a context pack, and this repository's registry name."""
    from . import multirepo
    from .backends.base import BackendError
    from .repos import RegistryError, resolve

    try:
        own = resolve(["."], current=rt.root)[0].name
    except RegistryError:
        own = None

    def search(query: str, top_k: int, filters: Any) -> Any:
        try:
            return multirepo.search(
                rt.root, query, repos=repos, top_k=top_k, filters=filters, local=rt.repo_backend()
            )
        except RegistryError as exc:
            raise InvalidParams(f"invalid params: `repos`: {exc}") from exc
        except BackendError as exc:
            raise ToolError(f"shared backend: {exc}") from exc

    return search, own


def context_data(found: Any) -> dict[str, Any]:
    """A pack as the wire and `--json` give it: {query, maxTokens, tokens, items, omitted, ...}."""
    data = dict(msgspec.to_builtins(found))
    data.pop("text", None)
    return data


def handle_savings(rt: Runtime, p: SavingsParams, call: CallContext) -> ToolResult:
    from .context.savings import format_savings

    report = rt.savings.report()
    return ToolResult(format_savings(report), msgspec.to_builtins(report))


def handle_similar(rt: Runtime, p: SimilarParams, call: CallContext) -> ToolResult:
    from .format import format_search

    if (p.snippet is None) == (p.path is None):
        raise InvalidParams("invalid params: give either `snippet` or `path` (with `line`)")
    if p.path is not None and p.line is None:
        raise InvalidParams("invalid params: `path` needs `line` (a line inside the example chunk)")
    at = (p.path, p.line) if p.path is not None and p.line is not None else None
    filters = _filters(p.file_type, p.directory, p.chunk_type)
    with rt.read_lock:
        engine = rt.reader()
        _require_index(engine)
        try:
            response = engine.similar(snippet=p.snippet, at=at, top_k=p.limit, filters=filters)
        except ValueError as exc:
            raise InvalidParams(f"invalid params: {exc}") from exc
    call.check_cancelled()
    text = format_search(response.results, root=rt.root, context_lines=0, query=response.query)
    data: dict[str, Any] = {
        "query": response.query,
        "strategy": response.strategy,
        "results": _hits(response.results, content=False),
    }
    data["savings"] = rt.record_savings("find_similar", text, [r.path for r in response.results])
    return ToolResult(text, data)


def handle_index(rt: Runtime, p: IndexParams, call: CallContext) -> ToolResult:
    from .format import format_estimate, format_index_report

    if p.estimate_only:
        with rt.read_lock:
            estimate = msgspec.to_builtins(rt.reader().estimate(force=p.force))
        return ToolResult(format_estimate(estimate), estimate)
    if not rt.index_lock.acquire(blocking=False):
        raise IndexBusy("an index run is already in progress in this sidecar; try again when it finishes")
    try:
        engine = rt.writer()
        report = engine.index(force=p.force, progress=call.progress)
        rt.index_runs += 1
        skipped = engine.skipped_files() if p.verbose else []
        problem_rows = engine.problem_files() if p.verbose else []
    finally:
        rt.index_lock.release()
    if rt.watch_enabled:
        rt.start_watcher()
    log.info(
        "indexed %d files (%d changed, %d removed) in %.2fs",
        report.files,
        report.files_changed,
        report.files_removed,
        report.seconds,
    )
    rt.start_embedding(call.request_id)
    data = msgspec.to_builtins(report)
    if p.verbose:
        data["skippedFiles"] = [msgspec.to_builtins(s) for s in skipped]
        data["problemFiles"] = [msgspec.to_builtins(s) for s in problem_rows]
    return ToolResult(format_index_report(report, skipped, problems=problem_rows), data)


def handle_status(rt: Runtime, p: StatusParams, call: CallContext) -> ToolResult:
    from .format import format_status

    with rt.read_lock:
        status = rt.reader().status()
    if status.embeddings is not None:  # the background job lives in the runtime, not in the engine
        status.embeddings.running = rt.embedding_running()
        if rt.last_embed_error and not status.embeddings.error:
            status.embeddings.error = rt.last_embed_error
    data = msgspec.to_builtins(status)
    data["indexRunning"] = rt.index_lock.locked()
    data["watcher"] = rt.watcher_status()
    from .context.savings import summary_line

    report = rt.savings.report()
    data["savings"] = msgspec.to_builtins(report)
    text = format_status(status, running=rt.index_lock.locked())
    mine, every = summary_line(report.this_session), summary_line(report.all_sessions)
    text += f"\nsavings: this session {mine}; all sessions {every}"
    return ToolResult(text, data)


def handle_health_check(rt: Runtime, p: HealthCheckParams, call: CallContext) -> ToolResult:
    """Check and repair the index: damaged SQLite pages (the database is moved aside and rebuilt around
    its readable embeddings), files without chunks, chunks without a file, vectors out of step; then
    drop what no file refers to and verify the vector index."""
    from .format import format_health

    if not (rt.index_dir / "codebase.db").exists():
        raise NotIndexed("there is no index to check yet; call index_codebase first")
    if not rt.index_lock.acquire(blocking=False):
        return _health_check_only(rt)
    held_reads = False

    def before_rebuild() -> None:
        # No search may read the damaged file while it is moved aside and rebuilt; the reader's
        # connection still points at it. Searches wait for the rebuild (the index is broken anyway).
        nonlocal held_reads
        rt.read_lock.acquire()
        held_reads = True
        if rt._reader is not None:
            rt._reader.close()

    try:
        rt.stop_embedding()
        writer = rt.writer()
        try:
            report = writer.repair(before_rebuild=before_rebuild, progress=call.progress)
        finally:
            if held_reads:
                rt.read_lock.release()
        if report.moved_aside:
            log.warning("index database damaged: moved aside to %s and rebuilt", report.moved_aside)
            rt.index_runs += 1
        gc_report = writer.gc()  # after the repair: it also drops vectors orphaned by it
        check = writer.verify_vectors()  # the ANN file against what is left
        branch = writer.branch()
        counts = writer.store.counts(branch)
    finally:
        rt.index_lock.release()
    rt.start_embedding()  # vectors the repair lost (or never had) are computed in the background
    data = {
        **msgspec.to_builtins(report),
        "quickCheck": report.pages,
        "purgedContents": gc_report.contents_removed,
        "gc": msgspec.to_builtins(gc_report),
        "vectors": None if check is None else {**msgspec.to_builtins(check), "ok": check.ok},
        "branch": branch,
        "files": counts["files"],
        "chunks": counts["chunks"],
        "vocabulary": counts["vocabulary"],
        "note": None,
    }
    return ToolResult(format_health(data), data)


def _health_check_only(rt: Runtime) -> ToolResult:
    """While an index run holds the index: SQLite's page check only, repairs left for later."""
    from .format import format_health
    from .repair import check_pages

    with rt.read_lock:
        engine = rt.reader()
        pages = check_pages(engine.store.conn)
        branch = engine.branch()
        counts = (
            engine.store.counts(branch) if pages == ["ok"] else {"files": 0, "chunks": 0, "vocabulary": 0}
        )
    data = {
        "ok": pages == ["ok"],
        "pages": pages,
        "quickCheck": pages,
        "problems": [] if pages == ["ok"] else [f"page check: {line}" for line in pages[:20]],
        "repaired": [],
        "purgedContents": None,
        "gc": None,
        "vectors": None,
        "branch": branch,
        **counts,
        "note": "repairs skipped: an index run is in progress (call index_health_check again after it)",
    }
    return ToolResult(format_health(data), data)


def _kb_error(exc: Exception) -> ToolError:
    return InvalidParams(f"invalid params: `path`: {exc}")


def handle_kb_add(rt: Runtime, p: AddKnowledgeBaseParams, call: CallContext) -> ToolResult:
    from .knowledge import KnowledgeBaseError

    if not rt.index_lock.acquire(blocking=False):
        raise IndexBusy("an index run is in progress in this sidecar; try again when it finishes")
    try:
        kb, report = rt.writer().add_knowledge_base(p.path)
        rt.index_runs += 1
    except KnowledgeBaseError as exc:
        raise _kb_error(exc) from exc
    finally:
        rt.index_lock.release()
    if rt.watcher is not None:
        rt.stop_watcher()  # restart so the new folder is watched too
        rt.start_watcher()
    rt.start_embedding()
    data = {**msgspec.to_builtins(kb), "files": report.files, "chunks": report.chunks}
    return ToolResult(
        f"knowledge base kb:{kb.label} ({kb.path}): {report.files} files, {report.chunks} chunks", data
    )


def handle_kb_list(rt: Runtime, p: ListKnowledgeBasesParams, call: CallContext) -> ToolResult:
    with rt.read_lock:
        engine = rt.reader()
        kbs = engine.knowledge_bases()
        catalogs = engine.store.branches() if engine.has_index() else {}
    rows = [{**msgspec.to_builtins(kb), "files": catalogs.get(kb.catalog, 0)} for kb in kbs]
    if not rows:
        return ToolResult("no knowledge bases (add one with add_knowledge_base)", {"knowledgeBases": []})
    text = "\n".join(f"kb:{r['label']}  {r['path']}  ({r['source']}, {r['files']} files)" for r in rows)
    return ToolResult(text, {"knowledgeBases": rows})


def handle_kb_remove(rt: Runtime, p: RemoveKnowledgeBaseParams, call: CallContext) -> ToolResult:
    from .knowledge import KnowledgeBaseError

    if not rt.index_lock.acquire(blocking=False):
        raise IndexBusy("an index run is in progress in this sidecar; try again when it finishes")
    try:
        kb = rt.writer().remove_knowledge_base(p.path)
    except KnowledgeBaseError as exc:
        raise _kb_error(exc) from exc
    finally:
        rt.index_lock.release()
    if rt.watcher is not None:
        rt.stop_watcher()
        rt.start_watcher()
    return ToolResult(f"removed knowledge base kb:{kb.label} ({kb.path})", msgspec.to_builtins(kb))


def handle_metrics(rt: Runtime, p: MetricsParams, call: CallContext) -> ToolResult:
    from .format import format_metrics

    size = 0
    if rt.index_dir.is_dir():
        for entry in rt.index_dir.iterdir():
            with contextlib.suppress(OSError):
                if entry.is_file():
                    size += entry.stat().st_size
    cache: dict[str, Any] = {"engineLoaded": rt.engine_loaded(), "snapshotDocs": None}
    reader = rt._reader
    snap = getattr(reader, "_snapshot", None) if reader is not None else None
    if snap is not None:
        cache.update(snapshotBranch=snap[0], snapshotGeneration=snap[1], snapshotDocs=len(snap[2]))
    data = {
        "uptimeSeconds": round(time.time() - rt.metrics.started_at, 3),
        "methods": rt.metrics.snapshot(),
        "indexSizeBytes": size,
        "indexRuns": rt.index_runs,
        "indexRunning": rt.index_lock.locked(),
        "cache": cache,
        "savings": msgspec.to_builtins(rt.savings.report()),
    }
    return ToolResult(format_metrics(data), data)


def handle_logs(rt: Runtime, p: LogsParams, call: CallContext) -> ToolResult:
    from .format import format_logs

    records = rt.logs.tail(p.limit, p.level)
    log_file = rt.index_dir / "sidecar.log"
    data = {"records": records, "logFile": str(log_file) if log_file.exists() else None}
    return ToolResult(format_logs(records), data)


def handle_call_graph(rt: Runtime, p: CallGraphParams, call: CallContext) -> ToolResult:
    from .graph.text import format_call_graph

    if p.direction == "impact":
        return _graph_impact(rt, p, call)
    if (p.name is None) == (p.symbol_id is None):
        raise InvalidParams("invalid params: give exactly one of `name` or `symbolId`")
    if p.symbol_id is not None and "#" not in p.symbol_id:
        raise InvalidParams(
            "invalid params: `symbolId` is `path#Qualified.name`, as call_graph results give it"
        )
    target = (p.symbol_id or p.name or "").strip()
    if not target:
        raise InvalidParams("invalid params: `name` is empty")
    if p.direction == "path":
        return _graph_path(rt, target, p, call)
    with rt.read_lock:
        engine = rt.reader()
        _require_index(engine)
        graph = engine.call_graph(
            target,
            direction=p.direction,
            depth=p.depth,
            include_name_matches=p.include_name_matches,
            limit=p.limit,
        )
    call.check_cancelled()
    text = format_call_graph(graph)
    data = msgspec.to_builtins(graph)
    paths = (
        [r.path for r in graph.roots]
        + [e.caller_path for e in graph.edges]
        + [e.callee_path for e in graph.edges]
    )
    data["savings"] = rt.record_savings("call_graph", text, [p for p in paths if p])
    return ToolResult(text, data)


def _graph_path(rt: Runtime, source: str, p: CallGraphParams, call: CallContext) -> ToolResult:
    from .graph.paths import format_path

    if not p.to or not p.to.strip():
        raise InvalidParams("invalid params: direction `path` needs `to` (the symbol to reach)")
    with rt.read_lock:
        engine = rt.reader()
        _require_index(engine)
        found = engine.call_path(source, p.to.strip())
    call.check_cancelled()
    return ToolResult(format_path(found), msgspec.to_builtins(found))


def _graph_impact(rt: Runtime, p: CallGraphParams, call: CallContext) -> ToolResult:
    from .changes import GitError
    from .graph.paths import format_impact

    if p.name is not None or p.symbol_id is not None:
        raise InvalidParams("invalid params: direction `impact` takes `diff`, not `name` or `symbolId`")
    with rt.read_lock:
        engine = rt.reader()
        _require_index(engine)
        try:
            found = engine.impact(p.diff, depth=p.depth)
        except GitError as exc:
            raise InvalidParams(f"invalid params: `diff`: {exc}") from exc
    call.check_cancelled()
    return ToolResult(format_impact(found), msgspec.to_builtins(found))


def handle_implementation_lookup(rt: Runtime, p: ImplementationLookupParams, call: CallContext) -> ToolResult:
    from .graph.text import format_implementation

    if not p.query.strip():
        raise InvalidParams("invalid params: `query` is empty")
    with rt.read_lock:
        engine = rt.reader()
        _require_index(engine)
        found = engine.implementation_lookup(p.query, limit=p.limit)
    call.check_cancelled()
    text = format_implementation(found)
    data = msgspec.to_builtins(found)
    data["savings"] = rt.record_savings("implementation_lookup", text, [r.path for r in found.results])
    return ToolResult(text, data)


# -- the registry -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolSpec:
    name: str  # what the model sees
    method: str  # the JSON-RPC method
    title: str
    description: str
    params: type[_Params]
    handler: Callable[[Runtime, Any, CallContext], ToolResult]
    read_only: bool = True


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "codebase_search",
        "search",
        "Search code",
        "Search this project's code by meaning and keywords; returns the best matching functions, classes "
        "and sections with file path, line range and code. Use it before grep when you don't know where "
        "something lives, to find where a concept is implemented, or to find usages by name. Narrow with "
        "fileType, directory or chunkType; add contextLines to see surrounding lines. To read the answer "
        "rather than rank candidates, codebase_context costs fewer tokens; for exact strings use grep.",
        SearchParams,
        handle_search,
    ),
    ToolSpec(
        "codebase_context",
        "context",
        "Context pack",
        "The smallest set of code that answers a question, within maxTokens (default 1500, a hard cap): "
        "definitions in full when they fit, else signature + doc + matching lines, each with path:lines and "
        "why it is there; deduplicated, in reading order, with a line saying what was left out. Routed by "
        "the query: an identifier gets its definition and callers, 'who calls X' the call graph, a "
        "description hybrid search. Prefer it to codebase_search when you will read the code anyway.",
        ContextParams,
        handle_context,
    ),
    ToolSpec(
        "codebase_edit_context",
        "edit_context",
        "Context before an edit",
        "Before changing a function, method or class (name or path:line): its definition, its callers with "
        "the line of each call, what it calls, the tests that reach it and similar code that may need the "
        "same change, within maxTokens (default 1500, a hard cap). Use it before editing shared code.",
        EditContextParams,
        handle_edit_context,
    ),
    ToolSpec(
        "codebase_peek",
        "peek",
        "Find code locations",
        "Like codebase_search but returns only locations (path:lines, kind, symbol), no code: cheap for "
        "getting an overview of where something is (many places, few tokens); then read the lines you need.",
        PeekParams,
        handle_peek,
    ),
    ToolSpec(
        "find_similar",
        "similar",
        "Find similar code",
        "Find code similar in meaning to a snippet, or to the function/section at path + line (the example "
        "itself is left out): duplicates, other implementations of the same idea, places to change "
        "together. Needs embeddings (computed in the background after indexing).",
        SimilarParams,
        handle_similar,
    ),
    ToolSpec(
        "call_graph",
        "call_graph",
        "Call graph",
        "Who calls a function/method/class, or what it calls, across files (depth 1-3), with file:line of "
        "each call site. Calls are resolved through imports, the same file/package and known receiver types; "
        "calls matched only by name are counted and listed on request (includeNameMatches). Use it for 'who "
        "calls X', 'what does X call', and before changing a function's signature. direction=path gives the "
        "shortest call path from name to `to`; direction=impact what a git change (`diff`, default: "
        "uncommitted work) reaches: changed symbols, their callers, the tests that reach them.",
        CallGraphParams,
        handle_call_graph,
    ),
    ToolSpec(
        "implementation_lookup",
        "implementation_lookup",
        "Find the implementation",
        "Go to where something is really implemented: give an identifier (`parse_args`, `Session.send`) or "
        "describe the definition ('function that retries failed uploads'). Returns the definition's code, "
        "real code before tests, docs, examples and type stubs; falls back to search.",
        ImplementationLookupParams,
        handle_implementation_lookup,
    ),
    ToolSpec(
        "index_codebase",
        "index",
        "Index the codebase",
        "Build or update the search index (only changed files are re-read). Run it when search says the "
        "project is not indexed or results look stale; estimateOnly counts the work without doing it; "
        "force re-chunks everything.",
        IndexParams,
        handle_index,
        read_only=False,
    ),
    ToolSpec(
        "index_status",
        "status",
        "Index status",
        "Show what the index holds: branch, files, chunks, skipped files, size, when it was last updated.",
        StatusParams,
        handle_status,
    ),
    ToolSpec(
        "index_health_check",
        "health_check",
        "Check index health",
        "Check the index for damage and repair it: a corrupted database is moved aside (kept for "
        "inspection) and rebuilt from the files, keeping every embedding it can still read; files that "
        "lost their chunks are re-indexed; chunks and vectors no file refers to are dropped; the vector "
        "index is verified. Use it when search fails or says the index is damaged, or results point at "
        "code that no longer exists.",
        HealthCheckParams,
        handle_health_check,
        read_only=False,
    ),
    ToolSpec(
        "index_metrics",
        "metrics",
        "Index service metrics",
        "Call counts and latencies per tool since the service started, index size and cache state.",
        MetricsParams,
        handle_metrics,
    ),
    ToolSpec(
        "index_savings",
        "savings",
        "Token savings",
        "Tokens each tool returned vs the tokens of the whole files its answers point into (what reading "
        "those files would have cost), per tool, for this session and all sessions.",
        SavingsParams,
        handle_savings,
    ),
    ToolSpec(
        "index_logs",
        "logs",
        "Index service logs",
        "The most recent log records of the index service; use it to find out why indexing or search failed.",
        LogsParams,
        handle_logs,
    ),
    ToolSpec(
        "add_knowledge_base",
        "kb_add",
        "Add a knowledge base",
        "Index an extra folder outside the project (documentation, a sibling library) together with it; "
        "search results from it show as kb:<folder>/<path>. It is kept up to date like the project.",
        AddKnowledgeBaseParams,
        handle_kb_add,
        read_only=False,
    ),
    ToolSpec(
        "list_knowledge_bases",
        "kb_list",
        "List knowledge bases",
        "The extra folders indexed with this project, where each comes from and how many files it holds.",
        ListKnowledgeBasesParams,
        handle_kb_list,
    ),
    ToolSpec(
        "remove_knowledge_base",
        "kb_remove",
        "Remove a knowledge base",
        "Stop indexing an extra folder and drop its chunks from the index.",
        RemoveKnowledgeBaseParams,
        handle_kb_remove,
        read_only=False,
    ),
)

BY_METHOD: dict[str, ToolSpec] = {t.method: t for t in TOOLS}
BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}


def lookup(name_or_method: str) -> ToolSpec:
    spec = BY_METHOD.get(name_or_method) or BY_NAME.get(name_or_method)
    if spec is None:
        raise MethodNotFound(f"method not found: {name_or_method}")
    return spec


def decode_params(spec: ToolSpec, raw: Any) -> Any:
    """Validate raw wire params into the tool's Struct; the error message names the offending field."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidParams("invalid params: params must be an object with named fields")
    try:
        return msgspec.convert(raw, spec.params)
    except msgspec.ValidationError as exc:
        raise InvalidParams(f"invalid params: {exc}") from exc


def engine_error(exc: Exception) -> ToolError | None:
    """The engine's expected failures as protocol errors (anything else is an internal error)."""
    from .config import ConfigError
    from .store import IndexLockedError, StoreError

    if isinstance(exc, IndexLockedError):
        return IndexBusy(str(exc))
    if isinstance(exc, sqlite3.DatabaseError):
        from .repair import index_error

        message = index_error(exc)
        return ConfigProblem(message) if message is not None else None
    if isinstance(exc, StoreError):
        return ConfigProblem(f"the index cannot be used: {exc}")
    if isinstance(exc, ConfigError):
        return ConfigProblem(f"the project configuration is invalid: {exc}")
    return None


def call(rt: Runtime, name_or_method: str, raw_params: Any, ctx: CallContext | None = None) -> ToolResult:
    """Validate, run and time one tool call. Raises ToolError subclasses for expected failures."""
    spec = lookup(name_or_method)
    ctx = ctx or CallContext()
    started = time.perf_counter()
    ok = False
    try:
        params = decode_params(spec, raw_params)
        ctx.check_cancelled()
        result = spec.handler(rt, params, ctx)
        ok = True
        return result
    except ToolError:
        raise
    except Exception as exc:
        mapped = engine_error(exc)
        if mapped is None:
            raise
        raise mapped from exc
    finally:
        rt.metrics.record(spec.method, time.perf_counter() - started, ok)


# -- schema faces -------------------------------------------------------------------------------------


def input_schema(params: type[_Params]) -> dict[str, Any]:
    """The JSON Schema of a params Struct, inlined, with optional fields shown as their plain type.

    msgspec writes `anyOf: [T, null]` for optional fields; models and some providers handle a plain `T`
    (field absent = not set) better, and the server still accepts an explicit null.
    """
    raw = msgspec.json.schema(params)
    defs = raw.get("$defs", {})
    schema = dict(defs[raw["$ref"].rsplit("/", 1)[-1]]) if "$ref" in raw else dict(raw)
    schema.pop("title", None)
    properties: dict[str, Any] = {}
    for key, prop in schema.get("properties", {}).items():
        prop = dict(prop)
        options = prop.get("anyOf")
        if options and len(options) == 2 and {"type": "null"} in options and prop.get("default", 0) is None:
            inner = next(o for o in options if o != {"type": "null"})
            prop.pop("anyOf")
            prop.pop("default")
            prop = {**prop, **inner}
        properties[key] = prop
    out: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        out["required"] = list(schema["required"])
    out["additionalProperties"] = False
    return out


def tool_definitions() -> list[dict[str, Any]]:
    return [
        {
            "name": t.name,
            "method": t.method,
            "description": t.description,
            "inputSchema": input_schema(t.params),
        }
        for t in TOOLS
    ]


def _zod(prop: dict[str, Any], required: bool) -> str:
    if "enum" in prop:
        expr = "z.enum([" + ", ".join(json.dumps(v) for v in prop["enum"]) + "])"
    elif prop.get("type") == "string":
        expr = "z.string()"
        if "minLength" in prop:
            expr += f".min({prop['minLength']})"
    elif prop.get("type") == "integer":
        expr = "z.number().int()"
    elif prop.get("type") == "number":
        expr = "z.number()"
    elif prop.get("type") == "boolean":
        expr = "z.boolean()"
    elif prop.get("type") == "array":
        item = _zod({k: v for k, v in prop["items"].items() if k != "description"}, True)
        expr = f"z.array({item})"
        if "minItems" in prop:
            expr += f".min({prop['minItems']})"
        if "maxItems" in prop:
            expr += f".max({prop['maxItems']})"
    else:
        raise ValueError(f"no zod mapping for schema {prop!r}")
    if prop.get("type") in ("integer", "number"):
        if "minimum" in prop:
            expr += f".min({prop['minimum']})"
        if "maximum" in prop:
            expr += f".max({prop['maximum']})"
    if not required:
        expr += ".optional()"
    if "description" in prop:
        expr += f".describe({json.dumps(prop['description'])})"
    return expr


def render_ts() -> str:
    """The TypeScript face: plain JSON Schemas plus zod 4 arg shapes built from the plugin's `tool.schema`."""
    defs = tool_definitions()
    lines = [
        "// Generated by `python -m codebase_index.tools --emit ts` from python/codebase_index/tools.py.",
        "// Do not edit: tests/test_tools_schema.py fails when this file and tools.py disagree.",
        'import type { tool } from "@opencode-ai/plugin";',
        "",
        "type Z = typeof tool.schema;",
        "",
        f"export const PROTOCOL_VERSION = {PROTOCOL_VERSION};",
        "",
        "export interface ToolDefinition {",
        "  name: string;",
        "  method: string;",
        "  description: string;",
        "  inputSchema: Record<string, unknown>;",
        "}",
        "",
        "export const TOOL_DEFINITIONS: readonly ToolDefinition[] = "
        + json.dumps(defs, indent=2, ensure_ascii=False)
        + ";",
        "",
        "/** zod raw shapes for `tool({ args })`, keyed by tool name; pass the plugin's `tool.schema`. */",
        "export function toolArgs(z: Z) {",
        "  return {",
    ]
    for spec, d in zip(TOOLS, defs, strict=True):
        schema = d["inputSchema"]
        required = set(schema.get("required", []))
        lines.append(f"    {spec.name}: {{")
        for key, prop in schema["properties"].items():
            lines.append(f"      {key}: {_zod(prop, key in required)},")
        lines.append("    },")
    lines += ["  };", "}", ""]
    return "\n".join(lines)


DEFAULT_TS_PATH = Path("plugin/src/generated/tools.ts")


def render_markdown() -> str:
    """The README's tool table: name, parameters and what each tool is for, from the same specs."""
    lines = ["| tool | parameters | what it does |", "| --- | --- | --- |"]
    for spec in TOOLS:
        schema = input_schema(spec.params)
        required = set(schema.get("required", []))
        params = ", ".join(
            f"`{name}`" if name in required else f"`{name}?`" for name in schema.get("properties", {})
        )
        description = spec.description.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{spec.name}` | {params or '-'} | {description} |")
    return "\n".join(lines) + "\n"


def render_protocol_methods() -> str:
    """plugin/PROTOCOL.md's request table: every JSON-RPC method the sidecar serves, from the same specs
    (so the document cannot name a method that does not exist)."""
    lines = [
        "| method | tool | params | result |",
        "| --- | --- | --- | --- |",
        '| `initialize` | - | `{clientName?: string, clientVersion?: string}` | `{name: "codebase-index", '
        "version, protocolVersion: 1, tools: [{name, method, description, inputSchema}], "
        "index: IndexSummary}` |",
    ]
    for spec in TOOLS:
        schema = input_schema(spec.params)
        required = set(schema.get("required", []))
        params = ", ".join(
            f"{name}" if name in required else f"{name}?" for name in schema.get("properties", {})
        )
        result = "`{text, data}`" + ("; sends `$/progress` while running" if spec.method == "index" else "")
        lines.append(f"| `{spec.method}` | `{spec.name}` | {params or '-'} | {result} |")
    lines.append("| `shutdown` | - | none | `null` |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codebase_index.tools", description=__doc__)
    parser.add_argument("--emit", choices=["json", "ts", "markdown"], required=True)
    parser.add_argument("--out", type=Path, help=f"where --emit ts writes (default {DEFAULT_TS_PATH})")
    args = parser.parse_args(argv)
    if args.emit == "json":
        payload = {"name": SERVER_NAME, "version": __version__, "protocolVersion": PROTOCOL_VERSION}
        sys.stdout.write(json.dumps({**payload, "tools": tool_definitions()}, indent=2) + "\n")
        return 0
    if args.emit == "markdown":
        sys.stdout.write(render_markdown())
        return 0
    out: Path = args.out or DEFAULT_TS_PATH
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_ts(), encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
