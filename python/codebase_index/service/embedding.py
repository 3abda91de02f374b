"""The engine's vector side: the embedding provider, the embedding job, query vectors (cached, behind
a circuit breaker) and the vector snapshot searches read. `Engine` holds the state; this module wires it.
"""

from __future__ import annotations

import logging
import shlex
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

import msgspec
import numpy as np

from .. import embedder, knowledge
from ..embedder import (
    META_MODEL,
    EmbeddingJob,
    EmbeddingMismatchError,
    EmbedProgressFn,
    EmbedReport,
    check_model,
    shared_provider,
)
from ..embeddings.base import EmbeddingError
from ..processing import PassEmbedding
from ..resilience import QUERY_EMBEDDING, Breaker, cooling_down, endpoint_key
from ..search import DocRow, KeywordSnapshot
from ..store import Store, StoreError
from ..vectors import AnnIndex, VectorCheck, VectorSnapshot

if TYPE_CHECKING:
    from ..embeddings.base import EmbeddingProvider
    from .engine import Engine

log = logging.getLogger("codebase_index.search")
QUERY_CACHE_SIZE = 256
# Threads running hybrid searches' retrievers beside their embeddings (`beside`): one per concurrent search.
SEARCH_THREADS = 4
T = TypeVar("T")


class QueryEmbeddingError(Exception):
    """The query could not be embedded (provider failed or cooling down); the message is search's note."""


def stored_model_kept(engine: Engine) -> str | None:
    """The built-in model an existing index keeps using, or None: an index whose vectors another built-in
    model made (MiniLM, the default before the static code model) keeps that model while the
    configuration names none, until `index --force` re-embeds it with the default
    (`Engine.keep_stored_model` is then off)."""
    from ..embeddings import DEFAULT_MODEL, builtin_model_of

    config = engine.config
    if not engine.keep_stored_model or config.embedding_provider not in ("auto", "embedded"):
        return None
    if config.embedding_model is not None or not engine.has_index():
        return None
    stored = builtin_model_of(engine.store.get_meta(META_MODEL))
    return stored if stored is not None and stored != DEFAULT_MODEL else None


def embeds_inline(engine: Engine) -> bool:
    """Whether the engine's model embeds in the index pass (the static code model), decided from the
    configuration and the index, without building a provider: an index pass with another model must not
    load it (a CLI search that indexes first never needed MiniLM's weights)."""
    from ..embeddings import DEFAULT_MODEL, STATIC_MODEL

    config = engine.config
    if config.embedding_provider not in ("auto", "embedded"):
        return False
    return (stored_model_kept(engine) or config.embedding_model or DEFAULT_MODEL) == STATIC_MODEL


def replace_older_static_vectors(engine: Engine, provider: EmbeddingProvider) -> int:
    """Drop the vectors an earlier release of the built-in static model made (`embedded:code-static-v1`
    when `-v2` ships), so the index pass re-embeds every chunk with the installed one: that costs seconds,
    where keeping them would leave the index keyword-only until `index --force`. Any other stored model
    (MiniLM, a remote one, a folder) is left alone. Returns how many vectors went."""
    from ..embeddings import STATIC_MODEL, builtin_model_of

    stored = engine.store.get_meta(META_MODEL)
    if stored is None or stored == provider.model_id:
        return 0
    if builtin_model_of(stored) != STATIC_MODEL or builtin_model_of(provider.model_id) != STATIC_MODEL:
        return 0
    dropped = embedder.switch_model(engine.store, provider)
    AnnIndex.remove(engine.index_dir, stored)
    log.info("re-embedding with %s: dropped %d vectors of %s", provider.model_id, dropped, stored)
    return dropped


