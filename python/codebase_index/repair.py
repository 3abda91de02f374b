"""Index health: what can be wrong with an index database, and how each fault is repaired.

Two kinds of fault. Logical ones leave SQLite sound but the index inconsistent: files whose chunks are
gone (they would never be searched again, since the next run sees them unchanged), chunks of a content
no catalog knows, vectors of chunks that no longer exist or of the wrong width. Those are repaired in
place: the files are forgotten so the next (immediate) run re-reads them, the rest is deleted.

Page corruption ("database disk image is malformed") cannot be trusted to any in-place fix but one:
when only index b-trees disagree with their tables, `REINDEX` rebuilds them. Otherwise the database is
moved aside (kept for inspection as `codebase.db.broken-<time>`), a fresh one is built from the files,
and every vector still readable in the broken copy is carried over first: embeddings are the expensive
part of an index (minutes to hours, or money), chunks are cheap to recompute.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from . import literal_index
from .locks import file_lock
from .store import DB_NAME, LOCK_NAME, NewerIndexError, Store, StoreError

if TYPE_CHECKING:
    from .indexer import ProgressFn
    from .service import Engine

# meta keys worth carrying into a rebuilt database: the embedding model (so salvaged vectors stay usable)
# and the knowledge bases registered through the tools (the folders themselves are re-indexed).
CARRIED_META = ("embedding_model_id", "embedding_dimensions", "knowledge_bases")
CORRUPTION_MARKERS = ("malformed", "not a database", "corrupt", "disk image")
_ROWS_PER_READ = 2_000
_SHOWN = 20


def is_corruption(exc: BaseException) -> bool:
    """Whether an SQLite error means a damaged file (rather than a lock, a full disk or a bad query)."""
    if not isinstance(exc, sqlite3.DatabaseError):
        return False
    if getattr(exc, "sqlite_errorname", "") in ("SQLITE_CORRUPT", "SQLITE_NOTADB"):
        return True
    text = str(exc).lower()
    return any(m in text for m in CORRUPTION_MARKERS)


def damaged_message(exc: BaseException) -> str:
    """What search, index and status say on a damaged database: the error and exactly what to run."""
    return (
        f"the index database is damaged ({exc}); run `codebase-index repair` (tool: index_health_check): "
        "it repairs it or rebuilds it from the files, keeping every embedding it can still read"
    )


class Findings(msgspec.Struct, rename="camel"):
    """What a health check found. `pages`: PRAGMA quick_check/integrity_check lines (["ok"] when sound)."""

    pages: list[str]
    files_without_chunks: list[str] = msgspec.field(default_factory=list)  # "branch:path"
    chunks_without_content: int = 0
    orphan_vectors: int = 0
    literal_index: str = ""  # why the exact-literal index disagrees with the chunks ("" when it agrees)

    @property
    def pages_ok(self) -> bool:
        return self.pages == ["ok"]

    def problems(self) -> list[str]:
        out = [] if self.pages_ok else [f"page check: {line}" for line in self.pages[:_SHOWN]]
        if self.files_without_chunks:
            shown = ", ".join(self.files_without_chunks[:5])
            more = len(self.files_without_chunks) - 5
            out.append(
                f"{len(self.files_without_chunks)} files have lost their chunks ({shown}"
                + (f", ... {more} more" if more > 0 else "")
                + ")"
            )
        if self.chunks_without_content:
            out.append(f"{self.chunks_without_content} chunks belong to no indexed content")
        if self.orphan_vectors:
            out.append(f"{self.orphan_vectors} vectors belong to no chunk")
        if self.literal_index:
            out.append(f"the exact-literal index disagrees with the chunks ({self.literal_index})")
        return out


def check_pages(conn: sqlite3.Connection, *, full: bool = False) -> list[str]:
    """SQLite's own check of every page (`integrity_check` when `full`, else the faster `quick_check`)."""
    pragma = "integrity_check" if full else "quick_check"
    try:
        rows = [str(r[0]) for r in conn.execute(f"PRAGMA {pragma}(100)").fetchall()]
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    return rows or ["ok"]


