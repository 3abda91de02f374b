"""The JSON-RPC sidecar as the plugin sees it: a real `codebase-index serve` subprocess driven over pipes."""

from __future__ import annotations

import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codebase_index import tools

REPO = Path(__file__).resolve().parents[1]
WAIT = 120.0  # generous upper bound for one answer; never a performance assertion

AUTH_PY = '''\
def verify_token(token: str) -> bool:
    """Check that a bearer token has the expected prefix."""
    return token.startswith("tok_")


class SessionStore:
    def lookup_session(self, key: str) -> None:
        return None
'''


def make_project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "auth.py").write_text(AUTH_PY)
    (root / "README.md").write_text("# Demo\n\nA tiny project for sidecar tests.\n")
    return root


def add_many_files(root: Path, count: int) -> None:
    """Enough files that an index run lasts long enough to be interrupted or overlapped."""
    pkg = root / "gen"
    pkg.mkdir(exist_ok=True)
    for i in range(count):
        body = "\n\n".join(
            f"def handler_{i}_{j}(request, payload_{j}):\n"
            f"    total = payload_{j} * {j} + len(request)\n"
            f"    return {{'id': {i}, 'value': total, 'name': 'handler_{i}_{j}'}}\n"
            for j in range(6)
        )
        (pkg / f"module_{i}.py").write_text(body + "\n")


class Sidecar:
    """A sidecar process plus a reader thread sorting its stdout into responses and notifications."""

    def __init__(
        self, project: Path, index_dir: Path, *args: str, module: str = "codebase_index.cli"
    ) -> None:
        cmd = [sys.executable, "-m", module]
        if module == "codebase_index.cli":
            cmd.append("serve")
        cmd += ["--project", str(project), "--index-dir", str(index_dir), "--log-level", "debug", *args]
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(REPO),
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.responses: dict[Any, dict[str, Any]] = {}
        self.unsolicited: list[dict[str, Any]] = []  # responses with id null
        self.notifications: list[dict[str, Any]] = []
        self.events: queue.Queue[dict[str, Any]] = queue.Queue()
        self.stderr = b""
        self._cond = threading.Condition()
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            msg = json.loads(line)  # every stdout line must be one JSON message
            with self._cond:
                if "id" in msg and msg["id"] is not None:
                    self.responses[msg["id"]] = msg
                elif "id" in msg:
                    self.unsolicited.append(msg)
                else:
                    self.notifications.append(msg)
                self._cond.notify_all()
            self.events.put(msg)

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr += line

    def write(self, payload: bytes | dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode() + b"\n"
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        self._next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.write(msg)
        return self._next_id

    def wait_for(self, req_id: Any, timeout: float = WAIT) -> dict[str, Any]:
        with self._cond:
            if not self._cond.wait_for(lambda: req_id in self.responses, timeout):
                raise AssertionError(
                    f"no answer to {req_id}; stderr:\n{self.stderr.decode(errors='replace')}"
                )
            return self.responses[req_id]

    def wait_unsolicited(self, count: int, timeout: float = WAIT) -> list[dict[str, Any]]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.unsolicited) >= count, timeout)
            return list(self.unsolicited)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.wait_for(self.send(method, params))

    def result(self, method: str, params: dict[str, Any] | None = None) -> Any:
        response = self.call(method, params)
        assert "error" not in response, response
        return response["result"]

    def close(self) -> int:
        if self.proc.stdin and not self.proc.stdin.closed:
            self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=WAIT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")


@pytest.fixture
def sidecar(project: Path, tmp_path: Path) -> Iterator[Sidecar]:
    proc = Sidecar(project, tmp_path / "index")
    yield proc
    proc.close()


def test_initialize_lists_the_tools_and_the_index_state(sidecar: Sidecar, project: Path) -> None:
    result = sidecar.result("initialize", {"clientName": "pytest", "clientVersion": "1"})
    assert result["name"] == "codebase-index"
    assert result["protocolVersion"] == 1
    assert [t["name"] for t in result["tools"]] == [t.name for t in tools.TOOLS]
    assert result["tools"] == tools.tool_definitions()
    assert result["index"]["indexed"] is False
    assert result["index"]["root"] == str(project.resolve())


