"""`codebase-index serve`: the JSON-RPC 2.0 sidecar the OpenCode plugin talks to over stdin/stdout.

One JSON object per line each way. Requests run on a thread pool, so a search is answered while an index
run is in progress; `initialize` and `shutdown` are answered on the reading thread. The wire contract
(methods, notifications, error codes) is written down in plugin/PROTOCOL.md; keep the two in step.

Start-up stays light (no numpy, tree-sitter or engine) so `initialize` answers within a few hundred
milliseconds; the engine loads in the background right after it.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import logging
import os
import select
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from logging.handlers import RotatingFileHandler
from pathlib import Path
from typing import Any, BinaryIO

import msgspec

from . import __version__, tools
from .index_dir import make_index_dir
from .private_files import open_lock, open_private
from .tools import (
    CONFIG_ERROR,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_CANCELLED,
    SIDECAR_LOCKED,
    CallContext,
    Runtime,
    ToolError,
)
from .tools.protocol import recover_id
from .tools.serve_core import DEBOUNCE_SECONDS, ServeCore

log = logging.getLogger("codebase_index.rpc")

MAX_LINE_BYTES = 8 * 1024 * 1024
PROGRESS_INTERVAL = 0.1  # seconds between two $/progress notifications of one phase
WORKERS = 4
EXIT_LOCKED = 3
LOCK_NAME = "sidecar.lock"
LOG_NAME = "sidecar.log"


class SidecarLockedError(Exception):
    """Another sidecar already serves this project's index."""


