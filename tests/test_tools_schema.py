"""The three faces of the tool schema (JSON-RPC, MCP, TypeScript) come from `tools` and must not drift."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import msgspec
import pytest

from codebase_index import tools
from codebase_index.format import MAX_CODE_LINES, format_peek, format_search
from codebase_index.models import SearchResult

REPO = Path(__file__).resolve().parents[1]
GENERATED_TS = REPO / "plugin" / "src" / "generated" / "tools.ts"

EXPECTED_TOOLS = {
    "codebase_search": "search",
    "codebase_context": "context",
    "codebase_edit_context": "edit_context",
    "codebase_peek": "peek",
    "find_similar": "similar",
    "call_graph": "call_graph",
    "implementation_lookup": "implementation_lookup",
    "index_codebase": "index",
    "index_status": "status",
    "index_health_check": "health_check",
    "index_metrics": "metrics",
    "index_savings": "savings",
    "index_logs": "logs",
    "add_knowledge_base": "kb_add",
    "list_knowledge_bases": "kb_list",
    "remove_knowledge_base": "kb_remove",
}


def test_tool_names_and_methods() -> None:
    assert {t.name: t.method for t in tools.TOOLS} == EXPECTED_TOOLS
    assert all(len(t.description) > 40 for t in tools.TOOLS)


def test_generated_typescript_matches_tools_py(tmp_path: Path) -> None:
    out = tmp_path / "tools.ts"
    subprocess.run(
        [sys.executable, "-m", "codebase_index.tools", "--emit", "ts", "--out", str(out)],
        check=True,
        capture_output=True,
    )
    assert GENERATED_TS.exists(), "run `python -m codebase_index.tools --emit ts` and commit the file"
    assert out.read_text(encoding="utf-8") == GENERATED_TS.read_text(encoding="utf-8"), (
        "plugin/src/generated/tools.ts is stale: run `python -m codebase_index.tools --emit ts`"
    )


def test_emit_json_is_the_same_schema_everyone_uses() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "codebase_index.tools", "--emit", "json"], check=True, capture_output=True
    )
    payload = json.loads(proc.stdout)
    assert payload["protocolVersion"] == tools.PROTOCOL_VERSION
    assert payload["tools"] == tools.tool_definitions()
    search = next(t for t in payload["tools"] if t["name"] == "codebase_search")
    props = search["inputSchema"]["properties"]
    assert set(props) == {
        "query",
        "limit",
        "fileType",
        "directory",
        "chunkType",
        "minScore",
        "contextLines",
        "mode",
        "changedSince",
        "changedBefore",
        "repos",
    }
    assert search["inputSchema"]["required"] == ["query"]
    assert props["fileType"] == {
        "description": "Only files with this extension, e.g. 'py' or '.ts'.",
        "type": "string",
    }
    assert "search.maxResults" in props["limit"]["description"]  # unset: the project's config decides


def test_typescript_zod_shapes_follow_the_schema() -> None:
    ts = tools.render_ts()
    assert "query: z.string().min(1).describe(" in ts
    assert "limit: z.number().int().min(1).max(50).optional()" in ts
    assert 'chunkType: z.enum(["block", "class",' in ts
    assert "estimateOnly: z.boolean().optional()" in ts


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("search", {"query": "parse config", "limit": 5, "fileType": "py", "contextLines": 2}),
        ("peek", {"query": "x", "chunkType": "function"}),
        ("index", {"force": True, "estimateOnly": False}),
        ("status", {}),
        ("logs", {"limit": 3, "level": "warning"}),
    ],
)
def test_json_schema_and_msgspec_accept_the_same_params(method: str, params: dict[str, object]) -> None:
    spec = tools.lookup(method)
    jsonschema.validate(params, tools.input_schema(spec.params))
    decoded = tools.decode_params(spec, params)
    assert msgspec.to_builtins(decoded) | params == msgspec.to_builtins(decoded)


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("search", {"query": "x", "limit": "5"}, "$.limit"),
        ("search", {"query": "x", "limit": 0}, "$.limit"),
        ("search", {"query": "x", "chunkType": "lambda"}, "$.chunkType"),
        ("search", {"query": "x", "top_k": 3}, "top_k"),
        ("search", {}, "query"),
        ("index", {"force": "yes"}, "$.force"),
        ("logs", {"level": "trace"}, "$.level"),
    ],
)
def test_bad_params_are_refused_by_both_faces_and_named(
    method: str, params: dict[str, object], field: str
) -> None:
    spec = tools.lookup(method)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(params, tools.input_schema(spec.params))
    with pytest.raises(tools.InvalidParams) as err:
        tools.decode_params(spec, params)
    assert err.value.code == tools.INVALID_PARAMS
    assert field in err.value.message


def test_lookup_unknown_method() -> None:
    with pytest.raises(tools.MethodNotFound):
        tools.lookup("grep")
    assert tools.lookup("codebase_search") is tools.lookup("search")


def _result(path: str, start: int, end: int, content: str, score: float = 1.5) -> SearchResult:
    return SearchResult(
        id=1,
        score=score,
        path=path,
        start_line=start,
        end_line=end,
        kind="function",
        symbol="parse",
        language="python",
        chunk=0,
        preview=content[:200],
        content=content,
    )


def test_format_search_header_code_and_bounds(tmp_path: Path) -> None:
    long_body = "\n".join(f"    line{i}" for i in range(100))
    text = format_search([_result("src/a.py", 3, 103, "def parse():\n" + long_body)], root=tmp_path)
    lines = text.splitlines()
    assert lines[0] == "src/a.py:3-103  function parse  (1.500)"
    assert lines[1] == "def parse():"
    assert len(lines) == 1 + MAX_CODE_LINES + 1
    assert lines[-1] == "… (61 more lines)"


def test_format_search_context_lines_read_the_file_as_it_is_now(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("import os\n\ndef parse():\n    return 1\n\nX = 2\n")
    text = format_search([_result("src/a.py", 3, 4, "stale text")], root=tmp_path, context_lines=1)
    assert text.splitlines()[1:] == ["2  ", "3  def parse():", "4      return 1", "5  "]
    # a vanished file falls back to the stored chunk text
    gone = format_search([_result("src/gone.py", 3, 4, "def kept():")], root=tmp_path, context_lines=2)
    assert gone.splitlines()[1] == "def kept():"


def test_format_no_results_is_helpful() -> None:
    text = format_search([], root=Path("."), query="frobnicate")
    assert "no results for 'frobnicate'" in text
    assert "index_codebase" in text
    assert format_peek([_result("a.py", 1, 2, "x")]) == "a.py:1-2  function parse  (1.500)"
