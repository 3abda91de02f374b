"""What changed, from git: the lines of each file changed since a commit or date (working tree included),
for the `changedSince` / `changedBefore` filters and for change impact.

`changed_lines(root, since)` diffs the working tree against the commit `since` names (a revision, or the
last commit before a date: `2026-11-01`, `2 weeks ago`), with zero context, so every hunk is exactly the
new-side lines that differ; untracked files count as changed throughout. Paths are relative to `root`.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's empty tree: "everything is new"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
WHOLE_FILE = (1, 10**9)
_DATE_LIKE = re.compile(
    r"\d|\b(ago|now|today|yesterday|noon|midnight|last|(mon|tues|wednes|thurs|fri|satur|sun)day)\b",
    re.IGNORECASE,
)


class GitError(ValueError):
    """git is missing, the folder is not a repository, or the revision/date names nothing."""


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, timeout=60, errors="replace"
        )
    except FileNotFoundError as exc:
        raise GitError("git is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git {args[0]} timed out") from exc
    if done.returncode != 0:
        raise GitError(
            done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"git {args[0]} failed"
        )
    return done.stdout


def resolve_base(root: Path, since: str) -> str:
    """The commit `since` names: a revision (`HEAD~3`, a tag, a sha), else the last commit before the
    date it names; the empty tree when the date is older than the history."""
    since = since.strip()
    if not since or since.startswith("-"):
        raise GitError(f"not a revision or date: {since!r}")
    try:
        _git(root, "rev-parse", "--is-inside-work-tree")
    except GitError as exc:
        raise GitError(f"{root} is not inside a git repository ({exc})") from exc
    try:
        return _git(root, "rev-parse", "--verify", "--quiet", f"{since}^{{commit}}").strip()
    except GitError:
        pass
    # A date: git parses "2026-11-01", "2 weeks ago", "yesterday"; --before keeps commits at or before it.
    # git reads any text as some date (unknown words as "now"), so a date must look like one.
    if not _DATE_LIKE.search(since):
        raise GitError(f"{since!r} is neither a revision nor a date (e.g. 2026-11-01, '2 weeks ago')")
    found = _git(root, "rev-list", "-1", f"--before={since}", "HEAD").strip()
    return found or EMPTY_TREE


@dataclass
class Changes:
    """Changed new-side line ranges per path (inclusive), and the base they were diffed against."""

    base: str
    lines: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def touches(self, path: str, start: int, end: int) -> bool:
        return any(a <= end and start <= b for a, b in self.lines.get(path, ()))

    def paths(self) -> list[str]:
        return sorted(self.lines)


def parse_diff(text: str) -> dict[str, list[tuple[int, int]]]:
    """New-side changed line ranges per file of a `git diff -U0` (deleted files are left out; a pure
    deletion inside a file marks the line after it, where the code now differs)."""
    out: dict[str, list[tuple[int, int]]] = {}
    path: str | None = None
    for line in text.splitlines():
        if line.startswith("+++ "):
            target = line[4:].strip()
            path = None if target == "/dev/null" else target.removeprefix("b/")
            if path is not None:
                out.setdefault(path, [])
        elif line.startswith("@@") and path is not None:
            m = _HUNK.match(line)
            if not m:
                continue
            start = int(m.group(3))
            count = int(m.group(4)) if m.group(4) is not None else 1
            if count == 0:  # lines removed after `start`: the code around it changed
                out[path].append((max(1, start), max(1, start) + 1))
            else:
                out[path].append((start, start + count - 1))
    return out


def changed_lines(root: Path, since: str, until: str | None = None) -> Changes:
    """Lines changed after `since` (a revision or date): up to the working tree, or up to `until`."""
    base = resolve_base(root, since)
    args = ["diff", "-U0", "--no-color", "--no-renames", "--no-ext-diff", "--relative", base]
    if until is not None:
        args.append(resolve_base(root, until))
    changes = Changes(base, parse_diff(_git(root, *args)))
    if until is None:
        for path in _git(root, "ls-files", "--others", "--exclude-standard").splitlines():
            if path:
                changes.lines[path] = [WHOLE_FILE]
    return changes


def time_filter(
    root: Path, changed_since: str | None, changed_before: str | None
) -> Callable[[str, int, int], bool] | None:
    """A (path, start, end) -> bool predicate: code changed after `changed_since` and/or not changed
    since `changed_before` (every line's last change is older, as blame would say); None when neither."""
    if not changed_since and not changed_before:
        return None
    after = changed_lines(root, changed_since) if changed_since else None
    before = changed_lines(root, changed_before) if changed_before else None

    def allow(path: str, start: int, end: int) -> bool:
        if after is not None and not after.touches(path, start, end):
            return False
        return not (before is not None and before.touches(path, start, end))

    return allow
