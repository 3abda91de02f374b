"""The deferred code-graph refresh: index runs only mark, edges are resolved after the keyword write, and
graph answers always come from a state whose edges match its files (never a stale mix)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebase_index.graph.store import GraphStore
from codebase_index.service import Engine
from test_graph_store import UTIL, edges, engine, full_edges, repo  # noqa: F401 (fixtures)


def test_a_save_is_marked_and_the_next_query_sees_its_edges(
    engine: Engine,  # noqa: F811
    repo: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine.index()
    # No background refresh: the query has to catch up by itself.
    monkeypatch.setattr(engine.graphs, "schedule", lambda branch: None)
    (repo / "other.py").write_text("from util import helper\n\n\ndef lonely():\n    return helper(3)\n")
    report = engine.index_paths(["other.py"])
    assert report.graph is None
    assert not GraphStore(engine.store.conn).is_fresh("main")
    callers = engine.call_graph("helper")
    assert {(e.caller, e.caller_path) for e in callers.edges} == {("run", "app.py"), ("lonely", "other.py")}
    assert GraphStore(engine.store.conn).is_fresh("main")
    assert edges(engine) == full_edges(engine)


def test_runs_landing_between_plan_and_apply_stay_pending(engine: Engine, repo: Path) -> None:  # noqa: F811
    engine.index()
    store = engine.store
    graphs = GraphStore(store.conn)
    (repo / "util.py").write_text("\n\n" + UTIL)
    engine.indexer(engine.root).run_paths("main", ["util.py"])
    engine.graphs.extract(workers=0)
    plan = graphs.plan_refresh("main")
    assert plan is not None and plan.only == {"util.py", "app.py"}
    # Another save lands while the plan was being resolved: app.py gains a second call.
    (repo / "app.py").write_text((repo / "app.py").read_text() + "\n\ndef again():\n    return helper(9)\n")
    engine.indexer(engine.root).run_paths("main", ["app.py"])
    engine.graphs.extract(workers=0)  # its extraction marks land after the plan too
    with store.write_lock(), store.transaction():
        done = graphs.apply_refresh("main", plan)
    assert done is not None and done.mode == "incremental"
    assert not graphs.is_fresh("main"), "the later save is still pending"
    assert not any(e[0] == "again" for e in edges(engine))
    assert engine.graphs.refresh("main") is not None
    assert any(e[0] == "again" for e in edges(engine))
    assert edges(engine) == full_edges(engine) and graphs.is_fresh("main")


def test_a_plan_made_before_another_resolve_is_discarded(engine: Engine, repo: Path) -> None:  # noqa: F811
    engine.index()
    graphs = GraphStore(engine.store.conn)
    (repo / "util.py").write_text("\n" + UTIL)
    engine.indexer(engine.root).run_paths("main", ["util.py"])
    stale = graphs.plan_refresh("main")
    assert stale is not None
    assert engine.graphs.refresh("main") is not None  # someone else resolved first
    with engine.store.write_lock(), engine.store.transaction():
        assert graphs.apply_refresh("main", stale) is None


def test_a_forced_run_during_a_plan_forces_a_full_resolve_next(engine: Engine, repo: Path) -> None:  # noqa: F811
    engine.index()
    graphs = GraphStore(engine.store.conn)
    (repo / "util.py").write_text("\n" + UTIL)
    engine.indexer(engine.root).run_paths("main", ["util.py"])
    plan = graphs.plan_refresh("main")
    assert plan is not None
    engine.indexer(engine.root).run("main", force=True)
    with engine.store.write_lock(), engine.store.transaction():
        assert graphs.apply_refresh("main", plan) is not None
    assert not graphs.is_fresh("main")
    follow = graphs.plan_refresh("main")
    assert follow is not None and follow.only is None, "the forced run's full mark survived"


def test_background_mode_resolves_after_index_returns(engine: Engine) -> None:  # noqa: F811
    engine.graph_in_background = True
    report = engine.index()
    assert report.graph is None
    engine.graphs.wait_idle()
    assert GraphStore(engine.store.conn).is_fresh("main")
    assert engine.graphs.last is not None and engine.graphs.last.mode == "full"
    assert edges(engine) == full_edges(engine)