def only_index_trouble(pages: Iterable[str]) -> bool:
    """Whether every page-check complaint is about an index b-tree (fixable by REINDEX)."""
    lines = [p for p in pages if p != "ok"]
    return bool(lines) and all(
        ("index" in line and ("missing from" in line or "wrong # of entries" in line)) for line in lines
    )


# Files whose content row is missing or whose chunks are fewer than the content says (deleted, lost).
_LOST_CHUNKS = """FROM files f LEFT JOIN contents c ON c.key = f.content_key
    WHERE c.key IS NULL
       OR c.n_chunks <> (SELECT COUNT(*) FROM chunks k WHERE k.content_key = f.content_key)"""


def find_logical(store: Store) -> Findings:
    """The logical checks, on a database whose pages are sound."""
    conn = store.conn
    missing = conn.execute(
        f"SELECT f.branch || ':' || f.path {_LOST_CHUNKS} ORDER BY f.branch, f.path"
    ).fetchall()
    loose = conn.execute(
        "SELECT COUNT(*) FROM chunks WHERE content_key NOT IN (SELECT key FROM contents)"
    ).fetchone()[0]
    orphans = conn.execute(
        "SELECT COUNT(*) FROM embeddings WHERE chunk_hash NOT IN (SELECT chunk_hash FROM chunks)"
    ).fetchone()[0]
    return Findings(
        pages=["ok"],
        files_without_chunks=[r[0] for r in missing],
        chunks_without_content=int(loose),
        orphan_vectors=int(orphans),
        literal_index=literal_index.disagreement(store) or "",
    )


def repair_logical(store: Store, findings: Findings) -> list[str]:
    """Fix the logical faults in one transaction (the caller holds the write lock); returns what was done.
    Files without their chunks lose their rows so the next index run (which the caller starts) re-reads
    them; orphaned vectors are left to GC, which the caller runs next."""
    done: list[str] = []
    with store.transaction():
        if findings.files_without_chunks:
            keys = [r[0] for r in store.conn.execute(f"SELECT DISTINCT f.content_key {_LOST_CHUNKS}")]
            for start in range(0, len(keys), 500):
                part = keys[start : start + 500]
                marks = ",".join("?" * len(part))
                store.conn.execute(f"DELETE FROM files WHERE content_key IN ({marks})", part)
                store.conn.execute(f"DELETE FROM chunks WHERE content_key IN ({marks})", part)
                store.conn.execute(f"DELETE FROM contents WHERE key IN ({marks})", part)
            done.append(
                f"{len(findings.files_without_chunks)} files without chunks forgotten (re-indexed now)"
            )
        if findings.chunks_without_content:
            store.conn.execute("DELETE FROM chunks WHERE content_key NOT IN (SELECT key FROM contents)")
            done.append(f"{findings.chunks_without_content} chunks of no content deleted")
        if findings.literal_index:
            literal_index.rebuild(store)
            done.append("exact-literal index rebuilt from the chunks")
        if done:
            store.bump_generation()
    return done


class Salvage(NamedTuple):
    """What could be read back from a damaged database."""

    vectors: list[tuple[str, str, bytes]]  # (chunk_hash, model_id, float16 blob)
    meta: dict[str, str]
    unreadable: int  # embedding ids in the table's range that could not be read


def salvage(db_path: Path) -> Salvage:
    """Every readable embedding and the carried meta keys of a (damaged) database. Reads by id range and
    halves a range that fails, so one bad page costs only the rows on it."""
    meta: dict[str, str] = {}
    vectors: list[tuple[str, str, bytes]] = []
    unreadable = 0
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5.0)
    except sqlite3.Error:
        return Salvage([], {}, 0)
    try:
        for key in CARRIED_META:
            with contextlib.suppress(sqlite3.Error):
                row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
                if row is not None:
                    meta[key] = str(row[0])
        top = _max_embedding_id(conn)
        stack = [(1, top)] if top else []
        while stack:
            lo, hi = stack.pop()
            try:
                rows = conn.execute(
                    "SELECT chunk_hash, model_id, vector FROM embeddings WHERE id BETWEEN ? AND ?", (lo, hi)
                ).fetchall()
            except sqlite3.Error:
                if lo == hi:
                    unreadable += 1
                    continue
                mid = (lo + hi) // 2
                stack += [(mid + 1, hi), (lo, mid)]
                continue
            vectors += [
                (h, m, bytes(v))
                for h, m, v in rows
                if isinstance(h, str) and isinstance(m, str) and isinstance(v, bytes)
            ]
    finally:
        conn.close()
    return Salvage(vectors, meta, unreadable)


