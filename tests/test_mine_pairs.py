"""The embedding model's pair miner (training/mine_pairs.py): identifier splitting, doc and comment
stripping, test -> function matching, commit hunk -> chunk mapping (on a real git repository in a temp
dir), subject cleaning and licence detection. Chunks come from the real chunker."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "training"))

import mine_pairs as mp

from codebase_index.chunking import chunk_text
from git_repo import GitRepo


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("parseHTTPHeader", ["parse", "http", "header"]),
        ("parse_http_header", ["parse", "http", "header"]),
        ("ParseHTTPHeader", ["parse", "http", "header"]),
        ("getUTF8String", ["get", "utf8", "string"]),
        ("__init__", ["init"]),
        ("MAX_RETRIES", ["max", "retries"]),
        ("is_empty?", ["is", "empty"]),
        ("base64Encode", ["base64", "encode"]),
    ],
)
def test_split_identifier(name: str, words: list[str]) -> None:
    assert mp.split_identifier(name) == words


def test_last_name_of_qualified_symbols() -> None:
    assert mp.last_name("Outer.Inner.parse_header") == "parse_header"
    assert mp.last_name("Display for HeaderName") == "HeaderName"
    assert mp.last_name("Foo::bar_baz") == "bar_baz"


@pytest.mark.parametrize(
    ("name", "query"),
    [
        ("test_refresh_token_expired", "refresh token expired"),
        ("TestParseHeader_Empty", "parse header empty"),
        ("testOpenStreamTwice", "open stream twice"),
        ("shouldReturnNullWhenEmpty", "return null when empty"),
        ("test_parse", None),
    ],
)
def test_test_query(name: str, query: str | None) -> None:
    assert mp.test_query(name) == query


def _chunk(path: str, source: str, symbol: str) -> object:
    return next(c for c in chunk_text(path, source, None) if c.symbol == symbol)


def test_python_docstring_becomes_the_query_and_leaves_the_chunk() -> None:
    source = (
        "import os\n\n\n"
        "def refresh_token(session, now):\n"
        '    """Refresh the session token when it has expired.\n\n'
        "    :param session: the session\n"
        '    """\n'
        "    if session.expires < now:\n"
        "        session.token = os.urandom(8)\n"
        "    return session\n"
    )
    pairs = list(mp.doc_pairs("auth.py", "python", chunk_text("auth.py", source, "python")))
    assert [p.query for p in pairs] == ["Refresh the session token when it has expired."]
    text = pairs[0].text
    assert "Refresh the session" not in text and ":param" not in text and '"""' not in text
    assert text.startswith("def refresh_token(session, now):") and "return session" in text
    assert pairs[0].chunk.symbol == "refresh_token" and pairs[0].chunk.kind == "function"


@pytest.mark.parametrize(
    ("path", "language", "source", "symbol", "query", "kept"),
    [
        (
            "x.go",
            "go",
            "package x\n\n// ParseHeader reads one header line from the reader and returns it.\n"
            "//\n// More detail here.\nfunc ParseHeader(r io.Reader) string {\n\treturn read(r)\n}\n",
            "ParseHeader",
            "ParseHeader reads one header line from the reader and returns it.",
            "func ParseHeader(r io.Reader) string {",
        ),
        (
            "x.js",
            "javascript",
            "/**\n * Formats a list of items under a heading.\n * @param {string} heading\n */\n"
            "function formatList(heading, items) {\n  return [heading, ...items];\n}\n",
            "formatList",
            "Formats a list of items under a heading.",
            "function formatList(heading, items) {",
        ),
        (
            "x.rs",
            "rust",
            "/// Returns the [`Header`] with the given name, if present.\n#[inline]\n"
            "pub fn header(name: &str) -> Option<Header> {\n    None\n}\n",
            "header",
            "Returns the Header with the given name, if present.",
            "#[inline]",
        ),
        (
            "A.java",
            "java",
            "class A {\n  /** Opens the {@link Stream} for reading bytes. */\n  @Override\n"
            "  public void openStream(int x) {\n    go(x);\n  }\n}\n",
            "A.openStream",
            "Opens the Stream for reading bytes.",
            "  @Override",
        ),
        (
            "a.rb",
            "ruby",
            "# Reads the configuration file from disk.\n# @param path [String]\ndef read_config(path)\n"
            "  File.read(path)\nend\n",
            "read_config",
            "Reads the configuration file from disk.",
            "def read_config(path)",
        ),
    ],
)
def test_doc_comment_is_removed_from_the_chunk(
    path: str, language: str, source: str, symbol: str, query: str, kept: str
) -> None:
    chunks = chunk_text(path, source, language)
    pairs = [p for p in mp.doc_pairs(path, language, chunks) if p.chunk.symbol == symbol]
    assert [p.query for p in pairs] == [query]
    text = pairs[0].text
    assert kept in text
    assert "///" not in text and "/**" not in text and "# Reads" not in text and "// Parse" not in text
    original = _chunk(path, source, symbol)
    assert pairs[0].chunk == original  # path/symbol/kind are the indexer's chunk's


