"""Mine (natural-language query -> code chunk) training pairs for the static embedding model (issue 25).

For every repository of a manifest (training/repos.json: repo, language, commit, licence, split) this reads
the bare mirror the `fetch` tool brought (MIRRORS/<owner>+<name>/repo), pinned to the manifest's commit,
and writes OUT/<owner>+<name>.jsonl, one JSON object per pair:

    {"kind", "repo", "language", "query", "path", "symbol", "chunk_kind", "text"}

path/symbol/chunk_kind/text are a chunk exactly as the indexer cuts it (`chunk_text` on the file's text as
`files.read_text` decodes it), except that the text the query was taken from is removed for `doc` and
`comment` pairs, so a model cannot match by copying. Pair kinds:

  doc      a doc comment / docstring -> its definition's chunk without the doc lines; the query is the
           doc's first sentence (or first lines), markers and markup removed, >= 4 words
  comment  a group of full-line comments inside a function -> that chunk without those lines
  ident    a definition's name split into words ("parse http header") -> its chunk (names of >= 2 words)
  test     a test's name or description ("refresh token expired") -> the chunk of the non-test function it
           calls whose name shares the most words with it (skipped when that is unclear)
  commit   a commit subject -> the definition chunks the commit changed (at most 3), cut from the PARENT
           snapshot (what a user's index holds when they ask)

Files are those our discovery would index (default include patterns, no hidden/vendored/build folders,
no lock/minified/generated/secret files, <= 1 MiB) in a language we chunk as code, minus test data and
third-party folders. Pairs are de-duplicated (query + chunk text) and capped per repository and kind.
Seeded by --seed and the repository name; resumable (a repository whose .jsonl exists is skipped unless
--force). Each repository also gets OUT/<slug>.meta.json (licence, commit, counts); OUT/manifest.json
aggregates them with a kind x language table.

Usage:
    python training/mine_pairs.py [--repos training/repos.json] [--mirrors /work/.mirror]
        [--out ~/.cache/codebase-index-train/pairs] [--seed 0] [--split train ...] [--repo OWNER/NAME ...]
        [--force] [--manifest-only]
"""

from __future__ import annotations

import argparse
import ast
import codecs
import hashlib
import json
import random
import re
import subprocess
import sys
import textwrap
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "python"))

from codebase_index import generated  # noqa: E402
from codebase_index.chunking import chunk_text, language_for_path  # noqa: E402
from codebase_index.chunking.languages import SPECS  # noqa: E402
from codebase_index.credentials import secret_content, secret_name  # noqa: E402
from codebase_index.files import BINARY_SNIFF_BYTES, DEFAULT_MAX_FILE_SIZE, decode_text  # noqa: E402
from codebase_index.models import ChunkSpan  # noqa: E402
from codebase_index.patterns import always_skipped_dir, make_include_matcher  # noqa: E402

DEFAULT_OUT = Path.home() / ".cache" / "codebase-index-train" / "pairs"
RESERVED = next(
    (p / "shared" / "bench" / "reserved.txt" for p in HERE.parents if (p / "shared" / "bench").is_dir()),
    ROOT.parent / "shared" / "bench" / "reserved.txt",
)
KINDS = ("doc", "comment", "ident", "test", "commit")
CAP_PER_KIND = 4000  # pairs per repository per kind (seeded sample), so no repository dominates
COMMITS_PER_REPO = 300  # commit subjects used per repository
COMMIT_WINDOW = 4000  # non-merge commits looked at, newest first from the pinned commit
CHUNKS_PER_COMMIT = 3
MAX_FILES_PER_COMMIT = 12  # a wider commit is a sweep (rename, reformat) more than one change
MAX_QUERY_WORDS = 40
MAX_FILES = 3000  # files mined at the pinned commit (a seeded sample of larger repositories)
MAX_COMMENT_GROUPS_PER_CHUNK = 3
# Languages chunked as code (the tree-sitter specs); markdown/data/line windows give no pairs.
CODE_LANGUAGES = frozenset(SPECS)
DEFINITION_KINDS = frozenset(
    {"function", "method", "class", "struct", "interface", "enum", "trait", "impl", "module", "type"}
)
FUNCTION_KINDS = frozenset({"function", "method"})
# Folders that hold other people's code or test data (on top of the indexer's always-skipped ones).
EXTRA_SKIP_DIRS = frozenset(
    {
        "third_party",
        "third-party",
        "thirdparty",
        "3rdparty",
        "external",
        "extern",
        "vendored",
        "deps",
        "testdata",
        "test-data",
        "test_data",
        "fixtures",
        "fixture",
        "__fixtures__",
        "__snapshots__",
        "__mocks__",
        "node_modules",
        "_vendor",
        "_vendored",
        "vendors",
        "bundled",
        "contrib",
        "3rd-party",
        "3rd_party",
        "oss",
        "browser_patches",
    }
)
_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|specs?|testing|testutils?|test_?helpers?|androidTest|integration-tests?)(/|$)"
    r"|(^|/)test_[^/]*$|(^|/)conftest\.py$|_test\.[^/.]+$|[._-](test|spec)s?\.[^/]+$|(^|/)(test|spec)s?\.[^/]+$"
    r"|(Tests?|Spec|IT)\.[A-Za-z]+$"
)


def slug(repo: str) -> str:
    return repo.replace("/", "+")


def is_test_path(path: str) -> bool:
    return bool(_TEST_PATH.search(path))


def is_test_symbol(symbol: str) -> bool:
    """A test by its (qualified) name: Rust `tests.x`, `test_x`, Go `TestX`, Java `testX`, `Tests.X`."""
    parts = re.split(r"[.:#]+", symbol)
    if any(p.lower() in ("tests", "test") or p.endswith(("Test", "Tests", "Spec")) for p in parts[:-1]):
        return True
    last = parts[-1] if parts else ""
    return bool(re.match(r"(test_|Test[A-Z_]|test[A-Z])", last))


# ------------------------------------------------------------------ licences

_PERMISSIVE = (
    (
        "Apache-2.0",
        re.compile(r"Apache License,?\s+Version 2\.0|www\.apache\.org/licenses/LICENSE-2\.0", re.I),
    ),
    ("MIT", re.compile(r"Permission is hereby granted,? free of charge", re.I)),
    (
        "BSD-3-Clause",
        re.compile(
            r"Redistribution and use in source and binary forms.{0,2000}?"
            r"(Neither the|names? of (its |the )?contributors may not)",
            re.I | re.S,
        ),
    ),
    ("BSD-2-Clause", re.compile(r"Redistribution and use in source and binary forms", re.I)),
    (
        "ISC",
        re.compile(r"Permission to use, copy, modify,? (and/?or|and) distribute this software for any", re.I),
    ),
    ("MPL-2.0", re.compile(r"Mozilla Public License,?\s+(Version|v\.)\s*2\.0", re.I)),
    ("Unlicense", re.compile(r"free and unencumbered software released into the public domain", re.I)),
    ("Zlib", re.compile(r"Permission is granted to anyone to use this software for any purpose", re.I)),
    ("0BSD", re.compile(r"Zero-Clause BSD", re.I)),
)
_NOT_PERMISSIVE = re.compile(
    r"GNU (LESSER |LIBRARY |AFFERO )?GENERAL PUBLIC LICENSE|Eclipse Public License|Server Side Public"
    r"|Business Source License|Commons Clause|Creative Commons Attribution-NonCommercial"
    r"|European Union Public Licen[cs]e|Common Development and Distribution License"
    r"|Boost Software License|PYTHON SOFTWARE FOUNDATION LICENSE",  # permissive, but not on our list
    re.I,
)
_PERMISSIVE_BY_NAME = dict(_PERMISSIVE)
_CC_SHARE_ALIKE = re.compile(r"Creative Commons Attribution-ShareAlike", re.I)
_LICENCE_FILE = re.compile(r"^(un)?licen[cs]e|^copying|^mit-licen[cs]e|^licen[cs]e[-_.]", re.I)


