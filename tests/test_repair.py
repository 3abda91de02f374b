"""A broken index is repaired through the tools: real SQLite files with a page overwritten on disk, real
chunks deleted behind the index's back, a real embedding server on 127.0.0.1 counting what is embedded
again (only what could not be read back from the damaged file)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codebase_index import tools
from codebase_index.repair import check_pages, is_corruption, salvage
from codebase_index.service import Engine
from project_config import write_project_config
from provider_server import FakeProviderServer, serve
from test_vectors import git


def make_project(root: Path, files: int = 40) -> Path:
    """Enough files and chunks that the chunks and embeddings tables span many pages."""
    for i in range(files):
        path = root / "pkg" / f"module_{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "\n\n".join(
                f"def handler_{i}_{j}(request, payload):\n"
                f"    '''Handle request kind {j} of module {i}: validate the payload and store it.'''\n"
                f"    total = len(payload) * {j} + {i}\n"
                f"    return {{'module': {i}, 'kind': {j}, 'total': total, 'name': 'handler_{i}_{j}'}}\n"
                for j in range(4)
            )
            + "\n"
        )
    (root / "README.md").write_text("# Handlers\n\nRequest handlers for the tests.\n")
    git(root, "init", "-q", "-b", "main")
    return root


def write_config(root: Path, base_url: str) -> None:
    write_project_config(
        root,
        {
            "embeddingProvider": "custom",
            "customProvider": {
                "baseUrl": base_url,
                "model": "fake-embed",
                "dimensions": 8,
                "requestIntervalMs": 0,
                "concurrency": 1,
            },
            "indexing": {"retries": 0},
        },
    )


def embedded_count(server: FakeProviderServer) -> int:
    return sum(len(p.texts) for p in server.posts())


def build(root: Path, index: Path, server: FakeProviderServer) -> int:
    """Index and embed everything; returns how many vectors the index holds."""
    write_config(root, server.base_url)
    engine = Engine(root, index_path=index)
    engine.index()
    report = engine.embed()
    assert report is not None and report.pending == 0 and report.failed == 0
    count = engine.store.conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
    engine.close()
    return int(count)


def corrupt_page(db: Path, table: str) -> int:
    """Overwrite one leaf page of `table` in the closed database file with garbage; returns its number."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    leaves = [
        r[0]
        for r in conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno", (table,)
        )
    ]
    conn.close()
    assert len(leaves) >= 3, f"{table} spans too few pages for the test"
    page = leaves[len(leaves) // 2]
    with open(db, "r+b") as handle:
        handle.seek((page - 1) * page_size)
        handle.write(b"\xff" * page_size)
    return page


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebase_index.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_damaged_chunks_page_search_says_what_to_run_and_repair_keeps_every_vector(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    index = tmp_path / "index"
    where = ["--root", str(root), "--index-dir", str(index)]
    with serve(dims=8) as server:
        total = build(root, index, server)
        corrupt_page(index / "codebase.db", "chunks")
        conn = sqlite3.connect(index / "codebase.db")
        assert check_pages(conn, full=True) != ["ok"]
        conn.close()

        broken = cli("search", "validate the payload", *where, cwd=root)
        assert broken.returncode == 1 and "Traceback" not in broken.stderr
        assert "the index database is damaged" in broken.stderr and "codebase-index repair" in broken.stderr

        before = embedded_count(server)
        fixed = cli("repair", *where, cwd=root)
        assert fixed.returncode == 0, fixed.stderr
        assert (
            "moved aside" in fixed.stdout and f"{total} embeddings carried over, 0 unreadable" in fixed.stdout
        )
        assert embedded_count(server) == before, "no readable vector is computed again"
        kept = [p for p in index.glob("codebase.db.broken-*") if not p.name.endswith(("-wal", "-shm"))]
        assert len(kept) == 1 and kept[0].stat().st_size > 0, "the damaged database is kept for inspection"

        engine = Engine(root, index_path=index)
        response = engine.search("validate the payload of module 7")
        assert response.strategy == "hybrid", response.note
        assert any(r.path == "pkg/module_7.py" for r in response.results)
        status = engine.status()
        assert status.embeddings is not None and status.embeddings.embedded == status.embeddings.total
        engine.close()
        conn = sqlite3.connect(index / "codebase.db")
        assert check_pages(conn, full=True) == ["ok"]
        conn.close()


def test_damaged_embeddings_page_only_unreadable_vectors_are_embedded_again(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    index = tmp_path / "index"
    with serve(dims=8) as server:
        total = build(root, index, server)
        corrupt_page(index / "codebase.db", "embeddings")
        saved = salvage(index / "codebase.db")
        assert 0 < saved.unreadable < total and len(saved.vectors) == total - saved.unreadable

        rt = tools.Runtime(root, index_dir=index)
        try:
            with pytest.raises(tools.ToolError) as damaged:
                tools.call(rt, "search", {"query": "validate the payload"})
            assert damaged.value.code == tools.CONFIG_ERROR
            assert "the index database is damaged" in damaged.value.message
            assert "index_health_check" in damaged.value.message
            before = embedded_count(server)
            result = tools.call(rt, "health_check", {})
            assert result.data["movedAside"] and result.data["vectorsKept"] == total - saved.unreadable
            assert result.data["vectorsLost"] == saved.unreadable
            assert "has been rebuilt from the files" in result.text
            deadline = time.monotonic() + 120  # the background job redoes the lost vectors
            while rt.embedding_running() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert embedded_count(server) - before == saved.unreadable
            found = tools.call(rt, "search", {"query": "handler_3_2 payload", "limit": 3})
            assert found.data["strategy"] == "hybrid" and "pkg/module_3.py" in found.text
            again = tools.call(rt, "health_check", {})
            assert again.data["problems"] == [] and "integrity ok" in again.text
        finally:
            rt.close()


def test_index_force_rebuilds_a_damaged_database(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj", files=30)
    index = tmp_path / "index"
    with serve(dims=8) as server:
        total = build(root, index, server)
        corrupt_page(index / "codebase.db", "chunks")
        before = embedded_count(server)
        done = cli("index", "--force", "--root", str(root), "--index-dir", str(index), cwd=root)
        assert done.returncode == 0, done.stderr
        assert list(index.glob("codebase.db.broken-*"))
        assert embedded_count(server) == before, f"all {total} vectors were readable"
        plain = cli("index", "--root", str(root), "--index-dir", str(index), cwd=root)
        assert plain.returncode == 0 and "0 changed" in plain.stdout


def test_logical_faults_are_found_and_repaired_in_place(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj", files=6)
    index = tmp_path / "index"
    with serve(dims=8) as server:
        build(root, index, server)
        engine = Engine(root, index_path=index)
        conn = engine.store.conn
        # A file's chunks deleted behind the index's back: it used to pass as "integrity ok".
        key = conn.execute("SELECT content_key FROM files WHERE path = 'pkg/module_2.py'").fetchone()[0]
        conn.execute("DELETE FROM chunks WHERE content_key = ?", (key,))
        conn.execute(
            "INSERT INTO chunks (content_key, ordinal, start_line, end_line, kind, symbol, chunk_hash, text,"
            " n_tokens, term_ids, term_tfs) VALUES ('ghost', 0, 1, 1, 'block', '', 'h', 'x', 1, x'', x'')"
        )
        conn.execute(
            "INSERT INTO embeddings (chunk_hash, model_id, vector) VALUES ('gone', 'custom:fake-embed', ?)",
            (b"\0" * 16,),
        )
        engine.close()
        engine = Engine(root, index_path=index)
        assert not any(
            r.path == "pkg/module_2.py" for r in engine.search("handler_2_1", mode="keyword").results
        )
        report = engine.repair()
        assert report.moved_aside is None and report.ok
        text = "; ".join(report.problems)
        assert "1 files have lost their chunks (main:pkg/module_2.py)" in text
        # The lost file's 4 vectors count as orphans until it is re-read; then only the stray one goes.
        assert "1 chunks belong to no indexed content" in text and "5 vectors belong to no chunk" in text
        assert report.reindexed_files == 1 and "1 orphaned vectors deleted" in report.repaired
        before = embedded_count(server)
        assert engine.embed() is not None and embedded_count(server) == before, "its vectors were kept"
        found = engine.search("handler_2_1", mode="keyword").results
        assert found and found[0].path == "pkg/module_2.py"
        assert engine.repair().problems == []
        engine.close()


def test_corruption_is_told_apart_from_other_sqlite_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database file at all, just text" * 100)
    with pytest.raises(sqlite3.DatabaseError) as info:
        sqlite3.connect(bad).execute("SELECT * FROM sqlite_master").fetchall()
    assert is_corruption(info.value)
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (x UNIQUE)")
    conn.execute("INSERT INTO t VALUES (1)")
    with pytest.raises(sqlite3.IntegrityError) as dup:
        conn.execute("INSERT INTO t VALUES (1)")
    assert not is_corruption(dup.value)
    with pytest.raises(sqlite3.OperationalError) as missing:
        conn.execute("SELECT * FROM nowhere")
    assert not is_corruption(missing.value)


def test_an_index_made_by_a_newer_version_is_named_and_never_moved_or_rebuilt(tmp_path: Path) -> None:
    """Issue 27: the health check used to call a newer version's index damaged, move it aside and rebuild it
    at the old schema. Now every face says which version made it and nothing is moved, through the CLI and
    the sidecar."""
    import hashlib

    from test_rpc import Sidecar

    root = make_project(tmp_path / "proj", files=3)
    index = tmp_path / "index"
    engine = Engine(root, index_path=index, workers=1)
    engine.index()
    engine.close()
    db = index / "codebase.db"
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT value FROM meta WHERE key='written_by'").fetchone() == ("0.1.0",)
    conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    conn.execute("UPDATE meta SET value='9.0.0' WHERE key='written_by'")
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    before = sorted(p.name for p in index.iterdir())

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "codebase_index.cli", *args, "--index-dir", str(index), str(root)]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120)

    for args in (("repair",), ("status",), ("index", "--force")):
        done = cli(*args)
        assert done.returncode != 0, (args, done.stdout)
        assert "made by a newer codebase-index (version 9.0.0, schema 99" in done.stderr, (args, done.stderr)
        assert "nothing was moved or rebuilt" in done.stderr

    sidecar = Sidecar(root, index)
    try:
        for method, params in (("health_check", {}), ("search", {"query": "handler payload"})):
            answer = sidecar.call(method, params)
            assert "made by a newer codebase-index" in answer["error"]["message"], (method, answer)
    finally:
        sidecar.close()
    after = {p.name for p in index.iterdir()}
    assert set(before) <= after and not any("broken" in name for name in after), after  # only new lock files
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
