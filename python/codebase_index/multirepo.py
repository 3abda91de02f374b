"""Wiring of multi-repository search and publishing: which backend answers (this machine's indexes or
the configured shared one), which repositories and branches, the query embedding, and the fallback when
the shared backend fails. The CLI and the tools call these; the stages live in `backends`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import repos as registry
from .backends import federated
from .backends.base import BackendError, RepoInfo
from .config import Config, index_dir, load_config
from .git import current_branch
from .search import Filters

if TYPE_CHECKING:
    from .backends.local import LocalBackend
    from .backends.qdrant import QdrantBackend
    from .service import SearchResponse

ALL = "*"  # in a `repos` list: every registered repository


def connect_backend(config: Config, url: str | None = None, collection: str | None = None) -> QdrantBackend:
    """The shared backend of `url` or of the configuration's `backend` section."""
    from .backends.qdrant import QdrantBackend

    cfg = config.backend
    if url is None and cfg is None:
        raise BackendError(
            'no shared backend configured: set `backend: {"kind": "qdrant", "url": ...}` in the config '
            "or pass --to / --backend-url"
        )
    target = url or (cfg.url if cfg is not None else "")
    key = cfg.api_key if cfg is not None else None
    name = collection or (cfg.collection if cfg is not None else None)
    return QdrantBackend.connect(
        target,
        api_key=key,
        collection=name,
        shards=cfg.shards if cfg is not None else None,
        replicas=cfg.replicas if cfg is not None else None,
    )


def query_embedder(config: Config, text: str) -> Callable[[str], np.ndarray | None]:
    """The query's embedding for a model id, computed at most once; None when the configured provider
    is another model or none is usable."""
    from .embedder import shared_provider
    from .embeddings.base import EmbeddingError

    cache: dict[str, np.ndarray | None] = {}

    def embed(model: str) -> np.ndarray | None:
        if model not in cache:
            try:
                provider = shared_provider(config)
            except EmbeddingError:
                provider = None
            cache[model] = (
                provider.embed_query(text) if provider is not None and provider.model_id == model else None
            )
        return cache[model]

    return embed


def _has_local_index(root: Path, config: Config) -> bool:
    return (index_dir(root, config) / "codebase.db").is_file()


def backend_repos(backend: QdrantBackend, names: Sequence[str], root: Path | None) -> list[RepoInfo]:
    """The published repositories a search covers (all when `names` is empty or holds `*`), each on its
    last published branch, except the repository checked out at `root`: there the checkout's branch,
    as a local search would use."""
    known = backend.repos()
    wanted = [n for n in names if n != ALL]
    if wanted:
        missing = [n for n in wanted if n not in {r.name for r in known}]
        if missing:  # names only what was asked for, not every repository the collection holds
            raise BackendError(
                f"not in collection {backend.collection!r}: {', '.join(missing)}; "
                "`codebase-index repos list --backend` lists the published ones"
            )
        known = [r for r in known if r.name in wanted]
    if root is not None and (root / ".git").exists():
        here = root.resolve().name
        branch = current_branch(root)
        known = [RepoInfo(r.name, branch, r.chunks, r.root, r.model) if r.name == here else r for r in known]
    return known


def search(
    root: Path,
    query: str,
    *,
    repos: Sequence[str] = (),
    all_repos: bool = False,
    use_backend: bool | None = None,
    top_k: int = 10,
    filters: Filters | None = None,
    config: Config | None = None,
    local: LocalBackend | None = None,
    mode: str | None = None,
) -> SearchResponse:
    """One query over several repositories: the local indexes named (`repos`, `*` or `all_repos` for
    every registered one), or the shared backend (`use_backend`; by default when one is configured and
    this project has no local index). A failing backend falls back to the local indexes, saying so.
    `mode` is hybrid (None) or keyword; a semantic-only ranking across repositories is not offered."""
    if mode not in (None, "hybrid", "keyword"):
        raise ValueError(f"a multi-repository search is hybrid or keyword, not {mode}")
    keyword_only = mode == "keyword"
    from .service import SearchResponse

    config = config or load_config(root)
    all_repos = all_repos or ALL in repos
    if use_backend is None:
        use_backend = config.backend is not None and not _has_local_index(root, config)
    embed = query_embedder(config, query)
    notice = None
    if use_backend:
        backend = None
        try:
            backend = connect_backend(config)
            chosen = backend_repos(backend, [] if all_repos else repos, root)
            found, strategy, notice = federated.search(
                backend, query, chosen, config, embed, top_k=top_k, filters=filters, keyword_only=keyword_only
            )
            return SearchResponse(query, strategy, top_k, found, notice)
        except BackendError as exc:
            if config.backend is None or not registry.list_repos():
                raise
            notice = f"shared backend failed ({exc}); answered from the local indexes"
        finally:
            if backend is not None:
                backend.close()
    entries = registry.resolve(repos, all_repos=all_repos, current=root) if (repos or all_repos) else []
    if not entries:
        entries = registry.resolve(["."], current=root)
    own = local is None
    backend_local = local if local is not None else _open_local([])
    try:
        chosen, broken = _open_engines(backend_local, entries, skip_broken=all_repos)
        if broken:
            notice = "; ".join(n for n in (notice, "skipped " + "; ".join(broken)) if n)
        found, strategy, more = federated.search(
            backend_local,
            query,
            chosen,
            config,
            embed,
            top_k=top_k,
            filters=filters,
            keyword_only=keyword_only,
        )
    finally:
        if own:
            backend_local.close()
    return SearchResponse(query, strategy, top_k, found, "; ".join(n for n in (notice, more) if n) or None)


def _open_engines(
    backend_local: LocalBackend, entries: Sequence[registry.RepoEntry], *, skip_broken: bool
) -> tuple[list[RepoInfo], list[str]]:
    """Each repository's engine and branch; with `skip_broken` (every registered repository, `*`) one
    that cannot be opened (its configuration or index is broken, its folder gone) is left out and named
    with why, so the others still answer; a repository named on purpose fails the search, saying why.
    Fails when every one is broken."""
    from .jsonc import ConfigError
    from .store import StoreError

    chosen: list[RepoInfo] = []
    broken: list[str] = []
    for entry in entries:
        try:
            engine = backend_local.engines.get(entry.name)
            if engine is None:
                engine = backend_local.engines[entry.name] = registry.engine_for(entry)
            chosen.append(RepoInfo(entry.name, engine.branch()))
        except (ConfigError, StoreError, registry.RegistryError, OSError, ValueError) as exc:
            if not skip_broken:
                raise
            broken.append(f"{entry.name} ({entry.root}): {exc}")
    if broken and not chosen:
        raise registry.RegistryError("no registered repository could be searched: " + "; ".join(broken))
    return chosen, broken


def _open_local(entries: Sequence[registry.RepoEntry]) -> LocalBackend:
    from .backends.local import LocalBackend

    return LocalBackend({e.name: registry.engine_for(e) for e in entries})
