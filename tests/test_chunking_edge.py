"""Chunker behaviour beyond the golden fixtures: sizes, line endings, broken code, prose, data."""

from __future__ import annotations

import itertools
import json

import pytest

from codebase_index.chunking import chunk_text, language_for_path
from codebase_index.models import ChunkSpan


def spans(chunks: list[ChunkSpan]) -> list[tuple[int, int, str, str]]:
    return [(c.start_line, c.end_line, c.kind, c.symbol) for c in chunks]


def uncovered(text: str, chunks: list[ChunkSpan]) -> list[int]:
    covered = {n for c in chunks for n in range(c.start_line, c.end_line + 1)}
    return [i + 1 for i, line in enumerate(text.splitlines()) if line.strip() and i + 1 not in covered]


# --- empty input, line endings ------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "\n", "  \n\t\n", "\r\n\r\n"])
@pytest.mark.parametrize("path", ["a.py", "a.md", "a.txt", "a.json", "a.vue"])
def test_blank_files_have_no_chunks(path: str, text: str) -> None:
    assert chunk_text(path, text) == []


PY_SOURCE = """import os

# Adds.
def add(a, b):
    return a + b


class Box:
    size = 1

    def grow(self):
        self.size += 1
"""


def test_crlf_gives_the_same_chunks_without_carriage_returns() -> None:
    lf = chunk_text("m.py", PY_SOURCE)
    crlf = chunk_text("m.py", PY_SOURCE.replace("\n", "\r\n"))
    assert (
        spans(crlf)
        == spans(lf)
        == [
            (1, 1, "block", ""),
            (3, 5, "function", "add"),
            (8, 9, "class", "Box"),
            (11, 12, "method", "Box.grow"),
        ]
    )
    assert [c.text for c in crlf] == [c.text for c in lf]
    assert all("\r" not in c.text for c in crlf)


def test_form_feeds_and_lone_cr_count_as_line_breaks_like_splitlines() -> None:
    text = "def a():\n    return 1\n\x0c\ndef b():\r    return 2\n"
    assert len(text.splitlines()) == 6  # "\x0c\n" is two line breaks
    chunks = chunk_text("m.py", text)
    assert spans(chunks) == [(1, 2, "function", "a"), (5, 6, "function", "b")]
    assert chunks[1].text == "def b():\n    return 2"


# --- definitions ---------------------------------------------------------------------------------


def test_comment_separated_by_a_blank_line_is_not_attached() -> None:
    text = "# Section banner.\n\n# Doc for f.\ndef f():\n    pass\n"
    assert spans(chunk_text("m.py", text)) == [(1, 1, "block", ""), (3, 5, "function", "f")]


def test_decorators_and_annotations_start_the_definition() -> None:
    py = "@app.route('/')\n@login_required\ndef index():\n    return 'hi'\n"
    assert spans(chunk_text("m.py", py)) == [(1, 4, "function", "index")]
    java = (
        "class A {\n    int x;\n\n    // Runs.\n    @Override\n"
        "    @Deprecated\n    public void run() {\n    }\n}\n"
    )
    assert spans(chunk_text("A.java", java)) == [(1, 2, "class", "A"), (4, 9, "method", "A.run")]
    rust = '/// Doc.\n#[derive(Debug)]\n#[serde(rename_all = "camelCase")]\nstruct S {\n    a: u8,\n}\n'
    assert spans(chunk_text("s.rs", rust)) == [(1, 6, "struct", "S")]


def test_definitions_under_module_level_if_and_try_are_chunked() -> None:
    text = (
        "try:\n    import fast\nexcept ImportError:\n    def fast(x):\n        return x\n\n"
        "if WINDOWS:\n    def path():\n        return 'C:'\nelse:\n    def path():\n        return '/'\n"
    )
    chunks = chunk_text("m.py", text)
    assert spans(chunks) == [
        (1, 3, "block", ""),
        (4, 5, "function", "fast"),
        (7, 9, "function", "path"),
        (10, 12, "function", "path"),
    ]


def test_class_with_members_on_its_first_line_stays_whole() -> None:
    text = "class A { f() { return 1; } }\n\nclass B {\n  g() {}\n}\n"
    assert spans(chunk_text("a.ts", text)) == [
        (1, 1, "class", "A"),
        (3, 3, "class", "B"),
        (4, 5, "method", "B.g"),
    ]


