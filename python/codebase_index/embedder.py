"""Embedding storage and the background embedding job.

What is embedded (`embedding_text`): by default the chunk text exactly as stored (`chunks.text`), so the
cache key is `chunks.chunk_hash` and a chunk is embedded once, ever, whichever files and branches hold it.
With `EMBED_HEADER` on, a one-line header naming the file and symbol (`sessions.py: method
Session.send`) precedes the text, so the model sees which module a chunk belongs to; the cache key then
follows the embedded text (`embedding_key`), and identical text at two paths is embedded twice. The
header was measured on the 26-repo benchmark and the validation sets (bench/header_experiment.md) and is
off by default: path and symbol matches are scored by the ranking layer, which sees them anyway.

Vectors are stored as float16 (half the size, cosine error ~1e-4) in `embeddings`; one model per index
at a time: the active provider/model/width is recorded in `meta` and a different configured model is
refused (with the fix: `codebase-index index --force`, which purges the old model's vectors).

The job (`EmbeddingJob.run`) embeds the pending chunks of its catalogs (the current branch, then each
knowledge base's `kb:<path>` catalog, since search covers both) in batches, one transaction per batch,
so a cancelled or killed run loses nothing already committed and the next run resumes. Batches that fail
after the provider's retries go to `embedding_failures` and are retried on the next run.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgspec
import numpy as np

from .config import Config
from .embeddings.base import EmbeddingError, EmbeddingProvider
from .locks import file_lock
from .private_files import make_private_dir
from .store import Store, StoreError
from .store_schema import EMBEDDING_TABLES

if TYPE_CHECKING:
    from .embeddings.remote import RemoteEmbeddingSettings

META_MODEL = "embedding_model_id"
META_DIMENSIONS = "embedding_dimensions"
META_RATE = "embedding_rate"
EMBED_LOCK_NAME = "embed.lock"
# Texts per committed batch: big enough for length-sorted sub-batches on both worker threads, small enough
# that a kill loses at most a few seconds of work and search sees vectors arrive steadily.
EMBEDDED_BATCH = 64
REMOTE_BATCH = 256

EmbedProgressFn = Callable[[int, int], None]

# Embed a "path: kind symbol" header line before each chunk's text (see the module docstring). A module
# switch, not a config option: it changes every cache key, and it is off until it measurably helps.
EMBED_HEADER = False
# Symbols of `block` chunks list every name they bind; the header keeps the first ones only (MiniLM reads
# 256 tokens, and the header should not crowd out the code).
_HEADER_SYMBOL_CHARS = 120


class EmbedSource(NamedTuple):
    """Where one embedding key comes from: a chunk's text hash and the file/symbol its header names."""

    chunk_hash: str
    path: str
    kind: str
    symbol: str


def embedding_header(path: str, symbol: str, kind: str) -> str:
    """The header line: `path: kind symbol` (just `path` for chunks without a symbol), newline-terminated.

    >>> embedding_header("src/requests/sessions.py", "Session.send", "method")
    'src/requests/sessions.py: method Session.send\\n'
    """
    name = " ".join(symbol.split())
    if len(name) > _HEADER_SYMBOL_CHARS:
        name = name[:_HEADER_SYMBOL_CHARS].rsplit(" ", 1)[0]
    return f"{path}: {kind} {name}\n" if name else f"{path}\n"


def header_for(provider: object) -> bool:
    """Whether `provider`'s model reads the path + symbol header: the static code model was trained on
    chunks with it (`embed_header`); the others follow EMBED_HEADER."""
    return bool(getattr(provider, "embed_header", EMBED_HEADER))


def embedding_text(path: str, symbol: str, kind: str, text: str, *, header: bool | None = None) -> str:
    """Exactly what the model embeds for a chunk: the text, behind the header when `header` (default
    `EMBED_HEADER`) is on."""
    use = EMBED_HEADER if header is None else header
    return embedding_header(path, symbol, kind) + text if use else text


def embedding_key(path: str, symbol: str, kind: str, chunk_hash: str, *, header: bool | None = None) -> str:
    """The cache key of `embedding_text(...)`: without the header it is the chunk hash (the hash of the
    embedded text); with it, a hash of the header and the text's hash, which identifies the embedded text
    as well and is computable without reading chunk texts (pending counts run over every chunk)."""
    use = EMBED_HEADER if header is None else header
    if not use:
        return chunk_hash
    data = ("hdr1\0" + embedding_header(path, symbol, kind) + chunk_hash).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