def test_search_round_trip_after_index_with_progress(sidecar: Sidecar) -> None:
    # The first search on an unindexed project indexes it, with progress under its own id, and answers.
    first_id = sidecar.send("search", {"query": "verify token"})
    first = sidecar.wait_for(first_id)
    assert "error" not in first, first
    assert "src/auth.py" in first["result"]["text"]
    first_phases = {
        n["params"]["phase"]
        for n in sidecar.notifications
        if n["method"] == "$/progress" and n["params"]["requestId"] == first_id
    }
    assert {"discover", "chunk", "write"} <= first_phases

    index_id = sidecar.send("index", {"verbose": True})
    report = sidecar.wait_for(index_id)["result"]
    assert report["data"]["files"] == 2
    assert "indexed 2 files" in report["text"]
    progress = [
        n["params"]
        for n in sidecar.notifications
        if n["method"] == "$/progress"
        and n["params"]["phase"] != "embed"  # the background job's, below
        and n["params"]["requestId"] == index_id
    ]
    assert progress, "index sent no $/progress"  # a no-change run: discovery only
    every = [n["params"] for n in sidecar.notifications if n["method"] == "$/progress"]
    assert all(set(p) == {"requestId", "phase", "done", "total"} for p in every if p["phase"] != "embed")

    result = sidecar.result("search", {"query": "verify token prefix", "limit": 3})
    top = result["data"]["results"][0]
    assert (top["path"], top["symbol"], top["startLine"]) == ("src/auth.py", "verify_token", 1)
    # Right after the first index run the vectors are still being computed: the answer says so first.
    note = result["data"].get("note")
    body = result["text"].removeprefix(f"note: {note}\n\n") if note else result["text"]
    assert body.startswith("src/auth.py:1-")
    assert 'return token.startswith("tok_")' in result["text"]

    peek = sidecar.result("peek", {"query": "lookup session", "fileType": "py"})
    assert "src/auth.py:" in peek["text"]
    assert "return None" not in peek["text"]  # locations only

    nothing = sidecar.result("search", {"query": "zzzqqqxxx", "mode": "keyword"})
    assert nothing["data"]["results"] == []
    assert "no results" in nothing["text"]

    status = sidecar.result("status")
    assert status["data"]["files"] == 2 and status["data"]["indexed"] is True
    health = sidecar.result("health_check")
    assert health["data"]["ok"] is True
    metrics = sidecar.result("metrics")["data"]
    assert metrics["methods"]["search"]["count"] == 3
    assert metrics["methods"]["search"]["errors"] == 0  # the first search indexed, not failed
    # The searches loaded the keyword snapshot: the cache line names its branch and size (was always null).
    assert metrics["cache"]["snapshotDocs"] >= 2 and metrics["cache"]["snapshotBranch"]
    logs = sidecar.result("logs", {"limit": 500})["data"]["records"]
    assert any("indexed 2 files" in r["message"] for r in logs)


@pytest.mark.parametrize(
    ("line", "code", "fragment"),
    [
        (b"{not json\n", tools.PARSE_ERROR, "parse error"),
        (b"[1, 2]\n", tools.INVALID_REQUEST, "no batches"),
        (b'{"jsonrpc": "1.0", "id": 7, "method": "status"}\n', tools.INVALID_REQUEST, "jsonrpc"),
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "status"}\n', tools.INVALID_REQUEST, "id"),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "grep"}\n', tools.METHOD_NOT_FOUND, "grep"),
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "search", "params": {"query": "x", "limit": "3"}}\n',
            -32602,
            "limit",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "search", "params": {"query": "x", "topK": 3}}\n',
            -32602,
            "topK",
        ),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "search", "params": {}}\n', tools.INVALID_PARAMS, "query"),
        (b'{"jsonrpc": "2.0", "id": 7, "method": "search", "params": [1]}\n', tools.INVALID_PARAMS, "object"),
        (  # NUL once reached git and came back as an internal error
            b'{"jsonrpc": "2.0", "id": 7, "method": "search", '
            b'"params": {"query": "x", "changedSince": "HEAD\\u0000"}}\n',
            tools.INVALID_PARAMS,
            "`changedSince` contains a NUL",
        ),
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "kb_add", "params": {"path": "docs\\u0000x"}}\n',
            tools.INVALID_PARAMS,
            "`path` contains a NUL",
        ),
    ],
)
def test_protocol_errors_get_their_code_and_the_sidecar_keeps_serving(
    sidecar: Sidecar, line: bytes, code: int, fragment: str
) -> None:
    sidecar.write(line)
    reply = sidecar.wait_for(7) if b'"id": 7' in line else sidecar.wait_unsolicited(1)[0]
    assert reply["error"]["code"] == code
    assert fragment in reply["error"]["message"]
    assert "Traceback" not in reply["error"]["message"]
    assert sidecar.result("initialize")["name"] == "codebase-index"


