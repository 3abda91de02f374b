"""The registry of indexed repositories on this machine: what `search --all-repos`, `--repo NAME`, the
`repos` tool parameter and `codebase-index repos list` see.

Every successful index run records its project (name, root, index folder, branch) in one JSON file in the
user's data folder (`$CODEBASE_INDEX_REGISTRY` names another file). A repository's name is its folder's
name; a second root with the same folder name gets the name plus a short hash of its path. Entries whose
index is gone are dropped when the registry is read. Writes are atomic (temp file + rename) under a file
lock, so concurrent index runs of several projects never lose an entry.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from .index_home import INDEX_DIR_NAME, LEGACY_PARTS
from .locks import file_lock
from .private_files import make_private_dir, replace_private

if TYPE_CHECKING:
    from .backends.base import RepoInfo
    from .service import Engine

REGISTRY_ENV = "CODEBASE_INDEX_REGISTRY"


class RepoEntry(msgspec.Struct, frozen=True, rename="camel"):
    name: str
    root: str
    index_dir: str
    branch: str
    indexed_at: float


class _Registry(msgspec.Struct):
    repos: list[RepoEntry] = msgspec.field(default_factory=list)


class RegistryError(Exception):
    """A repository named in a search is not in the registry (the message lists the known ones)."""


def registry_path() -> Path:
    override = os.environ.get(REGISTRY_ENV)
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_DATA_HOME")
    data = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return data / "opencode" / "codebase-index" / "repos.json"


def _read(path: Path) -> list[RepoEntry]:
    try:
        return msgspec.json.decode(path.read_bytes(), type=_Registry).repos
    except FileNotFoundError:
        return []
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return []  # a damaged registry is rebuilt by the next index runs; indexes themselves are intact


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    make_private_dir(path.parent)
    with file_lock(path.with_name(path.name + ".lock"), wait=True):
        yield


def _write(path: Path, entries: Sequence[RepoEntry]) -> None:
    replace_private(path, msgspec.json.format(msgspec.json.encode(_Registry(list(entries)))))


def _alive(entry: RepoEntry) -> bool:
    return (Path(entry.index_dir) / "codebase.db").is_file()


def _moved(entry: RepoEntry) -> RepoEntry:
    """An entry recorded at the old default place, `<root>/.opencode/index`, whose index was moved to
    `<root>/.codebase-index` (`index_home`): the new place, so the repository stays listed."""
    root = Path(entry.root)
    new = root / INDEX_DIR_NAME
    legacy = entry.index_dir == str(root.joinpath(*LEGACY_PARTS))
    if legacy and not _alive(entry) and (new / "codebase.db").is_file():
        return msgspec.structs.replace(entry, index_dir=str(new))
    return entry


def list_repos() -> list[RepoEntry]:
    """Registered repositories whose index still exists, by name."""
    return sorted((e for e in map(_moved, _read(registry_path())) if _alive(e)), key=lambda e: e.name)


def register(root: Path, index_dir: Path, branch: str) -> RepoEntry:
    """Record (or refresh) one indexed project; returns its entry."""
    path = registry_path()
    root_s, index_s = str(root.resolve()), str(index_dir.resolve())
    with _locked(path):
        entries = [e for e in _read(path) if _alive(e) or e.root == root_s]
        others = [e for e in entries if e.root != root_s]
        names = {e.name for e in others}
        name = root.resolve().name or "root"
        if name in names:
            name = f"{name}-{hashlib.sha256(root_s.encode('utf-8', 'surrogateescape')).hexdigest()[:6]}"
        entry = RepoEntry(name=name, root=root_s, index_dir=index_s, branch=branch, indexed_at=time.time())
        _write(path, [*others, entry])
    return entry


def resolve(names: Sequence[str], *, all_repos: bool = False, current: Path | None = None) -> list[RepoEntry]:
    """The registry entries a search names: each by name or by root path (`.` and relative paths too);
    every one with `all_repos`. RegistryError names what is unknown and the command that lists the rest."""
    known = list_repos()
    if all_repos:
        return known
    out: list[RepoEntry] = []
    for raw in names:
        wanted = raw.strip()
        match = next((e for e in known if e.name == wanted), None)
        if match is None and (Path(wanted).exists() or wanted in (".", "")):
            base = current if current is not None and wanted in (".", "") else Path(wanted)
            resolved = str(base.resolve())
            match = next((e for e in known if e.root == resolved), None)
        if match is None:  # names only what was asked for: other repositories on this machine stay private
            raise RegistryError(
                f"no indexed repository named {raw!r}; `codebase-index repos list` lists the indexed ones "
                "(a repository is registered when it is indexed)"
            )
        if match not in out:
            out.append(match)
    return out


def engine_for(repo: RepoInfo | RepoEntry) -> Engine:
    """An engine over a registered repository's index, with that repository's own configuration."""
    from .service import Engine

    entry = (
        repo if isinstance(repo, RepoEntry) else next((e for e in list_repos() if e.name == repo.name), None)
    )
    if entry is None:
        raise RegistryError(f"no indexed repository named {repo.name!r}")
    return Engine(Path(entry.root), index_path=Path(entry.index_dir))