def classify_licence(texts: Iterable[str]) -> str | None:
    """The permissive licence(s) the licence files grant ("Apache-2.0+MIT"), or None when there is none or
    any of them is copyleft / not permissive (a dual licence naming a GPL is refused too: conservative).
    MPL-2.0's own text names the GPL family (its secondary licences) and is not refused for it. A
    CC-BY-SA clause that covers documentation only (we mine code) is noted: "MIT; docs CC-BY-SA"."""
    found: list[str] = []
    docs_note = False
    for text in texts:
        mpl = _PERMISSIVE_BY_NAME["MPL-2.0"].search(text) is not None
        if _CC_SHARE_ALIKE.search(text):
            if not re.search(r"documentation", text, re.I):
                return None
            docs_note = True
        if not mpl and _NOT_PERMISSIVE.search(text):
            return None
        for name, pattern in _PERMISSIVE:
            if pattern.search(text):
                if name == "BSD-2-Clause" and "BSD-3-Clause" in found:
                    continue
                if (
                    name == "ISC"
                    and re.search(r"copyright notice and this permission notice", text, re.I) is None
                ):
                    name = "0BSD"
                if name not in found:
                    found.append(name)
                if name.startswith("BSD-3"):
                    break
    if not found:
        return None
    return "+".join(sorted(found)) + ("; docs CC-BY-SA" if docs_note else "")


def detect_licence(git_dir: Path, commit: str) -> tuple[str | None, list[str]]:
    """(licence, licence files) of the top-level licence files of `commit`."""
    names = git(git_dir, "ls-tree", "--name-only", commit).splitlines()
    files = sorted(n for n in names if _LICENCE_FILE.match(n))
    texts = [git(git_dir, "show", f"{commit}:{n}") for n in files]
    return classify_licence(texts), files


# ------------------------------------------------------------------ git


def git(git_dir: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), *args], capture_output=True, text=True, errors="replace"
    )
    if out.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {out.stderr.strip()[:300]}")
    return out.stdout