def test_go_generic_receiver_and_grouped_types() -> None:
    text = (
        "package l\n\ntype (\n\tA struct{}\n\tB int\n)\n\n"
        "func (l *List[T]) Push(v T) {\n\tl.items = append(l.items, v)\n}\n"
    )
    assert spans(chunk_text("l.go", text)) == [
        (1, 1, "block", ""),
        (3, 6, "type", "A, B"),
        (8, 10, "method", "List.Push"),
    ]


def test_elixir_clauses_of_one_function_are_one_chunk() -> None:
    text = (
        'defmodule M do\n  @doc "Factorial."\n  def fact(0), do: 1\n'
        "  def fact(n) when n > 0, do: n * fact(n - 1)\n\n  def other, do: 2\nend\n"
    )
    assert spans(chunk_text("m.ex", text)) == [
        (1, 1, "module", "M"),
        (2, 4, "function", "M.fact"),
        (6, 7, "function", "M.other"),
    ]


def test_cpp_header_is_parsed_as_cpp() -> None:
    text = "#pragma once\nnamespace ns {\nclass Widget {\n public:\n  int size() const { return 1; }\n};\n}\n"
    assert language_for_path("w.h", text=text) == "cpp"
    assert language_for_path("w.h", text="int f(void);\n") == "c"
    assert spans(chunk_text("w.h", text)) == [
        (1, 2, "block", ""),
        (3, 4, "class", "Widget"),
        (5, 7, "method", "Widget.size"),
    ]


# --- broken code ---------------------------------------------------------------------------------


def test_python_syntax_error_keeps_the_definitions_around_it() -> None:
    text = "def ok_one():\n    return 1\n\ndef broken(:\n    pass\n\ndef ok_two():\n    return 2\n"
    chunks = chunk_text("m.py", text)
    symbols = {c.symbol for c in chunks if c.kind == "function"}
    assert {"ok_one", "ok_two"} <= symbols
    assert uncovered(text, chunks) == []


def test_c_full_of_macros_is_chunked_not_dropped() -> None:
    text = (
        "#define DECLARE(name) int name(void)\nFOO_BEGIN_DECLS\n\n"
        "static int helper(int x) {\n    return x;\n}\n\nDECLARE(foo);\n"
        "MACRO_FN(bar) {\n    return 1;\n}\n\nint after(void) { return 2; }\nFOO_END_DECLS\n"
    )
    chunks = chunk_text("m.c", text)
    symbols = {c.symbol for c in chunks if c.kind == "function"}
    assert {"helper", "after"} <= symbols
    assert uncovered(text, chunks) == []


# --- sizes ---------------------------------------------------------------------------------------


def test_oversized_function_is_split_into_windows_led_by_its_signature() -> None:
    body = "".join(f"    total += compute_value_number_{i}(argument)\n" for i in range(120))
    text = f"import os\n\n\ndef big(argument):\n    total = 0\n{body}    return total\n"
    lines = text.splitlines()
    chunks = [c for c in chunk_text("m.py", text, max_chunk_tokens=128) if c.symbol == "big"]
    assert len(chunks) > 5
    assert {c.kind for c in chunks} == {"function"}
    assert chunks[0].start_line == 4 and chunks[0].text.startswith("def big(argument):\n")
    assert chunks[-1].end_line == len(lines)
    for prev, cur in itertools.pairwise(chunks):
        assert prev.start_line < cur.start_line <= prev.end_line + 1
        assert cur.start_line <= prev.end_line  # windows overlap
    for chunk in chunks:
        assert len(chunk.text) <= 128 * 4
        window = "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        expected = window if chunk is chunks[0] else "def big(argument):\n" + window
        assert chunk.text == expected


