"""Keeping the in-memory keyword snapshot fresh without rebuilding it after every save.

A full `KeywordSnapshot` of the CPython stdlib (64k chunks, with its path/symbol/file fields) takes ~2 s
to build; a save changes one file. So the cache keeps a BASE snapshot together with the catalog it was
built from (display path -> catalog, stored path, content key), and answers a store change with an
OVERLAY: the base with the documents of every file whose content differs from the base's catalog
tombstoned, plus the current chunks of those files appended (`KeywordSnapshot.overlay`). The diff is
always taken against the base, so overlays never stack; its cost grows with the files changed since the
base, and once that delta passes `merge_threshold` documents a background thread builds a new base.
A branch switch is the same diff (two branches mostly share their files), so it overlays too; a diff
above `OVERLAY_MAX_SHARE` of the base is rebuilt in full instead.

Everything a snapshot is built from (generation, catalog, chunk rows) is read in ONE read transaction on
the cache's own connection, so a snapshot never mixes two states of a concurrent index run.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import msgspec

from .bm25 import PostingsIndex
from .search import DocRow, KeywordSnapshot
from .store import Store

log = logging.getLogger(__name__)

# Above this share of the base's documents (or files) changed, a full build is about as cheap as an overlay.
OVERLAY_MAX_SHARE = 0.25
# Delta documents above which a new base is built in the background: max(this, 10% of the base).
MERGE_MIN_DOCS = 2_000
_CHUNK = 500

# A source of documents: a catalog (branch or knowledge base) and how its paths are shown (None: as is).
Source = tuple[str, Callable[[str], str] | None]
# display path -> (source, stored path, content key, first chunk id). The source is "" for the project
# (whatever its branch: two branches' catalogs are diffed file by file), the catalog for a knowledge base.
# The chunk id matters: a content purged and chunked again (a save, then an undo) keeps its key but gets
# new chunk rows.
Catalog = dict[str, tuple[str, str, str, int | None]]
# Meta key bumped by forced runs, which rewrite chunk rows in place: a base from before is dropped.
EPOCH_KEY = "chunks_epoch"

_ROWS_SQL = """SELECT c.id, f.path, f.language, c.ordinal, c.start_line, c.end_line, c.kind, c.symbol,
                      c.n_tokens, c.term_ids, c.term_tfs
               FROM files f JOIN chunks c ON c.content_key = f.content_key
               WHERE f.branch = ?{where} ORDER BY f.path, c.ordinal"""


class SnapshotStats(msgspec.Struct):
    """What the cache did (status, benchmarks): full builds, overlays, background merges."""

    builds: int = 0
    overlays: int = 0
    merges: int = 0
    last_kind: str = ""
    last_seconds: float = 0.0
    delta_docs: int = 0


@contextmanager
def _read_transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One consistent view (WAL snapshot isolation) for everything read inside."""
    conn.execute("BEGIN")
    try:
        yield
    finally:
        conn.execute("COMMIT")


def load_catalog(conn: sqlite3.Connection, sources: Sequence[Source]) -> Catalog:
    out: Catalog = {}
    for catalog, display in sources:
        for path, key, first in conn.execute(
            """SELECT f.path, f.content_key,
                      (SELECT MIN(c.id) FROM chunks c WHERE c.content_key = f.content_key)
               FROM files f WHERE f.branch = ?""",
            (catalog,),
        ):
            out[display(path) if display else path] = (catalog if display else "", path, key, first)
    return out


def load_rows(
    conn: sqlite3.Connection, sources: Sequence[Source], paths: Catalog | None = None
) -> list[DocRow]:
    """Chunk rows of every source (`paths` None) or of the given catalog entries only, ordered by path."""
    rows: list[DocRow] = []
    for catalog, display in sources:
        if paths is None:
            found = conn.execute(_ROWS_SQL.format(where=""), (catalog,))
            batches: list[list[tuple[object, ...]]] = [list(found)]
        else:
            label = catalog if display else ""
            wanted = sorted(entry[1] for entry in paths.values() if entry[0] == label)
            batches = []
            for start in range(0, len(wanted), _CHUNK):
                part = wanted[start : start + _CHUNK]
                where = f" AND f.path IN ({','.join('?' * len(part))})"
                batches.append(list(conn.execute(_ROWS_SQL.format(where=where), (catalog, *part))))
        for batch in batches:
            for r in batch:
                row = DocRow(*r)  # type: ignore[arg-type]
                rows.append(row._replace(path=display(row.path)) if display else row)
    if paths is not None:
        rows.sort(key=lambda d: (d.path, d.ordinal))
    return rows