def pass_embedding(engine: Engine) -> PassEmbedding | None:
    """The model that embeds in the index pass beside chunking (`processing.PassEmbedding`): the built-in
    static model, when it embeds inline and the index holds no other model's vectors (an earlier static
    release's are replaced first). Anything the pass does not embed is left to the inline job after it."""
    if not embeds_inline(engine):
        return None
    provider = engine.embedding_provider()
    folder = getattr(provider, "folder", None)
    if provider is None or folder is None or not getattr(provider, "inline", False):
        return None
    replace_older_static_vectors(engine, provider)
    try:
        embedder.check_model(engine.store, provider)  # records the model on an index that has none yet
    except EmbeddingMismatchError:
        return None
    return PassEmbedding(str(folder), provider.model_id, provider)


def embedding_provider(engine: Engine) -> EmbeddingProvider | None:
    """The configured provider, built once; None (with `engine._provider_error`) when none is usable."""
    if not engine._provider_ready:
        config, engine.model_note = engine.config, None
        kept = stored_model_kept(engine)
        if kept is not None:
            config = msgspec.structs.replace(config, embedding_model=kept)
            engine.model_note = (
                f"this index holds vectors of the {kept} model, made while it was the default: it keeps "
                "using it; `codebase-index index --force` re-embeds it with the default model"
            )
        try:
            engine._provider = shared_provider(config)  # one per process per setup
            if engine._provider is None:
                engine._provider_error = "no embedding provider available (keyword search only)"
        except EmbeddingError as exc:
            engine._provider_error = str(exc)
            if kept is not None:
                engine._provider_error += (
                    f"; or re-embed this index with the default model: codebase-index index --force "
                    f"{shlex.quote(str(engine.root))}"
                )
        engine._provider_ready = True
    return engine._provider


def embed(
    engine: Engine,
    *,
    progress: EmbedProgressFn | None = None,
    stop: threading.Event | None = None,
    wait_for_lock: bool = True,
    sync_ann: bool = True,
) -> EmbedReport | None:
    """Embed the current branch's pending chunks (committed batch by batch) and (`sync_ann`) bring the
    ANN index up to date; None when no provider is usable. Raises EmbeddingMismatchError on a model
    change."""
    provider = engine.embedding_provider()
    if provider is None:
        return None
    job = EmbeddingJob(engine.index_dir, engine.embedding_catalogs(), provider, stop=stop)
    report = job.run(progress, wait_for_lock=wait_for_lock)
    if sync_ann and not report.cancelled and report.error is None:
        sync_ann_index(engine, provider)
    return report


def sync_ann_index(engine: Engine, provider: EmbeddingProvider) -> str | None:
    """Bring the ANN index of `provider`'s vectors up to date when there are enough of them for one
    (what `AnnIndex.sync` did: "current", "updated", ...), else None: search is exact below that."""
    count = engine.store.conn.execute(
        "SELECT COUNT(*) FROM embeddings WHERE model_id = ?", (provider.model_id,)
    ).fetchone()[0]
    if count < engine.ann_threshold():
        return None
    return AnnIndex.sync(engine.store, engine.index_dir, provider.model_id, provider.dimensions)[1]


def query_vector(engine: Engine, text: str) -> np.ndarray:
    """The query's embedding, cached per text (agents repeat and refine queries). Raises
    QueryEmbeddingError (its message is the note search shows) when the provider fails, within the
    remote query budget (`search.queryEmbeddingTimeoutMs`, one try), or is cooling down after failing."""
    found = query_embedding(engine, text)
    return found if isinstance(found, np.ndarray) else found()


