"""Per-file extraction: definitions with qualified names and spans, references, imports."""

from __future__ import annotations

import pytest
from tree_sitter_language_pack import get_parser

from codebase_index.graph import (
    SUPPORTED_LANGUAGES,
    Definition,
    FileGraph,
    ImportBinding,
    Reference,
    extract_file,
)
from codebase_index.graph.extract import extract_rows
from codebase_index.graph.languages import DEF, IMPORT, REF, query_plan
from codebase_index.graph.store import encode_graph, encode_rows


def defs(g: FileGraph) -> dict[str, tuple[str, int, int]]:
    return {d.qualified: (d.kind, d.start_line, d.end_line) for d in g.definitions}


def refs(g: FileGraph) -> set[tuple[str, str | None, str, str | None]]:
    return {(r.name, r.receiver, r.kind, r.caller) for r in g.references if r.kind != "import"}


def binds(g: FileGraph) -> set[tuple[str, str, str | None]]:
    return {(b.local, b.module, b.imported) for b in g.imports}


PY = """\
import os.path as osp, json
from .models import Model as M, helper
from ..core import *


class Outer(Base, mixins.Mixin):
    class Inner:
        def deep(self):
            pass

    def method(self, tool: Tool):
        self.other()
        x = Outer()
        x.method(None)
        tool.use()
        def nested():
            helper()
        return nested()


def top():
    osp.join("a")
"""


def test_python_definitions_are_qualified_with_kinds_and_spans() -> None:
    g = extract_file("pkg/mod.py", PY, "python")
    assert defs(g) == {
        "Outer": ("class", 6, 18),
        "Outer.Inner": ("class", 7, 9),
        "Outer.Inner.deep": ("method", 8, 9),
        "Outer.method": ("method", 11, 18),
        "Outer.method.nested": ("function", 16, 17),
        "top": ("function", 21, 22),
    }
    outer = next(d for d in g.definitions if d.qualified == "Outer")
    assert outer.bases == ("Base", "Mixin")
    assert g.package == "pkg.mod"
    assert g.language == "python"


def test_python_references_carry_receiver_caller_and_inferred_type() -> None:
    g = extract_file("pkg/mod.py", PY, "python")
    assert refs(g) == {
        ("other", "self", "method_call", "Outer.method"),
        ("Outer", None, "constructor", "Outer.method"),
        ("method", "x", "method_call", "Outer.method"),
        ("use", "tool", "method_call", "Outer.method"),
        ("helper", None, "call", "Outer.method.nested"),
        ("nested", None, "call", "Outer.method"),
        ("join", "osp", "method_call", "top"),
    }
    types = {r.name: r.receiver_type for r in g.references if r.receiver and r.kind != "import"}
    assert types == {"other": "Outer", "method": "Outer", "use": "Tool", "join": None}


def test_python_imports_cover_aliases_relative_and_star() -> None:
    g = extract_file("pkg/mod.py", PY, "python")
    assert binds(g) == {
        ("osp", "os.path", None),
        ("json", "json", None),
        ("M", ".models", "Model"),
        ("helper", ".models", "helper"),
        ("*", "..core", "*"),
    }
    import_refs = [r for r in g.references if r.kind == "import"]
    assert len(import_refs) == 5 and all(r.caller is None for r in import_refs)


def test_prebuilt_tree_gives_the_same_graph() -> None:
    tree = get_parser("python").parse(PY.encode())
    assert extract_file("pkg/mod.py", PY, "python", tree=tree) == extract_file("pkg/mod.py", PY, "python")


def test_unsupported_language_yields_an_empty_graph() -> None:
    g = extract_file("README.md", "# title\n", "markdown")
    assert g == FileGraph("README.md", "markdown", None, [], [], [])
    assert set(SUPPORTED_LANGUAGES) >= {"python", "javascript", "typescript", "tsx", "go", "rust", "java"}


TS = """\
import Default, { a as b, c } from './x';
import * as ns from '../y';
const z = require('./z');
const { p, q: r } = require('./w');
export { foo as bar } from './m';
export * from './n';
export default class App extends Base implements Api {
  private store: Store;
  run(client: Client) {
    this.helper();
    client.send();
    new Widget().draw();
    ns.go();
  }
  helper() {}
}
export interface Api { run(client: Client): void; }
export type Id = string;
export const arrow = () => b();
"""


def test_typescript_definitions_and_bases() -> None:
    g = extract_file("src/app.ts", TS, "typescript")
    assert defs(g) == {
        "App": ("class", 7, 16),
        "App.run": ("method", 9, 14),
        "App.helper": ("method", 15, 15),
        "Api": ("interface", 17, 17),
        "Api.run": ("method", 17, 17),
        "Id": ("type", 18, 18),
        "arrow": ("function", 19, 19),
    }
    app = next(d for d in g.definitions if d.qualified == "App")
    assert set(app.bases) == {"Base", "Api"}


def test_typescript_imports_exports_and_require() -> None:
    g = extract_file("src/app.ts", TS, "typescript")
    assert binds(g) == {
        ("Default", "./x", "default"),
        ("b", "./x", "a"),
        ("c", "./x", "c"),
        ("ns", "../y", None),
        ("z", "./z", None),
        ("p", "./w", "p"),
        ("r", "./w", "q"),
        ("bar", "./m", "foo"),
        ("*", "./n", "*"),
        ("default", "", "App"),
    }