class BlobReader:
    """One `git cat-file --batch` process: the bytes of `<rev>:<path>` (or a blob id), None if missing."""

    def __init__(self, git_dir: Path) -> None:
        self.proc = subprocess.Popen(
            ["git", "--git-dir", str(git_dir), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )

    def read(self, spec: str) -> tuple[str, bytes] | None:
        if "\n" in spec:
            return None
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(spec.encode("utf-8", "surrogateescape") + b"\n")
        self.proc.stdin.flush()
        header = self.proc.stdout.readline().split()
        if len(header) < 3 or header[1] != b"blob":
            if len(header) >= 3:  # a tree or commit: skip its body
                self.proc.stdout.read(int(header[2]) + 1)
            return None
        data = self.proc.stdout.read(int(header[2]))
        self.proc.stdout.read(1)
        return header[0].decode(), data

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


# ------------------------------------------------------------------ which files, read as the indexer reads

_INCLUDES = make_include_matcher(None)


def file_language(path: str) -> str | None:
    """The chunker's language for a path our discovery would index and that we mine, else None."""
    parts = path.split("/")
    for part in parts[:-1]:
        if always_skipped_dir(part) is not None or part.lower() in EXTRA_SKIP_DIRS:
            return None
    name = parts[-1]
    if name.startswith(".env") or secret_name(name, path) is not None or generated.by_name(name) is not None:
        return None
    if not _INCLUDES(path):
        return None
    language = language_for_path(path)
    return language if language in CODE_LANGUAGES else None


def decode_blob(data: bytes) -> str | None:
    """A blob's text as `files.read_text` decodes a file (None: binary)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    elif b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return None
    else:
        text = decode_text(data)
    return text.replace("\r\n", "\n") if "\r\n" in text else text


def file_chunks(path: str, data: bytes) -> tuple[str, list[ChunkSpan]] | None:
    """(language, chunks) of one file as the indexer cuts it; None when the indexer would skip it."""
    if len(data) > DEFAULT_MAX_FILE_SIZE:
        return None
    language = file_language(path)
    text = decode_blob(data)
    if language is None or text is None:
        return None
    if generated.by_content(path, text) is not None or secret_content(text) is not None:
        return None
    spans = chunk_text(path, text, language)
    shown = language_for_path(path, text=text) or language  # `.h` holding C++ is C++
    return shown, spans


# ------------------------------------------------------------------ text helpers

_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")


def split_identifier(name: str) -> list[str]:
    """Words of an identifier, lower-cased: `parseHTTPHeader` / `parse_http_header` -> parse http header.

    >>> split_identifier("getUTF8String"), split_identifier("__init__"), split_identifier("Int32Value")
    (['get', 'utf8', 'string'], ['init'], ['int32', 'value'])
    """
    return [w.lower() for w in _WORD.findall(name)]


def last_name(symbol: str) -> str:
    """The defined name of a qualified chunk symbol (`Outer.method` -> method, `Trait for Foo` -> Foo)."""
    symbol = symbol.split(",")[0].strip()
    symbol = symbol.split(" for ")[-1]
    return re.split(r"[.:#]+", symbol)[-1].strip()


def words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z][A-Za-z0-9_'-]*", text)


def limit_words(text: str, n: int = MAX_QUERY_WORDS) -> str:
    parts = text.split()
    return " ".join(parts[:n])


_MARKUP = (
    (re.compile(r"\{@(?:link|linkplain|code|literal|see)\s+([^}\s]+)(?:\s+([^}]*))?\}"), r"\1"),
    (re.compile(r"<(?:see|seealso)\s+(?:c?ref|langword)=\"(?:[A-Z]:)?([^\"]+)\"\s*/?>"), r"\1"),
    (re.compile(r"<(?:paramref|typeparamref)\s+name=\"([^\"]+)\"\s*/?>"), r"\1"),
    (re.compile(r"</?[A-Za-z][A-Za-z0-9]*(?:\s[^<>]*)?/?>"), " "),
    (re.compile(r"\[([^\]]+)\]\((?:[^)]+)\)"), r"\1"),  # markdown links
    (re.compile(r"\[`?([^\]`]+)`?\](?!\()"), r"\1"),  # rustdoc / Go doc links
    (re.compile(r":[a-z:]+:`~?([^`<]+?)\s*<[^>`]+>`"), r"\1"),  # sphinx roles with a target
    (re.compile(r":[a-z:]+:`~?([^`]+)`"), r"\1"),  # sphinx roles
    (re.compile(r"\b[LCIB]\{([^}]*)\}"), r"\1"),  # epydoc
    (re.compile(r"https?://\S+"), " "),
    (re.compile(r"[`*]+|\\"), ""),
    (re.compile(r"&(lt|gt|amp|quot);"), " "),
)


def clean_markup(text: str) -> str:
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    text = re.sub(r"\s+", " ", text).strip()
    return text.strip(" -:;,")


_COMMENT_MARK = re.compile(r"^\s*(?:/\*+!?|\*+/|\*+(?!\w*\*)|///?!?|//+|#+'?|--+\s*\|?|--+|%+)\s?")
_BLOCK_END = re.compile(r"\s*\*+/\s*$")
_DOC_STOP = re.compile(
    r"^(@\w+|:(param|parameter|arg|argument|key|keyword|type|returns?|rtype|raises?|throws?|yields?|ivar|cvar|var)\b"
    r"|(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Throws|Examples?|Usage|Notes?|See Also|"
    r"Attributes|Warning|Todo|Panics|Errors|Safety|Example usage)\s*:?\s*$|>>>|```|#+\s|[-=~]{3,}$|\.\.\s)"
)
_SKIP_DOC = re.compile(
    r"copyright|licen[sc]ed?\b|spdx|all rights reserved|auto-?generated|do not edit|generated by", re.I
)
_DIRECTIVE = re.compile(
    r"^\s*(//|#|--)\s*(go:|\+build|nolint|lint:|eslint|prettier|tslint|jshint|istanbul|c8 |@ts-|"
    r"noqa|type:\s*ignore|pylint|pyright|mypy|pragma|fmt:|isort|rubocop|frozen_string_literal|"
    r"encoding|-\*-|NOLINT|clang-format|region|endregion|MARK:|swiftlint|ktlint|phpcs|@phpstan|"
    r"psalm|codecov|coverage|nosec|noinspection|ReSharper|#region|#endregion)",
    re.I,
)


def strip_comment_markers(line: str) -> str:
    line = _BLOCK_END.sub("", line)
    return _COMMENT_MARK.sub("", line, count=1).rstrip()


def first_sentence(lines: list[str]) -> str | None:
    """The query a doc gives: its first paragraph's first sentence, or its first two lines when that
    sentence is too short; markup cleaned; None when fewer than 4 words remain."""
    para: list[str] = []
    for raw in lines:
        s = raw.strip()
        if not s:
            if para:
                break
            continue
        tagged = re.match(r"@(summary|description)\b\s*", s)  # JSDoc's summary tags hold the prose
        if tagged and not para:
            s = s[tagged.end() :]
            if not s:
                continue
        elif _DOC_STOP.match(s):
            if para or not s.startswith("@"):
                break
            continue  # leading tags (@name, @category) before the prose
        para.append(s)
        if len(para) >= 4:
            break
    if not para:
        return None
    text = clean_markup(" ".join(para))
    sentences = re.split(r"(?<![.:]\w)(?<!\be\.g)(?<!\bi\.e)(?<=[.!?])\s+(?=[A-Z`'\"(\[])", text)
    query = sentences[0]
    if len(words(query)) < 4:
        query = clean_markup(" ".join(para[:2]))
    query = limit_words(query).rstrip()
    if len(words(query)) < 4 or _SKIP_DOC.search(query) or looks_like_code(query):
        return None
    return query


_FUNCTION_WORDS = frozenset(
    {"a", "an", "the", "to", "of", "in", "on", "for", "with", "and", "or", "if", "is", "are", "be", "not"}
    | {"no", "this", "that", "it", "we", "so", "when", "then", "than", "as", "at", "by", "from", "into"}
    | {"only", "all", "any", "each", "but", "can", "will", "should", "must", "may", "use", "used"}
)


def is_prose(text: str) -> bool:
    """Words of a sentence, not a list of identifiers (`rejected_callbacks.disable fired.disable`): some
    function word ("the", "to", "if"...) among them."""
    return any(w.lower() in _FUNCTION_WORDS for w in words(text))


def looks_like_code(text: str) -> bool:
    """Commented-out code rather than prose."""
    s = text.strip()
    if not s:
        return True
    if s.endswith((";", "{", "}", ")", ",", "(", "[", "]", "=>", "->", ":=")) and not s.endswith(":)"):
        return True
    if re.match(
        r"^(return|if|for|while|import|from|def|func|fn|let|var|const|val|else|elif|catch|try)\b[ (]", s
    ) and (re.search(r"[(){}=;]", s)):
        return True
    if re.search(r"\w\(\S*\)|\w\.\w+\(|==|!=|&&|\|\||\+=|::|->|\w\[\w*\]", s) and len(words(s)) < 6:
        return True
    punct = sum(s.count(c) for c in "(){}[];=<>")
    return punct / max(len(s), 1) > 0.08


# ------------------------------------------------------------------ doc and comment regions


@dataclass(frozen=True)
class Syntax:
    line: tuple[str, ...]  # single-line comment markers
    block: bool  # /* ... */ comments
    attributes: tuple[str, ...]  # lines kept with the definition that are no comments


_C_LIKE = Syntax(("//",), True, ("@",))
SYNTAX: dict[str, Syntax] = {
    "python": Syntax(("#",), False, ("@",)),
    "ruby": Syntax(("#",), False, ()),
    "bash": Syntax(("#",), False, ()),
    "elixir": Syntax(("#",), False, ("@",)),
    "lua": Syntax(("--",), False, ()),
    "haskell": Syntax(("--",), False, ()),
    "javascript": _C_LIKE,
    "typescript": _C_LIKE,
    "tsx": _C_LIKE,
    "java": _C_LIKE,
    "kotlin": _C_LIKE,
    "scala": _C_LIKE,
    "swift": _C_LIKE,
    "go": Syntax(("//",), True, ()),
    "rust": Syntax(("//",), True, ("#[", "#!")),
    "csharp": Syntax(("//",), True, ("[",)),
    "php": Syntax(("//", "#"), True, ("#[",)),
    "c": Syntax(("//",), True, ("__attribute__",)),
    "cpp": Syntax(("//",), True, ("[[", "template")),
    "zig": Syntax(("//",), False, ()),
}


def _is_line_comment(s: str, syntax: Syntax) -> bool:
    if any(s.startswith(a) for a in syntax.attributes if a.startswith("#")):
        return False
    return s.startswith(syntax.line)


def leading_doc(lines: list[str], language: str) -> tuple[list[int], list[str]] | None:
    """The comment lines above a definition's signature inside its chunk (indices, marker-free text);
    attributes, decorators and tool directives in between are skipped over and kept. None if none."""
    syntax = SYNTAX.get(language)
    if syntax is None:
        return None
    found: list[int] = []
    in_block = False
    for i, raw in enumerate(lines):
        s = raw.strip()
        if in_block:
            found.append(i)
            in_block = "*/" not in s
            continue
        if not s:
            continue
        if syntax.block and s.startswith("/*"):
            found.append(i)
            in_block = "*/" not in s[2:]
            continue
        if _DIRECTIVE.match(raw):
            continue
        if _is_line_comment(s, syntax):
            found.append(i)
            continue
        if syntax.attributes and s.startswith(syntax.attributes):
            continue
        if i == 0 or not found:
            return None if not found else (found, [strip_comment_markers(lines[j]) for j in found])
        return found, [strip_comment_markers(lines[j]) for j in found]
    return None  # nothing but comments: no definition below them


def python_docstring(text: str) -> tuple[int, int, str] | None:
    """(first, last) 0-based line indices and cleaned text of the docstring of the definition a Python
    chunk holds (its first def/class), or None (none, or not parseable on its own, or on the def line)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # odd escapes in code we only read
            tree = ast.parse(textwrap.dedent(text))
    except (SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            doc = ast.get_docstring(node, clean=True)
            first = node.body[0] if node.body else None
            if doc is None or first is None or first.end_lineno is None:
                return None
            if first.lineno == node.lineno:  # `def f(): "doc"`
                return None
            return first.lineno - 1, first.end_lineno - 1, doc
    return None


def signature_end(lines: list[str], start: int, language: str) -> int:
    """Index of the line that opens a definition's body (the signature may span lines)."""
    opener = ":" if language == "python" else "{"
    for i in range(start, min(len(lines), start + 12)):
        code = lines[i].split("//")[0] if language != "python" else lines[i].split("#")[0]
        if code.rstrip().endswith(opener) or (language != "python" and opener in code):
            return i
        if language in ("ruby", "elixir", "lua") and i == start:
            return i
    return start


def comment_groups(lines: list[str], language: str, body_from: int) -> list[tuple[list[int], str]]:
    """Runs of full-line comments from line `body_from` on: (indices, cleaned prose). Directives,
    licence text and commented-out code are left out."""
    syntax = SYNTAX.get(language)
    if syntax is None:
        return []
    groups: list[tuple[list[int], str]] = []
    run: list[int] = []

    def close() -> None:
        if not run:
            return
        prose = [strip_comment_markers(lines[j]).strip() for j in run]
        if any(_DIRECTIVE.match(lines[j]) for j in run):
            run.clear()
            return
        kept = [p for p in prose if p and not looks_like_code(p)]
        text = clean_markup(" ".join(kept))
        text = re.sub(r"^(TODO|FIXME|XXX|HACK|NOTE|NB)\b(\([^)]*\))?:?\s*", "", text)
        if (
            len(kept) == len([p for p in prose if p])
            and len(words(text)) >= 4
            and not _SKIP_DOC.search(text)
            and is_prose(text)
        ):
            groups.append((list(run), limit_words(text)))
        run.clear()

    for i in range(body_from, len(lines)):
        s = lines[i].strip()
        single_block = syntax.block and s.startswith("/*") and s.endswith("*/") and not s.startswith("/**")
        if (_is_line_comment(s, syntax) and not s.startswith(("///", "//!"))) or single_block:
            run.append(i)
        else:
            close()
    close()
    return groups


def drop_lines(lines: list[str], drop: Iterable[int]) -> str:
    gone = set(drop)
    return "\n".join(line for i, line in enumerate(lines) if i not in gone)


def nonblank(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


# ------------------------------------------------------------------ pairs from one snapshot


@dataclass
class Pair:
    kind: str
    query: str
    path: str
    language: str
    chunk: ChunkSpan
    text: str  # the chunk's text as paired (doc / comment lines removed where the kind says so)


def doc_pairs(path: str, language: str, chunks: list[ChunkSpan]) -> Iterator[Pair]:
    """Doc comment / docstring -> the definition's first chunk without it."""
    seen: set[str] = set()
    for c in chunks:
        if c.kind not in DEFINITION_KINDS or c.symbol in seen:
            continue
        seen.add(c.symbol)  # a definition's later windows repeat the signature, not the doc
        lines = c.text.split("\n")
        drop: list[int] = []
        query: str | None = None
        if language == "python":
            found = python_docstring(c.text)
            if found is not None:
                a, b, doc = found
                query = first_sentence(doc.splitlines())
                drop = list(range(a, b + 1))
        if query is None:
            lead = leading_doc(lines, language)
            if lead is not None:
                indices, prose = lead
                query = first_sentence(prose)
                drop = indices
        if query is None:
            continue
        rest = drop_lines(lines, drop)
        if nonblank(rest) < 2:
            continue
        yield Pair("doc", query, path, language, c, rest)


def comment_pairs(path: str, language: str, chunks: list[ChunkSpan]) -> Iterator[Pair]:
    """A group of comments inside a function -> that chunk without those lines. Blocks count too (code
    the chunker cuts into windows, e.g. a module that is one big object literal), from their second code
    line on, so a file's header comment is never a query."""
    for c in chunks:
        if c.kind not in FUNCTION_KINDS and c.kind != "block":
            continue
        lines = c.text.split("\n")
        start = 0
        lead = leading_doc(lines, language)
        if lead is not None:
            start = lead[0][-1] + 1
        if c.kind == "block":
            while start < len(lines) and not lines[start].strip():
                start += 1
            body = start + 1
        elif language == "python":
            found = python_docstring(c.text)
            body = found[1] + 1 if found is not None else signature_end(lines, start, language) + 1
        else:
            body = signature_end(lines, start, language) + 1
        for indices, query in comment_groups(lines, language, body)[:MAX_COMMENT_GROUPS_PER_CHUNK]:
            rest = drop_lines(lines, indices)
            if nonblank(rest) >= 2:
                yield Pair("comment", query, path, language, c, rest)


def ident_pairs(path: str, language: str, chunks: list[ChunkSpan]) -> Iterator[Pair]:
    """A definition's name split into words -> its (first) chunk."""
    seen: set[str] = set()
    for c in chunks:
        if c.kind not in DEFINITION_KINDS or c.symbol in seen:
            continue
        seen.add(c.symbol)
        parts = split_identifier(last_name(c.symbol))
        if len(parts) < 2 or all(len(p) == 1 for p in parts):
            continue
        yield Pair("ident", " ".join(parts), path, language, c, c.text)


# -------------------------------------------------- tests -> the function they exercise

_TEST_WORDS = frozenset({"test", "tests", "should", "it", "spec", "check", "verify", "ensure", "case"})
_STOP = frozenset(
    {"a", "an", "the", "is", "are", "be", "to", "of", "in", "on", "for", "with", "and", "or", "when", "if"}
    | {"it", "its", "that", "this", "by", "as", "at", "from", "not", "no", "does", "do", "can", "get", "set"}
    | {"new", "returns", "return", "works", "work", "correctly", "properly", "should", "test", "tests"}
)
_CALL = re.compile(r"(?<![\w$])([A-Za-z_$][\w$]*[?!]?)\s*(?:<[^<>()\n]{0,60}>)?\s*\(")
_RUBY_CALL = re.compile(r"(?:\.|::)([a-z_]\w*[?!]?)")
_KEYWORDS = frozenset(
    {"if", "for", "while", "switch", "return", "catch", "function", "typeof", "sizeof", "match", "assert"}
    | {"expect", "require", "describe", "it", "test", "print", "println", "printf", "format", "super"}
    | {"this", "self", "new", "elif", "except", "with", "lambda", "fn", "func", "defer", "go", "case", "when"}
    | {"unless", "until", "loop", "await", "async", "yield", "not", "and", "or", "in", "is", "instanceof"}
    | {"delete", "void", "throw", "raise"}
)
_SPEC_CALL = re.compile(r"^\s*(?:it|test|specify|scenario|should)\s*\(?\s*(['\"`])(.{6,200}?)\1")


def _stem(word: str) -> str:
    for suffix in ("ing", "es", "ed", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def test_query(name: str) -> str | None:
    """The words of a test's name without the test markers: test_refresh_token_expired -> refresh token
    expired; None under two words."""
    parts = split_identifier(name)
    while parts and parts[0] in _TEST_WORDS:
        parts = parts[1:]
    while parts and parts[-1] in ("test", "tests", "spec"):
        parts = parts[:-1]
    if len(parts) < 2:
        return None
    return " ".join(parts)


def called_names(text: str, language: str) -> set[str]:
    names = {m.group(1) for m in _CALL.finditer(text)}
    if language in ("ruby", "elixir", "scala", "kotlin", "swift"):
        names |= {m.group(1) for m in _RUBY_CALL.finditer(text)}
    return {n for n in names if n not in _KEYWORDS and len(n) > 2}


def _file_stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1].split(".")[0].lower()
    name = re.sub(r"^(test_|tests_)|(_test|_tests|_spec|test|tests|spec|it)$", "", name)
    return name.strip("_-")


@dataclass
class FunctionIndex:
    """Non-test function/method chunks by defined name (first chunk of each definition)."""

    by_name: dict[str, list[tuple[str, str, ChunkSpan]]] = field(default_factory=dict)

    def add(self, path: str, language: str, chunks: list[ChunkSpan]) -> None:
        seen: set[str] = set()
        for c in chunks:
            if c.kind in FUNCTION_KINDS and c.symbol not in seen and not is_test_symbol(c.symbol):
                seen.add(c.symbol)
                self.by_name.setdefault(last_name(c.symbol), []).append((path, language, c))


def match_test(
    query: str, calls: set[str], test_path: str, index: FunctionIndex
) -> tuple[str, str, ChunkSpan] | None:
    """The definition a test exercises: among the functions it calls that the repository defines (outside
    tests), the one whose name shares the most (stemmed, non-stop) words with the test's query; None when
    nothing shares a word, two names tie, or the name has several definitions none of which sits in the
    file the test file is named after."""
    wanted = {_stem(w) for w in query.lower().split() if w not in _STOP}
    scored: list[tuple[int, str]] = []
    for name in calls:
        if name not in index.by_name:
            continue
        have = {_stem(w) for w in split_identifier(name)}
        score = len(wanted & have)
        if score:
            scored.append((score, name))
    if not scored:
        return None
    scored.sort(reverse=True)
    if len(scored) > 1 and scored[1][0] == scored[0][0]:
        return None
    defs = index.by_name[scored[0][1]]
    if len(defs) == 1:
        return defs[0]
    stem = _file_stem(test_path)
    same = [d for d in defs if stem and _file_stem(d[0]) == stem]
    return same[0] if len(same) == 1 else None


def test_pairs(path: str, language: str, chunks: list[ChunkSpan], index: FunctionIndex) -> Iterator[Pair]:
    """Test functions (by name) and spec cases (`it("...")`, by description) -> the function exercised."""
    in_test_file = is_test_path(path)
    for c in chunks:
        cases: list[tuple[str, str]] = []  # (query, text of the case)
        if c.kind in FUNCTION_KINDS and (is_test_symbol(c.symbol) or in_test_file):
            name = last_name(c.symbol)
            q = test_query(name) if (is_test_symbol(c.symbol) or in_test_file) else None
            if q is not None and (is_test_symbol(c.symbol) or re.match(r"(test|should)", name, re.I)):
                cases.append((q, c.text))
        if in_test_file and not cases:
            lines = c.text.split("\n")
            starts = [(i, m.group(2)) for i, line in enumerate(lines) if (m := _SPEC_CALL.match(line))]
            for k, (i, desc) in enumerate(starts):
                end = starts[k + 1][0] if k + 1 < len(starts) else len(lines)
                q = limit_words(clean_markup(desc))
                if len(words(q)) >= 2:
                    cases.append((q, "\n".join(lines[i:end])))
        for q, body in cases:
            hit = match_test(q, called_names(body, language), path, index)
            if hit is not None:
                tpath, tlanguage, target = hit
                yield Pair("test", q, tpath, tlanguage, target, target.text)


# ------------------------------------------------------------------ commits

_CONVENTIONAL = re.compile(r"^(\w+)(\([^)]*\))?!?:\s*")
_SKIP_TYPES = frozenset({"chore", "ci", "build", "docs", "doc", "style", "test", "tests", "release", "deps"})
_NOISE = re.compile(
    r"\b(bump(ed|s)?|releas(e|ed|ing)|versions?|merg(e|ed|ing)|typos?|format(ting|ted)?|reformat\w*|lint(ing)?|"
    r"linter|changelog|readme|prepar(e|ing)|revert(s|ed)?|dependabot|renovate|deps|dependenc(y|ies)|wip|"
    r"whitespace|copyright|licen[cs]e|docs?|documentation|prettier|rustfmt|gofmt|clippy|upgrad(e|ed|ing)|"
    r"pre-commit|spelling|misspell\w*|cleanup|clean up|rubocop|eslint|changes from|backport|cherry)\b"
    r"|\bv?\d+\.\d+(\.\d+)?\b",
    re.I,
)


def clean_subject(subject: str) -> str | None:
    """A commit subject as a query, or None when it is noise (releases, merges, formatting, dependency
    bumps, typos) or under 4 words. Conventional prefixes, issue references and tags are removed."""
    s = subject.strip()
    s = re.sub(r"^(\[[^\]]*\]\s*)+", "", s)
    m = _CONVENTIONAL.match(s)
    if m and m.group(1).lower() in _SKIP_TYPES:
        return None
    if m and (m.group(2) or m.group(1).lower() in {"feat", "fix", "refactor", "perf", "feature", "bugfix"}):
        s = s[m.end() :]
    s = re.sub(r"\s*\((#|gh-|GH-)?\d+\)\s*$|\s*\[(skip|ci)[^\]]*\]\s*$", "", s)
    s = re.sub(r"\s*\(?\b(fix(es|ed)?|close[sd]?|resolve[sd]?|refs?|see)\s+#\d+\)?", "", s, flags=re.I)
    s = re.sub(r"\s*#\d+\b", "", s).strip().rstrip(".").strip()
    if _NOISE.search(s) or len(words(s)) < 4:
        return None
    return limit_words(s)


def parse_hunks(diff: str) -> dict[str, list[tuple[int, int]]]:
    """Old-side hunks per old path of a `git diff --unified=0` ({path: [(start, count), ...]}); files
    added or deleted have none."""
    out: dict[str, list[tuple[int, int]]] = {}
    old: str | None = None
    for line in diff.splitlines():
        if line.startswith("--- "):
            name = line[4:]
            old = name[2:] if name.startswith("a/") else None
            if old is not None and old.startswith('"'):
                old = None  # quoted (unusual characters): skipped
        elif line.startswith("+++ ") and line[4:] == "/dev/null":
            if old is not None:
                out.pop(old, None)
            old = None
        elif line.startswith("@@ ") and old is not None:
            m = re.match(r"@@ -(\d+)(?:,(\d+))? \+", line)
            if m:
                out.setdefault(old, []).append((int(m.group(1)), int(m.group(2) or "1")))
    return out


def chunks_for_hunks(chunks: list[ChunkSpan], hunks: list[tuple[int, int]]) -> list[tuple[int, ChunkSpan]]:
    """The chunks a change touched, with the number of changed old lines each holds (a pure insertion
    after line n counts for the chunk holding both n and n+1), most touched first. Unnamed blocks
    (imports, file headers) are not answers; of a definition's windows the most touched one is kept."""
    best: dict[tuple[str, str], tuple[int, int, ChunkSpan]] = {}
    for order, c in enumerate(chunks):
        if c.kind not in DEFINITION_KINDS and not (c.kind == "block" and c.symbol):
            continue
        weight = 0
        for start, count in hunks:
            if count > 0:
                weight += max(0, min(c.end_line, start + count - 1) - max(c.start_line, start) + 1)
            elif c.start_line <= start and start + 1 <= c.end_line:
                weight += 1
        if weight <= 0:
            continue
        key = (c.kind, c.symbol)
        if key not in best or weight > best[key][0]:
            best[key] = (weight, order, c)
    ranked = sorted(best.values(), key=lambda t: (-t[0], t[1]))
    return [(w, c) for w, _, c in ranked]


def excluded(path: str, prefixes: tuple[str, ...]) -> bool:
    """Whether a path lies under one of a repository's excluded prefixes (vendored code)."""
    return bool(prefixes) and path.startswith(prefixes)


def commit_candidates(git_dir: Path, commit: str, window: int) -> list[tuple[str, str, str]]:
    """(commit, first parent, cleaned subject) of the non-merge commits up to `commit`, newest first."""
    log = git(git_dir, "log", "--no-merges", f"-n{window}", "--format=%H%x1f%P%x1f%s", commit)
    out: list[tuple[str, str, str]] = []
    for line in log.splitlines():
        parts = line.split("\x1f")
        if len(parts) != 3 or not parts[1]:
            continue
        subject = clean_subject(parts[2])
        if subject is not None:
            out.append((parts[0], parts[1].split()[0], subject))
    return out


def commit_pairs(
    git_dir: Path,
    commit: str,
    blobs: BlobReader,
    rng: random.Random,
    limit: int = COMMITS_PER_REPO,
    exclude: tuple[str, ...] = (),
) -> Iterator[Pair]:
    """Commit subject -> the definition chunks it changed, cut from the parent snapshot. Paths under an
    `exclude` prefix (another project's code the repository carries) are not looked at."""
    cache: dict[str, tuple[str, list[ChunkSpan]] | None] = {}
    used = 0
    seen_subjects: set[str] = set()
    for sha, parent, subject in commit_candidates(git_dir, commit, COMMIT_WINDOW):
        if used >= limit:
            break
        if subject.lower() in seen_subjects:
            continue
        try:
            names = git(git_dir, "diff", "--name-only", "--no-renames", parent, sha).splitlines()
        except RuntimeError:
            continue  # the shallow snapshot lacks the parent
        source = [
            n
            for n in names
            if file_language(n) is not None and not is_test_path(n) and not excluded(n, exclude)
        ]
        if not source or len(names) > MAX_FILES_PER_COMMIT * 2 or len(source) > MAX_FILES_PER_COMMIT:
            continue
        try:
            diff = git(
                git_dir,
                "diff",
                "--unified=0",
                "--no-color",
                "--no-ext-diff",
                "-M",
                parent,
                sha,
                "--",
                *source,
            )
        except RuntimeError:
            continue
        touched: list[tuple[int, str, str, ChunkSpan]] = []
        for old_path, hunks in parse_hunks(diff).items():
            if file_language(old_path) is None or is_test_path(old_path) or excluded(old_path, exclude):
                continue
            blob = blobs.read(f"{parent}:{old_path}")
            if blob is None:
                continue
            blob_id, data = blob
            if blob_id not in cache:
                cache[blob_id] = file_chunks(old_path, data)
            cut = cache[blob_id]
            if cut is None:
                continue
            language, chunks = cut
            touched += [(w, old_path, language, c) for w, c in chunks_for_hunks(chunks, hunks)]
        if not touched:
            continue
        touched.sort(key=lambda t: -t[0])
        used += 1
        seen_subjects.add(subject.lower())
        for _, path, language, c in touched[:CHUNKS_PER_COMMIT]:
            yield Pair("commit", subject, path, language, c, c.text)
    del rng  # commits are taken newest first; the seed only shapes the caps


# ------------------------------------------------------------------ one repository


def head_files(git_dir: Path, commit: str) -> list[tuple[str, str]]:
    """(blob id, path) of the files of `commit` our discovery would index and we mine, sorted by path."""
    out = subprocess.run(
        ["git", "--git-dir", str(git_dir), "ls-tree", "-r", "-z", "--long", commit],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", "surrogateescape")
    files: list[tuple[str, str]] = []
    for item in out.split("\0"):
        meta, _, path = item.partition("\t")
        parts = meta.split()
        if len(parts) != 4 or parts[1] != "blob" or parts[0] not in ("100644", "100755"):
            continue
        if not parts[3].isdigit() or int(parts[3]) > DEFAULT_MAX_FILE_SIZE:  # "BAD": not in the snapshot
            continue
        if file_language(path) is not None:
            files.append((parts[2], path))
    return sorted(files, key=lambda f: f[1])


def pair_record(spec: dict[str, Any], pair: Pair) -> dict[str, Any]:
    return {
        "kind": pair.kind,
        "repo": spec["repo"],
        "language": pair.language,
        "query": pair.query,
        "path": pair.path,
        "symbol": pair.chunk.symbol,
        "chunk_kind": pair.chunk.kind,
        "text": pair.text,
    }


def select(pairs: Iterable[Pair], rng: random.Random, cap: int) -> list[Pair]:
    """De-duplicate (query + paired text) and keep a seeded sample of at most `cap`, in source order."""
    unique: dict[tuple[str, str], Pair] = {}
    for p in pairs:
        unique.setdefault((p.query.lower(), p.text), p)
    items = list(unique.values())
    if len(items) <= cap:
        return items
    keep = set(rng.sample(range(len(items)), cap))
    return [p for i, p in enumerate(items) if i in keep]


def mine_repo(
    spec: dict[str, Any], git_dir: Path, seed: int, log: Callable[[str], None] = print
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every pair of one repository (records) and its meta (counts per kind, files, seconds)."""
    started = time.perf_counter()
    commit = spec["commit"]
    blobs = BlobReader(git_dir)
    by_kind: dict[str, list[Pair]] = {k: [] for k in KINDS}
    index = FunctionIndex()
    cut: list[tuple[str, str, list[ChunkSpan]]] = []
    files = skipped = 0
    try:
        exclude = tuple(spec.get("exclude", ()))
        listed = [f for f in head_files(git_dir, commit) if not excluded(f[1], exclude)]
        if len(listed) > MAX_FILES:
            keep = set(random.Random(f"{seed}:{spec['repo']}:files").sample(range(len(listed)), MAX_FILES))
            listed = [f for i, f in enumerate(listed) if i in keep]
        for blob_id, path in listed:
            got = blobs.read(blob_id)
            made = file_chunks(path, got[1]) if got is not None else None
            if made is None:
                skipped += 1
                continue
            files += 1
            language, chunks = made
            cut.append((path, language, chunks))
            if not is_test_path(path):
                index.add(path, language, chunks)
        for path, language, chunks in cut:
            if is_test_path(path):
                by_kind["test"] += test_pairs(path, language, chunks, index)
                continue
            own = [c for c in chunks if not is_test_symbol(c.symbol)]
            by_kind["doc"] += doc_pairs(path, language, own)
            by_kind["comment"] += comment_pairs(path, language, own)
            by_kind["ident"] += ident_pairs(path, language, own)
            by_kind["test"] += test_pairs(
                path, language, [c for c in chunks if is_test_symbol(c.symbol)], index
            )
        head_seconds = time.perf_counter() - started
        rng = random.Random(f"{seed}:{spec['repo']}:commit")
        by_kind["commit"] = list(commit_pairs(git_dir, commit, blobs, rng, exclude=exclude))
    finally:
        blobs.close()
    records: list[dict[str, Any]] = []
    counts: dict[str, int] = {}
    raw: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    for kind in KINDS:
        rng = random.Random(f"{seed}:{spec['repo']}:{kind}")
        raw[kind] = len(by_kind[kind])
        kept = [p for p in select(by_kind[kind], rng, CAP_PER_KIND) if (p.query.lower(), p.text) not in seen]
        seen |= {(p.query.lower(), p.text) for p in kept}
        counts[kind] = len(kept)
        records += [pair_record(spec, p) for p in kept]
    languages = Counter(r["language"] for r in records)
    meta = {
        "repo": spec["repo"],
        "language": spec["language"],
        "split": spec.get("split", "train"),
        "commit": commit,
        "licence": spec.get("licence"),
        "files": files,
        "files_skipped": skipped,
        "raw": raw,
        "counts": counts,
        "pairs": len(records),
        "pair_languages": dict(sorted(languages.items())),
        "head_seconds": round(head_seconds, 1),
        "seconds": round(time.perf_counter() - started, 1),
    }
    return records, meta


# ------------------------------------------------------------------ manifest


def load_reserved(path: Path) -> set[str]:
    if not path.is_file():
        raise SystemExit(f"{path}: the reserved-repository list is missing (give --reserved)")
    lines = path.read_text().splitlines()
    return {line.strip().lower() for line in lines if line.strip() and not line.startswith("#")}


def refused(repo: str, reserved: set[str], held_out: set[str]) -> str | None:
    """Why a repository may not give training pairs (reserved, shares a reserved name, a bench
    validation/eval repository), or None."""
    name = repo.lower()
    if name in reserved or name.split("/")[-1] in {r.split("/")[-1] for r in reserved}:
        return "reserved for evaluation (or shares a reserved repository's name)"
    if name in held_out:
        return "a validation/eval repository of bench/training_repos.json or bench/make_validation_set.py"
    return None


def bench_held_out() -> set[str]:
    """Repositories the bench validates or evaluates on (never mined)."""
    held = {"sindresorhus/got", "urfave/cli", "effect-ts/effect", "npm/cli", "python/cpython"}
    path = ROOT / "bench" / "training_repos.json"
    if path.is_file():
        held |= {s["repo"].lower() for s in json.loads(path.read_text()) if s.get("split") != "train"}
    return held


def write_manifest(specs: list[dict[str, Any]], out: Path, seed: int) -> dict[str, Any]:
    """OUT/manifest.json: every mined repository's meta, pairs per split x kind x language, and the
    de-duplication across repositories: `unique` counts a (query, text) pair once over all repositories
    of a split (train first); `validation_text_in_train` counts validation pairs whose chunk text also
    occurs in a train pair (shared code between repositories)."""
    repos: list[dict[str, Any]] = []
    table: dict[str, dict[str, dict[str, int]]] = {}
    unique: Counter[str] = Counter()
    seen_pairs: set[bytes] = set()
    train_texts: set[bytes] = set()
    shared = 0
    ordered = sorted(specs, key=lambda s: s.get("split", "train") != "train")
    for spec in ordered:
        meta_path = out / f"{slug(spec['repo'])}.meta.json"
        if not meta_path.is_file():
            continue
        meta = json.loads(meta_path.read_text())
        repos.append(meta)
        split = meta.get("split", "train")
        path = out / f"{slug(spec['repo'])}.jsonl"
        with path.open() as fh:
            for line in fh:
                r = json.loads(line)
                cell = table.setdefault(split, {}).setdefault(r["kind"], {})
                cell[r["language"]] = cell.get(r["language"], 0) + 1
                text_key = hashlib.blake2b(
                    r["text"].encode("utf-8", "surrogatepass"), digest_size=16
                ).digest()
                key = hashlib.blake2b(r["query"].lower().encode("utf-8", "surrogatepass") + text_key).digest()
                if key not in seen_pairs:
                    seen_pairs.add(key)
                    unique[split] += 1
                if split == "train":
                    train_texts.add(text_key)
                elif text_key in train_texts:
                    shared += 1
    totals = {split: sum(sum(v.values()) for v in kinds.values()) for split, kinds in table.items()}
    licences = Counter(str(r["licence"]) for r in repos)
    by_language: dict[str, dict[str, int]] = {}
    for r in repos:
        cell = by_language.setdefault(r.get("split", "train"), {})
        cell[r["language"]] = cell.get(r["language"], 0) + 1
    data = {
        "seed": seed,
        "kinds": list(KINDS),
        "cap_per_kind": CAP_PER_KIND,
        "totals": totals,
        "unique": dict(unique),
        "validation_text_in_train": shared,
        "repositories": {split: sum(v.values()) for split, v in by_language.items()},
        "repositories_by_language": by_language,
        "licences": dict(sorted(licences.items())),
        "counts": table,
        "repos": repos,
    }
    (out / "manifest.json").write_text(json.dumps(data, indent=1) + "\n")
    return data


def format_table(counts: dict[str, dict[str, int]]) -> str:
    languages = sorted({lang for by in counts.values() for lang in by})
    head = "| kind | " + " | ".join(languages) + " | total |"
    lines = [head, "|" + "---|" * (len(languages) + 2)]
    col = Counter[str]()
    for kind in [k for k in KINDS if k in counts]:
        by = counts[kind]
        col.update(by)
        cells = [str(by.get(lang, 0)) for lang in languages]
        lines.append(f"| {kind} | " + " | ".join(cells) + f" | {sum(by.values())} |")
    lines.append(
        "| total | " + " | ".join(str(col[lang]) for lang in languages) + f" | {sum(col.values())} |"
    )
    return "\n".join(lines)


FIXTURE_LANGUAGES = frozenset(
    {"python", "javascript", "typescript", "go", "rust", "java", "c", "cpp", "csharp", "ruby", "php"}
    | {"kotlin", "swift", "scala"}
)


def quotas(counts: dict[Any, int], size: int) -> dict[Any, int]:
    """An equal share of `size` per cell, a cell with fewer items giving its rest to the others.

    >>> quotas({"a": 1, "b": 10, "c": 10}, 9)
    {'a': 1, 'b': 4, 'c': 4}
    """
    out: dict[Any, int] = {}
    left = size
    cells = sorted(counts, key=lambda k: (counts[k], str(k)))
    for i, cell in enumerate(cells):
        out[cell] = min(counts[cell], left // (len(cells) - i))
        left -= out[cell]
    return {k: out[k] for k in counts}


def sample_fixture(
    specs: list[dict[str, Any]], out: Path, dest: Path, size: int, seed: int, max_chars: int
) -> Counter[tuple[str, str]]:
    """A seeded sample of the train pairs, stratified over kind x language (an equal share per cell; the
    FIXTURE_LANGUAGES only, the few pairs of other languages such as a repository's SQL or shell scripts
    are left out), of pairs whose text is at most `max_chars` (keeps the committed file small)."""
    files = [out / f"{slug(s['repo'])}.jsonl" for s in specs if s.get("split", "train") == "train"]
    files = [f for f in files if f.is_file()]

    def records() -> Iterator[tuple[tuple[str, str], str]]:
        for path in files:
            with path.open() as fh:
                for line in fh:
                    r = json.loads(line)
                    if len(r["text"]) <= max_chars and r["language"] in FIXTURE_LANGUAGES:
                        yield (r["kind"], r["language"]), line

    counts = Counter(cell for cell, _ in records())
    share = quotas(dict(counts), size)
    rng = random.Random(f"{seed}:fixture")
    chosen = {cell: set(rng.sample(range(counts[cell]), share[cell])) for cell in sorted(counts)}
    seen: Counter[tuple[str, str]] = Counter()
    kept: Counter[tuple[str, str]] = Counter()
    dest.parent.mkdir(parents=True, exist_ok=True)
    with dest.open("w") as fh:
        for cell, line in records():
            if seen[cell] in chosen[cell]:
                fh.write(line)
                kept[cell] += 1
            seen[cell] += 1
    return kept


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos", type=Path, default=HERE / "repos.json")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--reserved", type=Path, default=RESERVED)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split", action="append", help="only these splits (train, validation)")
    parser.add_argument("--repo", action="append", help="only these repositories (owner/name)")
    parser.add_argument("--force", action="store_true", help="mine repositories whose output exists again")
    parser.add_argument("--manifest-only", action="store_true", help="only (re)write manifest.json")
    parser.add_argument("--fixture", type=Path, help="write a stratified sample of the train pairs here")
    parser.add_argument("--fixture-size", type=int, default=2000)
    parser.add_argument("--fixture-max-chars", type=int, default=1200)
    args = parser.parse_args()
    specs = json.loads(args.repos.read_text())
    reserved, held = load_reserved(args.reserved), bench_held_out()
    for spec in specs:
        why = refused(spec["repo"], reserved, held)
        if why is not None:
            raise SystemExit(f"{spec['repo']}: {why}")
        if not spec.get("licence"):
            raise SystemExit(f"{spec['repo']}: no permissive licence recorded")
    args.out.mkdir(parents=True, exist_ok=True)
    selected = [
        s
        for s in specs
        if (not args.split or s.get("split", "train") in args.split)
        and (not args.repo or s["repo"] in args.repo)
    ]
    if args.fixture is not None:
        kept = sample_fixture(
            specs, args.out, args.fixture, args.fixture_size, args.seed, args.fixture_max_chars
        )
        table: dict[str, dict[str, int]] = {}
        for (kind, language), n in kept.items():
            table.setdefault(kind, {})[language] = n
        print(f"{sum(kept.values())} pairs -> {args.fixture}\n{format_table(table)}")
        return 0
    if not args.manifest_only:
        for n, spec in enumerate(selected, 1):
            target = args.out / f"{slug(spec['repo'])}.jsonl"
            if target.is_file() and not args.force:
                continue
            git_dir = args.mirrors / slug(spec["repo"]) / "repo"
            if not git_dir.is_dir():
                print(f"[{n}/{len(selected)}] {spec['repo']}: no mirror at {git_dir}", flush=True)
                continue
            licence, _ = detect_licence(git_dir, spec["commit"])
            if licence is None or licence != spec["licence"]:
                print(
                    f"[{n}/{len(selected)}] {spec['repo']}: licence {licence!r} != {spec['licence']!r}; "
                    "skipped"
                )
                continue
            try:
                records, meta = mine_repo(spec, git_dir, args.seed)
            except Exception as exc:  # one repository's surprise must not stop the run; it stays unmined
                print(f"[{n}/{len(selected)}] {spec['repo']}: FAILED {type(exc).__name__}: {exc}", flush=True)
                continue
            tmp = target.with_suffix(".jsonl.tmp")
            with tmp.open("w") as fh:
                for r in records:
                    fh.write(json.dumps(r, ensure_ascii=False) + "\n")
            (args.out / f"{slug(spec['repo'])}.meta.json").write_text(json.dumps(meta, indent=1) + "\n")
            tmp.replace(target)
            print(
                f"[{n}/{len(selected)}] {spec['repo']:<40} {meta['files']:>5} files {meta['pairs']:>6} pairs "
                f"{meta['counts']} {meta['seconds']:.0f}s",
                flush=True,
            )
    data = write_manifest(specs, args.out, args.seed)
    for split, counts in data["counts"].items():
        print(f"\n{split}: {data['totals'][split]} pairs\n{format_table(counts)}")
    print(f"\nunique (query, text) pairs across repositories: {data['unique']}")
    print(f"validation pairs whose chunk text also occurs in train: {data['validation_text_in_train']}")
    print(f"repositories: {data['repositories_by_language']}")
    print(f"licences: {data['licences']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
