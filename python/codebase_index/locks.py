"""Advisory file locks shared by the background jobs (embedding, graph extraction): one job per index across
processes, released by the OS when the holder dies, so a killed sidecar never leaves a stale lock."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from .private_files import open_lock


@contextlib.contextmanager
def file_lock(path: Path, *, wait: bool) -> Iterator[bool]:
    """Hold an exclusive flock on `path` (created if missing); yields False when `wait` is off and another
    holder has it."""
    fd = open_lock(path)  # 0600 whatever the umask; read-only where it cannot be written
    try:
        if wait:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield True
        else:
            yield try_exclusive(fd)
    finally:
        os.close(fd)


def try_exclusive(fd: int) -> bool:
    """Take an exclusive flock on `fd` without waiting: False when another holder has it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise
        return False
    return True
