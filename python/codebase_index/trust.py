"""Which project configuration files the user trusts: the record behind `codebase-index trust`.

A repository is untrusted input: its `.opencode/codebase-index.json` may name a remote provider, an API
key from the environment, folders outside the project or a program to run. Those settings are honoured
only once the user trusted that exact file (the way direnv's `allow` works): `trust` records the file's
sha256 in the user's config folder, any change to the file revokes it, `untrust` forgets it.

The record is `<user config dir>/codebase-index-trust.json`, shared with the OpenCode plugin
(plugin/src/config.ts reads it the same way):

    {"version": 1, "files": {"<real project root>/.opencode/codebase-index.json": "<sha256 hex>"}}

A project file that is a link is never trusted (nor read: see `read_project_file`), so a repository
cannot borrow the trust of a file the user trusted elsewhere.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path

from .private_files import make_private_dir

TRUST_FILE_NAME = "codebase-index-trust.json"
PROJECT_CONFIG_PARTS = (".opencode", "codebase-index.json")
MAX_PROJECT_CONFIG_BYTES = 1_048_576
"""A configuration file larger than this is refused rather than read (a hostile file can be anything)."""


class TrustError(Exception):
    """The project's configuration cannot be trusted or read as asked; the message says why."""


def project_config_key(root: Path | str) -> str:
    """The trust record's key for a project: its configuration file's path under the real root."""
    return str(Path(os.path.realpath(root)).joinpath(*PROJECT_CONFIG_PARTS))


def trust_store_path(global_dir: Path) -> Path:
    return global_dir / TRUST_FILE_NAME


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_project_file(root: Path | str) -> bytes | None:
    """The bytes of `<root>/.opencode/codebase-index.json`, read once without following a link in either
    component (so a repository cannot point its configuration at a file outside the project); None when
    there is no such file. Raises TrustError for a link, a non-regular file or one too large."""
    real_root = os.path.realpath(root)
    folder, name = PROJECT_CONFIG_PARTS
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    shown = "/".join(PROJECT_CONFIG_PARTS)
    try:
        dir_fd = os.open(os.path.join(real_root, folder), flags | getattr(os, "O_DIRECTORY", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise TrustError(f"{folder} is a link or not a folder: {shown} is not read") from exc
        raise TrustError(f"{shown}: cannot read: {exc.strerror}") from exc
    try:
        try:
            fd = os.open(name, flags, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise TrustError(
                    f"{shown} is a link: it is not read (a project file must be its own)"
                ) from exc
            raise TrustError(f"{shown}: cannot read: {exc.strerror}") from exc
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise TrustError(f"{shown} is not a regular file: it is not read")
            if st.st_size > MAX_PROJECT_CONFIG_BYTES:
                raise TrustError(f"{shown} is {st.st_size} bytes, more than {MAX_PROJECT_CONFIG_BYTES}")
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(MAX_PROJECT_CONFIG_BYTES + 1)
        finally:
            os.close(fd)
    finally:
        os.close(dir_fd)
    if len(data) > MAX_PROJECT_CONFIG_BYTES:
        raise TrustError(f"{shown} is more than {MAX_PROJECT_CONFIG_BYTES} bytes")
    return data


def _records(global_dir: Path) -> dict[str, str]:
    """The recorded digests; a missing or damaged record trusts nothing."""
    try:
        raw = json.loads(trust_store_path(global_dir).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = raw.get("files") if isinstance(raw, dict) else None
    if not isinstance(files, dict):
        return {}
    return {str(k): v for k, v in files.items() if isinstance(v, str)}


def is_trusted(root: Path | str, data: bytes, global_dir: Path) -> bool:
    """Whether `data`, the project file's bytes as read, is what the user trusted for this project."""
    return _records(global_dir).get(project_config_key(root)) == digest(data)


def _write_records(global_dir: Path, files: dict[str, str]) -> None:
    """Replace the record atomically, readable by the user only."""
    make_private_dir(global_dir)  # 0700 whatever the umask
    text = json.dumps({"version": 1, "files": dict(sorted(files.items()))}, indent=2) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=".trust-", dir=global_dir)  # mkstemp creates it 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, trust_store_path(global_dir))
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def trust(root: Path | str, global_dir: Path, data: bytes | None = None) -> str:
    """Trust the project's configuration file as it is now (or as `data`, the bytes the user was shown:
    if the file changed since, the record does not match it); returns the digest recorded."""
    if data is None:
        data = read_project_file(root)
    if data is None:
        raise TrustError(f"{Path(root)} has no {'/'.join(PROJECT_CONFIG_PARTS)} to trust")
    files = _records(global_dir)
    files[project_config_key(root)] = recorded = digest(data)
    _write_records(global_dir, files)
    return recorded


def untrust(root: Path | str, global_dir: Path) -> bool:
    """Forget the project's trusted file; False when it was not trusted."""
    files = _records(global_dir)
    if files.pop(project_config_key(root), None) is None:
        return False
    _write_records(global_dir, files)
    return True


# Folders never indexed, whoever asks: the system's, and the user's credential stores (keys, tokens,
# cloud and registry logins, keychains, browser profiles). A folder inside one or containing one (the
# home folder, `/`) is refused too.
SYSTEM_FOLDERS = (
    "/etc",
    "/proc",
    "/sys",
    "/dev",
    "/boot",
    "/run",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/var/lib",
    "/var/log",
    "/var/run",
    "/var/db",
    "/var/spool",
    "/var/mail",
    "/private/etc",
    "/private/var/db",
    "/System",
    "/Library",
)
CREDENTIAL_STORES = (
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/opencode",
    ".config/google-chrome",
    ".config/chromium",
    ".mozilla",
    ".password-store",
    ".local/share/keyrings",
    ".pki",
    ".terraform.d",
    "Library/Keychains",
)


def _relation(path: Path, folder: Path) -> str | None:
    """How `path` relates to `folder`: "is", "is inside", "contains", or None."""
    if path == folder:
        return "is"
    if folder in path.parents:
        return "is inside"
    if path in folder.parents:
        return "contains"
    return None


def sensitive_folder(path: Path, home: Path | None = None) -> str | None:
    """Why `path` (absolute, resolved) may never be indexed, or None. The home folder itself and
    anything containing it is refused; folders inside it are fine unless they hold credentials."""
    home = (home or Path.home()).resolve()
    if path == home or path in home.parents:
        return "the home folder" if path == home else f"it contains the home folder ({home})"
    for name in CREDENTIAL_STORES:
        store = home / name
        relation = _relation(path, store)
        if relation:
            return f"it {relation} a credential store ({store})"
    for system in SYSTEM_FOLDERS:
        relation = _relation(path, Path(system))
        if relation:
            return f"it {relation} a system folder ({system})"
    return None