class EmbeddingMismatchError(StoreError):
    """The index holds vectors of another model than the configured one."""


class EmbeddingStatus(msgspec.Struct, rename="camel"):
    """Embedding progress of one branch for the active model (what `status` shows)."""

    provider: str | None
    model: str | None
    dimensions: int | None
    embedded: int
    total: int
    failures: int
    rate: float | None
    running: bool = False
    error: str | None = None
    last_failure: str | None = None
    # Set when the index's vectors are of another model or width than the configured one: why, for
    # `status` to say "rebuild needed: run index --force" instead of a misleading percentage.
    rebuild_needed: str | None = None
    # Where chunk and query texts go: "this machine (in-process model)" or the remote endpoint's URL.
    endpoint: str | None = None
    # The embedded model's engine ("onnx-int8", "numpy-fp32") and why it is not the preferred one.
    backend: str | None = None
    backend_note: str | None = None
    # Why the index uses another model than the configured default (an index MiniLM embedded keeps it).
    model_note: str | None = None


def model_mismatch(store: Store, provider: EmbeddingProvider) -> str | None:
    """Why the stored vectors cannot serve `provider` (another model or width), or None when they can
    (or none are stored). The same test `check_model` refuses on, without raising."""
    ensure_tables(store.conn)
    stored = store.get_meta(META_MODEL)
    stored_dims = store.get_meta(META_DIMENSIONS)
    if stored is None or (stored == provider.model_id and stored_dims == str(provider.dimensions)):
        return None
    count = store.conn.execute("SELECT COUNT(*) FROM embeddings WHERE model_id = ?", (stored,)).fetchone()[0]
    if not count:
        return None
    return (
        f"the index holds {count} vectors of {stored} ({stored_dims} dimensions), the configured model is "
        f"{provider.model_id} ({provider.dimensions} dimensions)"
    )


class EmbedReport(msgspec.Struct, rename="camel"):
    """What one run did."""

    model: str
    embedded: int
    failed: int
    pending: int
    seconds: float
    cancelled: bool = False
    error: str | None = None


# -- storage --------------------------------------------------------------------------------------------


def ensure_tables(conn: sqlite3.Connection) -> None:
    """Create the embedding tables in indexes written before they joined the v1 schema (idempotent)."""
    exists = conn.execute(
        "SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name IN ('embeddings', "
        "'embedding_failures')"
    ).fetchone()[0]
    if exists == 2:
        return
    for statement in EMBEDDING_TABLES.split(";"):
        if statement.strip():
            conn.execute(statement)


def encode_vector(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype=np.float16).tobytes()


def decode_vectors(blobs: Sequence[bytes], dimensions: int) -> np.ndarray:
    """float16 blobs -> (n, dimensions) float32 matrix (exact numpy search wants float32)."""
    if not blobs:
        return np.zeros((0, dimensions), dtype=np.float32)
    raw = np.frombuffer(b"".join(blobs), dtype=np.float16)
    if raw.size != len(blobs) * dimensions:
        raise StoreError(
            f"stored vectors do not have {dimensions} dimensions; run `codebase-index index --force`"
        )
    return raw.reshape(len(blobs), dimensions).astype(np.float32)


def check_model(store: Store, provider: EmbeddingProvider, *, record: bool = True) -> None:
    """Refuse to mix vectors of two models; record the model when the index has none yet (`record`)."""
    ensure_tables(store.conn)
    stored = store.get_meta(META_MODEL)
    stored_dims = store.get_meta(META_DIMENSIONS)
    if stored == provider.model_id and stored_dims == str(provider.dimensions):
        return
    if stored is not None:
        others = store.conn.execute(
            "SELECT COUNT(*) FROM embeddings WHERE model_id = ?", (stored,)
        ).fetchone()[0]
        if others:
            raise EmbeddingMismatchError(
                f"the index holds {others} vectors of {stored} ({stored_dims} dimensions) but the configured "
                f"embedding model is {provider.model_id} ({provider.dimensions} dimensions); vectors of two "
                "models are never mixed: run `codebase-index index --force` to re-embed with the new model"
            )
    if record:
        with store.transaction():
            store.set_meta(META_MODEL, provider.model_id)
            store.set_meta(META_DIMENSIONS, str(provider.dimensions))