def query_embedding(engine: Engine, text: str) -> np.ndarray | Callable[[], np.ndarray]:
    """`query_vector` in two steps: the cached vector, or else (after asking the circuit breaker:
    QueryEmbeddingError while the provider cools down) a function that calls the model. A hybrid search
    asks before it hands its retrievers to another thread, so that nothing between the hand-over and the
    model gives that thread the GIL (a file read would) and the model starts at once; with the vector
    cached it runs them itself (a thread hop would only add to the search)."""
    provider = engine.embedding_provider()
    if provider is None:
        raise StoreError(engine._provider_error or "no embedding provider")
    cached = _cached_query_vector(engine, provider.model_id, text)
    if cached is not None:
        return cached
    guard = breaker(engine, QUERY_EMBEDDING)
    endpoint = provider_endpoint(provider)
    blocked = guard.allow(endpoint)
    if blocked is not None:
        raise QueryEmbeddingError(f"keyword results only: the embedding provider {cooling_down(blocked)}")
    key = (provider.model_id, text)

    def run() -> np.ndarray:
        try:
            vector = provider.embed_query(text)
        except Exception as exc:  # a dead, slow or misconfigured provider never fails the search
            error = str(exc) if isinstance(exc, EmbeddingError) else f"{type(exc).__name__}: {exc}"
            health = guard.failure(endpoint, error)
            log.warning("query embedding failed (%d in a row), keyword results: %s", health.failures, error)
            note = f"keyword results only: the embedding provider failed ({error})"
            raise QueryEmbeddingError(note) from None
        guard.success(endpoint)
        with engine._query_vectors_lock:
            engine._query_vectors[key] = vector
            while len(engine._query_vectors) > QUERY_CACHE_SIZE:
                engine._query_vectors.popitem(last=False)
        return vector

    return run


def early_embedding(
    engine: Engine, text: str, mode: str | None
) -> tuple[np.ndarray | Callable[[], np.ndarray] | None, str]:
    """The query's embedding for a search to start before it reads its snapshot: (the cached vector, a
    function calling the model, or None; why not, when the provider cools down). None in keyword mode and
    while the engine's last vector snapshot held no vector (its first search, nothing embedded yet): such
    a search reads the snapshot first and embeds only if there are vectors to search. Vectors seldom
    vanish between searches; when they do, the embedding was computed for nothing and stays cached."""
    seen = engine._vectors
    if mode == "keyword" or seen is None or len(seen[1]) == 0:
        return None, ""
    try:
        return query_embedding(engine, text), ""
    except QueryEmbeddingError as exc:
        return None, str(exc)
    except StoreError:  # no provider after all
        return None, ""


def _cached_query_vector(engine: Engine, model_id: str, text: str) -> np.ndarray | None:
    with engine._query_vectors_lock:
        cached = engine._query_vectors.get((model_id, text))
        if cached is not None:
            engine._query_vectors.move_to_end((model_id, text))
        return cached


def beside(engine: Engine, work: Callable[[], T]) -> Future[T]:
    """`work` started on one of the engine's search threads. A hybrid search runs its retrievers (keyword,
    graph, exact text) there while its own thread computes the query embedding: the model starts at once
    and its vector is at hand when it ends, with no thread hand-over on either side of it
    (bench/search_path.md)."""
    with engine._query_vectors_lock:
        if engine._search_executor is None:
            engine._search_executor = ThreadPoolExecutor(
                max_workers=SEARCH_THREADS, thread_name_prefix="search"
            )
        executor = engine._search_executor
    return executor.submit(work)


def breaker(engine: Engine, name: str) -> Breaker:
    """The engine's circuit breaker of one search-time dependency (query embedding, reranker)."""
    found = engine._breakers.get(name)
    if found is None:
        found = engine._breakers[name] = Breaker(engine.index_dir, name)
    return found


def provider_endpoint(provider: EmbeddingProvider) -> str:
    """Identity of the configured provider for the breaker: another URL or key starts afresh."""
    settings = getattr(provider, "settings", None)
    return endpoint_key(
        provider.model_id, getattr(settings, "base_url", ""), getattr(settings, "api_key", "")
    )


