"""Which branch (or commit) a checkout is on, read straight from the git files (no git binary needed).

The index keys file membership by this name, so it must be right for plain checkouts, linked worktrees
(`.git` is a file pointing at the real git dir) and detached HEADs (keyed by commit).
"""

from __future__ import annotations

from pathlib import Path

NO_GIT_BRANCH = "default"


def git_dir(root: Path) -> Path | None:
    """The git directory of the checkout at `root`, following a worktree's `.git` file."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git
    if dot_git.is_file():
        try:
            first = dot_git.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return None
        if first.startswith("gitdir:"):
            target = Path(first[len("gitdir:") :].strip())
            if not target.is_absolute():
                target = (root / target).resolve()
            return target if target.is_dir() else None
    return None


def current_branch(root: Path) -> str:
    """`main`, `feature/x`, `detached:<sha>` for a detached HEAD, or `default` outside git."""
    gdir = git_dir(root)
    if gdir is None:
        return NO_GIT_BRANCH
    try:
        head = (gdir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return NO_GIT_BRANCH
    if head.startswith("ref:"):
        ref = head[len("ref:") :].strip()
        return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref
    if head:
        return f"detached:{head}"
    return NO_GIT_BRANCH
