"""Golden tests: exact (start_line, end_line, kind, symbol) for every chunk of each fixture file."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebase_index.chunking import chunk_text, language_for_path
from codebase_index.models import CHUNK_KINDS

FIXTURES = Path(__file__).parent / "fixtures" / "chunking"

GOLDEN: dict[str, list[tuple[int, int, str, str]]] = {
    "Sample.cs": [
        (1, 4, "block", ""),
        (5, 9, "class", "Sample"),
        (11, 14, "method", "Sample.Sample"),
        (16, 16, "block", "Sample"),
        (18, 22, "method", "Sample.Increment"),
        (24, 27, "interface", "IGreeter"),
        (29, 29, "enum", "Mode"),
        (31, 35, "struct", "Pair"),
    ],
    "Sample.java": [
        (1, 3, "block", ""),
        (5, 10, "class", "Sample"),
        (12, 14, "method", "Sample.Sample"),
        (16, 20, "method", "Sample.increment"),
        (22, 22, "class", "Sample.Nested"),
        (23, 25, "method", "Sample.Nested.run"),
        (27, 28, "enum", "Sample.Mode"),
        (30, 31, "interface", "Greeter"),
        (33, 36, "method", "Greeter.hello"),
    ],
    "config.yaml": [
        (1, 10, "block", "name, port, database, second"),
    ],
    "package.json": [
        (1, 11, "block", "name, version, scripts, dependencies"),
    ],
    "pyproject.toml": [
        (1, 11, "block", "title, tool.ruff, tool.ruff.lint, bin"),
    ],
    "sample.c": [
        (1, 5, "block", "MAX, SQUARE"),
        (7, 11, "struct", "point"),
        (13, 15, "struct", "size_t2"),
        (17, 17, "enum", "color"),
        (19, 19, "block", "counter"),
        (21, 24, "function", "add"),
        (26, 30, "function", "name_of"),
        (32, 36, "function", "debug_log"),
        (38, 41, "function", "main"),
    ],
    "sample.cpp": [
        (1, 3, "block", ""),
        (5, 9, "class", "Shape"),
        (11, 13, "method", "Shape.name"),
        (15, 17, "block", "Shape"),
        (19, 21, "struct", "Point"),
        (23, 25, "function", "Shape.area"),
        (27, 32, "function", "max_of"),
        (34, 36, "function", "main"),
    ],
    "sample.ex": [
        (1, 3, "module", "MyApp.Greeter"),
        (5, 8, "function", "MyApp.Greeter.hello"),
        (10, 10, "function", "MyApp.Greeter.secret"),
        (12, 12, "module", "MyApp.Greeter.Inner"),
        (13, 15, "function", "MyApp.Greeter.Inner.x"),
    ],
    "sample.go": [
        (1, 8, "block", "MaxConns"),
        (10, 13, "struct", "Server"),
        (15, 17, "interface", "Handler"),
        (19, 22, "function", "NewServer"),
        (24, 28, "method", "Server.Start"),
        (30, 32, "method", "Server.Addr"),
        (34, 34, "block", "defaultServer"),
    ],
    "sample.graphql": [
        (1, 5, "type", "User"),
        (7, 7, "interface", "Node"),
        (9, 9, "enum", "Role"),
        (11, 11, "type", "NewUser"),
        (13, 15, "function", "GetUser"),
        (17, 17, "function", "UserFields"),
        (19, 19, "block", ""),
    ],
    "sample.hs": [
        (1, 3, "block", ""),
        (5, 7, "function", "add"),
        (9, 10, "type", "Shape"),
        (12, 13, "interface", "Area"),
        (15, 16, "impl", "Area Shape"),
        (18, 19, "function", "fact"),
        (21, 21, "type", "Name"),
        (23, 24, "function", "main"),
    ],
    "sample.js": [
        (1, 3, "block", "path, MAX"),
        (5, 7, "function", "add"),
        (9, 11, "function", "mul"),
        (13, 14, "class", "Counter"),
        (16, 18, "method", "Counter.increment"),
        (20, 23, "method", "Counter.create"),
        (25, 25, "block", ""),
    ],
    "sample.kt": [
        (1, 5, "block", "LIMIT"),
        (7, 8, "class", "Sample"),
        (9, 11, "method", "Sample.increment"),
        (13, 13, "class", "Sample.Companion"),
        (14, 16, "method", "Sample.Companion.create"),
        (18, 20, "interface", "Greeter"),
        (22, 22, "class", "Registry"),
        (23, 24, "method", "Registry.register"),
        (26, 28, "function", "topLevel"),
    ],
    "sample.lua": [
        (1, 1, "block", "M"),
        (3, 6, "function", "M.add"),
        (8, 10, "method", "M.method"),
        (12, 14, "function", "helper"),
        (16, 16, "function", "global_fn"),
        (18, 18, "function", "M.handler"),
        (20, 20, "block", ""),
    ],
    "sample.md": [
        (4, 4, "section", ""),
        (6, 10, "section", "Install > From source"),
        (12, 20, "section", "Setext Title"),
        (22, 23, "section", "Setext Title > Usage"),
    ],
    "sample.php": [
        (1, 6, "block", "LIMIT"),
        (8, 10, "class", "Greeter"),
        (12, 14, "method", "Greeter.greet"),
        (16, 17, "block", "Greeter"),
        (19, 19, "interface", "I"),
        (21, 21, "trait", "T"),
        (23, 23, "enum", "Suit"),
        (25, 27, "function", "helper"),
    ],
    "sample.proto": [
        (1, 2, "block", ""),
        (4, 6, "struct", "User"),
        (7, 7, "struct", "User.Address"),
        (8, 9, "enum", "User.Kind"),
        (11, 11, "enum", "Status"),
        (13, 13, "interface", "Users"),
        (14, 15, "method", "Users.Get"),
    ],
    "sample.py": [
        (1, 7, "block", "MAX_RETRIES, API_URL"),
        (10, 12, "function", "add"),
        (15, 18, "function", "decorated"),
        (21, 24, "class", "Outer"),
        (26, 28, "method", "Outer.method"),
        (30, 30, "class", "Outer.Inner"),
        (31, 32, "method", "Outer.Inner.inner_method"),
        (34, 36, "method", "Outer.prop"),
        (38, 38, "block", "Outer"),
        (41, 42, "function", "fetch"),
        (45, 46, "block", ""),
    ],
    "sample.rb": [
        (1, 3, "block", "MAX"),
        (5, 5, "module", "Greeting"),
        (6, 8, "class", "Greeting.Greeter"),
        (10, 12, "method", "Greeting.Greeter.initialize"),
        (14, 17, "method", "Greeting.Greeter.greet"),
        (19, 23, "method", "Greeting.Greeter.create"),
        (25, 27, "function", "helper"),
    ],
    "sample.rs": [
        (1, 3, "block", "MAX"),
        (5, 10, "struct", "Point"),
        (12, 15, "enum", "Shape"),
        (17, 17, "impl", "Point"),
        (18, 21, "method", "Point.new"),
        (23, 26, "method", "Point.norm"),
        (28, 28, "impl", "fmt.Display for Point"),
        (29, 32, "method", "Point.fmt"),
        (34, 35, "trait", "Area"),
        (37, 40, "method", "Area.double"),
        (42, 42, "type", "Pair"),
        (44, 44, "module", "inner"),
        (45, 48, "function", "inner.helper"),
        (50, 52, "function", "main"),
    ],
    "sample.scala": [
        (1, 1, "block", ""),
        (3, 3, "class", "Main"),
        (4, 7, "method", "Main.main"),
        (9, 11, "trait", "Shape"),
        (13, 13, "class", "Point"),
        (14, 15, "method", "Point.area"),
        (17, 17, "function", "top"),
        (18, 18, "block", "K"),
    ],
    "sample.sh": [
        (1, 2, "block", ""),
        (4, 7, "function", "greet"),
        (9, 11, "function", "cleanup"),
        (13, 13, "block", ""),
    ],
    "sample.sql": [
        (1, 5, "type", "users"),
        (7, 7, "block", ""),
        (9, 9, "type", "active"),
        (11, 13, "function", "add"),
        (15, 16, "block", ""),
    ],
    "sample.swift": [
        (1, 1, "block", ""),
        (3, 6, "interface", "Shape"),
        (8, 9, "struct", "Point"),
        (10, 11, "method", "Point.area"),
        (13, 13, "class", "Circle"),
        (14, 14, "method", "Circle.init"),
        (15, 15, "method", "Circle.deinit"),
        (16, 19, "method", "Circle.grow"),
        (21, 21, "enum", "Dir"),
        (23, 23, "impl", "Point"),
        (24, 25, "method", "Point.norm"),
        (27, 27, "function", "top"),
        (28, 28, "block", "K"),
    ],
    "sample.ts": [
        (1, 3, "block", "API_URL"),
        (5, 8, "function", "add"),
        (10, 12, "function", "handler"),
        (14, 16, "interface", "Shape"),
        (18, 18, "type", "Id"),
        (20, 23, "enum", "Color"),
        (25, 27, "class", "Circle"),
        (29, 31, "method", "Circle.constructor"),
        (33, 37, "method", "Circle.area"),
        (39, 39, "module", "Geometry"),
        (40, 43, "function", "Geometry.origin"),
        (45, 47, "class", "Base"),
        (49, 49, "block", ""),
    ],
    "sample.tsx": [
        (1, 1, "block", ""),
        (3, 3, "type", "Props"),
        (5, 7, "function", "Hello"),
        (9, 9, "function", "Button"),
        (11, 11, "class", "App"),
        (12, 15, "method", "App.render"),
    ],
    "sample.vue": [
        (1, 5, "block", ""),
        (6, 8, "block", "msg"),
        (10, 12, "function", "greet"),
        (13, 17, "block", ""),
    ],
    "sample.zig": [
        (1, 1, "block", "std"),
        (3, 5, "struct", "Point"),
        (7, 10, "method", "Point.norm"),
        (12, 12, "enum", "Color"),
        (14, 16, "function", "main"),
        (18, 20, "function", 'test "add"'),
    ],
}


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_every_fixture_has_a_golden_entry() -> None:
    assert sorted(p.name for p in FIXTURES.iterdir() if not p.name.startswith(".")) == sorted(GOLDEN)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_chunks(name: str) -> None:
    chunks = chunk_text(name, _read(name))
    assert [(c.start_line, c.end_line, c.kind, c.symbol) for c in chunks] == GOLDEN[name]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_chunks_are_ordered_non_empty_and_cover_every_line(name: str) -> None:
    text = _read(name)
    lines = text.splitlines()
    chunks = chunk_text(name, text)
    assert chunks, name
    covered: set[int] = set()
    for chunk in chunks:
        assert chunk.kind in CHUNK_KINDS
        assert chunk.text.strip()
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        # Unsplit chunks hold exactly their lines.
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    assert [(c.start_line, c.end_line) for c in chunks] == sorted((c.start_line, c.end_line) for c in chunks)
    frontmatter = {1, 2, 3} if name.endswith(".md") else set()
    uncovered = [i + 1 for i, line in enumerate(lines) if line.strip() and i + 1 not in covered]
    assert set(uncovered) <= frontmatter, uncovered


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_fixture_languages_are_detected(name: str) -> None:
    assert language_for_path(f"some/dir/{name}") is not None
