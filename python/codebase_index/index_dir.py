"""The index folder itself: created with a `.gitignore` of its own so `git add -A` never commits the
SQLite files, vectors, locks or logs kept there (also in projects whose own .gitignore does not name it)."""

from __future__ import annotations

import os
from pathlib import Path

from .private_files import FILE_MODE, make_private_dir

GITIGNORE = ".gitignore"
GITIGNORE_TEXT = "# Written by codebase-index: nothing in its index folder belongs in git.\n*\n"


def make_index_dir(index_dir: Path) -> None:
    """Create `index_dir` (and parents) and its `.gitignore`; an index folder made by an older version
    gets one too. Never in a folder that is a git work tree's root (an index dir set to the project
    itself would otherwise hide the whole project from git), never over an existing file."""
    make_private_dir(index_dir)  # 0700 whatever the umask (`private_files`)
    guard = index_dir / GITIGNORE
    if guard.exists() or (index_dir / ".git").exists():
        return
    try:
        fd = os.open(guard, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except OSError:
        return  # created meanwhile by another process, or a read-only folder: the index works anyway
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(GITIGNORE_TEXT)
