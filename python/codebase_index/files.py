"""File discovery: which files under a root get indexed, and why every other one does not.

Contract with the service layer:

* `discover()` walks the tree once (os.scandir, one stat per candidate file) and decides from names,
  ignore rules, include patterns and size alone. It never opens files, so it stays cheap enough to run on
  every re-index.
* `read_text()` opens a discovered file and is where "binary" (a NUL byte in the first 8 KiB; text in
  another encoding than UTF-8 is decoded, see `decode_text`) and "unreadable" (permissions, vanished,
  not a regular file) are decided. The service records the `SkippedFile` it returns next to the ones
  `discover()` produced.
* `read_inside()` is the one read of answers (and of the indexer and graph extractor): a regular file
  under the root reached without following any link, size-bounded; a file swapped after indexing for a
  link, FIFO, device or folder is refused with a reason, never read.

Decisions worth knowing (the rules themselves, one path at a time, are in `patterns`):

* Each skipped folder is reported once, as reason "ignored" with a detail starting "directory", and
  never walked.
* Generated files known by name (lock files, minified files, source maps, protobuf stubs) are reason
  "generated" unless a pattern of the user's own includes them (`generated` module; the indexer applies
  the content markers after reading).
* A file that matches no include pattern is reported "unsupported" even when an ignore rule would also
  match it: that check is cheaper and comes first.
* An ignore line git cannot use (`!`, a lone `\\`) is dropped as git drops it, and an ignore file that
  cannot be read applies no patterns; each is reported once per walk as reason "invalid-ignore" with
  the path `file:line` (`file:*` for a whole file), so `status` counts them and `index --verbose` names
  them.
* Symlinks are never followed, so the walk cannot leave the root or loop. A symlink to a file inside the
  root is skipped ("ignored") because its target is indexed under its own path; links to folders, links
  leaving the root, broken links and link loops are reported too.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

import msgspec

from . import generated
from .credentials import secret_content, secret_name
from .generated import LOCK_FILES, MINIFIED_SUFFIXES
from .models import DiscoveredFile, SkippedFile
from .patterns import (
    Chain,
    IgnoreRules,
    IncludeMatcher,
    UserIncludes,
    always_skipped_file,
    make_include_matcher,
)

__all__ = ["LOCK_FILES", "MINIFIED_SUFFIXES"]  # re-exported: older callers import them from here

BINARY_SNIFF_BYTES = 8192
DEFAULT_MAX_FILE_SIZE = 1_048_576  # indexing.maxFileSize's default: the bound of a read without a config


class DiscoveryResult(msgspec.Struct):
    files: list[DiscoveredFile]
    skipped: list[SkippedFile]

    def skipped_counts(self) -> dict[str, int]:
        """Per-reason totals for `status`; every reason in SKIP_REASONS may appear, none is invented."""
        counts: dict[str, int] = {}
        for item in self.skipped:
            counts[item.reason] = counts.get(item.reason, 0) + 1
        return counts


def _is_inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class FileRules:
    """Ignore rules + include patterns + size limit for one root: `walk()` is discovery; `check()` is
    the same decision for one path (what the watcher needs)."""

    def __init__(
        self,
        root: str | Path,
        *,
        include: Sequence[str] | None = None,
        additional_include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        max_file_size: int = 1_048_576,
        include_secrets: Sequence[str] = (),
    ) -> None:
        self.root = os.path.abspath(root)
        self.real_root = os.path.realpath(self.root)
        self.ignore = IgnoreRules(self.root, exclude)
        self.includes = make_include_matcher(include, additional_include)
        self.user_includes = UserIncludes(include, additional_include)
        self.max_file_size = max_file_size
        self.secrets_included = IncludeMatcher(include_secrets) if include_secrets else None

    def secret(self, rel_path: str, text: str | None = None) -> str | None:
        """Why a file is skipped as a secret (by its name, or by what its text holds when `text` is
        given), or None, also when the `includeSecrets` setting names it."""
        why = secret_name(rel_path.rpartition("/")[2], rel_path)
        if why is None and text is not None:
            why = secret_content(text)
        if why is None or (self.secrets_included is not None and self.secrets_included(rel_path)):
            return None
        return why

    def generated(self, rel_path: str, text: str | None = None) -> str | None:
        """Why a file is skipped as generated (by its name, or by its first lines when `text` is given),
        or None, also when a pattern of the user's own includes it."""
        why = generated.by_name(rel_path.rpartition("/")[2])
        if why is None and text is not None:
            why = generated.by_content(rel_path, text)
        if why is None or self.user_includes(rel_path):
            return None
        return why

    def _symlink(self, rel: str, abs_path: str) -> SkippedFile:
        try:
            st = os.stat(abs_path)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                return SkippedFile(rel, "unreadable", "symlink loop")
            if exc.errno == errno.ENOENT:
                return SkippedFile(rel, "unreadable", "broken symlink")
            return SkippedFile(rel, "unreadable", f"symlink: {exc.strerror}")
        if stat.S_ISDIR(st.st_mode):
            return SkippedFile(rel, "ignored", "symlink to a directory (not followed)")
        if not self.includes(rel):
            return SkippedFile(rel, "unsupported", "symlink")
        target = os.path.realpath(abs_path)
        if not _is_inside(target, self.real_root):
            return SkippedFile(rel, "ignored", "symlink to a file outside the root")
        target_rel = os.path.relpath(target, self.real_root).replace(os.sep, "/")
        return SkippedFile(rel, "ignored", f"symlink to {target_rel} (indexed there)")

    def _reject(self, rel: str, st: os.stat_result) -> SkippedFile | None:
        if not stat.S_ISREG(st.st_mode):
            return SkippedFile(rel, "unreadable", "not a regular file")
        if st.st_size > self.max_file_size:
            return SkippedFile(rel, "too-large", f"{st.st_size} bytes > {self.max_file_size}")
        return None

    def walk(self, visited_dirs: list[str] | None = None) -> DiscoveryResult:
        """Discover every indexable file under the root; see the module docstring for the rules.

        `visited_dirs`, when given, receives every folder listed (relative, "" for the root): the
        indexer's stat-only re-scan checks their mtimes to know no entry was added or removed."""
        if not os.path.isdir(self.root):
            raise NotADirectoryError(f"not a directory: {self.root}")
        files: list[DiscoveredFile] = []
        skipped: list[SkippedFile] = []
        ignore = self.ignore
        exclude = ignore.exclude
        extensions = self.includes.extensions
        include_spec = self.includes.spec
        max_size = self.max_file_size
        S_ISREG = stat.S_ISREG
        generated_suffixes = MINIFIED_SUFFIXES + generated.STUB_SUFFIXES
        base_chain = ignore.base_chain
        stack: list[tuple[str, str, Chain]] = [(self.root, "", base_chain)]
        for where, note in ignore.problems("."):
            skipped.append(SkippedFile(where, "invalid-ignore", note))
        while stack:
            abs_dir, rel_dir, parent_chain = stack.pop()
            try:
                with os.scandir(abs_dir) as it:
                    entries = list(it)
            except OSError as exc:
                skipped.append(SkippedFile(rel_dir or ".", "unreadable", f"directory: {exc.strerror}"))
                continue
            if visited_dirs is not None:
                visited_dirs.append(rel_dir)
            names = frozenset(e.name for e in entries)
            chain = ignore.chain_for(parent_chain, rel_dir, names)
            for where, note in ignore.problems(rel_dir):
                skipped.append(SkippedFile(where, "invalid-ignore", note))
            has_rules = bool(chain) or exclude is not None
            prefix = rel_dir + "/" if rel_dir else ""
            for entry in entries:
                # The hot loop: plain files take only set lookups, one regex and one stat.
                name = entry.name
                rel = prefix + name
                if not name.isascii() and not is_text_name(name):
                    skipped.append(_unreadable_name(rel, entry))
                    continue
                try:
                    is_link = entry.is_symlink()
                    is_dir = not is_link and entry.is_dir(follow_symlinks=False)
                except OSError as exc:
                    skipped.append(SkippedFile(rel, "unreadable", exc.strerror or str(exc)))
                    continue
                if is_dir:
                    why = ignore.why(rel, True, chain)
                    if why is not None:
                        skipped.append(SkippedFile(rel, "ignored", why))
                    else:
                        stack.append((entry.path, rel, chain))
                    continue
                if name.startswith(".env"):
                    skipped.append(SkippedFile(rel, "ignored", always_skipped_file(name) or ""))
                    continue
                if secret_name(name, rel) is not None:
                    why = self.secret(rel)
                    if why is not None:
                        skipped.append(SkippedFile(rel, "secret", why))
                        continue
                if name in LOCK_FILES or name.endswith(generated_suffixes):
                    why = self.generated(rel)
                    if why is not None:
                        skipped.append(SkippedFile(rel, "generated", why))
                        continue
                if not is_link:
                    dot = name.rfind(".")
                    if (dot < 0 or name[dot + 1 :] not in extensions) and not (
                        include_spec is not None and include_spec.match_file(rel)
                    ):
                        skipped.append(SkippedFile(rel, "unsupported", ""))
                        continue
                if has_rules:
                    why = ignore.match(rel, False, chain)
                    if why is not None:
                        skipped.append(SkippedFile(rel, "ignored", why))
                        continue
                if is_link:
                    skipped.append(self._symlink(rel, entry.path))
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError as exc:
                    skipped.append(SkippedFile(rel, "unreadable", exc.strerror or str(exc)))
                    continue
                if st.st_size > max_size or not S_ISREG(st.st_mode):
                    skipped.append(self._reject(rel, st) or SkippedFile(rel, "unreadable", ""))
                else:
                    files.append(DiscoveredFile(rel, entry.path, st.st_size, st.st_mtime_ns, st.st_ino))
        files.sort(key=lambda f: f.path)
        skipped.sort(key=lambda s: s.path)
        return DiscoveryResult(files=files, skipped=skipped)

    def check(self, rel_path: str) -> DiscoveredFile | SkippedFile | None:
        """What discovery would say about one file; None when it does not exist (or is a folder), or
        when the walk would never reach it (`..`, or a link on the way: see `walkable`)."""
        rel = rel_path.replace(os.sep, "/").strip("/")
        if not walkable(self.root, rel):
            return None
        if not is_text_name(rel):
            # Inside a folder whose name is not UTF-8: the walk reports the folder, never its files.
            if not is_text_name(rel.rpartition("/")[0]) or not os.path.lexists(os.path.join(self.root, rel)):
                return None
            return SkippedFile(escaped_name(rel), "unreadable-name", UNREADABLE_NAME)
        abs_path = os.path.join(self.root, rel)
        try:
            st = os.lstat(abs_path)
        except OSError:
            return None
        if stat.S_ISDIR(st.st_mode):
            return None
        why, chain = self.ignore.ancestors(rel)
        if why is None:
            why = always_skipped_file(rel.rpartition("/")[2])
        if why is None:
            secret = self.secret(rel)
            if secret is not None:
                return SkippedFile(rel, "secret", secret)
            made = self.generated(rel)
            if made is not None:
                return SkippedFile(rel, "generated", made)
        is_link = stat.S_ISLNK(st.st_mode)
        if why is None and not is_link and not self.includes(rel):
            return SkippedFile(rel, "unsupported", "")
        if why is None:
            why = self.ignore.match(rel, False, chain)
        if why is not None:
            return SkippedFile(rel, "ignored", why)
        if is_link:
            return self._symlink(rel, abs_path)
        rejected = self._reject(rel, st)
        if rejected is not None:
            return rejected
        return DiscoveredFile(rel, abs_path, st.st_size, st.st_mtime_ns, st.st_ino)