def switch_model(store: Store, provider: EmbeddingProvider) -> int:
    """Make `provider` the index's model, dropping other models' vectors; returns how many went."""
    ensure_tables(store.conn)
    with store.transaction():
        dropped = store.conn.execute(
            "DELETE FROM embeddings WHERE model_id <> ?", (provider.model_id,)
        ).rowcount
        store.conn.execute("DELETE FROM embedding_failures WHERE model_id <> ?", (provider.model_id,))
        store.set_meta(META_MODEL, provider.model_id)
        store.set_meta(META_DIMENSIONS, str(provider.dimensions))
    return int(dropped)


Catalogs = str | Sequence[str]


def _catalog_list(catalogs: Catalogs) -> list[str]:
    return [catalogs] if isinstance(catalogs, str) else list(dict.fromkeys(catalogs))


def _catalog_sources(store: Store, catalog: str) -> Iterator[tuple[str, EmbedSource]]:
    """(embedding key, source) of every chunk of a catalog, in path then chunk order (header mode)."""
    rows = store.conn.execute(
        """SELECT c.chunk_hash, f.path, c.kind, c.symbol FROM files f
           JOIN chunks c ON c.content_key = f.content_key WHERE f.branch = ? ORDER BY f.path, c.ordinal""",
        (catalog,),
    )
    for row in rows:
        source = EmbedSource(*row)
        yield embedding_key(source.path, source.symbol, source.kind, source.chunk_hash, header=True), source


def _stored_keys(store: Store, model_id: str) -> set[str]:
    return {
        r[0] for r in store.conn.execute("SELECT chunk_hash FROM embeddings WHERE model_id = ?", (model_id,))
    }


def pending_sources(store: Store, catalogs: Catalogs, model_id: str) -> dict[str, EmbedSource]:
    """Embedding keys of the catalogs (a branch, knowledge bases) with no vector for `model_id`, in catalog
    then path order, with what to embed for each."""
    ensure_tables(store.conn)
    out: dict[str, EmbedSource] = {}
    if EMBED_HEADER:
        stored = _stored_keys(store, model_id)
        for catalog in _catalog_list(catalogs):
            for key, source in _catalog_sources(store, catalog):
                if key not in stored and key not in out:
                    out[key] = source
        return out
    for catalog in _catalog_list(catalogs):
        rows = store.conn.execute(
            """SELECT c.chunk_hash, f.path, c.kind, c.symbol FROM files f
               JOIN chunks c ON c.content_key = f.content_key
               WHERE f.branch = ? AND NOT EXISTS (
                   SELECT 1 FROM embeddings e WHERE e.chunk_hash = c.chunk_hash AND e.model_id = ?)
               ORDER BY f.path, c.ordinal""",
            (catalog, model_id),
        )
        # Keyed by the text alone; a model that reads the header (`header_for`) gets the first place
        # the text occurs (identical chunks at two paths share one vector).
        for row in rows:
            out.setdefault(row[0], EmbedSource(*row))
    return out


def pending_by_path(store: Store, catalog: str, model_id: str) -> dict[str, tuple[int, int]]:
    """Per path of the catalog: (chunks, characters) still waiting for a `model_id` vector (a text two
    paths share counts once, at the first)."""
    sources = pending_sources(store, catalog, model_id)
    lengths: dict[str, int] = {}
    hashes = [s.chunk_hash for s in sources.values()]
    for start in range(0, len(hashes), 500):
        part = hashes[start : start + 500]
        marks = ",".join("?" * len(part))
        lengths.update(
            store.conn.execute(
                f"SELECT chunk_hash, LENGTH(text) FROM chunks WHERE chunk_hash IN ({marks}) "
                "GROUP BY chunk_hash",
                part,
            )
        )
    out: dict[str, tuple[int, int]] = {}
    for source in sources.values():
        n, chars = out.get(source.path, (0, 0))
        out[source.path] = (n + 1, chars + lengths.get(source.chunk_hash, 0))
    return out


def pending_hashes(store: Store, catalogs: Catalogs, model_id: str) -> list[str]:
    """The embedding keys `pending_sources` finds, in order."""
    return list(pending_sources(store, catalogs, model_id))


def texts_for(store: Store, hashes: Sequence[str]) -> dict[str, str]:
    """Chunk texts by chunk hash."""
    out: dict[str, str] = {}
    for start in range(0, len(hashes), 500):
        part = list(hashes[start : start + 500])
        marks = ",".join("?" * len(part))
        out.update(
            store.conn.execute(
                f"SELECT chunk_hash, text FROM chunks WHERE chunk_hash IN ({marks}) GROUP BY chunk_hash", part
            )
        )
    return out