def vector_snapshot(engine: Engine, snap: KeywordSnapshot | None = None) -> VectorSnapshot | None:
    """Vectors of the current keyword snapshot's documents, topped up with embeddings committed since
    the last call; None without a provider. Raises EmbeddingMismatchError on a model change."""
    provider = engine.embedding_provider()
    if provider is None:
        return None
    snap = snap or engine.snapshot()
    with engine._vectors_lock:
        cached = engine._vectors
        if cached is not None and cached[0] is snap and cached[1].model_id == provider.model_id:
            vecs = cached[1]
        else:
            check_model(engine.store, provider, record=False)
            ids = [d.chunk_id for d in snap.docs]
            hashes = chunk_hashes(engine.store, ids)
            # Tombstoned documents of an overlay snapshot get no vector (their chunks may be gone).
            prefixes = kb_prefixes(engine)
            live = [
                embedding_key(d, hashes[d.chunk_id], prefixes)
                if snap.is_live(n) and d.chunk_id in hashes
                else ""
                for n, d in enumerate(snap.docs)
            ]
            vecs = VectorSnapshot(live, provider.dimensions, provider.model_id)
            engine._vectors = (snap, vecs)
        if len(snap.docs) >= engine.ann_threshold():
            vecs.reload_ann(engine.index_dir)  # one stat unless the embedding side saved a new file
        vecs.refresh(engine.store)
        return vecs


def usable_vectors(
    engine: Engine, snap: KeywordSnapshot, *, required: bool
) -> tuple[VectorSnapshot | None, str]:
    """The vector snapshot if it holds any vector, else None and why; `required` raises instead."""
    try:
        vecs = engine.vector_snapshot(snap)
    except EmbeddingMismatchError as exc:
        if required:
            raise
        return None, str(exc)
    if vecs is None:
        reason = engine.embedding_error() or "no embedding provider"
    elif len(vecs) == 0:
        reason = "no embeddings yet for this branch (they are computed after indexing)"
        failed = engine.store.conn.execute(
            "SELECT error FROM embedding_failures WHERE model_id = ? ORDER BY last_attempt DESC LIMIT 1",
            (vecs.model_id,),
        ).fetchone()
        if failed is not None:
            reason = f"no embeddings yet: embedding failed ({failed[0]}); retried on the next index run"
    else:
        return vecs, ""
    if required:
        raise StoreError(f"semantic search is unavailable: {reason}")
    return None, reason


def verify_vectors(engine: Engine, *, sample: int = 64) -> VectorCheck | None:
    """Check the index model's vectors (SQLite rows, the ANN file) and repair what disagrees, without
    re-embedding or loading any model; None when nothing was ever embedded here."""
    from ..embedder import META_DIMENSIONS
    from ..vectors import verify_vectors

    if not (engine.index_dir / "codebase.db").exists():
        return None
    model = engine.store.get_meta(META_MODEL)
    dims = engine.store.get_meta(META_DIMENSIONS)
    if model is None or dims is None:
        return None
    return verify_vectors(
        engine.store, engine.index_dir, model, int(dims), threshold=engine.ann_threshold(), sample=sample
    )


def stored_path(path: str, kb_prefixes: Sequence[str]) -> str:
    """A document's path as its catalog stores it (a knowledge-base result without `kb:<label>/`)."""
    for prefix in kb_prefixes:
        if path.startswith(prefix):
            return path[len(prefix) :]
    return path


def embedding_key(doc: DocRow, chunk_hash: str, kb_prefixes: Sequence[str]) -> str:
    """The embedding cache key of a snapshot document (`embedder.embedding_key`); the header names the
    stored path, so knowledge-base documents drop their `kb:<label>/` display prefix."""
    if not embedder.EMBED_HEADER:
        return chunk_hash
    path = stored_path(doc.path, kb_prefixes)
    return embedder.embedding_key(path, doc.symbol, doc.kind, chunk_hash)


def kb_prefixes(engine: Engine) -> list[str]:
    """Display prefixes (`kb:<label>/`) of the knowledge bases, longest first."""
    if not embedder.EMBED_HEADER:
        return []
    return sorted((knowledge.display_path(kb, "") for kb in engine.knowledge_bases()), key=len, reverse=True)


def chunk_hashes(store: Store, chunk_ids: Sequence[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    unique = list(dict.fromkeys(chunk_ids))
    for start in range(0, len(unique), 500):
        part = unique[start : start + 500]
        marks = ",".join("?" * len(part))
        out.update(store.conn.execute(f"SELECT id, chunk_hash FROM chunks WHERE id IN ({marks})", part))
    return out
