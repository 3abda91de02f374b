"""Store schema: versions, migrations of older index files, and refusal of newer ones."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from codebase_index import store as store_mod
from codebase_index.store import SCHEMA_VERSION, Store, StoreError


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def test_a_v1_index_missing_later_tables_is_upgraded(tmp_path: Path) -> None:
    early = Store.open(tmp_path)
    with early.transaction():
        # What an index written before the graph tables existed looks like.
        for table in ("graph_dirty", "graph_edges", "graph_name_sites", "graph_state"):
            early.conn.execute(f"DROP TABLE {table}")
        early.conn.execute(
            "INSERT INTO files (branch, path, size, mtime_ns, inode, content_key, language, indexed_at) "
            "VALUES ('main', 'kept.py', 1, 1, 1, 'k', 'python', 0)"
        )
        early.set_meta("schema_version", "1")
    early.close()
    db = tmp_path / store_mod.DB_NAME
    assert "graph_dirty" not in tables(db)
    opened = Store.open(tmp_path)
    try:
        assert opened.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert opened.conn.execute("SELECT path FROM files").fetchall() == [("kept.py",)]
    finally:
        opened.close()
    assert {"graph_dirty", "graph_edges", "embeddings", "chunks", "terms"} <= tables(db)


def test_a_newer_schema_is_refused_untouched(tmp_path: Path) -> None:
    fresh = Store.open(tmp_path)
    with fresh.transaction():
        fresh.set_meta("schema_version", str(SCHEMA_VERSION + 1))
    fresh.close()
    before = (tmp_path / store_mod.DB_NAME).stat().st_size
    with pytest.raises(StoreError, match="made by a newer codebase-index"):
        Store.open(tmp_path)
    assert (tmp_path / store_mod.DB_NAME).stat().st_size == before


def test_a_missing_index_is_not_created_when_asked_not_to(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no index"):
        Store.open(tmp_path / "none", create=False)
    assert not (tmp_path / "none").exists()