UNREADABLE_NAME = "name is not valid UTF-8 (shown escaped)"


def is_text_name(path: str) -> bool:
    """Whether a name (or path) as Python reads it from the OS is text that SQLite, JSON and the plugin
    can carry: a byte that is not UTF-8 comes back from the OS as a lone surrogate, which none of them
    can encode.

    Such a file is skipped with reason "unreadable-name", not kept: keeping it would need a second path
    encoding in every table, every JSON face and the watcher (all of which hold paths as text and would
    otherwise raise UnicodeEncodeError, aborting the run), for a file no editor or agent can name. The
    skipped row holds `escaped_name`, so `status` and `index --verbose` show what was left out and
    where. Control characters and newlines are valid UTF-8: such files are indexed and every face shows
    them escaped (`display.shown_path`)."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def escaped_name(path: str) -> str:
    """A path that is not UTF-8 as text: each undecodable byte as `\\xNN` (`notes\\xff.bin`)."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _unreadable_name(rel: str, entry: os.DirEntry[str]) -> SkippedFile:
    try:
        folder = entry.is_dir(follow_symlinks=False)
    except OSError:
        folder = False
    detail = f"{'folder ' if folder else ''}{UNREADABLE_NAME}"
    return SkippedFile(
        escaped_name(rel), "unreadable-name", detail + ("; nothing inside indexed" if folder else "")
    )