def test_long_leftover_code_is_split_into_blocks() -> None:
    text = "".join(f"import module_with_a_long_name_{i}\n" for i in range(200))
    chunks = chunk_text("m.py", text, max_chunk_tokens=64)
    assert len(chunks) > 10
    assert all(c.kind == "block" and len(c.text) <= 256 for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 200
    for prev, cur in itertools.pairwise(chunks):
        assert cur.start_line == prev.end_line + 1  # blocks do not overlap
    assert uncovered(text, chunks) == []


def test_minified_single_line_is_cut_by_characters() -> None:
    text = "var a=" + "1+" * 6000 + "1;\n"
    chunks = chunk_text("app.min.js", text, max_chunk_tokens=256)
    assert len(chunks) > 1
    assert all(c.start_line == c.end_line == 1 for c in chunks)
    assert all(len(c.text) <= 256 * 4 for c in chunks)
    assert "".join(c.text for c in chunks) == text.rstrip("\n")
    # Thousands of one-line functions sharing a line do not become thousands of chunks.
    bundle = "".join(f"function f{i}(a){{return a+{i}}}" for i in range(3000)) + "\n"
    chunks = chunk_text("bundle.js", bundle, max_chunk_tokens=256)
    assert len(chunks) == -(-len(bundle.rstrip()) // 1024)


# --- markdown --------------------------------------------------------------------------------------


def test_markdown_frontmatter_is_stripped_and_sections_nest() -> None:
    text = (
        "---\ntitle: x\n---\n# Guide\n\nIntro.\n\n## Install\n\n### From source\n\nRun it.\n\n"
        "## Use\n\n```python\n# a comment, not a heading\n\nprint(1)\n```\n"
    )
    chunks = chunk_text("README.md", text)
    assert spans(chunks) == [
        (4, 6, "section", "Guide"),
        (8, 12, "section", "Guide > Install > From source"),
        (14, 20, "section", "Guide > Use"),
    ]
    assert all("title: x" not in c.text for c in chunks)


def test_long_markdown_section_is_packed_into_paragraph_groups() -> None:
    paragraphs = [f"Paragraph {i} talks about topic {i} in some detail here." for i in range(40)]
    text = "# Notes\n\n" + "\n\n".join(paragraphs) + "\n"
    chunks = chunk_text("notes.md", text, max_chunk_tokens=64)
    assert len(chunks) > 5
    assert {(c.kind, c.symbol) for c in chunks} == {("section", "Notes")}
    assert chunks[0].start_line == 1
    for chunk in chunks[1:]:
        assert chunk.text.startswith("# Notes\n")
        assert chunk.text.split("\n")[1].startswith("Paragraph")  # groups start at a paragraph
    for prev, cur in itertools.pairwise(chunks):
        assert cur.start_line > prev.end_line
    assert all(len(c.text) <= 256 for c in chunks)
    assert uncovered(text, chunks) == []


# --- text, data, components ----------------------------------------------------------------------


def test_plain_text_gets_overlapping_line_windows() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 151))
    chunks = chunk_text("notes.txt", text)
    assert len(chunks) == 3
    assert {(c.kind, c.symbol) for c in chunks} == {("block", "")}
    assert all(c.end_line - c.start_line + 1 <= 60 for c in chunks)
    assert chunks[0].start_line == 1 and chunks[-1].end_line == 150
    for prev, cur in itertools.pairwise(chunks):
        assert prev.end_line - cur.start_line + 1 == 10  # ten lines of overlap
    assert chunk_text("style.css", "a { color: red; }\n")[0].kind == "block"


def test_json_keys_are_packed_and_big_keys_windowed() -> None:
    data = {
        "name": "demo",
        "version": "1.0.0",
        "dependencies": {f"package-number-{i}": f"^{i}.0.0" for i in range(60)},
        "license": "MIT",
    }
    text = json.dumps(data, indent=2) + "\n"
    chunks = chunk_text("package.json", text, max_chunk_tokens=128)
    assert chunks[0].symbol == "name, version"
    deps = [c for c in chunks if c.symbol == "dependencies"]
    assert len(deps) > 2
    assert all(c.text.startswith('  "dependencies": {') for c in deps)
    assert chunks[-1].symbol == "license"
    assert uncovered(text, chunks) == []


def test_yaml_comment_above_a_key_goes_with_that_key() -> None:
    text = "a: 1\nb:\n  c: 2\n# About d.\nd:\n" + "".join(f"  k{i}: value number {i}\n" for i in range(40))
    chunks = chunk_text("c.yml", text, max_chunk_tokens=64)
    assert spans(chunks)[0] == (1, 3, "block", "a, b")
    assert chunks[1].start_line == 4 and chunks[1].symbol == "d"


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("package.json", '{"name":"demo","version":"1.0.0","private":true}'),
        ("package.json", '{"name":"demo","version":"1.0.0","private":true}\n'),
        ("a.json", '{"a": 1,\n"b": 2, "c": 3, "d": 4}\n'),
        ("a.yaml", "{a: 1, b: 2, c: 3}\n"),
        ("a.yml", "a: 1\nb: {x: 1}\nc: 2\n---\nd: 1\n"),
        ("a.toml", "a = 1\nb = 2\n[t]\nc = 3\n"),
    ],
)
def test_data_files_with_more_keys_than_lines(path: str, text: str) -> None:
    """Several keys on one line (one-line or minified JSON, YAML flow maps) share one region: the
    chunker used to give each key a line of its own and ran off the end of the file (IndexError)."""
    chunks = chunk_text(path, text)
    assert chunks and uncovered(text, chunks) == []
    assert all(1 <= c.start_line <= c.end_line <= len(text.splitlines()) for c in chunks)