class SnapshotCache:
    """The current keyword snapshot of one engine, refreshed by overlay when the store moves."""

    def __init__(self, index_dir: Path, *, k1: float, b: float, background_merge: bool = True) -> None:
        self.index_dir = index_dir
        self.k1 = k1
        self.b = b
        self.background_merge = background_merge
        self.stats = SnapshotStats()
        self._lock = threading.Lock()
        self._current: tuple[str, int, KeywordSnapshot] | None = None
        self._base: tuple[Catalog, KeywordSnapshot] | None = None
        self._epoch: str | None = None
        self._reader: Store | None = None
        self._merging: threading.Thread | None = None
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            merging = self._merging
        if merging is not None:
            merging.join(timeout=30)
        with self._lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def loaded(self) -> tuple[str, int, int] | None:
        """(key, generation, documents) of the snapshot searches are served from now, if any: what
        `index_metrics` reports as the cache, without building one."""
        with self._lock:
            current = self._current
        return None if current is None else (current[0], current[1], len(current[2].docs))

    def merge_threshold(self, base_docs: int) -> int:
        return max(MERGE_MIN_DOCS, base_docs // 10)

    def get(self, key: str, generation: int, sources: Callable[[], list[Source]]) -> KeywordSnapshot:
        """The snapshot for `key` (the branch) at the store's `generation`: cached, overlaid or rebuilt."""
        with self._lock:
            current = self._current
            if current is not None and current[0] == key and current[1] == generation:
                return current[2]
            started = time.perf_counter()
            if self._reader is None:
                self._reader = Store.open(self.index_dir)
            conn = self._reader.conn
            wanted = sources()
            with _read_transaction(conn):
                meta = dict(
                    conn.execute("SELECT key, value FROM meta WHERE key IN ('generation', ?)", (EPOCH_KEY,))
                )
                seen_generation = int(meta.get("generation", "0"))
                if meta.get(EPOCH_KEY) != self._epoch:
                    self._base = None  # chunk rows were rewritten in place
                    self._epoch = meta.get(EPOCH_KEY)
                catalog = load_catalog(conn, wanted)
                snap = self._overlay(conn, catalog, wanted)
                kind = "overlay"
                if snap is None:
                    snap = self._build(conn, wanted)
                    self._base = (catalog, snap)
                    kind = "build"
            self._current = (key, seen_generation, snap)
            self._record(kind, started, snap.delta_docs)
            if (
                self.background_merge
                and snap.base is not None
                and snap.delta_docs >= self.merge_threshold(len(snap.base.docs))
            ):
                self._start_merge(wanted)
            return snap

    def _record(self, kind: str, started: float, delta: int) -> None:
        stats = self.stats
        if kind == "build":
            stats.builds += 1
        elif kind == "overlay":
            stats.overlays += 1
        else:
            stats.merges += 1
        stats.last_kind = kind
        stats.last_seconds = round(time.perf_counter() - started, 4)
        stats.delta_docs = delta

    def _build(self, conn: sqlite3.Connection, sources: Sequence[Source]) -> KeywordSnapshot:
        snap = KeywordSnapshot(load_rows(conn, sources), k1=self.k1, b=self.b)
        snap.fields()  # path/symbol/file BM25 fields: built now, not inside the first query
        return snap

    def _overlay(
        self, conn: sqlite3.Connection, catalog: Catalog, sources: Sequence[Source]
    ) -> KeywordSnapshot | None:
        """The base overlaid with what differs from its catalog; None when there is no base or the
        difference is too large for an overlay to pay."""
        if self._base is None:
            return None
        base_catalog, base = self._base
        post = base.postings
        if not isinstance(post, PostingsIndex) or (post.k1, post.b) != (self.k1, self.b):
            return None
        dead = [p for p, entry in base_catalog.items() if catalog.get(p) != entry]
        added = {p: entry for p, entry in catalog.items() if base_catalog.get(p) != entry}
        if not dead and not added:
            return base
        if len(added) > OVERLAY_MAX_SHARE * max(len(base_catalog), 1):
            return None
        rows = load_rows(conn, sources, added)
        if len(rows) > OVERLAY_MAX_SHARE * max(len(base.docs), 1):
            return None
        snap = base.overlay(dead, rows)
        snap.fields()
        return snap

    def _start_merge(self, sources: list[Source]) -> None:
        """Build a new base in the background from the store as it is now (caller holds the lock)."""
        if self._merging is not None and self._merging.is_alive():
            return
        thread = threading.Thread(
            target=self._merge, args=(sources,), name="codebase-index-snapshot-merge", daemon=True
        )
        self._merging = thread
        thread.start()

    def _merge(self, sources: list[Source]) -> None:
        started = time.perf_counter()
        try:
            with self._lock:
                if self._closed:
                    return
            store = Store.open(self.index_dir)
            try:
                with _read_transaction(store.conn):
                    epoch = store.get_meta(EPOCH_KEY)
                    catalog = load_catalog(store.conn, sources)
                    snap = self._build(store.conn, sources)
            finally:
                store.close()
            with self._lock:
                # Any consistent (catalog, snapshot) pair is a valid base: later overlays diff against it.
                if epoch == self._epoch:
                    self._base = (catalog, snap)
                self._record("merge", started, 0)
        except Exception as exc:  # a failed merge leaves the old base in use; the next overlay retries
            log.warning("background snapshot merge failed: %s: %s", type(exc).__name__, exc)
