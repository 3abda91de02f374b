"""The stat-only re-check of the last walk: what lets a re-index with nothing changed cost one stat per
file instead of a full discovery walk.

Correctness rests on folder mtimes: creating, deleting or renaming an entry changes its folder's mtime, so
if no listed folder changed, the set of entries is the same and only file stats can differ. Ignore files
(and .git/info/exclude) are stat-checked too because editing one changes no folder. Anything unexpected
sends the caller back to the full walk.
"""

from __future__ import annotations

import os
import stat

import msgspec

from . import patterns
from .files import DiscoveryResult, FileRules
from .models import DiscoveredFile, SkippedFile

Stat = tuple[int, int, int]  # size, mtime_ns, inode

# A folder whose mtime is this close to the scan that recorded it may change again within the same
# timestamp tick without its mtime moving; such a scan is not trusted for the stat-only shortcut.
RACY_NS = 2_000_000_000


def lstat_key(path: str) -> Stat | None:
    """(size, mtime_ns, inode) of a path, not following a link; None when it is gone or unreadable."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class ScanCache(msgspec.Struct):
    """What the last full walk saw, so an unchanged tree is re-checked with one stat per file."""

    rules_key: tuple[object, ...]
    dirs: list[tuple[str, int, int]]  # abs path, mtime_ns, inode
    guards: list[tuple[str, Stat | None]]  # abs path of an ignore file, its stat (None: absent)
    files: list[DiscoveredFile]
    skipped: list[SkippedFile]
    rechecks: list[tuple[str, Stat | None]]  # stat-dependent skips (too-large, unreadable)


def record(
    rules: FileRules,
    rules_key: tuple[object, ...],
    visited: list[str],
    found: DiscoveryResult,
    started: int,
) -> ScanCache | None:
    """The cache of a walk that started at `started` (ns) and listed `visited`; None when a folder changed
    too recently for its mtime to be trusted next time."""
    dirs: list[tuple[str, int, int]] = []
    guards: list[tuple[str, Stat | None]] = []
    root = rules.root
    for rel in visited:
        abs_dir = os.path.join(root, rel) if rel else root
        try:
            st = os.lstat(abs_dir)
        except OSError:
            return None
        if st.st_mtime_ns >= started - RACY_NS:
            return None  # changed too recently to trust its mtime next time
        dirs.append((abs_dir, st.st_mtime_ns, st.st_ino))
        for name in patterns.IGNORE_FILE_NAMES:
            guard = os.path.join(abs_dir, name)
            guards.append((guard, lstat_key(guard)))
    for exclude_file in patterns.git_exclude_files(root):
        guards.append((exclude_file, lstat_key(exclude_file)))
    rechecks = [
        (s.path, lstat_key(os.path.join(root, s.path)))
        for s in found.skipped
        if s.reason in ("too-large", "unreadable")
    ]
    return ScanCache(rules_key, dirs, guards, list(found.files), list(found.skipped), rechecks)


def recheck(
    scan: ScanCache | None, root: str | os.PathLike[str], rules_key: tuple[object, ...], max_size: int
) -> tuple[DiscoveryResult | None, bool]:
    """The walk's result again from stats alone, and whether every file's stat was unchanged; (None,
    False) when only a new walk can tell. Keeps the refreshed stats in `scan`."""
    if scan is None or scan.rules_key != rules_key:
        return None, False
    lstat = os.lstat
    for abs_dir, mtime_ns, inode in scan.dirs:
        try:
            st = lstat(abs_dir)
        except OSError:
            return None, False
        if st.st_mtime_ns != mtime_ns or st.st_ino != inode:
            return None, False
    for path, old in scan.guards:
        if lstat_key(path) != old:
            return None, False
    for rel, old in scan.rechecks:
        if lstat_key(os.path.join(root, rel)) != old:
            return None, False
    files: list[DiscoveredFile] = []
    append = files.append
    is_reg = stat.S_ISREG
    clean = True
    for entry in scan.files:
        try:
            st = lstat(entry.abs_path)
        except OSError:
            return None, False
        if st.st_mtime_ns == entry.mtime_ns and st.st_size == entry.size and st.st_ino == entry.inode:
            append(entry)
        elif st.st_size > max_size or not is_reg(st.st_mode):
            return None, False  # now a skip: let the walk say why
        else:
            clean = False
            append(DiscoveredFile(entry.path, entry.abs_path, st.st_size, st.st_mtime_ns, st.st_ino))
    scan.files = files
    return DiscoveryResult(files=files, skipped=scan.skipped), clean