def test_one_line_json_is_labelled_with_its_keys() -> None:
    chunks = chunk_text("package.json", '{"name":"demo","version":"1.0.0","private":true}')
    assert spans(chunks) == [(1, 1, "block", "name, version, private")]


def test_minified_json_config_is_cut_by_characters() -> None:
    data = {f"key_{i}": {"value": i, "text": "x" * 40} for i in range(300)}
    text = json.dumps(data, separators=(",", ":"))
    chunks = chunk_text("tokenizer_config.json", text, max_chunk_tokens=128)
    assert len(chunks) > 10 and all(len(c.text) <= 512 for c in chunks)
    assert "".join(c.text for c in chunks) == text


def test_json_with_a_line_separator_inside_a_string_keeps_rows_in_range() -> None:
    # str.splitlines breaks at U+2028 and form feeds, tree-sitter does not: rows must be clamped.
    text = '{"a": "x\u2028y\u2028z\u2028w",\n"b": 1, "c": 2, "d": 3, "e": 4}\n'.encode().decode(
        "unicode_escape"
    )
    chunks = chunk_text("a.json", text)
    assert chunks and all(c.end_line <= len(text.splitlines()) for c in chunks)


def test_svelte_and_astro_scripts_are_chunked_as_code() -> None:
    svelte = (
        "<script>\n  export let name;\n  function hi() {\n    return name;\n  }\n</script>\n"
        "\n<h1>{name}</h1>\n"
    )
    assert spans(chunk_text("App.svelte", svelte)) == [
        (1, 1, "block", ""),
        (2, 2, "block", "name"),
        (3, 5, "function", "hi"),
        (6, 8, "block", ""),
    ]
    astro = "---\nconst title = 'x';\nfunction t() { return title; }\n---\n<h1>{title}</h1>\n"
    assert spans(chunk_text("page.astro", astro)) == [
        (1, 1, "block", ""),
        (2, 2, "block", "title"),
        (3, 3, "function", "t"),
        (4, 5, "block", ""),
    ]


# --- language detection ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("src/app.py", "python"),
        ("types.pyi", "python"),
        ("a/b/c.TS", "typescript"),
        ("x.tsx", "tsx"),
        ("x.mjs", "javascript"),
        ("x.cjs", "javascript"),
        ("x.jsx", "javascript"),
        ("lib.rs", "rust"),
        ("Main.kt", "kotlin"),
        ("P.cs", "csharp"),
        ("x.inc", "php"),
        ("x.zsh", "bash"),
        ("x.hpp", "cpp"),
        ("x.h", "c"),
        ("doc.mdx", "markdown"),
        ("index.htm", "html"),
        ("schema.gql", "graphql"),
        ("api.proto", "proto"),
        ("notes.txt", "text"),
        ("Dockerfile", "dockerfile"),
        ("Makefile", "make"),
        ("Gemfile", "ruby"),
        ("image.png", None),
        ("noext", None),
    ],
)
def test_language_for_path(path: str, language: str | None) -> None:
    assert language_for_path(path) == language


def test_section_banner_comment_inside_a_class_joins_the_next_method() -> None:
    source = (
        "class Store:\n"
        "    def open(self):\n"
        "        return 1\n"
        "\n"
        "    # -- locking ---------------------------------\n"
        "\n"
        "    def lock(self):\n"
        "        return 2\n"
    )
    spans = [(c.start_line, c.end_line, c.kind, c.symbol) for c in chunk_text("s.py", source, "python")]
    assert spans == [
        (1, 1, "class", "Store"),
        (2, 3, "method", "Store.open"),
        (5, 8, "method", "Store.lock"),
    ]