def acquire_sidecar_lock(index_dir: Path) -> int:
    """Hold `<index_dir>/sidecar.lock` for the life of the process (the OS drops it if we die)."""
    path = index_dir / LOCK_NAME
    try:
        make_index_dir(index_dir)
        fd = open_lock(path)
    except OSError as exc:
        if not index_dir.is_dir() or os.access(index_dir, os.W_OK):
            raise
        # A read-only index folder without a lock file: nothing can index it, so nothing to serialise.
        log.warning("cannot lock %s (%s): the read-only index is served without the sidecar lock", path, exc)
        return -1
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        holder = ""
        with contextlib.suppress(OSError, ValueError):
            holder = os.pread(fd, 32, 0).decode().strip()
        os.close(fd)
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            who = f" (pid {holder})" if holder else ""
            raise SidecarLockedError(
                f"another codebase-index sidecar{who} already serves {index_dir}"
            ) from exc
        raise
    with contextlib.suppress(OSError):  # a read-only lock file still locks; it just names no pid
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def _valid_id(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


class _Request:
    def __init__(self, req_id: int | str, method: str) -> None:
        self.id = req_id
        self.method = method
        self.cancelled = threading.Event()


class Sidecar:
    """Serve one project over a pair of byte streams until EOF or `shutdown`."""

    def __init__(
        self,
        runtime: Runtime,
        inp: BinaryIO,
        out: BinaryIO,
        *,
        workers: int = WORKERS,
        max_line: int = MAX_LINE_BYTES,
        debounce: float = DEBOUNCE_SECONDS,
    ) -> None:
        self.rt = runtime
        self.inp = inp
        self.out = out
        self.max_line = max_line
        self.debounce = debounce
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="rpc")
        self._out_lock = threading.Lock()
        self._inflight: dict[int | str, _Request] = {}
        self._inflight_lock = threading.Lock()
        self._stopping = threading.Event()
        self._tool_defs: list[dict[str, Any]] | None = None
        # The watcher, change notifications, resumed embeddings: shared with the MCP face.
        self.core = ServeCore(runtime, debounce=debounce)
        # The background embedding job (after `index`, a watcher run or a resumed session) reports too.
        runtime.embed_progress = lambda params: self.notify("$/progress", params)
        # Background indexing leaves a core to the searches the sidecar answers meanwhile.
        from .embeddings import reserve_cores_for_queries

        reserve_cores_for_queries(1)

    # -- output -------------------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        data = msgspec.json.encode(message) + b"\n"
        with self._out_lock:
            try:
                self.out.write(data)
                self.out.flush()
            except (BrokenPipeError, ValueError, OSError):
                self._stopping.set()  # the client is gone; nothing more to say

    def respond(self, req_id: int | str | None, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": req_id, "result": result})

    def error(self, req_id: int | str | None, code: int, message: str, data: Any = None) -> None:
        err: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            err["data"] = data
        self.send({"jsonrpc": "2.0", "id": req_id, "error": err})

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # -- input --------------------------------------------------------------------------------------

    def _read_line(self) -> bytes | None:
        """The next line, `b""` for an oversized one (already answered and skipped), None at EOF."""
        line = self.inp.readline(self.max_line + 1)
        if not line:
            return None
        if len(line) > self.max_line and not line.endswith(b"\n"):
            size = len(line)
            while True:  # discard the rest in bounded pieces, never holding the whole line
                piece = self.inp.readline(1 << 16)
                size += len(piece)
                if not piece or piece.endswith(b"\n"):
                    break
            log.warning("discarded an oversized request line (%d bytes)", size)
            self.error(None, INVALID_REQUEST, f"request line longer than {self.max_line} bytes; discarded")
            return b""
        return line

    def serve(self) -> int:
        log.info("sidecar %s serving %s (index %s)", __version__, self.rt.root, self.rt.index_dir)
        try:
            while not self._stopping.is_set():
                line = self._read_line()
                if line is None:
                    log.info("stdin closed; exiting")
                    break
                if line.strip():
                    self._handle_line(line)
        finally:
            self.close()
        return 0

    def close(self) -> None:
        """Stop taking work, cancel index runs (they can be long; the index keeps its last committed
        state), let quick calls finish and answer, release the engines."""
        self._stopping.set()
        self.core.close()
        with self._inflight_lock:
            for req in self._inflight.values():
                if req.method == "index":
                    req.cancelled.set()
        self.pool.shutdown(wait=True)
        self.rt.close()
        with self._out_lock, contextlib.suppress(OSError, ValueError):
            self.out.flush()

    # -- dispatch -----------------------------------------------------------------------------------

    def _handle_line(self, line: bytes) -> None:
        try:
            msg = msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            self.error(recover_id(line), PARSE_ERROR, f"parse error: {exc}")
            return
        except RecursionError:  # the process must outlive any shape of request
            self.error(recover_id(line), INVALID_REQUEST, "invalid request: nested too deep")
            return
        if not isinstance(msg, dict):
            self.error(
                None, INVALID_REQUEST, "invalid request: expected one JSON object per line (no batches)"
            )
            return
        has_id = "id" in msg
        req_id = msg.get("id")
        if has_id and not _valid_id(req_id):
            self.error(None, INVALID_REQUEST, "invalid request: `id` must be a string or an integer")
            return
        if msg.get("jsonrpc") != "2.0":
            self.error(req_id, INVALID_REQUEST, 'invalid request: `jsonrpc` must be "2.0"')
            return
        method = msg.get("method")
        if not isinstance(method, str):
            self.error(req_id, INVALID_REQUEST, "invalid request: `method` must be a string")
            return
        params = msg.get("params")
        if params is not None and not isinstance(params, dict):
            if has_id:
                self.error(
                    req_id, INVALID_PARAMS, "invalid params: params must be an object with named fields"
                )
            return
        if not has_id:
            self._handle_notification(method, params or {})
            return
        assert req_id is not None
        self._handle_request(req_id, method, params or {})

    def _handle_notification(self, method: str, params: dict[str, Any]) -> None:
        if method == "$/cancelRequest":
            target = params.get("id")
            req = None
            if isinstance(target, (int, str)):
                with self._inflight_lock:
                    req = self._inflight.get(target)
            if req is not None:
                log.info("cancel requested for %s #%s", req.method, req.id)
                req.cancelled.set()
        elif method in ("notify/filesChanged", "notify/branchChanged"):
            log.debug("%s %s", method, params)
            paths = params.get("paths")
            if method == "notify/filesChanged" and isinstance(paths, list):
                self.core.files_changed(paths)  # empty: changes we were not told about
            else:
                self.core.branch_changed()
        else:
            log.debug("ignored notification %s", method)

    def _handle_request(self, req_id: int | str, method: str, params: dict[str, Any]) -> None:
        if method == "initialize":
            self._initialize(req_id, params)
            return
        if method == "shutdown":
            log.info("shutdown requested")
            self.respond(req_id, None)
            self._stopping.set()
            return
        if method not in tools.BY_METHOD:
            self.error(req_id, METHOD_NOT_FOUND, f"method not found: {method}")
            return
        req = _Request(req_id, method)
        with self._inflight_lock:
            if req_id in self._inflight:
                self.error(req_id, INVALID_REQUEST, f"invalid request: id {req_id!r} is already in use")
                return
            self._inflight[req_id] = req
        try:
            self.pool.submit(self._run, req, params)
        except RuntimeError:  # pool already shut down
            self._finish(req)
            self.error(req_id, REQUEST_CANCELLED, "request cancelled: the sidecar is shutting down")

    def _initialize(self, req_id: int | str, params: dict[str, Any]) -> None:
        for key in ("clientName", "clientVersion"):
            if key in params and not isinstance(params[key], str):
                self.error(req_id, INVALID_PARAMS, f"invalid params: `{key}` must be a string")
                return
        if self._tool_defs is None:
            self._tool_defs = tools.tool_definitions()
        log.info("initialize from %s %s", params.get("clientName", "?"), params.get("clientVersion", ""))
        self.respond(
            req_id,
            {
                "name": tools.SERVER_NAME,
                "version": __version__,
                "protocolVersion": tools.PROTOCOL_VERSION,
                "tools": self._tool_defs,
                "index": self.rt.summary(),
            },
        )
        self.core.start()

    def _finish(self, req: _Request) -> None:
        with self._inflight_lock:
            self._inflight.pop(req.id, None)

    def _progress_fn(self, req: _Request) -> tools.ProgressFn:
        last_phase = [""]
        last_at = [0.0]

        def progress(phase: str, done: int, total: int) -> None:
            now = time.monotonic()
            if phase == last_phase[0] and done != total and now - last_at[0] < PROGRESS_INTERVAL:
                return
            last_phase[0], last_at[0] = phase, now
            self.notify("$/progress", {"requestId": req.id, "phase": phase, "done": done, "total": total})

        return progress

    def _run(self, req: _Request, params: dict[str, Any]) -> None:
        ctx = CallContext(
            progress=self._progress_fn(req),
            cancelled=lambda: req.cancelled.is_set(),
            request_id=req.id,
        )
        try:
            result = tools.call(self.rt, req.method, params, ctx)
            if req.cancelled.is_set():
                raise tools.Cancelled("request cancelled")
        except ToolError as exc:
            if exc.code == REQUEST_CANCELLED:
                log.info("%s #%s cancelled", req.method, req.id)
            else:
                log.info("%s #%s failed: %s", req.method, req.id, exc.message)
            self._finish(req)
            self.error(req.id, exc.code, exc.message, exc.data)
            return
        except Exception as exc:
            log.exception("%s #%s: internal error", req.method, req.id)
            self._finish(req)
            self.error(req.id, INTERNAL_ERROR, f"internal error in {req.method}: {type(exc).__name__}: {exc}")
            return
        self._finish(req)
        self.respond(req.id, result)


# -- process entry --------------------------------------------------------------------------------------


def resolve_log_level(root: Path, flag: str | None) -> str:
    """--log-level wins; otherwise the project's `debug` config (a broken config is reported elsewhere)."""
    if flag:
        return flag
    from .config import ConfigError, effective_log_level, load_config

    try:
        return effective_log_level(load_config(root))
    except ConfigError:
        return "info"


class _PrivateLog(RotatingFileHandler):
    """A rotating log whose files are created 0600 whatever the umask (logs name the project's files)."""

    def _open(self) -> Any:
        fd = open_private(Path(self.baseFilename), os.O_WRONLY | os.O_APPEND)
        return os.fdopen(fd, "a", encoding=self.encoding, errors=self.errors)


def configure_logging(index_dir: Path, level: str, buffer: tools.LogBuffer) -> None:
    """Logs to stderr, a small rotating file in the index folder, and the in-memory ring for `logs`."""
    logger = logging.getLogger("codebase_index")
    logger.setLevel(getattr(logging, level.upper()))
    logger.propagate = False
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    stderr = logging.StreamHandler(sys.stderr)
    stderr.setFormatter(fmt)
    logger.addHandler(stderr)
    try:
        make_index_dir(index_dir)
        file_handler = _PrivateLog(index_dir / LOG_NAME, maxBytes=1_048_576, backupCount=1)
        file_handler.setFormatter(fmt)
        logger.addHandler(file_handler)
    except OSError as exc:
        logger.warning("cannot write %s: %s", index_dir / LOG_NAME, exc)
    logger.addHandler(buffer)


def _protocol_stdout() -> BinaryIO:
    """Keep fd 1 for protocol only: hand back a private copy of it and point fd 1 at stderr, so stray
    prints (ours, a library's, a worker process's) can never corrupt the stream."""
    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(private, "wb", buffering=0)


def _refuse(message: str, inp: BinaryIO, out: BinaryIO, wait: float = 5.0) -> None:
    """Tell a client that connected to a second sidecar why it can't be served: answer its first request."""
    with contextlib.suppress(OSError, ValueError):
        ready, _, _ = select.select([inp], [], [], wait)
        if not ready:
            return
        line = inp.readline(MAX_LINE_BYTES)
        try:
            msg = msgspec.json.decode(line)
        except msgspec.DecodeError:
            return
        if isinstance(msg, dict) and _valid_id(msg.get("id")):
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": SIDECAR_LOCKED, "message": message}}
            out.write(msgspec.json.encode(reply) + b"\n")
            out.flush()


def _answer_all(message: str, inp: BinaryIO, out: BinaryIO) -> None:
    """A sidecar that cannot serve (its project root is unusable) still speaks the protocol: every request
    is answered -32004 with the reason, `shutdown` with null, until stdin closes."""
    with contextlib.suppress(OSError, ValueError):
        for line in iter(lambda: inp.readline(MAX_LINE_BYTES), b""):
            try:
                msg = msgspec.json.decode(line)
            except msgspec.DecodeError:
                continue
            if not isinstance(msg, dict) or not _valid_id(msg.get("id")):
                continue  # notifications are not answered
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": msg["id"]}
            if msg.get("method") == "shutdown":
                reply["result"] = None
            else:
                reply["error"] = {"code": CONFIG_ERROR, "message": message}
            out.write(msgspec.json.encode(reply) + b"\n")
            out.flush()
            if msg.get("method") == "shutdown":
                return


def cmd_serve(args: argparse.Namespace) -> int:
    root = Path(args.project or os.environ.get("CODEBASE_INDEX_ROOT") or Path.cwd())
    if not root.is_dir():
        problem = "does not exist" if not root.exists() else "is not a directory"
        message = (
            f"configuration error: the project root {root} {problem}; start the sidecar with --project DIR"
        )
        print(f"codebase-index serve: error: {message}", file=sys.stderr)
        _answer_all(message, sys.stdin.buffer, _protocol_stdout())
        return 1
    out = _protocol_stdout()
    inp: BinaryIO = sys.stdin.buffer
    buffer = tools.LogBuffer()
    runtime = Runtime(root, index_dir=Path(args.index_dir) if args.index_dir else None, logs=buffer)
    try:
        lock_fd = acquire_sidecar_lock(runtime.index_dir)
    except (SidecarLockedError, OSError) as exc:
        print(f"codebase-index serve: error: {exc}", file=sys.stderr)
        _refuse(str(exc), inp, out)
        return EXIT_LOCKED
    configure_logging(runtime.index_dir, resolve_log_level(root, args.log_level), buffer)
    if runtime.config_error:
        log.error("configuration problem: %s", runtime.config_error)
    try:
        return Sidecar(runtime, inp, out, workers=args.workers).serve()
    finally:
        if lock_fd >= 0:
            os.close(lock_fd)


def add_serve_parser(sub: Any) -> None:
    """Register `serve` on the CLI's sub-command parser."""
    p = sub.add_parser("serve", help="run the JSON-RPC sidecar on stdin/stdout (for the OpenCode plugin)")
    _add_serve_arguments(p)


def _add_serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--project", help="project root (default: $CODEBASE_INDEX_ROOT or .)")
    p.add_argument("--index-dir", help="where the index lives (default: from config, <root>/.codebase-index)")
    p.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        help="default: from the config's `debug` section (info)",
    )
    p.add_argument("--workers", type=int, default=WORKERS, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_serve)


def main(argv: list[str] | None = None) -> int:
    """`python -m codebase_index.rpc`: the sidecar without the rest of the CLI."""
    parser = argparse.ArgumentParser(prog="python -m codebase_index.rpc", description=__doc__)
    _add_serve_arguments(parser)
    return cmd_serve(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
