"""call_graph `path` and `impact` on multi-file fixtures in Python, TypeScript, Go (a module whose go.mod
is in a subfolder) and Rust (calls inside macros), each a real git repository in a temp dir."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebase_index import tools
from codebase_index.graph import extract_file
from codebase_index.graph.gomod import find_modules
from codebase_index.graph.paths import is_test
from codebase_index.graph.resolve import resolve_with_stats

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")

PYTHON = {
    "app/api.py": "from app.service import process\n\n\ndef handle(req):\n    return process(req)\n",
    "app/service.py": (
        "from app.store import save\n\n\ndef process(req):\n    data = dict(req)\n    return save(data)\n"
    ),
    "app/store.py": (
        "def save(data):\n    rows = [data]\n    return len(rows)\n\n\ndef unused():\n    return 0\n"
    ),
    "tests/test_api.py": "from app.api import handle\n\n\ndef test_handle():\n    assert handle({}) == 1\n",
}
TYPESCRIPT = {
    "src/index.ts": (
        'import { render } from "./view";\n\nexport function main(): string {\n  return render(1);\n}\n'
    ),
    "src/view.ts": (
        'import { format } from "./fmt";\n\nexport function render(n: number): string {\n'
        "  const s = format(n);\n  return `<p>${s}</p>`;\n}\n"
    ),
    "src/fmt.ts": "export function format(n: number): string {\n  return n.toFixed(2);\n}\n",
    "src/view.test.ts": (
        'import { render } from "./view";\n\ntest("renders", () => {\n  expect(render(2)).toBe("x");\n});\n'
        "export function checkRender(): string {\n  return render(3);\n}\n"
    ),
}
GO = {
    "backend/go.mod": "module github.com/acme/api\n\ngo 1.22\n",
    "backend/cmd/server/main.go": (
        'package main\n\nimport "github.com/acme/api/internal/db"\n\nfunc main() {\n\tdb.Open("x")\n}\n'
    ),
    "backend/internal/db/db.go": (
        "package db\n\nfunc Open(dsn string) error {\n\treturn connect(dsn)\n}\n\n"
        "func connect(dsn string) error {\n\treturn nil\n}\n"
    ),
    "backend/internal/db/db_test.go": (
        'package db\n\nimport "testing"\n\nfunc TestOpen(t *testing.T) {\n\tif Open("x") != nil {\n'
        "\t\tt.Fatal()\n\t}\n}\n"
    ),
}
RUST = {
    "Cargo.toml": '[package]\nname = "geo"\nversion = "0.1.0"\n',
    "src/lib.rs": ('mod shapes;\n\npub fn report() {\n    println!("{}", shapes::area(2));\n}\n'),
    "src/shapes.rs": (
        "pub fn area(x: u32) -> u32 {\n    square(x)\n}\n\nfn square(x: u32) -> u32 {\n    x * x\n}\n\n"
        "#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn area_works() {\n"
        "        assert_eq!(area(2), 4);\n    }\n}\n"
    ),
}


def _git(root: Path, *args: str) -> None:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
        "HOME": str(root),
    }
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)


def _repo(tmp: Path, files: dict[str, str]) -> Path:
    root = tmp / "repo"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "first")
    return root


@pytest.fixture
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, tools.Runtime]]:
    root = _repo(tmp_path, request.param)
    rt = tools.Runtime(root, index_dir=tmp_path / "index")
    rt.writer().index()  # the index tool would also start embedding in the background: not needed here
    yield root, rt
    rt.close()


def _path(rt: tools.Runtime, source: str, target: str) -> list[tuple[str, str]]:
    data = tools.call(rt, "call_graph", {"name": source, "direction": "path", "to": target}).data
    return [(h["caller"], h["callee"]) for h in data["hops"]]


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _impact(rt: tools.Runtime, diff: str | None = None, depth: int = 3) -> dict:  # type: ignore[type-arg]
    rt.writer().index()  # the edit is in the working tree: the sidecar's watcher would do this
    params: dict[str, object] = {"direction": "impact", "depth": depth}
    if diff:
        params["diff"] = diff
    return tools.call(rt, "call_graph", params).data  # type: ignore[no-any-return]


@pytest.mark.parametrize("project", [PYTHON], indirect=True)
def test_python_path_and_impact(project: tuple[Path, tools.Runtime]) -> None:
    root, rt = project
    assert _path(rt, "handle", "save") == [("handle", "process"), ("process", "save")]
    reverse = tools.call(rt, "call_graph", {"name": "save", "direction": "path", "to": "handle"})
    assert reverse.data["found"] and reverse.data["direction"] == "reverse"
    none = tools.call(rt, "call_graph", {"name": "unused", "direction": "path", "to": "handle"})
    assert not none.data["found"] and "No call path" in none.text
    _edit(root, "app/store.py", "rows = [data]", "rows = [data, data]")
    data = _impact(rt)
    assert [c["name"] for c in data["changed"]] == ["save"]
    assert data["changedFiles"] == ["app/store.py"]
    assert {(c["caller"], c["depth"]) for c in data["callers"]} == {
        ("process", 1),
        ("handle", 2),
        ("test_handle", 3),
    }
    assert [(t["symbol"], t["reaches"], t["depth"]) for t in data["tests"]] == [("test_handle", "save", 3)]
    text = tools.call(rt, "call_graph", {"direction": "impact"}).text
    assert "changed: save [function] app/store.py:1 (lines 2)" in text and "test_handle" in text


@pytest.mark.parametrize("project", [TYPESCRIPT], indirect=True)
def test_typescript_path_and_committed_range_impact(project: tuple[Path, tools.Runtime]) -> None:
    root, rt = project
    assert _path(rt, "main", "format") == [("main", "render"), ("render", "format")]
    _edit(root, "src/fmt.ts", "n.toFixed(2)", "n.toFixed(3)")
    _git(root, "commit", "-q", "-am", "precision")
    data = _impact(rt, "HEAD~1..HEAD", depth=2)
    assert data["range"] == "HEAD~1..HEAD"
    assert [c["name"] for c in data["changed"]] == ["format"]
    assert {(c["caller"], c["callerPath"]) for c in data["callers"]} >= {
        ("render", "src/view.ts"),
        ("main", "src/index.ts"),
    }
    assert ("checkRender", "src/view.test.ts") in {(t["symbol"], t["path"]) for t in data["tests"]}
    clean = _impact(rt)  # nothing uncommitted
    assert clean["changedFiles"] == [] and clean["changed"] == []


@pytest.mark.parametrize("project", [GO], indirect=True)
def test_go_module_in_a_subfolder_resolves_its_packages(project: tuple[Path, tools.Runtime]) -> None:
    root, rt = project
    callers = tools.call(rt, "call_graph", {"name": "Open"}).data
    assert {(e["caller"], e["callerPath"], e["confidence"]) for e in callers["edges"]} >= {
        ("main", "backend/cmd/server/main.go", "import")
    }
    assert _path(rt, "main", "connect") == [("main", "Open"), ("Open", "connect")]
    _edit(root, "backend/internal/db/db.go", "\treturn nil\n", "\tprintln(dsn)\n\treturn nil\n")
    data = _impact(rt)
    assert [c["name"] for c in data["changed"]] == ["connect"]
    assert {c["caller"] for c in data["callers"]} == {"Open", "main", "TestOpen"}
    assert [t["symbol"] for t in data["tests"]] == ["TestOpen"]


def test_go_import_across_a_subfolder_module_needs_the_go_mod(tmp_path: Path) -> None:
    """The gap this fixes: without the go.mod mapping the import of a subfolder module is unresolved."""
    root = tmp_path / "mono"
    for rel, text in GO.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    graphs = [extract_file(p, t, "go") for p, t in GO.items() if p.endswith(".go")]
    assert find_modules(root, ["backend/cmd/server", "backend/internal/db"]) == {
        "backend": "github.com/acme/api"
    }

    def main_calls(go_modules: dict[str, str] | None) -> set[tuple[str, str]]:
        edges, _ = resolve_with_stats(graphs, go_modules=go_modules)
        return {(e.callee, e.confidence) for e in edges if e.caller == "main"}

    assert main_calls(None) == set()
    assert main_calls({"backend": "github.com/acme/api"}) == {("Open", "import")}


@pytest.mark.parametrize("project", [RUST], indirect=True)
def test_rust_calls_inside_macros_are_edges(project: tuple[Path, tools.Runtime]) -> None:
    root, rt = project
    assert _path(rt, "report", "square") == [("report", "area"), ("area", "square")]
    callers = tools.call(rt, "call_graph", {"name": "area"}).data
    assert {(e["caller"], e["line"]) for e in callers["edges"]} == {("report", 4), ("tests.area_works", 15)}
    _edit(root, "src/shapes.rs", "    x * x\n", "    x.pow(2)\n")
    data = _impact(rt)
    assert [c["name"] for c in data["changed"]] == ["square"]
    assert {c["caller"] for c in data["callers"]} == {"area", "report", "tests.area_works"}
    assert [t["symbol"] for t in data["tests"]] == ["tests.area_works"]


def test_macro_receivers_are_read_from_the_tokens() -> None:
    src = (
        "struct S;\nimpl S {\n    fn area(&self) -> u32 { 1 }\n    fn new() -> S { S }\n}\n"
        'fn main() {\n    let s = S::new();\n    println!("{} {}", s.area(), geo::util::f(1));\n'
        "    let v = vec![1];\n    dbg!(v[0]);\n}\n"
    )
    refs = {(r.name, r.receiver, r.kind) for r in extract_file("src/main.rs", src, "rust").references}
    assert ("area", "s", "method_call") in refs
    assert ("f", "geo::util", "call") in refs
    assert not any(r[0] == "v" for r in refs)  # `v[0]` is indexing, not a call


def test_impact_and_path_errors_are_specific(tmp_path: Path) -> None:
    root = _repo(tmp_path, PYTHON)
    rt = tools.Runtime(root, index_dir=tmp_path / "index")
    try:
        tools.call(rt, "index", {})
        with pytest.raises(tools.InvalidParams, match="needs `to`"):
            tools.call(rt, "call_graph", {"name": "handle", "direction": "path"})
        with pytest.raises(tools.InvalidParams, match="not `name`"):
            tools.call(rt, "call_graph", {"name": "handle", "direction": "impact"})
        with pytest.raises(tools.InvalidParams, match="diff"):
            tools.call(rt, "call_graph", {"direction": "impact", "diff": "no-such-branch"})
    finally:
        rt.close()


def test_is_test_recognises_test_code() -> None:
    assert is_test("tests/test_api.py") and is_test("pkg/db_test.go") and is_test("src/a.test.ts")
    assert is_test("src/shapes.rs", "tests.area_works") and is_test("x/y.go", "TestOpen")
    assert not is_test("app/store.py", "save") and not is_test("src/latest.py", "contest")


def test_cli_path_and_impact(tmp_path: Path) -> None:
    root = _repo(tmp_path, PYTHON)
    cmd = [sys.executable, "-m", "codebase_index.cli"]
    index = ["--root", str(root), "--index-dir", str(tmp_path / "index")]
    out = subprocess.run([*cmd, "path", "handle", "save", *index], capture_output=True, text=True, check=True)
    assert "Call path handle -> save (2 call(s))" in out.stdout
    _edit(root, "app/store.py", "rows = [data]", "rows = [data, data]")
    out = subprocess.run([*cmd, "impact", "--depth", "3", *index], capture_output=True, text=True, check=True)
    assert "changed: save" in out.stdout and "test_handle" in out.stdout