def test_short_or_licence_docs_give_no_pair() -> None:
    source = (
        "// Copyright 2020 The Authors. Licensed under MIT.\nfunc A() {\n\tb()\n}\n\n"
        "// Does it.\nfunc B() {\n}\n"
    )
    assert list(mp.doc_pairs("x.go", "go", chunk_text("x.go", "package x\n\n" + source, "go"))) == []


def test_comment_groups_inside_a_function() -> None:
    source = (
        "def retry(call, attempts):\n"
        '    """Call until it succeeds."""\n'
        "    # back off exponentially between the attempts so the server can recover\n"
        "    # from the overload\n"
        "    delay = 1\n"
        "    # x = compute(y)\n"
        "    for _ in range(attempts):\n"
        "        # TODO: stop early when the error is permanent and not worth retrying\n"
        "        call()\n"
        "        delay *= 2\n"
    )
    pairs = list(mp.comment_pairs("r.py", "python", chunk_text("r.py", source, "python")))
    assert [p.query for p in pairs] == [
        "back off exponentially between the attempts so the server can recover from the overload",
        "stop early when the error is permanent and not worth retrying",
    ]
    assert "back off" not in pairs[0].text and "TODO" in pairs[0].text  # only its own group goes
    assert "# x = compute(y)" in pairs[0].text  # commented-out code is never a query


def test_ident_pairs_need_two_words() -> None:
    source = (
        "def parse_header(x):\n    return x\n\n\ndef run(x):\n    return x\n\n\nclass HTTPClient:\n    pass\n"
    )
    pairs = list(mp.ident_pairs("a.py", "python", chunk_text("a.py", source, "python")))
    assert [(p.query, p.chunk.symbol) for p in pairs] == [
        ("parse header", "parse_header"),
        ("http client", "HTTPClient"),
    ]


def test_test_is_matched_to_the_function_it_exercises() -> None:
    lib = (
        "def parse(text):\n    return text\n\n\n"
        "def parse_header(line):\n    return line.split(':')\n\n\n"
        "def refresh_token(s):\n    return s\n"
    )
    other = "def parse_header(line):\n    return None\n"
    tests = (
        "def test_parse_header_with_colon():\n"
        "    assert parse_header('a: b') == ['a', ' b']\n    parse('x')\n\n\n"
        "def test_unrelated_thing_works():\n    assert helper() == 1\n"
    )
    index = mp.FunctionIndex()
    index.add("pkg/headers.py", "python", chunk_text("pkg/headers.py", lib, "python"))
    pairs = list(mp.test_pairs("tests/test_headers.py", "python", chunk_text("t.py", tests, "python"), index))
    assert [(p.query, p.path, p.chunk.symbol) for p in pairs] == [
        ("parse header with colon", "pkg/headers.py", "parse_header")
    ]
    # Two definitions of the name: the one in the file the test file is named after, else none.
    index.add("pkg/other.py", "python", chunk_text("pkg/other.py", other, "python"))
    pairs = list(mp.test_pairs("tests/test_headers.py", "python", chunk_text("t.py", tests, "python"), index))
    assert [p.path for p in pairs] == ["pkg/headers.py"]
    pairs = list(mp.test_pairs("tests/test_misc.py", "python", chunk_text("t.py", tests, "python"), index))
    assert pairs == []


def test_spec_descriptions_in_js_test_files() -> None:
    lib = "export function formatDuration(ms) {\n  return `${ms}ms`;\n}\n"
    spec = (
        "describe('durations', () => {\n"
        "  it('formats a duration in milliseconds', () => {\n"
        "    expect(formatDuration(5)).toBe('5ms');\n"
        "  });\n"
        "});\n"
    )
    index = mp.FunctionIndex()
    index.add("src/format.js", "javascript", chunk_text("src/format.js", lib, "javascript"))
    pairs = list(
        mp.test_pairs("test/format.test.js", "javascript", chunk_text("t.js", spec, "javascript"), index)
    )
    assert [(p.query, p.chunk.symbol) for p in pairs] == [
        ("formats a duration in milliseconds", "formatDuration")
    ]


def test_parse_hunks_and_chunks_for_hunks() -> None:
    diff = (
        "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n"
        "@@ -5,2 +5,3 @@ def g():\n-x\n-y\n+x\n+y\n+z\n@@ -12,0 +14 @@\n+new\n"
        "diff --git a/gone.py b/gone.py\n--- a/gone.py\n+++ /dev/null\n@@ -1,3 +0,0 @@\n-a\n-b\n-c\n"
        "diff --git a/new.py b/new.py\n--- /dev/null\n+++ b/new.py\n@@ -0,0 +1 @@\n+a\n"
    )
    assert mp.parse_hunks(diff) == {"src/a.py": [(5, 2), (12, 0)]}
    source = (
        "import os\n\n\ndef f():\n    a = 1\n    return a\n\n\n"
        "def g():\n    b = 2\n    c = 3\n    return b + c\n"
    )
    chunks = chunk_text("src/a.py", source, "python")
    touched = mp.chunks_for_hunks(chunks, [(5, 2), (10, 0), (11, 0)])
    # f holds lines 5-6 (2 changed); an insertion after line 10 or 11 lies inside g (1 each).
    assert [(w, c.symbol) for w, c in touched] == [(2, "f"), (2, "g")]
    # An insertion between two definitions touches neither; the import block has no name.
    assert mp.chunks_for_hunks(chunks, [(7, 0), (1, 1)]) == []


