"""Knowledge bases: folders outside the project (docs, a sibling library) indexed into the same store.

Each one is its own catalog in the `files` table, keyed `kb:<absolute path>` where a git branch name
would go, so its relative paths can never collide with the project's and branch switches leave it
alone. Search shows its files as `kb:<folder name>/<path>` (the label says where a result came from).

Where the list lives: `knowledgeBases` in the config files (read-only here) plus the ones added with
the tools/CLI, recorded in the user's data folder beside the repository registry, keyed by the index
folder (`ADDED_FILE`). Not in the index itself (older versions kept them in its meta table): a
repository can commit an index of its own, and one whose list named the user's other projects would
have them indexed and served to the agent. Such a list is reported, never used (`legacy_note`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import msgspec

from .config import CONFIG_FILE_NAME, Config, default_global_dir, knowledge_base_paths, knowledge_base_roots
from .locks import file_lock
from .private_files import make_private_dir, replace_private
from .repos import registry_path
from .store import Store
from .trust import sensitive_folder

CATALOG_PREFIX = "kb:"
LEGACY_META_KEY = "knowledge_bases"
"""Where older versions kept added knowledge bases: inside the index (see the module docstring)."""
ADDED_FILE = "knowledge-bases.json"


class KnowledgeBaseError(ValueError):
    """A knowledge base path that cannot be added or removed; the message says why."""


class KnowledgeBase(msgspec.Struct, frozen=True):
    path: str  # absolute
    label: str  # shown in front of result paths: kb:<label>/...
    source: str  # "config" or "added"
    catalog: str  # the `branch` key of its rows


def catalog_name(path: Path | str) -> str:
    return CATALOG_PREFIX + str(path)


def is_catalog(branch: str) -> bool:
    return branch.startswith(CATALOG_PREFIX)


class _AddedRecord(msgspec.Struct):
    indexes: dict[str, list[str]] = msgspec.field(default_factory=dict)


def added_path() -> Path:
    """The record of added knowledge bases: beside the repository registry (the user's data folder)."""
    return registry_path().with_name(ADDED_FILE)


def _read_added() -> _AddedRecord:
    try:
        return msgspec.json.decode(added_path().read_bytes(), type=_AddedRecord)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return _AddedRecord()  # none yet, or damaged: nothing added (the folders themselves are intact)


def _added(store: Store) -> list[str]:
    return list(_read_added().indexes.get(os.path.realpath(store.index_dir), []))


def _set_added(store: Store, paths: list[str]) -> None:
    path = added_path()
    make_private_dir(path.parent)
    with file_lock(path.with_name(path.name + ".lock"), wait=True):
        record = _read_added()
        key = os.path.realpath(store.index_dir)
        if paths:
            record.indexes[key] = paths
        else:
            record.indexes.pop(key, None)
        replace_private(path, msgspec.json.format(msgspec.json.encode(record)))


def legacy_note(store: Store) -> str | None:
    """A line about knowledge bases an older version recorded inside the index (not used: the index may
    have come with the repository), or None."""
    raw = store.get_meta(LEGACY_META_KEY)
    try:
        value = json.loads(raw) if raw else []
    except ValueError:
        value = []
    paths = [str(p) for p in value] if isinstance(value, list) else []
    if not paths:
        return None
    return (
        f"not used: {len(paths)} knowledge base(s) recorded inside the index by an older version (an index "
        f"can come with a repository): {', '.join(paths)}; add the ones you want again with "
        "`codebase-index kb add PATH`"
    )


def list_knowledge_bases(root: Path, config: Config, store: Store | None) -> list[KnowledgeBase]:
    """Configured ones first, then added ones; duplicates dropped; labels made unique."""
    entries: list[tuple[str, str]] = [(str(p), "config") for p in knowledge_base_paths(root, config)]
    if store is not None:
        # One added before such folders were refused is left out (`kb remove` drops it).
        entries += [(p, "added") for p in _added(store) if sensitive_folder(Path(p)) is None]
    seen: set[str] = set()
    used_labels: dict[str, int] = {}
    out: list[KnowledgeBase] = []
    for path, source in entries:
        if path in seen:
            continue
        seen.add(path)
        base = Path(path).name or "root"
        n = used_labels.get(base, 0)
        used_labels[base] = n + 1
        label = base if n == 0 else f"{base}-{n + 1}"
        out.append(KnowledgeBase(path, label, source, catalog_name(path)))
    return out


def validate(root: Path, raw: str, *, agent: bool = False, config: Config | None = None) -> Path:
    """The absolute folder for `raw` (relative paths are taken from the project root), or why not.

    System folders, credential stores and the home folder are refused whoever asks. An agent (`agent`:
    a tool call, which a prompt-injected model may make) may add only folders inside the project or
    inside the configuration's `knowledgeBaseRoots`; the user adds any other with the CLI."""
    if not raw.strip():
        raise KnowledgeBaseError("the knowledge base path is empty")
    path = (root / Path(raw).expanduser()).resolve()
    why = sensitive_folder(path)
    if why is not None:
        raise KnowledgeBaseError(f"refused: {raw} is never indexed ({why})")
    root = root.resolve()
    if agent:
        allowed = [root, *(knowledge_base_roots(root, config) if config is not None else [])]
        if not any(path == a or a in path.parents for a in allowed):
            user_file = default_global_dir() / CONFIG_FILE_NAME
            raise KnowledgeBaseError(
                f"refused: an agent may add only folders inside the project or inside knowledgeBaseRoots "
                f"of your own configuration ({user_file}); to index {raw} yourself, run "
                f"`codebase-index kb add {raw}` in the project"
            )
    if not path.exists():
        raise KnowledgeBaseError(f"knowledge base {path} does not exist")
    if not path.is_dir():
        raise KnowledgeBaseError(f"knowledge base {path} is not a directory")
    if path == root or root in path.parents:
        raise KnowledgeBaseError(f"{path} is inside the project, which is indexed already")
    if path in root.parents:
        raise KnowledgeBaseError(f"{path} contains the project; add a folder beside it instead")
    if not os.access(path, os.R_OK | os.X_OK):
        raise KnowledgeBaseError(f"knowledge base {path} is not readable")
    return path


def add(
    root: Path, config: Config, store: Store, raw: str, *, agent: bool = False
) -> tuple[KnowledgeBase, bool]:
    """Register a folder (caller holds the writer lock and a transaction); returns it and whether it
    was new. `agent`: the request comes from a tool call (see `validate`)."""
    path = validate(root, raw, agent=agent, config=config)
    for kb in list_knowledge_bases(root, config, store):
        if kb.path == str(path):
            return kb, False
    _set_added(store, [*_added(store), str(path)])
    kb = next(k for k in list_knowledge_bases(root, config, store) if k.path == str(path))
    return kb, True


def remove(root: Path, config: Config, store: Store, raw: str) -> KnowledgeBase:
    """Unregister a folder and drop its rows (caller holds the writer lock and a transaction; contents
    are purged by the caller). Config-listed ones must be removed from the config file."""
    wanted = str((root / Path(raw).expanduser()).resolve()) if raw.strip() else ""
    for kb in list_knowledge_bases(root, config, store):
        if wanted in (kb.path,) or raw in (kb.label, f"{CATALOG_PREFIX}{kb.label}"):
            if kb.source == "config":
                raise KnowledgeBaseError(
                    f"{kb.path} comes from the knowledgeBases setting; remove it from the config file"
                )
            _set_added(store, [p for p in _added(store) if p != kb.path])
            store.delete_catalog(kb.catalog)
            return kb
    raise KnowledgeBaseError(f"{raw!r} is not a registered knowledge base")


def display_path(kb: KnowledgeBase, rel: str) -> str:
    return f"{CATALOG_PREFIX}{kb.label}/{rel}"
