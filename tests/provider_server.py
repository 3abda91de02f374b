"""A real HTTP server on 127.0.0.1 that speaks the embedding and rerank wire formats we call.

It answers OpenAI/custom `/embeddings`, Gemini `:batchEmbedContents`, Ollama `/api/embeddings`,
`/api/embed`, `/api/tags`, and Cohere/Jina/custom `/rerank`. Tests script faults (429, 500, slow,
garbage, wrong width, 401) and read back every request it saw, plus the most requests in flight.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour, used for the next request that arrives."""

    kind: str  # status, slow, garbage, missing_field, wrong_dims, unauthorized, bad_index
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    message: str = ""
    delay: float = 0.0


def status_fault(code: int, message: str = "scripted failure", retry_after: str | None = None) -> Fault:
    headers = (("Retry-After", retry_after),) if retry_after is not None else ()
    return Fault("status", status=code, headers=headers, message=message)


def slow_fault(seconds: float) -> Fault:
    return Fault("slow", delay=seconds)


GARBAGE = Fault("garbage")
MISSING_FIELD = Fault("missing_field")
WRONG_DIMS = Fault("wrong_dims")
UNAUTHORIZED = Fault("unauthorized", status=401)
BAD_INDEX = Fault("bad_index")  # rerank result pointing one past the last document


def fake_vector(text: str, dims: int) -> np.ndarray:
    """Deterministic, not normalised, so tests can check both mapping and normalisation."""
    digest = hashlib.sha256(text.encode()).digest()
    values = [(digest[i % len(digest)] - 127.5) / 64 for i in range(dims)]
    return np.asarray(values, dtype=np.float64)


def expected_vector(text: str, dims: int) -> np.ndarray:
    vector = fake_vector(text, dims)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def overlap_score(query: str, document: str) -> float:
    words = set(query.lower().split())
    return float(sum(1 for word in document.lower().split() if word in words))


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    texts: list[str]


@dataclass
class FakeProviderServer:
    dims: int = 8
    delay: float = 0.0
    hold_first: int = 0
    poison: str | None = None
    ollama_models: list[str] = field(default_factory=lambda: ["nomic-embed-text:latest"])
    base_url: str = ""
    requests: list[Recorded] = field(default_factory=list)
    max_in_flight: int = 0
    connections: int = 0  # TCP connections accepted, whatever was (or was not) sent on them
    _faults: deque[Fault] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _cond: threading.Condition = field(init=False)
    _in_flight: int = 0
    _held: int = 0
    _released: bool = False

    def __post_init__(self) -> None:
        self._cond = threading.Condition(self._lock)

    def enqueue(self, *faults: Fault) -> None:
        with self._lock:
            self._faults.extend(faults)

    def posts(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.method == "POST"]

    # Called from handler threads -------------------------------------------------------------------

    def begin(self, record: Recorded) -> Fault | None:
        with self._cond:
            self.requests.append(record)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if self._held < self.hold_first:
                # Hold the first wave until that many requests are in flight together, so the
                # concurrency bound is observed deterministically rather than by lucky timing.
                self._held += 1
                if self._in_flight >= self.hold_first:
                    self._released = True
                    self._cond.notify_all()
                self._cond.wait_for(lambda: self._released, timeout=2.0)
            if self.poison is not None and any(self.poison in text for text in record.texts):
                return status_fault(500, "poisoned input")
            if record.method == "POST" and self._faults:
                return self._faults.popleft()
            return None

    def end(self) -> None:
        with self._cond:
            self._in_flight -= 1


def _texts_of(path: str, body: Any) -> list[str]:
    if not isinstance(body, dict):
        return []
    if path.endswith(":batchEmbedContents"):
        return [part["text"] for req in body.get("requests", []) for part in req["content"]["parts"]]
    if path == "/api/embeddings":
        return [body.get("prompt", "")]
    if path.endswith("/rerank"):
        return [body.get("query", ""), *body.get("documents", [])]
    value = body.get("input", [])
    return [value] if isinstance(value, str) else list(value)


