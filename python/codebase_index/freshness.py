"""How fresh an answer is: the branch and commit the index reflects, the commit checked out now, and
files changed on disk since (as the watcher knows them). Cheap by design, it runs on every answer: two or
three small git files read, no hashing, no directory walk. Stale answers shown as fresh after a branch
switch or a pull are what users of every peer tool complain about most.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from .bounded_read import read_small
from .git import common_dir, git_dir

_REF = re.compile(r"refs/[A-Za-z0-9._/+@-]{1,240}")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
HEAD_META = "head:"  # meta key prefix: `head:<catalog>` = the commit its last full run indexed
SHORT = 10


class Freshness(msgspec.Struct, rename="camel", omit_defaults=True):
    branch: str
    commit: str | None = None  # the commit the index reflects (None outside git or before recorded)
    head: str | None = None  # the commit checked out now
    changed_files: int = 0  # saves the watcher has seen and not re-indexed yet
    reindexing: bool = False

    @property
    def stale(self) -> bool:
        moved = self.commit is not None and self.head is not None and self.commit != self.head
        return moved or self.changed_files > 0


def head_commit(root: Path) -> str | None:
    """The commit HEAD names, from the git files (loose ref, then packed-refs); None outside git."""
    gdir = git_dir(root)
    if gdir is None:
        return None
    head = (read_small(gdir / "HEAD", follow=True) or "").strip()
    if not head.startswith("ref:"):
        return _commit_id(head)  # detached: HEAD holds the commit itself
    ref = head[len("ref:") :].strip()
    if not _REF.fullmatch(ref) or ".." in ref:
        return None  # not a ref git would write: never a path read outside the git folder
    common = common_dir(gdir)
    for folder in (gdir, common):
        loose = (read_small(folder / ref, follow=True) or "").strip()
        if loose:
            return _commit_id(loose)
    packed = read_small(common / "packed-refs", follow=True) or ""
    for line in packed.splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref:
            return _commit_id(sha)
    return None  # a branch with no commit yet


def _commit_id(text: str) -> str | None:
    """A commit id (SHA-1 or SHA-256 hex) or None: whatever else a git file holds is never echoed."""
    return text if _COMMIT.fullmatch(text) else None


def line(f: Freshness) -> str:
    """One line: `index: main @ 1a2b3c4d5e, current` or what makes it stale."""
    at = f"{f.branch} @ {f.commit[:SHORT]}" if f.commit else f.branch
    problems = []
    if f.commit and f.head and f.commit != f.head:
        problems.append(f"HEAD is now {f.head[:SHORT]}")
    if f.changed_files:
        problems.append(f"{f.changed_files} file(s) changed since")
    if not problems:
        return f"index: {at}, current"
    tail = "; re-indexing now" if f.reindexing else ""
    return f"stale: the index reflects {at}; {', '.join(problems)}{tail}"
