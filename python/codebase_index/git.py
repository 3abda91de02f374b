"""Which branch (or commit) a checkout is on, read straight from the git files (no git binary needed).

The index keys file membership by this name, so it must be right for plain checkouts, linked worktrees
(`.git` is a file pointing at the real git dir) and detached HEADs (keyed by commit). The files are read
with `bounded_read.read_small`: a repository's `.git` may be anything (a FIFO, a link to /dev/zero).

A linked worktree has two git folders: its own (`<common>/worktrees/<name>`, holding HEAD) and the
common one (holding refs and packed-refs, named by the `commondir` file). Branch listing and the
watcher need both.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from .bounded_read import read_small

NO_GIT_BRANCH = "default"
DETACHED_PREFIX = "detached:"


def git_dir(root: Path) -> Path | None:
    """The git directory of the checkout at `root`, following a worktree's `.git` file."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():
        first = (read_small(dot_git, follow=True) or "").strip()
        if first.startswith("gitdir:"):
            target = Path(first[len("gitdir:") :].strip())
            if not target.is_absolute():
                target = (root / target).resolve()
            return target if target.is_dir() else None
    return None


def common_dir(gdir: Path) -> Path:
    """The folder holding refs for the git dir `gdir` (itself, or what a worktree's `commondir` says)."""
    raw = (read_small(gdir / "commondir", follow=True) or "").strip()
    if not raw:
        return gdir
    target = Path(raw)
    if not target.is_absolute():
        target = (gdir / target).resolve()
    return target if target.is_dir() else gdir


def current_branch(root: Path) -> str:
    """`main`, `feature/x`, `detached:<sha>` for a detached HEAD, or `default` outside git."""
    gdir = git_dir(root)
    if gdir is None:
        return NO_GIT_BRANCH
    text = read_small(gdir / "HEAD", follow=True)
    if text is None:
        return NO_GIT_BRANCH
    head = text.strip()
    if head.startswith("ref:"):
        ref = head[len("ref:") :].strip()
        return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref
    if head:
        return f"{DETACHED_PREFIX}{head}"
    return NO_GIT_BRANCH


def _signature(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class BranchReader:
    """`current_branch(root)` for a caller that asks on every request (the engine, per search): read again
    only when `.git` or the HEAD file changed (mtime, size or inode: git replaces HEAD by a rename), so
    most calls cost two stat calls instead of resolving the git dir and reading HEAD (~20 us)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._dot_git = str(root / ".git")
        self._head: str | None = None
        self._key: tuple[tuple[int, int, int] | None, tuple[int, int, int] | None] | None = None
        self._branch = NO_GIT_BRANCH
        self._lock = threading.Lock()

    def __call__(self) -> str:
        head_path = self._head
        try:
            dot_git: tuple[int, int, int] | None = _signature(self._dot_git)
        except OSError:
            dot_git = None  # not a git checkout (or not yet): cached too, `git init` changes this
        try:
            head = _signature(head_path) if head_path else None
        except OSError:
            head, head_path = None, "\0"  # HEAD moved: read afresh, cache next time
        key = (dot_git, head)
        with self._lock:  # the key and the branch it was read with are replaced together
            if key == self._key:
                return self._branch
            # The signatures were taken before the read: a change during it shows as a new key next time.
            gdir = git_dir(self.root)
            self._head = str(gdir / "HEAD") if gdir is not None else None
            self._branch = current_branch(self.root)
            # Cached only if HEAD was found where the key looked for it (not on a first or moved read).
            self._key = key if self._head == head_path else None
            return self._branch


def local_branches(root: Path) -> set[str] | None:
    """Names of every local branch (loose refs under refs/heads plus packed-refs), or None outside git.

    Used to garbage-collect the catalog of branches whose ref was deleted.
    """
    gdir = git_dir(root)
    if gdir is None:
        return None
    common = common_dir(gdir)
    names: set[str] = set()
    heads = common / "refs" / "heads"
    for dirpath, _dirnames, filenames in os.walk(heads):
        rel_dir = os.path.relpath(dirpath, heads)
        for name in filenames:
            names.add(name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/"))
    packed = read_small(common / "packed-refs", follow=True) or ""
    for line in packed.splitlines():
        parts = line.split(" ", 1)
        if len(parts) == 2 and parts[1].startswith("refs/heads/"):
            names.add(parts[1][len("refs/heads/") :].strip())
    return names


def worktree_heads(root: Path) -> set[str]:
    """What every worktree sharing this repository has checked out (branch names or `detached:<sha>`).

    A branch checked out in another worktree is live even when this checkout is elsewhere.
    """
    gdir = git_dir(root)
    if gdir is None:
        return set()
    common = common_dir(gdir)
    head_files = [common / "HEAD"]
    try:
        with os.scandir(common / "worktrees") as it:
            head_files.extend(Path(e.path) / "HEAD" for e in it if e.is_dir())
    except OSError:
        pass  # no linked worktrees
    out: set[str] = set()
    for head_file in head_files:
        text = read_small(head_file, follow=True)
        if text is None:
            continue
        head = text.strip()
        if head.startswith("ref:"):
            ref = head[len("ref:") :].strip()
            out.add(ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref)
        elif head:
            out.add(f"{DETACHED_PREFIX}{head}")
    return out


def watch_targets(root: Path) -> tuple[Path, ...]:
    """Folders whose changes can mean a branch switch: this checkout's git dir (HEAD) and the common
    dir's refs (a branch created, deleted or moved). Empty outside git."""
    gdir = git_dir(root)
    if gdir is None:
        return ()
    common = common_dir(gdir)
    targets = [gdir]
    if common != gdir:
        targets.append(common)
    return tuple(targets)


PROJECT_MARKERS: tuple[str, ...] = (
    ".git",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "go.mod",
    "Cargo.toml",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "Gemfile",
    "composer.json",
    "deno.json",
    "mix.exs",
    "Makefile",
    "CMakeLists.txt",
    ".opencode",
    ".codebase-index",
    ".hg",
    ".svn",
)


def project_marker(root: Path) -> str | None:
    """The first project marker found directly in `root`, or None (e.g. a home directory)."""
    for name in PROJECT_MARKERS:
        if (root / name).exists():
            return name
    return None
