"""Folders and files this program creates for itself (index folders, their databases, locks, logs and
ledgers, the repository registry, model caches) are the user's alone: folders 0700, files 0600, whatever
the umask. Under umask 000 a folder made with the default mode is world-writable, and anyone on the
machine could swap the database an agent reads its answers from.

Explicit modes, not a process umask: the umask is process-wide (other threads, the host of a library
call) and setting it is a race. `os.open`'s and `mkdir`'s modes are masked by the umask, which only ever
removes bits, so 0600 can never come out wider; folders are chmod-ed after mkdir so they are exactly
0700. SQLite gives the -wal and -shm files the permissions of their database file, so a database this
creates first with `create_private` keeps all three private.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def make_private_dir(path: Path) -> None:
    """`mkdir -p path`: every folder this creates is 0700; folders that exist are left as they are (a
    project's own `.opencode`, a shared index folder the user set up)."""
    missing: list[Path] = []
    folder = path
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, FOLDER_MODE)
        except FileExistsError:
            continue  # made meanwhile by another process: its mode is its maker's
        os.chmod(folder, FOLDER_MODE)
    if not path.is_dir():
        raise NotADirectoryError(f"not a directory: {path}")


def open_private(path: Path, flags: int = os.O_RDWR) -> int:
    """`os.open` that creates a missing file 0600 (an existing file keeps its mode): for lock files."""
    return os.open(path, flags | os.O_CREAT | _CLOEXEC, FILE_MODE)


def open_lock(path: Path) -> int:
    """A lock file's descriptor for `flock`: created 0600 when missing, else opened read-only where this
    process may not write it (a read-only index folder: `flock` needs no write access)."""
    try:
        return open_private(path)
    except PermissionError:
        return os.open(path, os.O_RDONLY | _CLOEXEC)


def create_private(path: Path) -> bool:
    """Create `path` empty and 0600 unless it exists (True when this call created it): a file another
    library then fills, such as a SQLite database."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, FILE_MODE)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def write_private(path: Path, data: bytes) -> None:
    """Write `path` whole, 0600 even when a file with a wider mode was there (a stale temporary)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def replace_private(path: Path, data: bytes) -> None:
    """Atomically replace `path` with `data`, 0600 (written beside it, then renamed over it)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        write_private(tmp, data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def chmod_private(path: Path) -> None:
    """0600 for a file a library wrote with its own default mode (an ANN index, an ONNX model)."""
    os.chmod(path, FILE_MODE)
