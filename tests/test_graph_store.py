"""The code graph in the index: per-content records, per-branch edges kept right by incremental updates."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebase_index.graph import store as graph_store
from codebase_index.graph.store import GraphStore
from codebase_index.indexer import Indexer
from codebase_index.service import Engine

UTIL = """def helper(x):
    return x + 1


def unused():
    return 0
"""

APP = """from util import helper


def run(values):
    return [helper(v) for v in values]


def main():
    run([1, 2])
"""

OTHER = """def lonely():
    return 42
"""

EdgeKey = tuple[str, str, int, str, str, int, str]


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], cwd=root, check=True, capture_output=True
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "util.py").write_text(UTIL)
    (root / "app.py").write_text(APP)
    (root / "other.py").write_text(OTHER)
    git(root, "init", "-q", "-b", "main")
    return root


@pytest.fixture
def engine(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    # A three-file repository would always be re-resolved in full; make it take the incremental path.
    monkeypatch.setattr(graph_store, "FULL_RESOLVE_SHARE", 1.0)
    eng = Engine(repo, index_path=tmp_path / "index", workers=1)
    yield eng
    eng.close()


def edges(engine: Engine) -> set[EdgeKey]:
    rows = engine.store.conn.execute(
        """SELECT caller, caller_path, line, callee, callee_path, callee_line, confidence FROM graph_edges
           WHERE branch=?""",
        (engine.branch(),),
    )
    return {tuple(r) for r in rows}  # type: ignore[misc]


def full_edges(engine: Engine) -> set[EdgeKey]:
    """What a from-scratch resolution of the branch gives (rolled back: the store is left as it was)."""
    store = engine.store
    with store.write_lock():
        store.conn.execute("BEGIN IMMEDIATE")
        try:
            GraphStore(store.conn).refresh_edges(engine.branch(), full=True)
            return edges(engine)
        finally:
            store.conn.execute("ROLLBACK")


def test_index_stores_definitions_and_cross_file_edges(engine: Engine) -> None:
    report = engine.index()
    assert edges(engine) == {
        ("run", "app.py", 5, "helper", "util.py", 1, "import"),
        ("main", "app.py", 9, "run", "app.py", 4, "exact"),
    }
    assert report.graph is not None and report.graph.mode == "full" and report.graph_errors == 0
    counts = GraphStore(engine.store.conn).counts(engine.branch())
    assert counts["definitions"] == 5
    assert counts["edges_import"] == 1 and counts["edges_exact"] == 1


def test_callee_file_change_updates_edges_of_untouched_callers(engine: Engine, repo: Path) -> None:
    engine.index()
    (repo / "util.py").write_text("# moved down\n\n\n" + UTIL)
    refresh = engine.index().graph
    assert refresh is not None and refresh.mode == "incremental"
    assert refresh.files_resolved == 2  # util.py and app.py, not other.py
    assert ("run", "app.py", 5, "helper", "util.py", 4, "import") in edges(engine)
    assert edges(engine) == full_edges(engine)


def test_renamed_callee_drops_the_edge_and_a_new_caller_adds_one(engine: Engine, repo: Path) -> None:
    engine.index()
    (repo / "util.py").write_text(UTIL.replace("def helper", "def helper2"))
    engine.index()
    assert not any(e[3] == "helper" for e in edges(engine))
    assert edges(engine) == full_edges(engine)
    (repo / "other.py").write_text("from util import helper2\n\n\ndef lonely():\n    return helper2(1)\n")
    engine.index()
    assert ("lonely", "other.py", 5, "helper2", "util.py", 1, "import") in edges(engine)
    assert edges(engine) == full_edges(engine)


def test_deleted_files_take_their_edges_with_them(engine: Engine, repo: Path) -> None:
    engine.index()
    (repo / "util.py").unlink()
    engine.index()
    assert edges(engine) == {("main", "app.py", 9, "run", "app.py", 4, "exact")}
    (repo / "app.py").unlink()
    engine.index()
    assert edges(engine) == set()
    rows = engine.store.conn.execute("SELECT COUNT(*) FROM graph_contents").fetchone()[0]
    assert rows == 1  # only other.py's content is left


def test_path_level_updates_keep_edges_right(engine: Engine, repo: Path) -> None:
    engine.index()
    (repo / "util.py").write_text("\n" + UTIL)
    indexer = Indexer(engine.root, engine.config, engine.store, workers=1)
    report = indexer.run_paths(engine.branch(), ["util.py"])
    assert report.graph is None, "a path-level run only marks the graph; edges are resolved after it"
    assert not GraphStore(engine.store.conn).is_fresh(engine.branch())
    assert GraphStore(engine.store.conn).extraction_counts(engine.branch())["pending"] == 1
    extracted, refresh = engine.finish_graph()
    assert extracted.extracted == 1 and extracted.unavailable == 0
    assert refresh is not None and refresh.mode == "incremental" and refresh.files_resolved == 2
    assert GraphStore(engine.store.conn).is_fresh(engine.branch())
    assert ("run", "app.py", 5, "helper", "util.py", 2, "import") in edges(engine)
    assert edges(engine) == full_edges(engine)


def test_branches_keep_their_own_edges_and_share_contents(engine: Engine, repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    engine.index()
    main_edges = edges(engine)
    git(repo, "checkout", "-qb", "feature")
    (repo / "other.py").write_text("from util import helper\n\n\ndef lonely():\n    return helper(2)\n")
    engine.index()
    assert engine.branch() == "feature"
    assert ("lonely", "other.py", 5, "helper", "util.py", 1, "import") in edges(engine)
    # util.py and app.py are the same content on both branches: extracted once.
    assert engine.store.conn.execute("SELECT COUNT(*) FROM graph_contents").fetchone()[0] == 4
    git(repo, "checkout", "-q", "-f", "main")
    engine.index()
    assert edges(engine) == main_edges
    callers = engine.call_graph("helper")
    assert {e.caller for e in callers.edges} == {"run"}


def test_forced_reindex_gives_the_same_graph(engine: Engine) -> None:
    engine.index()
    before = edges(engine)
    engine.index(force=True)
    assert edges(engine) == before
    assert engine.store.conn.execute("SELECT COUNT(*) FROM graph_defs").fetchone()[0] == 5


def test_graph_can_be_switched_off(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBASE_INDEX_NO_GRAPH", "1")
    eng = Engine(repo, index_path=tmp_path / "off", workers=1)
    try:
        eng.index()
        assert eng.store.conn.execute("SELECT COUNT(*) FROM graph_defs").fetchone()[0] == 0
        assert eng.search("helper").results  # chunks are indexed all the same
    finally:
        eng.close()