def test_typescript_receiver_types() -> None:
    g = extract_file("src/app.ts", TS, "tsx")
    types = {(r.name, r.receiver): r.receiver_type for r in g.references if r.receiver and r.kind != "import"}
    assert types == {
        ("helper", "this"): "App",
        ("send", "client"): "Client",
        ("draw", "new Widget()"): "Widget",
        ("go", "ns"): None,
    }
    assert ("Widget", None, "constructor", "App.run") in refs(g)


GO = """\
package store

import (
\t"fmt"
\tchi "github.com/go-chi/chi/v5"
\t"gopkg.in/yaml.v3"
\tkit "github.com/acme/go-kit"
)

type Store struct{ mu int }
type Getter interface { Get(k string) string }
type ID string

func (s *Store) Get(k string) string {
\ts.load(k)
\tfmt.Println(k)
\treturn Render(&Store{})
}

func Render(v *Store) string { return "" }
"""


def test_go_methods_are_qualified_by_receiver_type() -> None:
    g = extract_file("store/store.go", GO, "go")
    assert defs(g) == {
        "Store": ("struct", 10, 10),
        "Getter": ("interface", 11, 11),
        "Getter.Get": ("method", 11, 11),
        "ID": ("type", 12, 12),
        "Store.Get": ("method", 14, 18),
        "Render": ("function", 20, 20),
    }
    assert g.package == "store"
    assert binds(g) == {
        ("fmt", "fmt", None),
        ("chi", "github.com/go-chi/chi/v5", None),
        ("yaml", "gopkg.in/yaml.v3", None),
        ("kit", "github.com/acme/go-kit", None),
    }
    load = next(r for r in g.references if r.name == "load")
    assert (load.receiver, load.receiver_type, load.caller) == ("s", "Store", "Store.Get")
    assert ("Store", None, "constructor", "Store.Get") in refs(g)


RS = """\
use crate::a::{b, c::D as E};
use std::io;

pub struct Engine { n: i32 }
pub trait Run { fn run(&self); }

impl<T> Run for Engine {
    fn run(&self) {
        self.step();
        let w = Widget::new();
        w.draw();
        a::b::c();
    }
}

mod tests {
    use super::*;
    fn t() {}
}
"""


def test_rust_impl_methods_traits_and_use_trees() -> None:
    g = extract_file("src/engine.rs", RS, "rust")
    assert defs(g) == {
        "Engine": ("struct", 4, 4),
        "Run": ("trait", 5, 5),
        "Run.run": ("method", 5, 5),
        "Engine.run": ("method", 8, 13),
        "tests.t": ("function", 18, 18),
    }
    assert g.package == "crate::engine"
    # `use super::*` inside `mod tests` means this file's module, rewritten to self.
    assert binds(g) == {
        ("b", "crate::a", "b"),
        ("E", "crate::a::c", "D"),
        ("io", "std", "io"),
        ("*", "self", "*"),
    }
    by_name = {r.name: r for r in g.references if r.kind != "import"}
    assert by_name["step"].receiver_type == "Engine"
    assert by_name["new"].kind == "constructor" and by_name["new"].receiver == "Widget"
    assert by_name["draw"].receiver_type == "Widget"
    assert by_name["c"].receiver == "a::b"


JAVA = """\
package com.acme;

import com.acme.store.Repo;
import static com.acme.Util.format;
import java.util.*;

public class App extends Base implements Runnable {
    private Repo repo;

    public App() { super(); }

    public void run() {
        repo.save(format("x"));
        helper();
        var list = new ArrayList<String>();
        list.add("a");
    }

    private void helper() {}
}
"""


def test_java_definitions_imports_and_field_types() -> None:
    g = extract_file("src/com/acme/App.java", JAVA, "java")
    assert defs(g) == {
        "App": ("class", 7, 20),
        "App.App": ("method", 10, 10),
        "App.run": ("method", 12, 17),
        "App.helper": ("method", 19, 19),
    }
    assert g.package == "com.acme"
    assert binds(g) == {
        ("Repo", "com.acme.store", "Repo"),
        ("format", "com.acme.Util", "format"),
        ("*", "java.util", "*"),
    }
    types = {r.name: r.receiver_type for r in g.references if r.receiver and r.kind != "import"}
    assert types == {"save": "Repo", "add": "ArrayList"}
    assert ("helper", None, "call", "App.run") in refs(g)


def test_records_are_plain_msgspec_structs() -> None:
    d = Definition("f", "A.f", "method", "a.py", 1, 2)
    r = Reference("f", "self", "method_call", "a.py", 2, "A.g")
    b = ImportBinding("x", "m", None, "a.py", 1)
    assert d.bases == () and r.receiver_type is None and b.imported is None


@pytest.mark.parametrize(
    ("path", "source", "language"),
    [
        ("pkg/mod.py", PY, "python"),
        ("src/app.ts", TS, "typescript"),
        ("store/store.go", GO, "go"),
        ("src/engine.rs", RS, "rust"),
        ("src/com/acme/App.java", JAVA, "java"),
    ],
)
def test_indexing_rows_store_exactly_what_the_records_hold(path: str, source: str, language: str) -> None:
    # The indexer stores extract_rows' tuples directly; they must encode to the same bytes as the records.
    rows = extract_rows(path, source, language)
    assert rows is not None and rows.references and rows.definitions
    assert encode_rows(rows) == encode_graph(extract_file(path, source, language))


def test_every_query_pattern_has_one_role() -> None:
    for language in SUPPORTED_LANGUAGES:
        query, roles = query_plan(language)
        assert len(roles) == query.pattern_count
        assert {role for role, _, _ in roles} >= {DEF, REF, IMPORT}