def test_commit_pairs_cut_the_parent_snapshot(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    commit = GitRepo(repo).commit

    before = (
        "def parse_header(line):\n    name, value = line.split(':')\n    return name, value\n\n\n"
        "def other(x):\n    return x\n"
    )
    after = before.replace(
        "    name, value = line.split(':')\n",
        "    if not line:\n        return None\n    name, value = line.split(':', 1)\n",
    )
    commit("Initial import of the header parser", {"src/headers.py": before, "README.md": "x\n"})
    commit(
        "Handle empty header lines in the parser (#12)", {"src/headers.py": after, "tests/test_h.py": "t\n"}
    )
    commit("Bump version to 2.0.1", {"src/headers.py": after + "\n"})
    head = commit("Document the parser in the readme file", {"README.md": "y\n"})
    blobs = mp.BlobReader(repo / ".git")
    try:
        pairs = list(mp.commit_pairs(repo / ".git", head, blobs, random.Random(0)))
    finally:
        blobs.close()
    assert [(p.query, p.path, p.chunk.symbol) for p in pairs] == [
        ("Handle empty header lines in the parser", "src/headers.py", "parse_header")
    ]
    assert pairs[0].text == before.split("\n\n\n")[0]  # the code before the change


@pytest.mark.parametrize(
    ("subject", "query"),
    [
        ("fix(parser): handle empty header values (#123)", "handle empty header values"),
        ("net/http: reject invalid header names early", "net/http: reject invalid header names early"),
        ("Bump version to 1.2.3", None),
        ("chore: update the build scripts for ci", None),
        ("Merge pull request #5 from a/b", None),
        ("Fix typo in the error message", None),
        ("Add retry", None),
    ],
)
def test_clean_subject(subject: str, query: str | None) -> None:
    assert mp.clean_subject(subject) == query


def test_classify_licence() -> None:
    mit = "Permission is hereby granted, free of charge, to any person obtaining a copy"
    apache = "Apache License\nVersion 2.0, January 2004\nhttp://www.apache.org/licenses/"
    gpl = "GNU GENERAL PUBLIC LICENSE\nVersion 3"
    mpl = "Mozilla Public License Version 2.0\n... GNU General Public License, Version 2.0 (secondary)"
    assert mp.classify_licence([mit]) == "MIT"
    assert mp.classify_licence([apache, mit]) == "Apache-2.0+MIT"
    assert mp.classify_licence([mit, gpl]) is None
    assert mp.classify_licence([mpl]) == "MPL-2.0"
    assert mp.classify_licence(["All rights reserved."]) is None


def test_file_language_follows_discovery() -> None:
    assert mp.file_language("src/app.py") == "python"
    assert mp.file_language("node_modules/x/index.js") is None
    assert mp.file_language("third_party/lib/a.c") is None
    assert mp.file_language("testdata/case.go") is None
    assert mp.file_language("dist/app.min.js") is None
    assert mp.file_language("package-lock.json") is None
    assert mp.file_language("README.md") is None  # prose: no pairs
    assert mp.is_test_path("tests/test_a.py") and mp.is_test_path("a_test.go")
    assert mp.is_test_path("src/Foo.test.ts") and mp.is_test_path("FooTest.java")
    assert not mp.is_test_path("src/contest.py")


def test_prose_filters_and_jsdoc_summary() -> None:
    assert mp.is_prose("skip the header when it is empty")
    assert not mp.is_prose("rejected_callbacks.disable fulfilled_callbacks.disable")
    assert mp.looks_like_code("x = compute(y);") and not mp.looks_like_code("compute the layout first")
    lines = [
        "@name addDays",
        "@category Day Helpers",
        "@summary Add the specified number of days.",
        "",
        "@param",
    ]
    assert mp.first_sentence(lines) == "Add the specified number of days."


def test_fixture_quotas_and_exclusions() -> None:
    assert mp.quotas({"a": 1, "b": 10, "c": 10}, 9) == {"a": 1, "b": 4, "c": 4}
    assert mp.quotas({"a": 2, "b": 2}, 10) == {"a": 2, "b": 2}
    assert mp.excluded("imstb_truetype.h", ("imstb_", "examples/libs/"))
    assert not mp.excluded("imgui.cpp", ("imstb_",)) and not mp.excluded("a.c", ())
    assert mp.file_language("taskflow/3rd-party/tbb/task.h") is None
    assert mp.file_language("src/pip/_vendor/distlib/scripts.py") is None
