"""Query styles the ranker's training sets add to make_validation_set.py's four (description, identifier,
error, snippet): errors pasted with extra words or cut short, snippets with their identifiers renamed,
relation questions answered by the code graph ("who calls X" -> X's callers) and change descriptions
(a commit's message -> the non-test files it changed, searched over the parent snapshot).

Pure functions of their inputs and a seeded `random.Random`, so a set rebuilds identically.
"""

from __future__ import annotations

import random
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

# ------------------------------------------------------------------ pasted errors

_ERROR_TEMPLATES = (
    "{kind}: {message}",
    "getting {kind}: {message} when I run it",
    "error: {message}",
    "why do I get {quoted}",
    "{message} at runtime",
    "it fails with {quoted}, how do I fix this",
    "seeing this in the logs: {message}",
    "{kind} {quoted} after upgrading",
    "failed: {message}",
)
_GO_TEMPLATES = (
    "panic: {message}",
    "error: {message}",
    "got err {quoted}",
    "Error: {message} (exit status 1)",
)


def partial_message(message: str, rng: random.Random) -> str:
    """A contiguous part of a message (at least 3 words and half of it), as users paste a cut line."""
    words = message.split()
    if len(words) < 5 or rng.random() < 0.4:
        return message
    size = rng.randint(max(3, (len(words) + 1) // 2), len(words) - 1)
    start = rng.randint(0, len(words) - size)
    return " ".join(words[start : start + size])


def pasted_error(message: str, kind: str, language: str, rng: random.Random) -> str:
    """An error message the way it is pasted into a question: exception name, extra words, partial."""
    part = partial_message(message, rng)
    templates = _GO_TEMPLATES if language == "go" or not kind else _ERROR_TEMPLATES
    if language == "python" and kind:
        templates += ("Traceback (most recent call last): ... {kind}: {message}",)
    template = rng.choice([t for t in templates if kind or "{kind}" not in t] or ["{message}"])
    return template.format(kind=kind, message=part, quoted=f'"{part}"')


def pasted_part(query: str, message: str) -> str:
    """The longest run of the message's words the (pasted) query holds verbatim: what the user pasted of
    it (`pasted_error` keeps a contiguous part of at least 3 words).

    >>> pasted_part('it fails with "n must be", how do I fix this', "n must be at least 1")
    'n must be'
    """
    words = message.split()
    for size in range(len(words), 0, -1):
        for start in range(len(words) - size + 1):
            part = " ".join(words[start : start + size])
            if part in query:
                return part
    return ""


def same_message_raisers(part: str, errors_by_def: Sequence[tuple[T, Sequence[str]]]) -> list[T]:
    """The definitions whose error messages hold `part` (whole words, in order): a pasted message that
    several definitions raise is answered by any of them, so each is a target.

    >>> same_message_raisers("must be at least 1", [("a", ["n must be at least 1"]), ("b", ["must be > 0"])])
    ['a']
    """
    wanted = part.split()
    n = len(wanted)
    if not n:
        return []
    return [
        d
        for d, errors in errors_by_def
        if any(any(m[i : i + n] == wanted for i in range(len(m) - n + 1)) for m in map(str.split, errors))
    ]


# ------------------------------------------------------------------ renamed snippets

_KEYWORD_TEXT = """
    and as assert async await break case catch class const continue def default defer del delete do
    elif else elsif end enum except export extends false final finally fn for foreach from func function
    go goto if impl implements import in instanceof interface is lambda let loop match mod module mut
    namespace new nil none not null or package pass private protected pub public raise range return
    self static struct super switch this throw throws trait true try type typeof unless until use val
    var void when where while with yield int bool string str char float double long byte usize isize u8
    u16 u32 u64 i8 i16 i32 i64 f32 f64 err ok some echo array unsigned signed sizeof override virtual
    object fun internal open data sealed companion init get set require include begin rescue ensure"""
_KEYWORDS = frozenset(_KEYWORD_TEXT.split())
_FRESH = ("value", "item", "result", "tmp", "entry", "obj", "elem", "cur", "acc", "buf", "arg", "res")
_FRESH += ("thing", "node", "part", "target", "source", "other", "ctx", "input", "output", "state")
_WORD = re.compile(r"(?<![\w.@>:])([a-z_][a-zA-Z0-9_]*)(?![\w(])")  # PHP `$name` is renamed too


_LITERAL = re.compile(r"""("(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`[^`]*`|//[^\n]*|#[^\n{]*$)""", re.M)


def rename_snippet(snippet: str, rng: random.Random) -> str | None:
    """The snippet with its local-looking identifiers (lower-case, not called, not attributes, not
    keywords) renamed consistently, as code pasted from a similar place; None when nothing to rename."""
    code = "".join(p for i, p in enumerate(_LITERAL.split(snippet)) if i % 2 == 0)
    names = sorted({m.group(1) for m in _WORD.finditer(code)} - _KEYWORDS)
    names = [n for n in names if len(n) >= 2 and not n.startswith("__")]
    if not names:
        return None
    chosen = rng.sample(names, max(1, min(len(names), round(len(names) * 0.7))))
    used = set(re.findall(r"\w+", snippet))
    fresh = [f for f in _FRESH if f not in used]
    rng.shuffle(fresh)
    mapping: dict[str, str] = {}
    for i, name in enumerate(chosen):
        mapping[name] = fresh[i] if i < len(fresh) else f"v{i}"
    pieces = _LITERAL.split(snippet)  # odd pieces are string literals and comments: left as they are
    renamed = "".join(
        piece if i % 2 else _WORD.sub(lambda m: mapping.get(m.group(1), m.group(1)), piece)
        for i, piece in enumerate(pieces)
    )
    return renamed if renamed != snippet else None


# ------------------------------------------------------------------ relation questions

_RELATION_TEMPLATES = (
    "who calls {name}",
    "which functions call {name}?",
    "where is {name} called",
    "what calls {name}",
    "find the callers of {name}",
    "where is {name} used",
    "which code invokes {name}()",
    "show me the call sites of {name}",
)


def relation_question(name: str, rng: random.Random) -> str:
    return rng.choice(_RELATION_TEMPLATES).format(name=name)


# ------------------------------------------------------------------ change descriptions

_SKIP_MESSAGE = re.compile(
    r"\b(bump|bumps|bumped|release|releasing|released|version|changelog|typos?|spelling|misspell\w*|merge|"
    r"revert|prepare|lint|linting|linter|formatting|reformat\w*|prettier|rubocop|clippy|whitespace|"
    r"copyright|license|readme|docs?|documentation|dependabot|renovate|deps|dependencies|upgrade|"
    r"docstrings?|clarify|wording|wip|cleanup|clean up|minor|nit|nits|tests?|ci|coverage|"
    r"benchmark\w*)\b",
    re.I,
)
_PREFIX = re.compile(r"^\s*(\[[^\]]*\]\s*|:[a-z_]+:\s*|[a-zA-Z]+(\([^)]*\))?!?:\s+)+")
_TRAILER = re.compile(r"\s*(\(#\d+\)|#\d+|\(\s*(fixes|closes|refs?)\s+#\d+\s*\)|\[skip ci\])\s*$", re.I)


def clean_subject(subject: str) -> str | None:
    """A commit subject as a change request: conventional prefix, tags and PR numbers dropped; None
    when it is not informative (release, bump, typo, formatting, docs, tests, merges...)."""
    text = _PREFIX.sub("", subject).strip()
    for _ in range(3):
        text = _TRAILER.sub("", text).strip()
    text = text.rstrip(".").strip()
    words = text.split()
    if not 4 <= len(words) <= 30 or _SKIP_MESSAGE.search(text) or not re.search(r"[a-zA-Z]{3}", text):
        return None
    if re.fullmatch(r"[\W\d_]+", text) or text.lower().startswith(("merge", "revert")):
        return None
    return text[0].upper() + text[1:]


@dataclass
class Change:
    commit: str
    parent: str
    time: int
    subject: str
    query: str
    files: list[str]  # modified non-test source files: the targets, present in the parent snapshot


def _log(git_dir: Path, commit: str, window: int) -> str:
    fmt = "%x1e%H%x1f%P%x1f%at%x1f%an%x1f%s%x1f"
    cmd = ["git", "--git-dir", str(git_dir), "log", "--no-merges", f"-n{window}", f"--format={fmt}"]
    cmd += ["--name-status", "--no-renames", commit]
    return subprocess.run(cmd, check=True, capture_output=True, text=True, errors="replace").stdout


def candidate_changes(
    git_dir: Path,
    commit: str,
    *,
    window: int,
    is_source: object,
    is_test: object,
    max_targets: int = 5,
) -> list[Change]:
    """Non-merge commits among the last `window` before `commit` that modify 1-`max_targets` non-test
    source files, add at most one, delete none, touch at most 15 files, and say something informative."""
    assert callable(is_source) and callable(is_test)
    out: list[Change] = []
    for record in _log(git_dir, commit, window).split("\x1e")[1:]:
        fields = record.split("\x1f")
        if len(fields) < 6:
            continue
        sha, parents, when, author, subject, rest = fields[:6]
        if len(parents.split()) != 1 or "bot" in author.lower():
            continue
        query = clean_subject(subject)
        if query is None:
            continue
        changed = [line.split("\t") for line in rest.strip().splitlines() if "\t" in line]
        if not changed or len(changed) > 15:
            continue
        source = [(s, p[0]) for s, *p in changed if p and is_source(p[0]) and not is_test(p[0])]
        modified = [path for status, path in source if status == "M"]
        added = [path for status, path in source if status == "A"]
        if not 1 <= len(modified) <= max_targets or len(added) > 1 or any(s == "D" for s, _ in source):
            continue
        out.append(Change(sha, parents.strip(), int(when), subject.strip(), query, sorted(modified)))
    return out


def pick_changes(candidates: list[Change], k: int, rng: random.Random) -> list[Change]:
    """`k` changes sampled (seeded), distinct queries and parents, in commit-time order (so each parent
    snapshot differs little from the one indexed before it)."""
    seen_queries: set[str] = set()
    seen_parents: set[str] = set()
    unique = []
    for c in candidates:
        if c.query.lower() in seen_queries or c.parent in seen_parents:
            continue
        seen_queries.add(c.query.lower())
        seen_parents.add(c.parent)
        unique.append(c)
    chosen = rng.sample(unique, min(k, len(unique)))
    return sorted(chosen, key=lambda c: (c.time, c.commit))
