"""Cross-file resolution on small fixture repositories, one per language, with exact expected edges."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebase_index.graph import (
    MODULE_CALLER,
    Edge,
    FileGraph,
    callees,
    callers,
    extract_file,
    resolve,
    resolve_with_stats,
)

FIXTURES = Path(__file__).parent / "fixtures" / "graph"
LANGUAGE_BY_SUFFIX = {".py": "python", ".js": "javascript", ".ts": "typescript", ".go": "go", ".rs": "rust"}
LANGUAGE_BY_SUFFIX[".java"] = "java"

Expected = set[tuple[str, str, str, str]]

EXPECTED: dict[str, Expected] = {
    "python": {
        ("Base.save", "Base.validate", "pkg/models.py", "exact"),
        ("Model.__init__", "Base.__init__", "pkg/models.py", "exact"),  # super().__init__()
        ("Model.run", "Base.save", "pkg/models.py", "exact"),  # self.save() found on the base class
        ("Model.run", "helper", "pkg/models.py", "exact"),
        (MODULE_CALLER, "helper", "pkg/models.py", "exact"),
        ("process", "Model", "pkg/models.py", "import"),  # through the package's re-export
        ("process", "Model.run", "pkg/models.py", "import"),  # m = Model(); m.run()
        ("process", "helper", "pkg/models.py", "import"),  # alias h() and models.helper()
        ("dispatch", "Circle.draw", "pkg/shapes.py", "name"),  # widget.draw(): both kept
        ("dispatch", "Square.draw", "pkg/shapes.py", "name"),
        ("dispatch", "Circle", "pkg/shapes.py", "import"),
        ("dispatch", "Circle.draw", "pkg/shapes.py", "import"),  # Circle().draw()
    },
    "javascript": {
        ("main", "Client", "lib/client.js", "import"),  # require + module.exports = Client
        ("main", "Client.send", "lib/client.js", "import"),
        ("main", "format", "lib/util.js", "import"),  # util.format()
        (MODULE_CALLER, "main", "index.js", "exact"),
        ("Client.send", "Client.encode", "lib/client.js", "exact"),  # this.encode()
        ("Client.send", "format", "lib/util.js", "import"),  # const { format } = require()
        ("paint", "Circle.draw", "lib/shapes.js", "name"),
        ("paint", "Square.draw", "lib/shapes.js", "name"),
    },
    "typescript": {
        ("App.run", "Circle", "src/shapes.ts", "import"),  # via export * in geometry/index.ts
        ("App.run", "Circle.area", "src/shapes.ts", "import"),
        ("App.run", "App.report", "src/app.ts", "exact"),
        ("App.run", "measure", "src/geometry/math.ts", "import"),  # namespace import
        ("App.run", "total", "src/geometry/math.ts", "import"),  # export { total as sum }
        ("anyArea", "Shape.area", "src/shapes.ts", "name"),
        ("anyArea", "Circle.area", "src/shapes.ts", "name"),
        ("anyArea", "Square.area", "src/shapes.ts", "name"),
        ("measure", "Shape.area", "src/shapes.ts", "import"),  # typed parameter
        (MODULE_CALLER, "App", "src/app.ts", "import"),  # default import
        (MODULE_CALLER, "App.run", "src/app.ts", "import"),
    },
    "go": {
        ("main", "New", "store/store.go", "import"),
        ("main", "Store.Put", "store/store.go", "name"),  # s := store.New(): type not tracked
        ("main", "Store.Put", "store/store.go", "import"),  # var t store.Store
        ("main", "helper", "util.go", "exact"),  # same package, other file
        ("closeAll", "Cache.Close", "main.go", "name"),
        ("closeAll", "Store.Close", "store/store.go", "name"),
        ("New", "Store", "store/store.go", "exact"),  # composite literal
        ("Store.Put", "Store.log", "store/store.go", "exact"),  # receiver variable s
    },
    "rust": {
        ("Engine.new", "Engine", "src/engine.rs", "exact"),
        ("Engine.run", "Engine.step", "src/engine.rs", "exact"),
        ("Engine.run", "log", "src/util.rs", "import"),  # use crate::util::log
        ("tests.runs", "Engine.new", "src/engine.rs", "exact"),  # use super::* in mod tests
        ("tests.runs", "Engine.run", "src/engine.rs", "exact"),
        ("start", "Engine.new", "src/engine.rs", "import"),
        ("start", "Engine.run", "src/engine.rs", "import"),
        ("start", "log", "src/util.rs", "import"),  # `mod util;` then util::log()
        ("draw_all", "Engine.render", "src/engine.rs", "name"),
        ("draw_all", "Widget.render", "src/util.rs", "name"),
    },
    "java": {
        ("App", "Repo", "src/com/acme/store/Repo.java", "import"),
        ("App.run", "Repo.save", "src/com/acme/store/Repo.java", "import"),  # field type
        ("App.run", "App.helper", "src/com/acme/App.java", "exact"),  # implicit this
        ("App.run", "Util.format", "src/com/acme/Util.java", "exact"),  # same package, static
        ("App.shutdown", "Util.close", "src/com/acme/Util.java", "name"),
        ("App.shutdown", "BaseRepo.close", "src/com/acme/store/BaseRepo.java", "name"),
        ("Repo.save", "BaseRepo.validate", "src/com/acme/store/BaseRepo.java", "exact"),  # inherited
    },
}


def load_fixture(language: str) -> list[FileGraph]:
    root = FIXTURES / language
    graphs = []
    for path in sorted(root.rglob("*")):
        lang = LANGUAGE_BY_SUFFIX.get(path.suffix)
        if lang is not None:
            rel = path.relative_to(root).as_posix()
            graphs.append(extract_file(rel, path.read_text(encoding="utf-8"), lang))
    return graphs


def edge_set(edges: list[Edge]) -> Expected:
    return {(e.caller, e.callee, e.callee_path, e.confidence) for e in edges}


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_fixture_edges_are_exactly_the_expected_ones(language: str) -> None:
    assert edge_set(resolve(load_fixture(language))) == EXPECTED[language]


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_ambiguous_sites_keep_every_candidate(language: str) -> None:
    edges = resolve(load_fixture(language))
    by_site: dict[tuple[str, int], list[Edge]] = {}
    for e in edges:
        by_site.setdefault((e.caller_path, e.line), []).append(e)
    named = [e for e in edges if e.confidence == "name" and e.candidates > 1]
    assert named, "every fixture has one ambiguous call"
    for e in named:
        site = [s for s in by_site[(e.caller_path, e.line)] if s.confidence == "name"]
        assert len(site) == e.candidates


def test_stats_count_what_produced_no_edge() -> None:
    edges, stats = resolve_with_stats(load_fixture("python"))
    assert stats.edges == len(edges)
    assert stats.external == 3  # len(), print(), and super() itself
    assert stats.unresolved == 0
    assert stats.imports == 5
    assert stats.calls == stats.exact + stats.via_import + stats.by_name + stats.external + stats.unresolved


def test_max_candidates_drops_only_name_matches_and_counts_them() -> None:
    edges, stats = resolve_with_stats(load_fixture("python"), max_candidates=1)
    assert stats.too_ambiguous == 1
    assert ("dispatch", "Square.draw", "pkg/shapes.py", "name") not in edge_set(edges)
    assert ("dispatch", "Circle.draw", "pkg/shapes.py", "import") in edge_set(edges)


def test_callers_and_callees_walk_the_given_depth() -> None:
    edges = resolve(load_fixture("python"))
    assert {e.caller for e in callers(edges, "Base.save")} == {"Model.run"}
    assert {e.caller for e in callers(edges, "Base.save", depth=2)} == {"Model.run", "process"}
    assert {e.callee for e in callees(edges, "process")} == {"Model", "Model.run", "helper"}
    # A simple name matches every symbol with that last component.
    assert {e.callee for e in callers(edges, "draw")} == {"Circle.draw", "Square.draw"}


def test_import_cycles_terminate() -> None:
    a = extract_file("pkg/a.py", "from .b import *\n\ndef f():\n    missing()\n", "python")
    b = extract_file("pkg/b.py", "from .a import *\n\ndef g():\n    f()\n", "python")
    edges, stats = resolve_with_stats([a, b])
    assert edge_set(edges) == {("g", "f", "pkg/a.py", "import")}
    assert stats.unresolved == 1


def test_absolute_python_import_prefers_the_nearest_source_root() -> None:
    files = [
        extract_file("src/app/util.py", "def tool():\n    pass\n", "python"),
        extract_file("vendor/other/app/util.py", "def tool():\n    pass\n", "python"),
        extract_file("src/app/main.py", "from app.util import tool\n\ntool()\n", "python"),
    ]
    assert edge_set(resolve(files)) == {(MODULE_CALLER, "tool", "src/app/util.py", "import")}


def test_go_import_path_maps_to_directory_and_ignores_stdlib() -> None:
    files = [
        extract_file("internal/json/enc.go", "package json\n\nfunc Marshal() {}\n", "go"),
        extract_file(
            "cmd/main.go",
            'package main\n\nimport (\n\tstd "encoding/json"\n\t"example.com/x/internal/json"\n)\n\n'
            "func main() {\n\tjson.Marshal()\n\tstd.Marshal()\n}\n",
            "go",
        ),
    ]
    edges, stats = resolve_with_stats(files)
    assert edge_set(edges) == {("main", "Marshal", "internal/json/enc.go", "import")}
    assert stats.external == 1  # encoding/json is not the repo's


REQUESTS = Path.home() / ".cache" / "bench-repos" / "requests" / "src" / "requests"


@pytest.mark.skipif(not REQUESTS.exists(), reason="corpus ~/.cache/bench-repos/requests is not present")
def test_real_repository_requests() -> None:
    graphs = [
        extract_file(p.relative_to(REQUESTS).as_posix(), p.read_text(encoding="utf-8"), "python")
        for p in sorted(REQUESTS.rglob("*.py"))
    ]
    edges = edge_set(resolve(graphs))
    # api.request: `with sessions.Session() as session: return session.request(...)`
    assert ("request", "Session.request", "sessions.py", "import") in edges
    # api.get -> request() in the same file
    assert ("get", "request", "api.py", "exact") in edges
    # Session.send: `adapter = self.get_adapter(url=request.url)` and `r = adapter.send(...)`
    assert ("Session.send", "Session.get_adapter", "sessions.py", "exact") in edges
    # models.PreparedRequest.prepare_url calls requote_uri imported from .utils
    assert ("PreparedRequest.prepare_url", "requote_uri", "utils.py", "import") in edges


def test_repeated_bare_calls_resolve_per_enclosing_scope() -> None:
    # Call sites are resolved once per shape and file; a bare call's scope is part of its shape.
    source = (
        "def outer():\n"
        "    def helper():\n"
        "        pass\n"
        "    helper()\n"
        "    helper()\n"
        "\n"
        "def other():\n"
        "    helper()\n"
        "\n"
        "def helper():\n"
        "    pass\n"
        "\n"
        "helper()\n"
    )
    edges, stats = resolve_with_stats([extract_file("pkg/m.py", source, "python")])
    assert edge_set(edges) == {
        ("outer", "outer.helper", "pkg/m.py", "exact"),
        ("other", "helper", "pkg/m.py", "exact"),
        (MODULE_CALLER, "helper", "pkg/m.py", "exact"),
    }
    assert sorted(e.line for e in edges if e.caller == "outer") == [4, 5]
    assert stats.calls == 4 and stats.exact == 4
