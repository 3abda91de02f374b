"""SQLite metadata store: files per branch, chunks per file content, the BM25 vocabulary.

Chunks hang off a *content key* (hash of language + file text), not off a path: identical content on two
branches or at two paths is chunked, tokenized and embedded once. Files map (branch, path) to a content key.
WAL mode lets readers search while one writer (guarded by a lock file) indexes; every batch of file updates
is one transaction, so a killed run leaves the index at a consistent earlier state.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import msgspec
import numpy as np

from . import __version__, literal_index
from .index_dir import make_index_dir
from .models import ChunkSpan
from .private_files import create_private, open_private
from .store_schema import MIGRATIONS, SCHEMA_VERSION

DB_NAME = "codebase.db"
LOCK_NAME = "writer.lock"


log = logging.getLogger("codebase_index.store")
_WARNED_READ_ONLY: set[str] = set()

SQLITE_FULL = 13  # SQLite's result code for "database or disk is full"
WRITTEN_BY_META = "written_by"
"""The codebase-index version that created or last migrated the index."""


class StoreError(Exception):
    """The index on disk cannot be used as it is; the message says why and what to do."""


class NewerIndexError(StoreError):
    """The index was made by a newer codebase-index: it is never migrated down, repaired or rebuilt (the
    newer version still owns it); every face says which version made it."""


class ReadOnlyIndexError(StoreError):
    """A write asked of an index this process cannot write (its folder or database is read-only)."""


class DiskFullError(StoreError):
    """A write stopped because the disk (or SQLite's size limit) is full; committed data is intact."""


def _disk_full(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    return code == SQLITE_FULL if code is not None else "database or disk is full" in str(exc)


class IndexLockedError(StoreError):
    """Another process is writing this index."""


class FileRow(msgspec.Struct, frozen=True):
    path: str
    size: int
    mtime_ns: int
    inode: int
    content_key: str
    language: str


class ChunkRecord(msgspec.Struct, frozen=True):
    """A chunk ready to be written: its span plus tokenization (term ids resolved by the writer)."""

    span: ChunkSpan
    chunk_hash: str
    term_counts: dict[str, int]


class ChunkRow(msgspec.Struct, frozen=True):
    id: int
    path: str
    language: str
    ordinal: int
    start_line: int
    end_line: int
    kind: str
    symbol: str
    text: str


class SkippedRow(msgspec.Struct, frozen=True):
    path: str
    reason: str
    detail: str


# Chunk rows per INSERT statement (11 values each): within SQLite's bound on parameters, 999 before 3.32.
_ROWS_PER_INSERT = 2000 if sqlite3.sqlite_version_info >= (3, 32) else 90
_CHUNK_ROW = "(?,?,?,?,?,?,?,?,?,?,?)"


def _connect(path: Path, *, read_only: bool = False) -> sqlite3.Connection:
    if read_only:
        # A folder this process cannot write: SQLite cannot make its -shm file there, so the file is
        # opened as immutable (no locks, no WAL index); nothing can change it while it is read-only.
        uri = f"{path.resolve().as_uri()}?mode=ro&immutable=1"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
    else:
        conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    # The database may have come with the repository (a force-added .codebase-index): defensive mode
    # (where Python exposes it: 3.12+) keeps writes off SQLite's own schema tables. trusted_schema stays
    # on: our literal index's triggers write its FTS5 table, which SQLite then calls unsafe; Python's
    # sqlite3 loads no extension, so a schema's SQL reaches no function outside the database.
    defensive = getattr(sqlite3, "SQLITE_DBCONFIG_DEFENSIVE", None)
    if defensive is not None:
        conn.setconfig(defensive, True)  # type: ignore[attr-defined]
    if not read_only:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("PRAGMA busy_timeout=30000")
    return conn


def _read_only(index_dir: Path, db_path: Path) -> bool:
    """An existing index this process may read but not write (folder or database file)."""
    if not db_path.is_file():
        return False
    return not os.access(index_dir, os.W_OK | os.X_OK) or not os.access(db_path, os.W_OK)


class Store:
    """One index database. Open with `Store.open(index_dir)`; writers must hold `writer_lock()`."""

    def __init__(self, index_dir: Path, conn: sqlite3.Connection, *, read_only: bool = False) -> None:
        self.index_dir = index_dir
        self.conn = conn
        self.read_only = read_only
        """Opened from a folder or file this process cannot write: searches answer, writes are refused."""

    @classmethod
    def open(cls, index_dir: Path, *, create: bool = True) -> Store:
        db_path = index_dir / DB_NAME
        if not db_path.exists() and not create:
            raise StoreError(f"no index at {index_dir} (run `codebase-index index` first)")
        read_only = _read_only(index_dir, db_path)
        if not read_only:
            make_index_dir(index_dir)
        try:
            with contextlib.suppress(OSError):  # a read-only folder: SQLite says so below
                create_private(db_path)  # 0600, and SQLite gives its -wal and -shm files the same mode
            conn = _connect(db_path, read_only=read_only)
            version = cls._schema_version(conn)
        except sqlite3.DatabaseError as exc:
            raise StoreError(
                f"the index database {db_path} is unreadable ({exc}); nothing was changed. Run "
                "`codebase-index repair` (tool: index_health_check) to rebuild it from the files, keeping "
                "the embeddings it can still read."
            ) from exc
        if version > SCHEMA_VERSION:
            made_by = cls._meta_value(conn, WRITTEN_BY_META)
            conn.close()
            made = f"version {made_by}, " if made_by else ""
            raise NewerIndexError(
                f"the index at {db_path} was made by a newer codebase-index ({made}schema {version}; this is "
                f"version {__version__}, schema {SCHEMA_VERSION}): nothing was moved or rebuilt. Upgrade "
                "codebase-index, or give this version its own folder with --index-dir"
            )
        store = cls(index_dir, conn, read_only=read_only)
        if read_only:
            if version < SCHEMA_VERSION:
                conn.close()
                raise ReadOnlyIndexError(store.read_only_message("upgrading it to this version's schema"))
            if str(index_dir) not in _WARNED_READ_ONLY:  # once per process, not per connection
                _WARNED_READ_ONLY.add(str(index_dir))
                log.warning("%s", store.read_only_message("indexing, embedding and repair"))
            return store
        if version < SCHEMA_VERSION:
            store._migrate(version)
        with contextlib.suppress(IndexLockedError):  # a writer holds the lock: its run builds it
            literal_index.ensure(store)
        return store

    def read_only_message(self, refused: str) -> str:
        return (
            f"the index folder {self.index_dir} is read-only for this process: searches answer from it as it "
            f"is; {refused} need write access (make the folder and its files writable, or give "
            "--index-dir a writable folder)"
        )

    @classmethod
    def _schema_version(cls, conn: sqlite3.Connection) -> int:
        value = cls._meta_value(conn, "schema_version")
        return int(value) if value else 0

    @staticmethod
    def _meta_value(conn: sqlite3.Connection, key: str) -> str | None:
        has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'").fetchone()
        if not has_meta:
            return None
        row = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return str(row[0]) if row else None

    def _migrate(self, from_version: int) -> None:
        with self.write_lock(), self.transaction():
            current = self._schema_version(self.conn)  # re-read under the lock: another writer may have won
            for version in range(current, SCHEMA_VERSION):
                MIGRATIONS[version](self.conn)
            self.set_meta("schema_version", str(SCHEMA_VERSION))
            self.set_meta(WRITTEN_BY_META, __version__)  # what a newer index's refusal names, one day

    def close(self) -> None:
        self.conn.close()

    # -- locking and transactions -------------------------------------------------------------------

    @contextlib.contextmanager
    def write_lock(self, *, timeout: float | None = None) -> Iterator[None]:
        """Exclusive writer lock (a flock on a side file, released by the OS if the process dies).

        `timeout=None` waits as long as it takes; otherwise IndexLockedError after `timeout` seconds.
        """
        if self.read_only:
            raise ReadOnlyIndexError(self.read_only_message("indexing, embedding and repair"))
        lock_path = self.index_dir / LOCK_NAME
        fd = open_private(lock_path)
        try:
            if timeout is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            else:
                deadline = time.monotonic() + timeout
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except OSError as exc:
                        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                            raise
                        if time.monotonic() >= deadline:
                            raise IndexLockedError(
                                f"another process is indexing {self.index_dir}; try again when it finishes"
                            ) from exc
                        time.sleep(0.05)
            yield
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException as exc:
            # SQLite has already rolled back after some errors (a full disk): a second ROLLBACK would
            # replace the real error by "cannot rollback - no transaction is active".
            if self.conn.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    self.conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error) and _disk_full(exc):
                raise DiskFullError(self._disk_full_message()) from exc
            raise

    def _disk_full_message(self) -> str:
        try:
            free = f"{shutil.disk_usage(self.index_dir).free / 1_048_576:.1f} MiB free"
        except OSError:
            free = "free space unknown"
        return (
            f"the disk holding the index ({self.index_dir}, {free}) is full: this write was undone and "
            "everything committed before it is kept and searchable; free some space and run the index again"
        )

    # -- meta ---------------------------------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return row[0] if row else default

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        """Bumped by every write, so readers know when their in-memory index is stale."""
        return int(self.get_meta("generation", "0") or 0)

    def bump_generation(self) -> None:
        self.set_meta("generation", str(self.generation() + 1))
        self.set_meta("last_indexed_at", f"{time.time():.3f}")

    # -- files --------------------------------------------------------------------------------------

    def file_rows(self, branch: str) -> dict[str, FileRow]:
        rows = self.conn.execute(
            "SELECT path, size, mtime_ns, inode, content_key, language FROM files WHERE branch=?", (branch,)
        )
        return {r[0]: FileRow(*r) for r in rows}

    def known_contents(self, keys: Iterable[str]) -> set[str]:
        found: set[str] = set()
        key_list = list(keys)
        for start in range(0, len(key_list), 500):
            part = key_list[start : start + 500]
            marks = ",".join("?" * len(part))
            found.update(
                r[0] for r in self.conn.execute(f"SELECT key FROM contents WHERE key IN ({marks})", part)
            )
        return found

    def upsert_file(self, branch: str, row: FileRow) -> None:
        self.conn.execute(
            """INSERT INTO files (branch, path, size, mtime_ns, inode, content_key, language, indexed_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (branch, path) DO UPDATE SET size=excluded.size, mtime_ns=excluded.mtime_ns,
                 inode=excluded.inode, content_key=excluded.content_key, language=excluded.language,
                 indexed_at=excluded.indexed_at""",
            (branch, row.path, row.size, row.mtime_ns, row.inode, row.content_key, row.language, time.time()),
        )

    def delete_files(self, branch: str, paths: Sequence[str]) -> None:
        self.conn.executemany("DELETE FROM files WHERE branch=? AND path=?", [(branch, p) for p in paths])

    # -- contents and chunks ------------------------------------------------------------------------

    def add_content(
        self,
        key: str,
        language: str,
        chunks: Sequence[ChunkRecord],
        vocab: Vocabulary,
        *,
        replace: bool = False,
    ) -> None:
        """Store the chunks of one file content; a no-op if the key is stored, unless `replace`."""
        if self.conn.execute("SELECT 1 FROM contents WHERE key=?", (key,)).fetchone():
            if not replace:
                return
            self.conn.execute("DELETE FROM chunks WHERE content_key=?", (key,))
            self.conn.execute("DELETE FROM contents WHERE key=?", (key,))
        self.conn.execute(
            "INSERT INTO contents (key, language, n_chunks) VALUES (?, ?, ?)", (key, language, len(chunks))
        )
        rows = []
        for ordinal, record in enumerate(chunks):
            ids, tfs = vocab.encode(record.term_counts)
            span = record.span
            rows.append(
                (
                    key,
                    ordinal,
                    span.start_line,
                    span.end_line,
                    span.kind,
                    span.symbol,
                    record.chunk_hash,
                    span.text,
                    int(tfs.sum()),
                    ids.tobytes(),
                    tfs.tobytes(),
                )
            )
        # Many rows per statement: the literal index's trigger then flushes once per statement, not once
        # per chunk (FTS5 writes its pending terms at every statement savepoint): 1.4 s CPU instead of
        # 2.9 s to index the 21k chunks of the Python stdlib; 0.07 s without the literal index.
        for start in range(0, len(rows), _ROWS_PER_INSERT):
            part = rows[start : start + _ROWS_PER_INSERT]
            self.conn.execute(
                "INSERT INTO chunks (content_key, ordinal, start_line, end_line, kind, symbol, chunk_hash, "
                "text, n_tokens, term_ids, term_tfs) VALUES " + ",".join([_CHUNK_ROW] * len(part)),
                [value for row in part for value in row],
            )

    def purge_unreferenced_contents(self) -> int:
        """Drop chunks of contents no file on any branch points at; returns how many contents went."""
        orphans = [
            r[0]
            for r in self.conn.execute(
                "SELECT key FROM contents WHERE key NOT IN (SELECT DISTINCT content_key FROM files)"
            )
        ]
        for start in range(0, len(orphans), 500):
            part = orphans[start : start + 500]
            marks = ",".join("?" * len(part))
            self.conn.execute(f"DELETE FROM chunks WHERE content_key IN ({marks})", part)
            self.conn.execute(f"DELETE FROM contents WHERE key IN ({marks})", part)
            self.conn.execute(f"DELETE FROM graph_defs WHERE content_key IN ({marks})", part)
            self.conn.execute(f"DELETE FROM graph_contents WHERE content_key IN ({marks})", part)
            self.conn.execute(f"DELETE FROM graph_pending WHERE content_key IN ({marks})", part)
        return len(orphans)

    def chunk_rows(self, chunk_ids: Sequence[int], branch: str) -> dict[int, list[ChunkRow]]:
        """Chunk rows with their file paths on `branch` (one chunk can live at several paths)."""
        out: dict[int, list[ChunkRow]] = {}
        if not chunk_ids:
            return out
        marks = ",".join("?" * len(chunk_ids))
        query = f"""SELECT c.id, f.path, f.language, c.ordinal, c.start_line, c.end_line, c.kind, c.symbol,
                           c.text
                    FROM chunks c JOIN files f ON f.content_key = c.content_key
                    WHERE c.id IN ({marks}) AND f.branch = ?"""
        for r in self.conn.execute(query, (*chunk_ids, branch)):
            out.setdefault(r[0], []).append(ChunkRow(*r))
        return out

    def file_chunks(self, branch: str, path: str) -> list[tuple[int, str]]:
        """(start line, text) of every chunk of one file on `branch`, in order: its indexed content."""
        query = """SELECT c.start_line, c.text FROM files f JOIN chunks c ON c.content_key = f.content_key
                   WHERE f.branch = ? AND f.path = ? ORDER BY c.ordinal"""
        return [(int(r[0]), str(r[1])) for r in self.conn.execute(query, (branch, path))]

    def iter_branch_postings(
        self, branch: str
    ) -> Iterator[tuple[int, str, str, int, int, int, str, str, int, bytes, bytes]]:
        """Rows in `search.DocRow` order: (chunk id, path, language, ordinal, start_line, end_line, kind,
        symbol, n_tokens, term_ids, term_tfs)."""
        yield from self.conn.execute(
            """SELECT c.id, f.path, f.language, c.ordinal, c.start_line, c.end_line, c.kind, c.symbol,
                      c.n_tokens, c.term_ids, c.term_tfs
               FROM files f JOIN chunks c ON c.content_key = f.content_key
               WHERE f.branch = ? ORDER BY f.path, c.ordinal""",
            (branch,),
        )

    # -- vocabulary ---------------------------------------------------------------------------------

    def term_ids(self, terms: Sequence[str]) -> dict[str, int]:
        if not terms:
            return {}
        marks = ",".join("?" * len(terms))
        return {
            t: i for i, t in self.conn.execute(f"SELECT id, term FROM terms WHERE term IN ({marks})", terms)
        }

    def vocabulary(self) -> Vocabulary:
        return Vocabulary(self)

    # -- skipped files ------------------------------------------------------------------------------

    def replace_skipped(self, branch: str, skipped: Iterable[SkippedRow]) -> None:
        self.conn.execute("DELETE FROM skipped WHERE branch=?", (branch,))
        self.conn.executemany(
            "INSERT OR REPLACE INTO skipped (branch, path, reason, detail) VALUES (?, ?, ?, ?)",
            [(branch, s.path, s.reason, s.detail) for s in skipped],
        )

    def skipped(self, branch: str) -> list[SkippedRow]:
        rows = self.conn.execute(
            "SELECT path, reason, detail FROM skipped WHERE branch=? ORDER BY reason, path", (branch,)
        )
        return [SkippedRow(*r) for r in rows]

    # -- statistics ---------------------------------------------------------------------------------

    def counts(self, branch: str) -> dict[str, int]:
        files = self.conn.execute("SELECT COUNT(*) FROM files WHERE branch=?", (branch,)).fetchone()[0]
        chunks = self.conn.execute(
            """SELECT COALESCE(SUM(c.n_chunks), 0) FROM files f JOIN contents c ON c.key = f.content_key
               WHERE f.branch=?""",
            (branch,),
        ).fetchone()[0]
        vocab = self.conn.execute("SELECT COUNT(*) FROM terms").fetchone()[0]
        return {"files": int(files), "chunks": int(chunks), "vocabulary": int(vocab)}

    def size_on_disk(self) -> int:
        total = 0
        for entry in self.index_dir.iterdir():
            with contextlib.suppress(OSError):
                if entry.is_file():
                    total += entry.stat().st_size
        return total

    # -- branch catalog, path-level updates, garbage collection (the "always fresh" work) ---------------

    def file_stats(self, branch: str) -> dict[str, tuple[int, int, int, str, str]]:
        """path -> (size, mtime_ns, inode, content_key, language): `file_rows` without a Struct per row,
        for the no-change re-index where this is the largest cost after the stat calls."""
        rows = self.conn.execute(
            "SELECT path, size, mtime_ns, inode, content_key, language FROM files WHERE branch=?", (branch,)
        )
        return {r[0]: r[1:] for r in rows}

    def file_stats_under(self, branch: str, rel: str) -> dict[str, tuple[int, int, int, str, str]]:
        """`file_stats` of the file `rel` and of every file under the folder `rel` (a deleted folder)."""
        prefix = rel + "/"
        rows = self.conn.execute(
            """SELECT path, size, mtime_ns, inode, content_key, language FROM files
               WHERE branch=? AND (path=? OR substr(path, 1, ?)=?)""",
            (branch, rel, len(prefix), prefix),
        )
        return {r[0]: r[1:] for r in rows}

    def purge_contents_if_unreferenced(self, keys: Iterable[str]) -> int:
        """`purge_unreferenced_contents` for just these keys: what a path-level update can orphan."""
        gone = 0
        for key in keys:
            if self.conn.execute("SELECT 1 FROM files WHERE content_key=? LIMIT 1", (key,)).fetchone():
                continue
            self.conn.execute("DELETE FROM chunks WHERE content_key=?", (key,))
            self.conn.execute("DELETE FROM contents WHERE key=?", (key,))
            self.conn.execute("DELETE FROM graph_defs WHERE content_key=?", (key,))
            self.conn.execute("DELETE FROM graph_contents WHERE content_key=?", (key,))
            self.conn.execute("DELETE FROM graph_pending WHERE content_key=?", (key,))
            gone += 1
        return gone

    def update_skipped(self, branch: str, paths: Iterable[str], rows: Iterable[SkippedRow]) -> None:
        """Replace the skipped entries of just `paths` (a path-level re-index must not forget the rest)."""
        self.conn.executemany("DELETE FROM skipped WHERE branch=? AND path=?", [(branch, p) for p in paths])
        self.conn.executemany(
            "INSERT OR REPLACE INTO skipped (branch, path, reason, detail) VALUES (?, ?, ?, ?)",
            [(branch, s.path, s.reason, s.detail) for s in rows],
        )

    def branches(self) -> dict[str, int]:
        """Every catalog in the store (git branches, detached commits, knowledge bases) with its file
        count; a catalog that only holds skipped files counts 0."""
        out = {b: 0 for (b,) in self.conn.execute("SELECT DISTINCT branch FROM skipped")}
        out.update(dict(self.conn.execute("SELECT branch, COUNT(*) FROM files GROUP BY branch")))
        for key, _ in self.conn.execute("SELECT key, value FROM meta WHERE key LIKE 'catalog:%'"):
            out.setdefault(key[len("catalog:") :], 0)
        return out

    def mark_catalog(self, branch: str) -> None:
        """Record that a full run completed for `branch`: path-level updates are safe from now on."""
        self.set_meta(f"catalog:{branch}", f"{time.time():.3f}")

    def has_catalog(self, branch: str) -> bool:
        return self.get_meta(f"catalog:{branch}") is not None

    def delete_catalog(self, branch: str) -> int:
        """Forget a branch (or knowledge base): its file rows, skipped rows and marker; returns files
        removed. Contents are left for `purge_unreferenced_contents`."""
        removed = self.conn.execute("DELETE FROM files WHERE branch=?", (branch,)).rowcount
        self.conn.execute("DELETE FROM skipped WHERE branch=?", (branch,))
        self.conn.execute("DELETE FROM meta WHERE key IN (?, ?)", (f"catalog:{branch}", f"problems:{branch}"))
        return int(removed)

    def count_unreferenced_contents(self) -> int:
        row = self.conn.execute(
            "SELECT COUNT(*) FROM contents WHERE key NOT IN (SELECT DISTINCT content_key FROM files)"
        ).fetchone()
        return int(row[0])


class Vocabulary:
    """Term <-> id map for the writer; new terms are inserted inside the writer's transaction."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._ids: dict[str, int] = dict(store.conn.execute("SELECT term, id FROM terms"))
        self._next = max(self._ids.values(), default=0) + 1

    def __len__(self) -> int:
        return len(self._ids)

    def encode(self, term_counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        ids = np.empty(len(term_counts), dtype=np.int32)
        tfs = np.empty(len(term_counts), dtype=np.int32)
        new_terms: list[tuple[int, str]] = []
        for i, (term, count) in enumerate(term_counts.items()):
            term_id = self._ids.get(term)
            if term_id is None:
                term_id = self._next
                self._next += 1
                self._ids[term] = term_id
                new_terms.append((term_id, term))
            ids[i] = term_id
            tfs[i] = count
        if new_terms:
            self._store.conn.executemany("INSERT INTO terms (id, term) VALUES (?, ?)", new_terms)
        return ids, tfs