def test_a_query_over_the_maximum_length_is_refused_with_invalid_params(sidecar: Sidecar) -> None:
    # 7 MB in one word: once 20.9 GB of prefixes and a killed sidecar; now refused by the schema.
    reply = sidecar.call("search", {"query": "a" * 7_000_000})
    assert reply["error"]["code"] == tools.INVALID_PARAMS
    assert "query" in reply["error"]["message"] and "4000" in reply["error"]["message"]
    assert sidecar.result("initialize")["name"] == "codebase-index"


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (  # 1,000 deep: once an uncaught RecursionError that killed the sidecar
            b'{"jsonrpc": "2.0", "method": "search", "params": {"query": '
            + b"[" * 1000
            + b"]" * 1000
            + b'}, "id": 8}\n',
            tools.INVALID_REQUEST,
        ),
        (  # a lone surrogate: once answered with id null, the caller waiting forever
            b'{"jsonrpc": "2.0", "id": 8, "method": "search", "params": {"query": "a\\ud800b"}}\n',
            tools.PARSE_ERROR,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 8, "method": "search", "params": {"query": "unterminated\n',
            tools.PARSE_ERROR,
        ),
    ],
)
def test_a_request_that_does_not_decode_is_answered_under_its_id(
    sidecar: Sidecar, line: bytes, code: int
) -> None:
    sidecar.write(line)
    reply = sidecar.wait_for(8)
    assert reply["error"]["code"] == code
    assert not sidecar.unsolicited
    assert sidecar.result("initialize")["name"] == "codebase-index"


def _hostile_lines() -> list[tuple[int, bytes]]:
    """Request shapes a parser may choke on, each with its own id before or after the hostile part."""
    head = b'{"jsonrpc": "2.0", "method": "search", '
    bodies = [
        b'"params": {"query": ' + b'{"a": ' * 5000 + b"1" + b"}" * 5000 + b"}",
        b'"params": {"query": "x", "limit": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'"params": {"query": "\\udfff\\ud800"}',
        b'"params": {"query": "raw \xff\xfe bytes"}',
        b'"params": {"query": "raw \x00 nul"}',
        b'"params": {"query": "x", "directory": "a\\u0000b"}',
        b'"params": {"query": ["x"]}',
        b'"params": {"query": "x", "repos": ["a\\u0000"]}',
    ]
    lines = []
    for n, body in enumerate(bodies, start=100):
        lines.append((n, head + f'"id": {n}, '.encode() + body + b"}\n"))
        lines.append((n + 50, head + body + f', "id": {n + 50}}}\n'.encode()))
    lines.append((99, head + b'"id": 99, "params": {"query": "x"}, "extra": "cut short\n'))
    return lines


def test_hostile_request_shapes_are_each_answered_under_their_id(sidecar: Sidecar) -> None:
    lines = _hostile_lines()
    for _, line in lines:
        sidecar.write(line)
    for req_id, _ in lines:
        assert "error" in sidecar.wait_for(req_id), req_id
    assert sidecar.result("initialize")["name"] == "codebase-index"
    assert sidecar.proc.poll() is None


