"""The MCP face: the official `mcp` client launches `codebase-index mcp` and uses the tools like an agent."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

from codebase_index import tools

REPO = Path(__file__).resolve().parents[1]


def _project(root: Path) -> Path:
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "geometry.py").write_text(
        "import math\n\n\n"
        "def polygon_area(points):\n"
        '    """Shoelace formula for the area of a simple polygon."""\n'
        "    total = 0.0\n"
        "    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]):\n"
        "        total += x1 * y2 - x2 * y1\n"
        "    return abs(total) / 2\n\n\n"
        "def circle_area(radius):\n"
        "    return math.pi * radius * radius\n"
    )
    return root


async def _session_run(project: Path, index_dir: Path, body: Any, *extra: str) -> Any:
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "codebase_index.cli",
            "mcp",
            "--project",
            str(project),
            "--index-dir",
            str(index_dir),
            *extra,
        ],
        cwd=str(REPO),
        env={k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "HOME", "XDG_CONFIG_HOME")},
    )
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await body(session)


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def _results_text(result: Any) -> str:
    """A search answer's text without its leading `note:` line (vectors still being computed)."""
    text = _text(result)
    return text.split("\n\n", 1)[1] if text.startswith("note: ") else text


def test_mcp_tools_match_tools_py_and_search_finds_a_symbol(tmp_path: Path) -> None:
    project = _project(tmp_path / "proj")

    async def body(session: ClientSession) -> dict[str, Any]:
        listed = await session.list_tools()
        progress: list[tuple[float, float | None, str | None]] = []

        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            progress.append((done, total, message))

        # The first search indexes first, reporting progress as MCP progress notifications.
        before = await session.call_tool(
            "codebase_search", {"query": "polygon area"}, progress_callback=on_progress
        )
        bad = await session.call_tool("codebase_search", {"query": "x", "limit": "many"})

        indexed = await session.call_tool("index_codebase", {}, progress_callback=on_progress)
        found = await session.call_tool("codebase_search", {"query": "shoelace polygon area", "limit": 2})
        peek = await session.call_tool("codebase_peek", {"query": "circle"})
        prompts = await session.list_prompts()
        prompt = await session.get_prompt("search", {"query": "where areas are computed"})
        try:
            await session.get_prompt("search", {})
            prompt_error = None
        except MCPError as exc:
            prompt_error = str(exc)
        return {
            "tools": listed.tools,
            "before": before,
            "bad": bad,
            "indexed": indexed,
            "found": found,
            "peek": peek,
            "prompts": prompts.prompts,
            "prompt": prompt,
            "prompt_error": prompt_error,
            "progress": progress,
        }

    out = anyio.run(_session_run, project, tmp_path / "index", body)

    expected = {d["name"]: d for d in tools.tool_definitions()}
    assert [t.name for t in out["tools"]] == list(expected)
    for tool in out["tools"]:
        assert tool.input_schema == expected[tool.name]["inputSchema"]
        assert tool.description == expected[tool.name]["description"]

    # The first search indexes the project and answers (no "not indexed").
    assert not out["before"].is_error and "lib/geometry.py" in _text(out["before"]), _text(out["before"])
    assert out["bad"].is_error and "$.limit" in _text(out["bad"])
    assert not out["indexed"].is_error and "indexed 1 files" in _text(out["indexed"])

    assert {"discover", "chunk", "write"} <= {message for _, _, message in out["progress"]}

    found = _results_text(out["found"])
    assert not out["found"].is_error
    assert found.startswith("lib/geometry.py:4-9  function polygon_area")
    assert "total += x1 * y2 - x2 * y1" in found
    assert _results_text(out["peek"]).startswith("lib/geometry.py:12-13  function circle_area")

    assert {p.name for p in out["prompts"]} == {"search", "find", "index", "status"}
    message = out["prompt"].messages[0]
    assert message.role == "user" and "where areas are computed" in message.content.text
    assert out["prompt_error"] is not None and "query" in out["prompt_error"]


def test_mcp_config_option_layers_a_config_file(tmp_path: Path) -> None:
    project = _project(tmp_path / "proj")
    (project / "notes.md").write_text("# Notes\n\nAreas of shapes.\n")
    config = tmp_path / "elsewhere" / "my-config.jsonc"
    config.parent.mkdir()
    config.write_text('{\n  // keep markdown out of this index\n  "exclude": ["*.md"],\n}\n')

    async def body(session: ClientSession) -> str:
        return _text(await session.call_tool("index_codebase", {}))

    with_config = anyio.run(_session_run, project, tmp_path / "index1", body, "--config", str(config))
    without = anyio.run(_session_run, project, tmp_path / "index2", body)
    assert "indexed 1 files" in with_config, with_config
    assert "indexed 2 files" in without, without


def test_mcp_answers_requests_that_do_not_decode_under_their_id(tmp_path: Path) -> None:
    """Nested 1,000 deep or holding a lone surrogate: the SDK once dropped these silently."""
    import json
    import subprocess

    project = _project(tmp_path / "proj")
    index_dir = tmp_path / "idx"
    lines = [
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"arguments": '
        + b"[" * 1000
        + b"]" * 1000
        + b"}}\n",
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "a\\ud800"}}\n',
        b'{"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": '
        b'"2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}\n',
    ]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebase_index.cli",
            "mcp",
            "--project",
            str(project),
            "--index-dir",
            str(index_dir),
        ],
        input=b"".join(lines),
        capture_output=True,
        cwd=str(REPO),
        timeout=120,
        check=False,
    )
    replies = {m["id"]: m for m in map(json.loads, proc.stdout.splitlines())}
    assert replies[1]["error"]["code"] == tools.INVALID_REQUEST
    assert replies[2]["error"]["code"] == tools.PARSE_ERROR
    assert replies[3]["result"]["serverInfo"]["name"] == "codebase-index"
