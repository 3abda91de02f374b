"""Reading the small files a repository controls (ignore files, git's HEAD and refs, go.mod) safely.

A cloned repository decides what these paths are: a FIFO (a plain `open()` waits for a writer forever),
a link to `/dev/zero` (a plain `read()` fills memory), or a link to a file outside the project. Every such
read goes through `read_small`: non-blocking open, regular files only, at most `limit` bytes, and, unless
the caller follows links on purpose (git's own `gitdir:` pointers), no link as the last component.
"""

from __future__ import annotations

import os
import stat

SMALL_FILE_LIMIT = 4 * 1_048_576
"""Larger metadata files are not read: no ignore file, HEAD or go.mod is anywhere near this."""


def read_small(
    path: str | os.PathLike[str], *, limit: int = SMALL_FILE_LIMIT, follow: bool = False
) -> str | None:
    """The text of a regular file of at most `limit` bytes (decoded as UTF-8, bad bytes replaced), or None
    when it is missing, unreadable, not a regular file, a link (unless `follow`) or too large."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        return None
    return data.decode("utf-8", errors="replace")
