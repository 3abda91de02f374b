"""Where a project's index lives by default: `<project>/.codebase-index/`, or the user cache where the project
folder is read-only. Not under `.opencode/`: OpenCode installs its plugin dependencies (npm) into any
`.opencode/` folder it finds, so an index there made it write node_modules into the user's project.

An index left at the old place, `<project>/.opencode/index`, is moved over once (a rename: the vectors stay,
nothing is re-embedded). A repository is untrusted: the move never follows a link, never touches anything
outside the project and never deletes a user's file; when it cannot be done safely it is skipped with a
warning and the engine keeps working. An explicit `--index-dir` and `"scope": "global"` are not affected.
The user-cache place is chosen afresh on every start: a project that becomes writable again gets a new
index in `.codebase-index` (the cached one is then unused).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

from .index_dir import GITIGNORE, GITIGNORE_TEXT
from .locks import try_exclusive
from .private_files import open_private

log = logging.getLogger("codebase_index.index_home")

INDEX_DIR_NAME = ".codebase-index"
LEGACY_PARTS = (".opencode", "index")
MIGRATION_LOCK = "sidecar.lock"  # the old sidecar held it for its whole life: held means "in use"
MIGRATION_WAIT = 2.0  # seconds a process waits for another one's move (a rename: microseconds)


class IndexHomeError(Exception):
    """The project's index folder cannot be used safely (a link out of the project, not a folder)."""


def user_cache_index_dir(root: Path) -> Path:
    """`$XDG_CACHE_HOME` (or `~/.cache`)`/codebase-index/projects/<name>-<hash of the real root>`."""
    xdg = os.environ.get("XDG_CACHE_HOME")
    cache = Path(xdg) if xdg else Path.home() / ".cache"
    digest = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return cache / "codebase-index" / "projects" / f"{root.name or 'root'}-{digest}"


def project_index_dir(root: Path) -> Path:
    """The default index folder of the (resolved) project `root`, moving an old `.opencode/index` first."""
    path = root / INDEX_DIR_NAME
    legacy = migrate_legacy_index(root)
    if legacy is not None:
        return legacy  # could not be moved now (in use, or the project is read-only): used where it is
    if os.path.lexists(path):
        real = Path(os.path.realpath(path))
        if not _inside(real, root):  # a repository's link: the index would be written wherever it points
            raise IndexHomeError(
                f"refused: {INDEX_DIR_NAME} leads outside the project (to {real}); the index is written only "
                'inside it: remove the link, or set "scope": "global" in your own configuration'
            )
        if not real.is_dir():
            raise IndexHomeError(
                f"refused: {path} is not a folder; the index is kept there: remove or rename that file"
            )
        return path
    if not os.access(root, os.W_OK | os.X_OK):
        cache = user_cache_index_dir(root)
        log.info("project folder %s is read-only: the index lives in %s", root, cache)
        return cache
    return path


def migrate_legacy_index(root: Path) -> Path | None:
    """Move `<root>/.opencode/index` to `<root>/.codebase-index` when the new folder does not exist yet.

    Returns the old folder when it holds an index that must be used where it is for now (another process
    holds it, or the rename failed); None otherwise (moved, nothing to move, or refused with a warning).
    """
    opencode = root / LEGACY_PARTS[0]
    old = opencode / LEGACY_PARTS[1]
    new = root / INDEX_DIR_NAME
    try:
        if not _real_folder(opencode) or not os.path.lexists(old) or os.path.lexists(new):
            return None
    except OSError:
        return None
    problem = _unsafe(old)
    if problem:
        log.warning(
            "%s is %s: not moved to %s (nothing deleted); a new index is built there", old, problem, new
        )
        return None
    with _held(old) as got:
        if got is None:
            return old  # cannot even create its lock file (a read-only project): used where it is
        if not got:  # another process is moving it, or an older sidecar serves it
            return _after_wait(old, new)
        if os.path.lexists(new) or _unsafe(old):  # moved meanwhile by the process that held the lock
            return None
        try:
            os.rename(old, new)
        except OSError as exc:
            log.warning("could not move %s to %s (%s): the index is used where it is", old, new, exc)
            return old
    log.info("moved the index from %s to %s", old, new)
    with contextlib.suppress(OSError):
        os.rmdir(opencode)  # only when the move left it empty: it held nothing but our index
    return None


def _real_folder(path: Path) -> bool:
    """A folder that is not a link (lstat: never followed)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _unsafe(old: Path) -> str | None:
    """Why `old` must not be moved: a link (wherever it points), not a folder, or unreadable."""
    try:
        mode = os.lstat(old).st_mode
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    if stat.S_ISLNK(mode):
        return "a link"
    if not stat.S_ISDIR(mode):
        return "not a folder"
    if not os.access(old, os.R_OK | os.X_OK):
        return "unreadable"
    if not _ours(old):
        return "not an index folder this engine made (no .gitignore of its own)"
    return None


def _ours(old: Path) -> bool:
    """Whether `old` carries the `.gitignore` every index folder gets (index_dir.GITIGNORE_TEXT): files a
    repository commits under `.opencode/index` are tracked, and moving them would change the checkout."""
    try:
        fd = os.open(old / GITIGNORE, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return os.read(fd, len(GITIGNORE_TEXT) + 1) == GITIGNORE_TEXT.encode()
    finally:
        os.close(fd)


@contextlib.contextmanager
def _held(old: Path) -> Iterator[bool | None]:
    """Hold the old index's sidecar lock without following a link planted there: False when another
    process holds it, None when it cannot be opened."""
    try:
        fd = open_private(old / MIGRATION_LOCK, os.O_RDWR | os.O_NOFOLLOW)
    except OSError as exc:
        log.warning("cannot lock %s (%s): not moved", old / MIGRATION_LOCK, exc)
        yield None
        return
    try:
        yield try_exclusive(fd)
    finally:
        os.close(fd)


def _after_wait(old: Path, new: Path) -> Path | None:
    """Another holder: a process moving it (done in a moment) or an older sidecar still serving it."""
    deadline = time.monotonic() + MIGRATION_WAIT
    while time.monotonic() < deadline:
        if not os.path.lexists(old) and os.path.lexists(new):
            return None  # moved by the other process
        time.sleep(0.05)
    log.warning("%s is in use by another process: used where it is, moved on a later start", old)
    return old


def _inside(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
        return True
    except ValueError:
        return False
