"""The index database's schema: table definitions and the migrations that bring an older index up to date.

`Store.open` runs `MIGRATIONS[v:]` for an index at schema version v, in one transaction under the writer
lock. Every CREATE runs as `CREATE ... IF NOT EXISTS`, so a migration may re-run an earlier script over an
index that already has part of it (`_v2`).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable

SCHEMA_VERSION = 3


# Vectors keyed by chunk content hash (shared by every file and branch holding that chunk), one row per
# model; rowids only grow, so readers load just the rows added since their last look. Failures hold the
# chunks whose batch still failed after retries; the next embedding run retries them.
EMBEDDING_TABLES = """
        CREATE TABLE IF NOT EXISTS embeddings (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk_hash TEXT NOT NULL,
            model_id TEXT NOT NULL,
            vector BLOB NOT NULL,
            UNIQUE (chunk_hash, model_id)
        );
        CREATE TABLE IF NOT EXISTS embedding_failures (
            chunk_hash TEXT NOT NULL,
            model_id TEXT NOT NULL,
            error TEXT NOT NULL,
            attempts INTEGER NOT NULL,
            last_attempt REAL NOT NULL,
            PRIMARY KEY (chunk_hash, model_id)
        );
        """


# The code graph (codebase_index.graph.store): definitions and references per file content, like chunks;
# per branch, refreshed incrementally by each index run: resolved call edges (exact/import) and call sites
# matched by name only (one row per site; the candidates are the definitions with that name). Index runs
# only mark what changed (graph_dirty, in their own transaction); edges are resolved after the keyword
# write commits, in the background or before the next graph query (service.Engine.refresh_graph).
GRAPH_TABLES = """
        CREATE TABLE graph_contents (
            content_key TEXT PRIMARY KEY,
            language TEXT NOT NULL,
            package TEXT,
            refs BLOB NOT NULL,
            imports BLOB NOT NULL
        );
        CREATE TABLE graph_defs (
            content_key TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            name TEXT NOT NULL,
            qualified TEXT NOT NULL,
            kind TEXT NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            bases TEXT NOT NULL,
            PRIMARY KEY (content_key, ordinal)
        );
        CREATE INDEX graph_defs_name ON graph_defs (name);
        CREATE TABLE graph_edges (
            branch TEXT NOT NULL,
            caller TEXT NOT NULL,
            caller_path TEXT NOT NULL,
            caller_line INTEGER NOT NULL,
            line INTEGER NOT NULL,
            callee TEXT NOT NULL,
            callee_name TEXT NOT NULL,
            callee_path TEXT NOT NULL,
            callee_line INTEGER NOT NULL,
            confidence TEXT NOT NULL,
            candidates INTEGER NOT NULL
        );
        CREATE INDEX graph_edges_callee ON graph_edges (branch, callee_path, callee);
        CREATE INDEX graph_edges_caller ON graph_edges (branch, caller_path, caller);
        CREATE TABLE graph_name_sites (
            branch TEXT NOT NULL,
            caller TEXT NOT NULL,
            caller_path TEXT NOT NULL,
            caller_line INTEGER NOT NULL,
            line INTEGER NOT NULL,
            name TEXT NOT NULL,
            member INTEGER NOT NULL,
            candidates INTEGER NOT NULL
        );
        CREATE INDEX graph_name_sites_name ON graph_name_sites (branch, name);
        CREATE INDEX graph_name_sites_caller ON graph_name_sites (branch, caller_path, caller);
        CREATE TABLE graph_state (branch TEXT PRIMARY KEY, resolved_at INTEGER NOT NULL);
        CREATE TABLE graph_dirty (
            branch TEXT NOT NULL,
            path TEXT NOT NULL,
            names TEXT NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (branch, path)
        );
        """


def _v1(conn: sqlite3.Connection) -> None:
    script = (
        """
        CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE files (
            id INTEGER PRIMARY KEY,
            branch TEXT NOT NULL,
            path TEXT NOT NULL,
            size INTEGER NOT NULL,
            mtime_ns INTEGER NOT NULL,
            inode INTEGER NOT NULL,
            content_key TEXT NOT NULL,
            language TEXT NOT NULL,
            indexed_at REAL NOT NULL,
            UNIQUE (branch, path)
        );
        CREATE INDEX files_content ON files (content_key);
        CREATE TABLE contents (
            key TEXT PRIMARY KEY,
            language TEXT NOT NULL,
            n_chunks INTEGER NOT NULL
        );
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            content_key TEXT NOT NULL,
            ordinal INTEGER NOT NULL,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            kind TEXT NOT NULL,
            symbol TEXT NOT NULL,
            chunk_hash TEXT NOT NULL,
            text TEXT NOT NULL,
            n_tokens INTEGER NOT NULL,
            term_ids BLOB NOT NULL,
            term_tfs BLOB NOT NULL,
            UNIQUE (content_key, ordinal)
        );
        CREATE INDEX chunks_hash ON chunks (chunk_hash);
        CREATE TABLE terms (id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
        CREATE TABLE skipped (
            branch TEXT NOT NULL,
            path TEXT NOT NULL,
            reason TEXT NOT NULL,
            detail TEXT NOT NULL,
            PRIMARY KEY (branch, path)
        );
        """
        + EMBEDDING_TABLES
        + GRAPH_TABLES
    )
    _run_idempotent(conn, script)


_CREATE = re.compile(r"\bCREATE (TABLE|INDEX)(?! IF NOT EXISTS)")


def _run_idempotent(conn: sqlite3.Connection, script: str) -> None:
    # Statement by statement: executescript() would COMMIT the migration's open transaction first.
    for statement in _CREATE.sub(r"CREATE \1 IF NOT EXISTS", script).split(";"):
        if statement.strip():
            conn.execute(statement)


def _v2(conn: sqlite3.Connection) -> None:
    """Indexes made while v1 was still growing lack tables added to it later (graph, graph_dirty)."""
    _v1(conn)


# Contents of graph languages whose code graph is still to be extracted (codebase_index.graph.extractor):
# index runs mark them in the transaction that writes their chunks; a background step extracts them.
# `unavailable`: the last attempt found no file on disk with this content (changed since, another branch).
GRAPH_PENDING_TABLE = """
        CREATE TABLE graph_pending (
            content_key TEXT PRIMARY KEY,
            language TEXT NOT NULL,
            unavailable INTEGER NOT NULL DEFAULT 0
        );
        """


def _v3(conn: sqlite3.Connection) -> None:
    """Graph extraction leaves the index run: pending marks. Contents extracted in-run are not pending."""
    _run_idempotent(conn, GRAPH_PENDING_TABLE)


# Each entry upgrades the schema by one version; append, never edit a released one.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_v1, _v2, _v3]