def _max_embedding_id(conn: sqlite3.Connection) -> int:
    """The largest embedding id, from AUTOINCREMENT's counter when the table's own pages are damaged."""
    for query in (
        "SELECT seq FROM sqlite_sequence WHERE name = 'embeddings'",
        "SELECT MAX(id) FROM embeddings",
    ):
        with contextlib.suppress(sqlite3.Error):
            row = conn.execute(query).fetchone()
            if row is not None and row[0]:
                return int(row[0])
    return 0


def move_aside(index_dir: Path, now: float | None = None) -> Path:
    """Rename the database (and its WAL/shm) to `codebase.db.broken-<time>`; returns the new path."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(time.time() if now is None else now))
    db = index_dir / DB_NAME
    aside = index_dir / f"{DB_NAME}.broken-{stamp}"
    n = 1
    while aside.exists():
        n += 1
        aside = index_dir / f"{DB_NAME}.broken-{stamp}-{n}"
    os.replace(db, aside)
    for suffix in ("-wal", "-shm"):
        side = index_dir / f"{DB_NAME}{suffix}"
        if side.exists():
            os.replace(side, Path(f"{aside}{suffix}"))
    return aside


def restore(store: Store, saved: Salvage) -> int:
    """Write salvaged vectors (of the model the broken index used, at its width) and meta into a fresh
    database; returns how many vectors were kept."""
    from .embedder import META_DIMENSIONS, META_MODEL, ensure_tables

    ensure_tables(store.conn)
    model = saved.meta.get(META_MODEL)
    dims = saved.meta.get(META_DIMENSIONS)
    if model is None and saved.vectors:  # meta unreadable: the model most vectors are of
        counts: dict[str, int] = {}
        for _, m, _ in saved.vectors:
            counts[m] = counts.get(m, 0) + 1
        model = max(counts, key=lambda m: counts[m])
    if dims is None and model is not None:
        widths = {len(v) // 2 for _, m, v in saved.vectors if m == model}
        dims = str(widths.pop()) if len(widths) == 1 else None
    keep = [
        (h, m, v) for h, m, v in saved.vectors if m == model and dims is not None and len(v) == 2 * int(dims)
    ]
    with store.transaction():
        store.conn.executemany(
            "INSERT OR IGNORE INTO embeddings (chunk_hash, model_id, vector) VALUES (?, ?, ?)", keep
        )
        for key, value in saved.meta.items():
            if key not in (META_MODEL, META_DIMENSIONS):
                store.set_meta(key, value)
        if model is not None and dims is not None:
            store.set_meta(META_MODEL, model)
            store.set_meta(META_DIMENSIONS, dims)
    return len(keep)


class RepairReport(msgspec.Struct, rename="camel", omit_defaults=True):
    """What `Engine.repair` found and did. `ok`: the index is sound now."""

    ok: bool
    pages: list[str]
    problems: list[str]
    repaired: list[str]
    moved_aside: str | None = None
    vectors_kept: int = 0
    vectors_lost: int = 0
    reindexed_files: int = 0


def format_repair(report: RepairReport) -> str:
    head = "index healthy" if not report.problems else "found: " + "; ".join(report.problems)
    lines = [head]
    if report.repaired:
        lines.append("repaired: " + "; ".join(report.repaired))
    if report.moved_aside:
        lines.append(
            f"the damaged database was moved aside to {report.moved_aside} (kept for inspection); "
            f"{report.vectors_kept} embeddings carried over, {report.vectors_lost} unreadable "
            "(re-embedded in the background)"
        )
    if not report.ok:
        lines.append("still not healthy: delete the index folder and run `codebase-index index`")
    return "\n".join(lines)


def run(
    engine: Engine,
    *,
    full: bool = True,
    before_rebuild: Callable[[], None] | None = None,
    progress: ProgressFn | None = None,
) -> RepairReport:
    """Check `engine`'s index and repair it: in place when SQLite's pages are sound (or only its index
    b-trees are off), else by moving the database aside and rebuilding from the files with the readable
    embeddings carried over. `before_rebuild` lets a caller close other connections to the database
    (the sidecar's reader) first. Embedding what was lost is left to the caller's embedding job."""
    repaired: list[str] = []
    try:
        store = engine.store
        pages = check_pages(store.conn, full=full)
    except NewerIndexError:
        raise  # a newer version's index is not damaged: nothing here may move or rebuild it
    except StoreError as exc:  # the file would not even open
        pages = [str(exc.__cause__ or exc)]
        store = None
    if store is not None and only_index_trouble(pages):
        with contextlib.suppress(sqlite3.Error), store.write_lock(timeout=3.0):
            store.conn.execute("REINDEX")
            if check_pages(store.conn, full=True) == ["ok"]:
                repaired.append("index b-trees rebuilt from their tables (REINDEX)")
                found = list(pages)
                pages = ["ok"]
                return _in_place(engine, store, found, repaired, progress)
    if store is None or pages != ["ok"]:
        return _rebuild(engine, pages, before_rebuild, progress)
    return _in_place(engine, store, [], repaired, progress)


def _in_place(
    engine: Engine, store: Store, page_lines: list[str], repaired: list[str], progress: ProgressFn | None
) -> RepairReport:
    try:
        findings = find_logical(store)
    except sqlite3.DatabaseError as exc:  # pages looked sound, reading says otherwise
        return _rebuild(engine, [str(exc)], None, progress)
    problems = [f"page check: {line}" for line in page_lines[:_SHOWN]] + findings.problems()
    with store.write_lock(timeout=3.0):
        repaired += repair_logical(store, findings)
    reindexed = 0
    if findings.files_without_chunks:
        reindexed = engine.index(progress=progress).files_changed
    if findings.orphan_vectors:
        # After the re-index: vectors of the files just re-read are theirs again, not orphans.
        removed = engine.gc().embeddings_removed or 0
        repaired.append(f"{removed} orphaned vectors deleted")
    return RepairReport(
        ok=True, pages=["ok"], problems=problems, repaired=repaired, reindexed_files=reindexed
    )


def _rebuild(
    engine: Engine, pages: list[str], before_rebuild: Callable[[], None] | None, progress: ProgressFn | None
) -> RepairReport:

    if before_rebuild is not None:
        before_rebuild()
    aside, kept, lost = replace_database(engine)
    report = engine.index(progress=progress)
    return RepairReport(
        ok=True,
        pages=pages[:_SHOWN],
        problems=[f"page check: {line}" for line in pages[:_SHOWN]],
        repaired=[f"rebuilt from the files: {report.files} files, {report.chunks} chunks"],
        moved_aside=str(aside),
        vectors_kept=kept,
        vectors_lost=lost,
        reindexed_files=report.files,
    )


def replace_database(engine: Engine) -> tuple[Path, int, int]:
    """Move the engine's damaged database aside and start a fresh one holding every embedding (and the
    carried meta) still readable in it: (where the old one went, vectors kept, vectors lost)."""
    from .embedder import META_MODEL
    from .vectors import AnnIndex

    engine.close()
    index_dir = engine.index_dir
    with file_lock(index_dir / LOCK_NAME, wait=True):  # no writer of this index is mid-transaction
        aside = move_aside(index_dir)
    saved = salvage(aside)
    store = engine.store  # opens (and migrates, under the write lock) a fresh, empty database
    with store.write_lock(timeout=30.0):
        kept = restore(store, saved)
    model = saved.meta.get(META_MODEL)
    if model is not None:
        AnnIndex.remove(index_dir, model)  # its ids were the broken database's; rebuilt from SQLite
    return aside, kept, saved.unreadable + (len(saved.vectors) - kept)


def index_error(exc: BaseException) -> str | None:
    """`damaged_message` when `exc` is a corruption error, else None."""
    return damaged_message(exc) if is_corruption(exc) else None


__all__ = [
    "Findings",
    "RepairReport",
    "Salvage",
    "check_pages",
    "damaged_message",
    "find_logical",
    "format_repair",
    "is_corruption",
    "move_aside",
    "repair_logical",
    "restore",
    "run",
    "salvage",
]