def test_oversized_line_is_discarded_and_serving_goes_on(sidecar: Sidecar) -> None:
    sidecar.write(
        b'{"jsonrpc": "2.0", "id": 99, "method": "search", "params": {"query": "' + b"x" * (9 << 20)
    )
    sidecar.write(b'"}}\n')
    reply = sidecar.wait_unsolicited(1)[0]
    assert reply["error"]["code"] == tools.INVALID_REQUEST
    assert "longer than" in reply["error"]["message"]
    assert sidecar.result("initialize")["protocolVersion"] == 1
    assert 99 not in sidecar.responses


def _wait_progress(sidecar: Sidecar, req_id: int) -> None:
    while True:
        msg = sidecar.events.get(timeout=WAIT)
        if msg.get("method") == "$/progress" and msg["params"]["requestId"] == req_id:
            return
        assert msg.get("id") != req_id, f"index finished before it could be interrupted: {msg}"


def test_cancel_a_long_index_run(project: Path, tmp_path: Path) -> None:
    add_many_files(project, 1500)
    proc = Sidecar(project, tmp_path / "index")
    try:
        index_id = proc.send("index")
        _wait_progress(proc, index_id)
        proc.write({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": index_id}})
        reply = proc.wait_for(index_id)
        assert reply["error"]["code"] == tools.REQUEST_CANCELLED, reply
        # the writer lock is free again and the sidecar still answers
        estimate = proc.result("index", {"estimateOnly": True})
        assert estimate["data"]["files"] == 1502
        assert proc.result("status")["data"]["indexRunning"] is False
    finally:
        assert proc.close() == 0


def test_search_is_answered_while_an_index_run_is_in_progress(project: Path, tmp_path: Path) -> None:
    proc = Sidecar(project, tmp_path / "index")
    try:
        proc.result("index")
        add_many_files(project, 1500)
        index_id = proc.send("index")
        _wait_progress(proc, index_id)
        search_id = proc.send("search", {"query": "verify token"})
        busy_id = proc.send("index")
        search = proc.wait_for(search_id)
        assert index_id not in proc.responses, "the index run ended before the search was answered"
        assert search["result"]["data"]["results"][0]["symbol"] == "verify_token"
        assert proc.wait_for(busy_id)["error"]["code"] == tools.INDEX_BUSY
        proc.write({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": index_id}})
        assert proc.wait_for(index_id)["error"]["code"] == tools.REQUEST_CANCELLED
    finally:
        assert proc.close() == 0


def test_files_changed_notification_triggers_an_incremental_index(sidecar: Sidecar, project: Path) -> None:
    sidecar.result("index")
    (project / "src" / "billing.py").write_text("def charge_invoice(amount):\n    return amount * 2\n")
    sidecar.write(
        {"jsonrpc": "2.0", "method": "notify/filesChanged", "params": {"paths": ["src/billing.py"]}}
    )
    deadline = time.monotonic() + WAIT
    while True:
        hits = sidecar.result("search", {"query": "charge invoice"})["data"]["results"]
        if hits and hits[0]["symbol"] == "charge_invoice":
            break
        assert time.monotonic() < deadline, "the change notification never led to a re-index"
        time.sleep(0.2)


def test_second_sidecar_for_the_same_index_is_refused(
    sidecar: Sidecar, project: Path, tmp_path: Path
) -> None:
    sidecar.result("initialize")
    second = Sidecar(project, tmp_path / "index")
    reply = second.call("initialize")
    assert reply["error"]["code"] == tools.SIDECAR_LOCKED
    assert "already serves" in reply["error"]["message"]
    assert second.close() == 3
    assert b"already serves" in second.stderr
    assert sidecar.result("status")["data"]["root"] == str(project.resolve())


def test_clean_exit_on_shutdown(sidecar: Sidecar) -> None:
    assert sidecar.result("shutdown") is None
    assert sidecar.proc.wait(timeout=WAIT) == 0


def test_clean_exit_on_eof_answers_what_is_in_flight(sidecar: Sidecar) -> None:
    sidecar.result("index")
    req = sidecar.send("status")
    assert sidecar.close() == 0
    assert sidecar.responses[req]["result"]["data"]["files"] == 2


def test_measure_cold_start_and_warm_search_latency(project: Path, tmp_path: Path) -> None:
    """Reported, not asserted (speed belongs to benchmarks): run with -s to see the numbers."""
    add_many_files(project, 200)
    numbers = {}
    for module in ("codebase_index.cli", "codebase_index.rpc"):
        proc = Sidecar(project, tmp_path / "index", module=module)
        proc.result("initialize")
        numbers[f"cold start to initialize via {module} (ms)"] = (time.perf_counter() - proc.started) * 1000
        if module == "codebase_index.cli":
            proc.result("index")
        samples = []
        for i in range(200):
            started = time.perf_counter()
            found = proc.result("search", {"query": f"handler {i} payload request", "limit": 10})
            samples.append(time.perf_counter() - started)
            assert found["data"]["results"], "the measured searches must find something"
        numbers[f"warm search p50 via {module} (ms, 200 queries, 1206 files)"] = (
            statistics.median(samples[5:]) * 1000
        )
        assert proc.close() == 0
    for key, value in numbers.items():
        print(f"{key}: {value:.1f}")
    assert all(v > 0 for v in numbers.values())


def test_invalid_config_is_reported_as_a_config_error(project: Path, tmp_path: Path) -> None:
    (project / ".opencode").mkdir()
    (project / ".opencode" / "codebase-index.json").write_text('{"indexing": {"maxFileSize": "big"}}')
    proc = Sidecar(project, tmp_path / "index")
    try:
        assert proc.result("initialize")["name"] == "codebase-index"
        reply = proc.call("index")
        assert reply["error"]["code"] == tools.CONFIG_ERROR
        assert "maxFileSize" in reply["error"]["message"]
        assert proc.call("search", {"query": "x"})["error"]["code"] == tools.CONFIG_ERROR
    finally:
        assert proc.close() == 0


@pytest.mark.parametrize("module", ["codebase_index.cli", "codebase_index.rpc"])
def test_unusable_project_root_is_answered_with_a_config_error(tmp_path: Path, module: str) -> None:
    missing = tmp_path / "nowhere"
    proc = Sidecar(missing, tmp_path / "index", module=module)
    try:
        for method in ("initialize", "search"):
            reply = proc.call(method, {"query": "x"} if method == "search" else {})
            assert reply["error"]["code"] == tools.CONFIG_ERROR
            assert f"the project root {missing} does not exist" in reply["error"]["message"]
        assert proc.call("shutdown")["result"] is None
    finally:
        assert proc.close() == 1


def test_embedding_reports_progress_under_the_index_request(sidecar: Sidecar) -> None:
    """Embedding is covered too: `$/progress` phase "embed" under the index request's id, up to done ==
    total (in the index pass with the default model; a background job's events add rate and ETA)."""
    index_id = sidecar.send("index", {})
    assert "result" in sidecar.wait_for(index_id)

    def embed_events() -> list[dict[str, Any]]:
        return [
            n["params"]
            for n in sidecar.notifications
            if n["method"] == "$/progress" and n["params"]["phase"] == "embed"
        ]

    with sidecar._cond:
        finished = sidecar._cond.wait_for(
            lambda: any(p["done"] == p["total"] > 0 for p in embed_events()), WAIT
        )
    events = embed_events()
    assert finished, f"no final embed progress: {events}; stderr: {sidecar.stderr.decode(errors='replace')}"
    assert all(p["requestId"] == index_id for p in events)
    assert [p["done"] for p in events] == sorted(p["done"] for p in events)
    assert all(set(p) <= {"requestId", "phase", "done", "total", "rate", "etaSeconds"} for p in events)
    last = events[-1]
    assert last["done"] == last["total"]
    assert "rate" not in last or (last["rate"] > 0 and last["etaSeconds"] == 0), "a job's pace and time left"
    status = sidecar.result("status")["data"]["embeddings"]
    assert status["embedded"] == status["total"] == last["total"]