def embedding_status(
    store: Store, catalogs: Catalogs, model_id: str | None
) -> tuple[int, int, int, str | None]:
    """(embedded, total, failures, last failure message) over the catalogs, in distinct embedding keys."""
    ensure_tables(store.conn)
    names = _catalog_list(catalogs)
    marks = ",".join("?" * len(names))
    if EMBED_HEADER:
        keys = {key for catalog in names for key, _ in _catalog_sources(store, catalog)}
        total = len(keys)
        embedded = len(keys & _stored_keys(store, model_id)) if model_id is not None else 0
    else:
        total = store.conn.execute(
            f"""SELECT COUNT(DISTINCT c.chunk_hash) FROM files f
                JOIN chunks c ON c.content_key = f.content_key WHERE f.branch IN ({marks})""",
            names,
        ).fetchone()[0]
        if model_id is not None:
            embedded = store.conn.execute(
                f"""SELECT COUNT(DISTINCT c.chunk_hash) FROM files f
                    JOIN chunks c ON c.content_key = f.content_key
                    JOIN embeddings e ON e.chunk_hash = c.chunk_hash AND e.model_id = ?
                    WHERE f.branch IN ({marks})""",
                (model_id, *names),
            ).fetchone()[0]
    if model_id is None:
        return 0, int(total), 0, None
    failures, last = store.conn.execute(
        """SELECT COUNT(*), (SELECT error FROM embedding_failures WHERE model_id = ?
                             ORDER BY last_attempt DESC LIMIT 1)
           FROM embedding_failures WHERE model_id = ?""",
        (model_id, model_id),
    ).fetchone()
    return int(embedded), int(total), int(failures), last


def live_keys(store: Store) -> set[str]:
    """Embedding keys some catalog of the store still needs (header mode: what GC must keep)."""
    return {key for catalog in store.branches() for key, _ in _catalog_sources(store, catalog)}


def purge_orphan_embeddings(store: Store) -> int:
    """Delete vectors (and failure records) no chunk of any catalog needs any more; returns how many
    vectors went. The caller holds the transaction."""
    ensure_tables(store.conn)
    if not EMBED_HEADER:
        gone = store.conn.execute(
            "DELETE FROM embeddings WHERE chunk_hash NOT IN (SELECT chunk_hash FROM chunks)"
        ).rowcount
        store.conn.execute(
            "DELETE FROM embedding_failures WHERE chunk_hash NOT IN (SELECT chunk_hash FROM chunks)"
        )
        return int(gone)
    keep = live_keys(store)
    removed = 0
    for table, column in (("embeddings", "id"), ("embedding_failures", "rowid")):
        dead = [
            (r[0],)
            for r in store.conn.execute(f"SELECT {column}, chunk_hash FROM {table}")
            if r[1] not in keep
        ]
        store.conn.executemany(f"DELETE FROM {table} WHERE {column} = ?", dead)
        if table == "embeddings":
            removed = len(dead)
    return removed


def has_failures(store: Store, model_id: str) -> bool:
    ensure_tables(store.conn)
    row = store.conn.execute("SELECT 1 FROM embedding_failures WHERE model_id = ? LIMIT 1", (model_id,))
    return row.fetchone() is not None


def insert_vectors(
    store: Store, model_id: str, hashes: Sequence[str], vectors: bytes, *, clear_failures: bool = True
) -> int:
    """Store one float16 row of `vectors` per chunk hash (a hash already embedded keeps its vector) in the
    caller's transaction; `clear_failures` also forgets those hashes' earlier failures. Returns how many
    vectors were new."""
    if not hashes:
        return 0
    width = len(vectors) // len(hashes)
    if width * len(hashes) != len(vectors) or width == 0:
        raise ValueError(f"{len(vectors)} bytes of vectors for {len(hashes)} chunks")
    changes = store.conn.total_changes
    store.conn.executemany(
        "INSERT OR IGNORE INTO embeddings (chunk_hash, model_id, vector) VALUES (?, ?, ?)",
        [(h, model_id, vectors[i * width : (i + 1) * width]) for i, h in enumerate(hashes)],
    )
    added = store.conn.total_changes - changes
    if clear_failures:
        store.conn.executemany(
            "DELETE FROM embedding_failures WHERE chunk_hash = ? AND model_id = ?",
            [(h, model_id) for h in hashes],
        )
    return added


def _store_batch(
    store: Store, model_id: str, hashes: Sequence[str], vectors: np.ndarray, rate: float | None
) -> None:
    with store.transaction():
        insert_vectors(store, model_id, hashes, np.asarray(vectors, dtype=np.float16).tobytes())
        if rate is not None:
            store.set_meta(META_RATE, f"{rate:.2f}")