def _make_handler(server: FakeProviderServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_GET(self) -> None:
            record = Recorded("GET", self.path, {k.lower(): v for k, v in self.headers.items()}, None, [])
            server.begin(record)
            try:
                if self.path == "/api/tags":
                    models = [{"name": name, "model": name} for name in server.ollama_models]
                    self._send(200, {"models": models})
                else:
                    self._send(404, {"error": "not found"})
            finally:
                server.end()

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            record = Recorded("POST", self.path, headers, body, _texts_of(self.path, body))
            fault = server.begin(record)
            try:
                if server.delay:
                    time.sleep(server.delay)
                self._answer(record, fault)
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                server.end()

        def _answer(self, record: Recorded, fault: Fault | None) -> None:
            if record.body is None:
                self._send(400, {"error": {"message": "body is not JSON"}})
                return
            dims = server.dims
            if fault is not None:
                if fault.kind == "slow":
                    time.sleep(fault.delay)
                elif fault.kind == "garbage":
                    self._send_raw(200, b'{"data": [ this is not json')
                    return
                elif fault.kind == "missing_field":
                    self._send(200, {"data": [{"index": 0}], "embeddings": [{}], "results": [{"index": 0}]})
                    return
                elif fault.kind == "bad_index":
                    count = len(record.texts) - 1
                    self._send(200, {"results": [{"index": count, "relevance_score": 1.0}]})
                    return
                elif fault.kind == "wrong_dims":
                    dims = server.dims + 1
                elif fault.kind == "unauthorized":
                    # Real providers echo (part of) the key back; the client must scrub it.
                    shown = record.headers.get("authorization") or record.headers.get("x-goog-api-key", "")
                    self._send(401, {"error": {"message": f"Incorrect API key provided: {shown}"}})
                    return
                elif fault.kind == "status":
                    self._send(fault.status, {"error": {"message": fault.message}}, fault.headers)
                    return
            self._send(200, self._success(record, dims))

        def _success(self, record: Recorded, dims: int) -> Any:
            path, body, texts = record.path, record.body, record.texts
            if path.endswith(":batchEmbedContents"):
                return {"embeddings": [{"values": fake_vector(t, dims).tolist()} for t in texts]}
            if path == "/api/embeddings":
                return {"embedding": fake_vector(texts[0], dims).tolist()}
            if path == "/api/embed":
                return {"model": body["model"], "embeddings": [fake_vector(t, dims).tolist() for t in texts]}
            if path.endswith("/rerank"):
                query, documents = texts[0], texts[1:]
                scored = [(i, overlap_score(query, doc)) for i, doc in enumerate(documents)]
                top = sorted(scored, key=lambda pair: (-pair[1], pair[0]))[
                    : body.get("top_n", len(documents))
                ]
                # Answer in index order, not rank order: the client must sort.
                return {"results": [{"index": i, "relevance_score": s} for i, s in sorted(top)]}
            # OpenAI-compatible: answer in reverse order so the client has to honour "index".
            data = [
                {"object": "embedding", "index": i, "embedding": fake_vector(t, dims).tolist()}
                for i, t in enumerate(texts)
            ]
            return {"object": "list", "data": data[::-1], "model": body.get("model")}

        def _send(self, status: int, payload: Any, headers: tuple[tuple[str, str], ...] = ()) -> None:
            self._send_raw(status, json.dumps(payload).encode(), headers)

        def _send_raw(self, status: int, raw: bytes, headers: tuple[tuple[str, str], ...] = ()) -> None:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            for name, value in headers:
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(raw)

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    state: FakeProviderServer

    def verify_request(self, request: Any, client_address: Any) -> bool:
        with self.state._lock:
            self.state.connections += 1
        return True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out hang up mid-request; that is the scenario, not a server bug.
        return


@contextlib.contextmanager
def serve(**options: Any) -> Iterator[FakeProviderServer]:
    """Run a FakeProviderServer on 127.0.0.1 with an OS-chosen port for the duration of the block."""
    state = FakeProviderServer(**options)
    httpd = _QuietServer(("127.0.0.1", 0), _make_handler(state))
    httpd.state = state
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def closed_port_url() -> str:
    """A loopback URL nobody listens on, for connection-refused cases."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
