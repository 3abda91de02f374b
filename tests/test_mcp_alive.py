"""The MCP server keeps the project alive like the sidecar does (`ServeCore`): saves after start are
found, and embeddings an earlier session left pending finish without any CLI run. Driven through the
official `mcp` client against a real `codebase-index mcp` process."""

from __future__ import annotations

import re
import time
from pathlib import Path

import anyio
from mcp import ClientSession

from codebase_index.service import Engine
from git_repo import GitRepo
from test_first_index import GEOMETRY
from test_mcp import _session_run, _text


def _repo(path: Path) -> Path:
    GitRepo(path).commit("geometry", {"lib/geometry.py": GEOMETRY})
    return path


async def _poll(step: float, deadline: float, probe: object) -> object:
    """Call `probe()` until it returns something truthy or the deadline (monotonic) passes."""
    while True:
        got = await probe()  # type: ignore[operator]
        if got or time.monotonic() > deadline:
            return got
        await anyio.sleep(step)


def test_mcp_finds_a_file_saved_after_start(tmp_path: Path) -> None:
    project = _repo(tmp_path / "proj")

    async def body(session: ClientSession) -> tuple[str, float]:
        await session.call_tool("index_codebase", {})  # the watcher is up when this returns
        (project / "lib" / "trapezoid.py").write_text(
            "def trapezoid_rule_integral(f, a, b, n):\n    return sum(f(a + i) for i in range(n))\n"
        )
        saved = time.monotonic()

        async def found() -> str:
            result = await session.call_tool("codebase_peek", {"query": "trapezoid_rule_integral"})
            text = _text(result)
            return text if "lib/trapezoid.py" in text else ""

        text = await _poll(0.05, saved + 2.0, found)
        return str(text), time.monotonic() - saved

    text, _elapsed = anyio.run(_session_run, project, tmp_path / "index", body)
    assert "lib/trapezoid.py" in text, text


def _embedded(status: str) -> tuple[int, int]:
    found = re.search(r"(\d+)/(\d+) chunks \(", status)
    assert found, status
    return int(found.group(1)), int(found.group(2))


def test_mcp_resumes_embeddings_an_earlier_session_left_pending(tmp_path: Path) -> None:
    project = _repo(tmp_path / "proj")
    index_dir = tmp_path / "index"
    engine = Engine(project, index_path=index_dir)
    try:
        engine.index(embed=False, graph=False)  # keyword only: every chunk's vector is pending
        pending = engine.status().embeddings
    finally:
        engine.close()

    async def body(session: ClientSession) -> str:
        async def all_embedded() -> str:
            text = _text(await session.call_tool("index_status", {}))
            done, total = _embedded(text)
            return text if total and done == total else ""

        return str(await _poll(0.1, time.monotonic() + 60, all_embedded))

    assert pending.total > 0 and pending.embedded == 0  # all pending when the server starts
    last = anyio.run(_session_run, project, index_dir, body)
    assert last, "embeddings never finished"
    assert _embedded(last) == (pending.total, pending.total)