def _record_failures(store: Store, model_id: str, hashes: Sequence[str], error: str) -> None:
    now = time.time()
    with store.transaction():
        store.conn.executemany(
            """INSERT INTO embedding_failures (chunk_hash, model_id, error, attempts, last_attempt)
               VALUES (?, ?, ?, 1, ?)
               ON CONFLICT (chunk_hash, model_id) DO UPDATE SET error = excluded.error,
                 attempts = attempts + 1, last_attempt = excluded.last_attempt""",
            [(h, model_id, error, now) for h in hashes],
        )


@contextlib.contextmanager
def embed_lock(index_dir: Path, *, wait: bool) -> Iterator[bool]:
    """One embedding job per index across processes; yields False when `wait` is off and it is taken."""
    make_private_dir(index_dir)
    with file_lock(index_dir / EMBED_LOCK_NAME, wait=wait) as got:
        yield got


# -- the job --------------------------------------------------------------------------------------------


class EmbeddingJob:
    """Embeds the pending chunks of a branch and of knowledge-base catalogs; owns its own SQLite connection
    (it runs beside searches)."""

    def __init__(
        self,
        index_dir: Path,
        catalogs: Catalogs,
        provider: EmbeddingProvider,
        *,
        batch_size: int | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        self.index_dir = index_dir
        self.catalogs = _catalog_list(catalogs)
        self.provider = provider
        remote = hasattr(provider, "embed_batches")
        self.batch_size = batch_size or (REMOTE_BATCH if remote else EMBEDDED_BATCH)
        self.stop = stop or threading.Event()

    def run(self, progress: EmbedProgressFn | None = None, *, wait_for_lock: bool = True) -> EmbedReport:
        started = time.perf_counter()
        model_id = self.provider.model_id
        store = Store.open(self.index_dir)
        embedded = failed = 0
        try:
            with embed_lock(self.index_dir, wait=wait_for_lock) as got:
                if not got:
                    pending = len(pending_hashes(store, self.catalogs, model_id))
                    return EmbedReport(
                        model_id, 0, 0, pending, 0.0, error="another process is embedding this index"
                    )
                check_model(store, self.provider)
                attempted: set[str] = set()
                # New chunks can land while we run (an index run beside us): loop until none are left.
                while not self.stop.is_set():
                    sources = pending_sources(store, self.catalogs, model_id)
                    todo = [h for h in sources if h not in attempted]
                    if not todo:
                        break
                    done_before = embedded + failed
                    total = done_before + len(todo)
                    if progress is not None:
                        progress(done_before, total)
                    for start in range(0, len(todo), self.batch_size):
                        if self.stop.is_set():
                            break
                        batch = todo[start : start + self.batch_size]
                        attempted.update(batch)
                        ok, bad = self._embed_batch(store, batch, sources, started, embedded)
                        embedded += ok
                        failed += bad
                        if progress is not None:
                            progress(embedded + failed, total)
            remaining = len(pending_hashes(store, self.catalogs, model_id))
        finally:
            store.close()
        return EmbedReport(
            model=model_id,
            embedded=embedded,
            failed=failed,
            pending=remaining,
            seconds=round(time.perf_counter() - started, 3),
            cancelled=self.stop.is_set(),
        )

    def _embed_batch(
        self,
        store: Store,
        batch: list[str],
        sources: dict[str, EmbedSource],
        started: float,
        embedded_so_far: int,
    ) -> tuple[int, int]:
        """Embed and commit one batch of embedding keys; returns (embedded, failed) counts."""
        texts = texts_for(store, [sources[h].chunk_hash for h in batch])
        hashes = [h for h in batch if sources[h].chunk_hash in texts]  # a chunk purged meanwhile is gone
        header = header_for(self.provider)
        items = [
            embedding_text(src.path, src.symbol, src.kind, texts[src.chunk_hash], header=header)
            for src in (sources[h] for h in hashes)
        ]
        model_id = self.provider.model_id
        embed_batches = getattr(self.provider, "embed_batches", None)
        if embed_batches is not None:
            outcome = embed_batches(items)
            ok_rows = [i for i in range(len(hashes)) if outcome.ok[i]]
            vectors = outcome.vectors[ok_rows]
            good = [hashes[i] for i in ok_rows]
            failures = [([hashes[i] for i in fb.indices], fb.error) for fb in outcome.failed]
        else:
            try:
                vectors = self.provider.embed_documents(items)
                good, failures = hashes, []
            except EmbeddingError as exc:
                vectors = np.zeros((0, self.provider.dimensions), dtype=np.float32)
                good, failures = [], [(hashes, str(exc))]
        elapsed = time.perf_counter() - started
        rate = (embedded_so_far + len(good)) / elapsed if elapsed > 0 else None
        if good:
            _store_batch(store, model_id, good, vectors, rate)
        n_failed = 0
        for failed_hashes, error in failures:
            _record_failures(store, model_id, failed_hashes, error)
            n_failed += len(failed_hashes)
        return len(good), n_failed


# -- provider selection -----------------------------------------------------------------------------------

# One in-process model per distinct setup per process: the sidecar's reader and writer engines share it, so
# the embedded model's weights (~140 MB resident) load once; it is thread-safe. Remote clients are cheap and
# hold connections to one server, so each engine keeps its own. A few setups at most (config edits).
_SHARED_MAX = 4
_shared: dict[bytes, EmbeddingProvider] = {}
_shared_lock = threading.Lock()


def _provider_key(config: Config) -> bytes:
    """Everything `create_provider` reads from the config, as bytes (API keys included, never shown)."""
    return msgspec.json.encode(
        [
            config.embedding_provider,
            config.embedding_model,
            config.embedded_backend,
            config.custom_provider,
            config.indexing.retries,
            config.indexing.retry_delay_ms,
            config.search.query_embedding_timeout_ms,
        ]
    )


def shared_provider(config: Config) -> EmbeddingProvider | None:
    """`create_provider(config)`, an in-process model built once per process for equal settings. Failures
    are not cached: the next engine tries again (the model may have been installed meanwhile)."""
    key = _provider_key(config)
    with _shared_lock:
        found = _shared.get(key)
        if found is not None:
            return found
        provider = create_provider(config)
        if provider is not None and not hasattr(provider, "embed_batches"):  # local, not a remote client
            if len(_shared) >= _SHARED_MAX:
                _shared.pop(next(iter(_shared)))
            _shared[key] = provider
        return provider


def create_provider(config: Config) -> EmbeddingProvider | None:
    """The configured provider. Private by default: `auto` is the bundled offline model and nothing else,
    whatever API keys the environment holds; code leaves the machine only for a remote provider named
    in a config file. Raises EmbeddingError with the fix when the chosen provider cannot be built (for
    `auto` and `embedded`: the command that installs the model), so search says why it is keyword-only.
    """
    from .embeddings import (
        DEFAULT_MODEL,
        MINILM_MODEL,
        STATIC_MODEL,
        create_embedded_provider,
        create_static_provider,
    )

    name = config.embedding_provider
    if name in ("auto", "embedded"):
        model = config.embedding_model or DEFAULT_MODEL
        if model == STATIC_MODEL:
            return create_static_provider()
        folder = None if model == MINILM_MODEL else model  # else a sentence-transformers folder
        return create_embedded_provider(folder, backend=config.embedded_backend)
    from .embeddings.remote import create_remote_provider

    return create_remote_provider(remote_settings(config))


def provider_endpoint(provider: EmbeddingProvider) -> str:
    """Where chunk texts are sent: "this machine" for an in-process model, else the remote URL."""
    settings = getattr(provider, "settings", None)
    base_url = getattr(settings, "base_url", None)
    return str(base_url) if base_url else "this machine (in-process model)"


def remote_settings(config: Config) -> RemoteEmbeddingSettings:
    """Map the config Structs onto the remote client's settings (keys stay out of any log line)."""
    from .embeddings.remote import RemoteEmbeddingSettings

    cp = config.custom_provider
    provider = config.embedding_provider
    if provider == "embedded":
        raise ValueError("the embedded provider has no remote settings")
    model = config.embedding_model or (cp.model if cp is not None and cp.model else None)
    base = RemoteEmbeddingSettings(
        provider=provider,
        model=model,
        max_retries=config.indexing.retries,
        retry_delay_ms=config.indexing.retry_delay_ms,
        query_timeout_ms=config.search.query_embedding_timeout_ms,
    )
    if cp is None:
        return base
    return msgspec.structs.replace(
        base,
        base_url=cp.base_url or None,
        api_key=cp.api_key,
        dimensions=cp.dimensions or None,
        max_tokens=cp.max_tokens,
        timeout_ms=cp.timeout_ms,
        concurrency=cp.concurrency,
        request_interval_ms=cp.request_interval_ms,
        max_batch_size=cp.max_batch_size,
    )
