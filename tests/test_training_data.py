"""The ranker's training-set generators (bench/make_validation_set.py, bench/training_styles.py): the
languages they parse, the query styles they write, the commits they pick, on real parsers and a real git
repository in a temp dir."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))

import make_validation_set as mvs
import training_styles as ts

from git_repo import GitRepo, git

SAMPLES = {
    "rust": (
        "x.rs",
        "/// Parses the header line.\n#[inline]\npub fn parse_header(x: &str) -> u32 {\n"
        '    panic!("bad header line {}", x);\n}\n',
        "parse_header",
        "Parses the header line",
        "bad header line value",
        "panic",
    ),
    "java": (
        "A.java",
        "class A {\n  /** Opens the stream for reading. */\n  public void openStream(int x) {\n"
        '    throw new IllegalStateException("stream already open now");\n  }\n}\n',
        "openStream",
        "Opens the stream for reading",
        "stream already open now",
        "IllegalStateException",
    ),
    "ruby": (
        "a.rb",
        "# Reads the configuration file.\ndef read_config(path)\n"
        '  raise ArgumentError, "cannot read config #{path} now"\nend\n',
        "read_config",
        "Reads the configuration file",
        "cannot read config value now",
        "ArgumentError",
    ),
    "php": (
        "a.php",
        "<?php\n/** Opens the stream for reading. */\nfunction open_stream($x) {\n"
        '  throw new \\RuntimeException("stream already open: $x");\n}\n',
        "open_stream",
        "Opens the stream for reading",
        "stream already open: value",
        "RuntimeException",
    ),
    "c": (
        "a.c",
        "/* Frees the buffer and its data. */\nstatic int buf_free(struct buf *b) {\n"
        '  die("fatal error in buffer %s", b);\n}\n',
        "buf_free",
        "Frees the buffer and its data",
        "fatal error in buffer value",
        "",
    ),
    "kotlin": (
        "a.kt",
        "/** Reads the value from the source. */\nfun readValue(x: Int): Int {\n"
        '    throw IllegalArgumentException("bad value $x here")\n}\n',
        "readValue",
        "Reads the value from the source",
        "bad value value here",
        "IllegalArgumentException",
    ),
    "csharp": (
        "a.cs",
        "class A {\n  /// <summary>Opens the stream for reading.</summary>\n  public void Open(int x) {\n"
        '    throw new InvalidOperationException($"stream already open: {x}");\n  }\n}\n',
        "Open",
        "Opens the stream for reading",
        "stream already open: value",
        "InvalidOperationException",
    ),
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_parse_file_reads_names_docs_and_error_sites(tmp_path: Path, language: str) -> None:
    name, source, definition, sentence, message, kind = SAMPLES[language]
    path = tmp_path / name
    path.write_text(source)
    defs = {d.name: d for d in mvs.parse_file(path, name, language)}
    d = defs[definition]
    assert d.doc is not None and mvs._first_sentence(d.doc[2]) == sentence
    assert d.errors == [message]
    assert d.error_kinds == [kind]


def test_struct_uses_are_not_definitions(tmp_path: Path) -> None:
    path = tmp_path / "a.c"
    path.write_text("struct buf { int a; };\nint f(struct buf *b) { return 0; }\n")
    kinds = sorted((d.name, d.kind) for d in mvs.parse_file(path, "a.c", "c"))
    assert kinds == [("buf", "struct_specifier"), ("f", "function_definition")]


def test_rename_snippet_keeps_strings_calls_and_attributes() -> None:
    snippet = 'total = count + offset  # count the rows\nlog("count is", total)\nself.count = total'
    renamed = ts.rename_snippet(snippet, random.Random(3))
    assert renamed is not None and renamed != snippet
    assert '"count is"' in renamed and "# count the rows" in renamed
    assert "log(" in renamed and "self.count" in renamed
    assert renamed == ts.rename_snippet(snippet, random.Random(3))  # seeded
    # Consistent: every occurrence of a renamed name gets the same new name.
    first = renamed.splitlines()[0].split(" = ")[0]
    assert renamed.splitlines()[2].endswith(f"= {first}")


def test_rename_snippet_renames_php_variables() -> None:
    renamed = ts.rename_snippet("$route = $router->lookup($name);\nreturn $route;", random.Random(0))
    assert renamed is not None and "->lookup(" in renamed
    assert "$route" not in renamed or "$name" not in renamed


def test_pasted_error_keeps_part_of_the_message() -> None:
    message = "cannot read the configuration file from disk"
    words = message.split()
    queries = {ts.pasted_error(message, "ValueError", "python", random.Random(seed)) for seed in range(30)}
    for query in queries:
        runs = [" ".join(words[i:j]) for i in range(len(words)) for j in range(i + 3, len(words) + 1)]
        assert any(run in query for run in runs), query  # at least three words of it, in order
    assert len(queries) > 5 and any(message not in q for q in queries)  # extra words, partial messages
    assert any("ValueError" in q for q in queries)


def test_a_pasted_message_several_definitions_raise_targets_each_of_them() -> None:
    message = "n must be at least 1"
    raising = [("a", [message]), ("b", ["n must be at least 1 and at most 9"]), ("c", ["n must be > 0"])]
    for seed in range(20):
        query = ts.pasted_error(message, "ValueError", "python", random.Random(seed))
        part = ts.pasted_part(query, message)
        assert len(part.split()) >= 3 and part in message
        found = ts.same_message_raisers(part, raising)
        assert found[:2] == ["a", "b"] and ("c" in found) == (part == "n must be")
    assert ts.same_message_raisers("must be at", [("x", ["it must be\tat home"])]) == ["x"]  # whole words
    assert ts.same_message_raisers("", raising) == []


@pytest.mark.parametrize(
    ("subject", "query"),
    [
        (
            "fix(router): handle trailing slashes in mounted apps (#1234)",
            "Handle trailing slashes in mounted apps",
        ),
        (
            "[core] Make the CORS middleware compile its regexp once",
            "Make the CORS middleware compile its regexp once",
        ),
        ("Bump version to 1.2.3", None),
        ("Fix typo in error message", None),
        ("Add tests for the parser", None),
        ("short one", None),
    ],
)
def test_clean_subject(subject: str, query: str | None) -> None:
    assert ts.clean_subject(subject) == query


def test_candidate_changes_on_a_real_repository(tmp_path: Path) -> None:
    repo = tmp_path / "r"
    commit = GitRepo(repo).commit

    commit(
        "Initial import of the parser", {"src/parser.py": "a\n", "src/lexer.py": "b\n", "README.md": "x\n"}
    )
    wanted = commit(
        "Make the lexer skip comments before tokens", {"src/lexer.py": "b2\n", "tests/test_lexer.py": "t\n"}
    )
    commit("Bump version to 2.0", {"src/parser.py": "a2\n"})
    commit("Document the lexer in the readme file", {"README.md": "y\n"})
    head = commit("Add a brand new module for tokens", {"src/tokens.py": "n\n", "src/new2.py": "m\n"})
    found = ts.candidate_changes(
        repo / ".git",
        head,
        window=50,
        is_source=lambda p: p.endswith(".py"),
        is_test=lambda p: "test" in p,
    )
    assert [(c.commit, c.files, c.query) for c in found] == [
        (wanted, ["src/lexer.py"], "Make the lexer skip comments before tokens")
    ]
    assert found[0].parent == git(repo, "rev-parse", f"{wanted}^")
    picked = ts.pick_changes(found * 2, 5, random.Random(0))  # duplicates collapse
    assert [c.commit for c in picked] == [wanted]