def walkable(root: str, rel: str) -> bool:
    """Whether the walk could reach `rel` under `root`: a plain relative path (no `..`, `.` or empty
    part) whose every folder on the way is a real folder, not a link (a link to a folder is never
    followed, so `linkdir/passwd` for `linkdir -> /etc` is not a project file)."""
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in parts):
        return False
    folder = root
    for part in parts[:-1]:
        folder = os.path.join(folder, part)
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return False
        except OSError:
            return False
    return True


def discover(
    root: str | Path,
    *,
    include: Sequence[str] | None = None,
    additional_include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    max_file_size: int = 1_048_576,
    include_secrets: Sequence[str] = (),
) -> DiscoveryResult:
    """Walk `root` and sort every entry into indexable files or skipped ones (with a reason).

    `include` replaces DEFAULT_INCLUDE, `additional_include` extends it, `exclude` holds gitignore-style
    patterns relative to the root that win over everything else.
    """
    rules = FileRules(
        root,
        include=include,
        additional_include=additional_include,
        exclude=exclude,
        max_file_size=max_file_size,
        include_secrets=include_secrets,
    )
    return rules.walk()


_DECLARED = (
    # PEP 263: a coding comment on one of the first two lines.
    re.compile(rb"\A(?:[^\n]*\n)?[ \t\f]*#[^\n]*?coding[:=][ \t]*([-\w.]+)"),
    # XML declaration, HTML <meta charset=...> or http-equiv content type.
    re.compile(rb"""\A\s*<\?xml[^>]*?\bencoding\s*=\s*["']([-\w.:]+)["']"""),
    re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?([-\w.:]+)""", re.IGNORECASE),
)
_DECLARATION_HEAD = 2048


def declared_encoding(data: bytes) -> str | None:
    """The encoding a file declares in its first bytes (PEP 263 coding line, XML or HTML charset)."""
    head = data[:_DECLARATION_HEAD]
    for pattern in _DECLARED:
        m = pattern.search(head)
        if m is None:
            continue
        name = m.group(1).decode("ascii", "replace")
        try:
            return codecs.lookup(name).name
        except LookupError:
            continue
    return None


def decode_text(data: bytes) -> str:
    """Bytes of a text file (no NUL byte) as text: UTF-8 (BOM stripped), else the encoding the file
    declares, else Windows-1252, else Latin-1, which decodes any byte, so a text file is never lost to
    its encoding."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    for name in (declared_encoding(data), "cp1252"):
        if name is None or name == "utf-8":
            continue
        try:
            return data.decode(name)
        except (UnicodeDecodeError, LookupError):
            continue
    return data.decode("latin-1")


def read_text(
    abs_path: str | os.PathLike[str], rel_path: str | None = None, *, max_size: int | None = None
) -> str | SkippedFile:
    """Decode a discovered file, or say why it cannot be indexed.

    Returns the text (UTF-8 BOM stripped, CRLF turned into LF so previews carry no stray `\\r`; line
    numbers are unchanged) or a SkippedFile whose path is `rel_path` (the absolute path if not given):
    "binary" for a NUL byte in the first 8 KiB (text that is not UTF-8 is decoded by `decode_text`;
    a UTF-16 BOM selects UTF-16), "unreadable" for
    anything the OS refuses or a path that is no longer a regular file, "too-large" if the file grew past
    `max_size` since discovery. Opens non-blocking so a FIFO can never hang the indexer.
    """
    path = os.fspath(abs_path)
    shown = rel_path if rel_path is not None else path
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        return SkippedFile(shown, "unreadable", exc.strerror or str(exc))
    return _read_fd(fd, shown, max_size)


def _read_fd(fd: int, shown: str, max_size: int | None) -> str | SkippedFile:
    """`read_text` on an open descriptor, which it closes: regular files only, at most `max_size` bytes."""
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return SkippedFile(shown, "unreadable", "not a regular file")
        if max_size is not None and st.st_size > max_size:
            return SkippedFile(shown, "too-large", f"{st.st_size} bytes > {max_size}")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read() if max_size is None else fh.read(max_size + 1)
    except OSError as exc:
        return SkippedFile(shown, "unreadable", exc.strerror or str(exc))
    finally:
        os.close(fd)
    if max_size is not None and len(data) > max_size:
        return SkippedFile(shown, "too-large", f"more than {max_size} bytes")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            return SkippedFile(shown, "binary", "invalid UTF-16")
    elif b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return SkippedFile(shown, "binary", "NUL byte")
    else:
        text = decode_text(data)
    if "\r\n" in text:
        text = text.replace("\r\n", "\n")
    return text


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | _CLOEXEC


def open_inside(root: str | os.PathLike[str], rel_path: str) -> int | SkippedFile:
    """An open descriptor of `root`/`rel_path` that cannot have left the root, or why not.

    Every folder on the way is opened relative to the one before without following a link, and the file
    itself without following one and without blocking, so a file swapped for a link (to anywhere), a
    FIFO or a device after indexing is refused, not read. `..`, `.`, empty and absolute paths are
    refused. The file is looked at (lstat) before it is opened, so only a regular file is opened; the
    flags keep a swap between the look and the open harmless. The caller closes the descriptor."""
    rel = rel_path.replace(os.sep, "/")
    parts = rel.split("/")
    if rel.startswith("/") or "\x00" in rel or any(p in ("", ".", "..") for p in parts):
        return SkippedFile(rel_path, "unreadable", "not a path inside the project")
    try:
        dir_fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except OSError as exc:
        return SkippedFile(rel_path, "unreadable", f"project folder: {exc.strerror or exc}")
    try:
        for part in parts[:-1]:
            try:
                next_fd = os.open(part, _DIR_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                return SkippedFile(rel_path, "unreadable", _open_error(exc, "folder"))
            os.close(dir_fd)
            dir_fd = next_fd
        try:
            # Looked at before it is opened: a device is never opened (opening one can act on it).
            st = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                return SkippedFile(rel_path, "unreadable", _kind(st.st_mode))
            return os.open(parts[-1], _FILE_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            return SkippedFile(rel_path, "unreadable", _open_error(exc, "file"))
    finally:
        os.close(dir_fd)


def _kind(mode: int) -> str:
    """What a path is when it is not a regular file, in a skip reason's words."""
    if stat.S_ISLNK(mode):
        return "a symbolic link (not followed)"
    if stat.S_ISDIR(mode):
        return "a folder, not a file"
    return "not a regular file"


def _open_error(exc: OSError, what: str) -> str:
    """Why `open_inside` refused: a link is named as such (O_NOFOLLOW answers ELOOP, or ENOTDIR for a
    link to a folder on the way; ELOOP or EMLINK on some BSDs)."""
    if exc.errno in (errno.ELOOP, errno.EMLINK) or (what == "folder" and exc.errno == errno.ENOTDIR):
        return f"a symbolic link or not a {what} (not followed)"
    return exc.strerror or str(exc)


def read_inside(root: str | os.PathLike[str], rel_path: str, max_size: int | None) -> str | SkippedFile:
    """The text of a project file as it is now, for answers: the one read every answer-time read uses.

    Only a regular file inside `root` reached without following any link (`open_inside`), at most
    `max_size` bytes, decoded as `read_text` decodes; else a SkippedFile saying why (the file changed
    kind since it was indexed, is gone, grew too large or holds binary data)."""
    fd = open_inside(root, rel_path)
    if isinstance(fd, SkippedFile):
        return fd
    return _read_fd(fd, rel_path, max_size)


def stat_inside(root: str | os.PathLike[str], rel_path: str) -> os.stat_result | None:
    """`os.stat` of a regular file inside `root` reached as `read_inside` reaches it, else None."""
    fd = open_inside(root, rel_path)
    if isinstance(fd, SkippedFile):
        return None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return st if stat.S_ISREG(st.st_mode) else None
