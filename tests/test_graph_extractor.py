"""Code-graph extraction after the index run: pending marks written with the chunks, a later pass that
extracts them (skipping files changed since), crash safety, the v2 -> v3 migration, and graph answers
that say they are incomplete while the graph is being built."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import sqlite3
from pathlib import Path

import pytest

from codebase_index.chunking import chunk_text, language_for_path
from codebase_index.format import format_status
from codebase_index.graph import extractor as extractor_module
from codebase_index.graph.extract import extract_file, extract_rows
from codebase_index.graph.query import CallGraph
from codebase_index.graph.resolve import resolve_with_stats
from codebase_index.graph.store import GraphStore, encode_rows
from codebase_index.graph.text import format_call_graph
from codebase_index.processing import content_key
from codebase_index.service import Engine, graph_reads
from codebase_index.store import SCHEMA_VERSION, Store
from codebase_index.store_schema import _v3
from test_graph_store import UTIL, edges, engine, full_edges, git, repo  # noqa: F401 (fixtures)

FIXTURES = Path(__file__).parent / "fixtures" / "graph"


def counts(eng: Engine) -> dict[str, int]:
    return GraphStore(eng.store.conn).extraction_counts(eng.branch())


def test_index_run_only_marks_and_the_pass_extracts(engine: Engine) -> None:  # noqa: F811
    report = engine.index(graph=False)
    assert report.graph is None
    assert counts(engine) == {"files": 3, "extracted": 0, "pending": 3, "unavailable": 0, "elsewhere": 0}
    assert engine.store.conn.execute("SELECT COUNT(*) FROM graph_contents").fetchone()[0] == 0
    assert GraphStore(engine.store.conn).has_pending("main")
    extracted, refresh = engine.finish_graph()
    assert not GraphStore(engine.store.conn).has_pending("main")
    assert (extracted.extracted, extracted.unavailable, extracted.errors) == (3, 0, 0)
    assert refresh is not None and refresh.mode == "full"
    assert counts(engine)["pending"] == 0 and counts(engine)["extracted"] == 3
    assert edges(engine) == {
        ("run", "app.py", 5, "helper", "util.py", 1, "import"),
        ("main", "app.py", 9, "run", "app.py", 4, "exact"),
    }
    status = engine.status()
    assert status.graph is not None and (status.graph.extracted, status.graph.pending) == (3, 0)
    assert "code graph: 3 of 3 files extracted" in format_status(status)


def _in_run_rows(path: str, text: str, language: str) -> object:
    """What the former in-run extraction stored: extract_rows over the chunker's own tree."""
    trees: list[object] = []
    chunk_text(path, text, language, on_tree=trees.append)
    if not trees:
        return None
    rows = extract_rows(path, text, language, trees[0])  # type: ignore[arg-type]
    return None if rows is None else encode_rows(rows)


@pytest.mark.parametrize("language", ["python", "typescript", "javascript", "go", "rust", "java"])
def test_rows_and_edges_equal_the_in_run_extraction(language: str, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / language, root)
    eng = Engine(root, index_path=tmp_path / "index", workers=1)
    inline = Engine(root, index_path=tmp_path / "inline", workers=1)
    try:
        eng.index(graph=False)
        graphs = GraphStore(eng.store.conn)
        assert graphs.extraction_counts(eng.branch())["pending"] >= 2
        eng.finish_graph()
        assert graphs.extraction_counts(eng.branch())["pending"] == 0
        inline.index()  # extracted in the run, from the chunker's tree: the same tables
        for query in (
            "SELECT * FROM graph_contents ORDER BY content_key",
            "SELECT * FROM graph_defs ORDER BY content_key, ordinal",
            "SELECT * FROM graph_edges ORDER BY caller_path, line, callee_path, callee",
            "SELECT * FROM graph_name_sites ORDER BY caller_path, line, name",
        ):
            assert eng.store.conn.execute(query).fetchall() == inline.store.conn.execute(query).fetchall()
        in_memory = []
        checked = 0
        for path in sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()):
            lang = language_for_path(path)
            if lang is None:
                continue
            text = (root / path).read_text()
            key = content_key(lang, text)
            expected = _in_run_rows(path, text, lang)
            stored = eng.store.conn.execute(
                "SELECT language, package, refs, imports FROM graph_contents WHERE content_key=?", (key,)
            ).fetchone()
            if expected is None:
                assert stored is None
                continue
            assert stored == (expected.language, expected.package, expected.refs, expected.imports)  # type: ignore[attr-defined]
            defs = eng.store.conn.execute(
                """SELECT name, qualified, kind, start_line, end_line, bases FROM graph_defs
                   WHERE content_key=? ORDER BY ordinal""",
                (key,),
            ).fetchall()
            assert defs == [tuple(d) for d in expected.definitions]  # type: ignore[attr-defined]
            trees: list[object] = []
            chunk_text(path, text, lang, on_tree=trees.append)
            graph = extract_file(path, text, lang, trees[0])  # type: ignore[arg-type]
            assert graph is not None
            in_memory.append(graph)
            checked += 1
        assert checked >= 2
        resolved, _ = resolve_with_stats(in_memory)
        expected_edges = {
            (e.caller, e.caller_path, e.line, e.callee, e.callee_path, e.confidence)
            for e in resolved
            if e.confidence != "name"
        }
        stored_edges = set(
            eng.store.conn.execute(
                """SELECT caller, caller_path, line, callee, callee_path, confidence FROM graph_edges
                   WHERE branch=?""",
                (eng.branch(),),
            ).fetchall()
        )
        assert stored_edges == expected_edges and stored_edges
    finally:
        eng.close()
        inline.close()


def test_a_file_changed_on_disk_is_not_extracted_until_reindexed(engine: Engine, repo: Path) -> None:  # noqa: F811
    engine.index(graph=False)
    (repo / "util.py").write_text("def helper(x):\n    return x - 1\n")  # not re-indexed yet
    extracted, _ = engine.finish_graph()
    assert (extracted.extracted, extracted.unavailable) == (2, 1)
    assert counts(engine) == {"files": 3, "extracted": 2, "pending": 1, "unavailable": 1, "elsewhere": 0}
    found = engine.call_graph("run")
    assert found.incomplete is not None and "changed on disk" in found.incomplete
    assert "1 unavailable" in format_status(engine.status())
    engine.index()  # the run gives util.py its new content key; the old one is purged with its mark
    assert counts(engine) == {"files": 3, "extracted": 3, "pending": 0, "unavailable": 0, "elsewhere": 0}
    assert engine.store.conn.execute("SELECT COUNT(*) FROM graph_pending").fetchone()[0] == 0
    assert ("run", "app.py", 5, "helper", "util.py", 1, "import") in edges(engine)


def test_contents_of_another_branch_wait_until_a_run_finds_them_on_disk(engine: Engine, repo: Path) -> None:  # noqa: F811
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "init")
    engine.index(graph=False)
    git(repo, "checkout", "-qb", "feature")
    (repo / "other.py").write_text("from util import helper\n\n\ndef lonely():\n    return helper(2)\n")
    engine.index()
    # main's other.py is on no file of this branch: it stays pending, counted, not dropped.
    assert counts(engine) == {"files": 3, "extracted": 3, "pending": 0, "unavailable": 0, "elsewhere": 1}
    git(repo, "checkout", "-q", "-f", "main")
    engine.index()
    assert counts(engine)["pending"] == 0 and counts(engine)["elsewhere"] == 0
    assert edges(engine) == full_edges(engine)
    assert {e.caller for e in engine.call_graph("lonely", direction="callees").edges} == set()


def test_incomplete_answers_while_the_graph_is_being_built(
    engine: Engine,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    engine.index(graph=False)
    scheduled: list[object] = []
    monkeypatch.setattr(engine.graphs, "schedule", scheduled.append)
    monkeypatch.setattr(graph_reads, "INLINE_MAX_FILES", 0)  # as if far too many to extract inline
    found = engine.call_graph("helper")
    assert found.incomplete == "code graph is being built: 0 of 3 files extracted"
    assert scheduled, "the answer asked the background pass to run"
    assert "code graph is being built: 0 of 3 files extracted" in format_call_graph(found)
    lookup = engine.implementation_lookup("helper")
    assert lookup.incomplete == found.incomplete
    engine.finish_graph()
    done = engine.call_graph("helper")
    assert done.incomplete is None and {e.caller for e in done.edges} == {"run"}
    assert "being built" not in format_call_graph(done)


def test_a_few_pending_files_are_extracted_by_the_query_itself(engine: Engine, repo: Path) -> None:  # noqa: F811
    engine.index()
    (repo / "other.py").write_text("from util import helper\n\n\ndef lonely():\n    return helper(3)\n")
    engine.index_paths(["other.py"])
    engine.graphs.wait_idle()
    found = engine.call_graph("helper")
    assert found.incomplete is None
    assert {(e.caller, e.caller_path) for e in found.edges} == {("run", "app.py"), ("lonely", "other.py")}


def _index_then_die(root: str, index: str) -> None:
    """Child process: index without the graph, then start extracting and die by SIGKILL after the first
    batch has committed."""
    extractor_module.BATCH_FILES = 1
    original = GraphStore.finish_pending
    calls = [0]

    def finish_then_maybe_die(self: GraphStore, done, unavailable):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] == 2:  # the first batch's transaction has committed
            os.kill(os.getpid(), signal.SIGKILL)
        return original(self, done, unavailable)

    GraphStore.finish_pending = finish_then_maybe_die  # type: ignore[method-assign]
    eng = Engine(Path(root), index_path=Path(index), workers=1)
    eng.index(graph=False)
    eng.finish_graph()


def test_a_killed_extraction_leaves_marks_the_next_pass_finishes(repo: Path, tmp_path: Path) -> None:  # noqa: F811
    index = tmp_path / "index"
    child = multiprocessing.get_context("spawn").Process(target=_index_then_die, args=(str(repo), str(index)))
    child.start()
    child.join(120)
    assert child.exitcode == -signal.SIGKILL
    eng = Engine(repo, index_path=index, workers=1)
    try:
        assert counts(eng) == {"files": 3, "extracted": 1, "pending": 2, "unavailable": 0, "elsewhere": 0}
        extracted, _ = eng.finish_graph()
        assert extracted.extracted == 2
        assert counts(eng)["pending"] == 0
        assert edges(eng) == {
            ("run", "app.py", 5, "helper", "util.py", 1, "import"),
            ("main", "app.py", 9, "run", "app.py", 4, "exact"),
        }
    finally:
        eng.close()


@pytest.mark.parametrize("graph", [False, True])
def test_a_killed_index_run_leaves_marks_or_graphs_with_its_chunks(
    engine: Engine,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    graph: bool,
) -> None:
    """Every content whose chunks committed is either extracted or pending, never neither: marked for the
    background pass (graph=False, as the sidecar) or extracted in the run (as the CLI)."""
    from codebase_index import indexer as indexer_module

    monkeypatch.setattr(indexer_module, "WRITE_BATCH_FILES", 1)
    calls = [0]
    original = engine.store.upsert_file

    def upsert_then_fail(branch, row):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] == 2:
            raise KeyboardInterrupt  # the run dies inside its second batch; the first has committed
        return original(branch, row)

    monkeypatch.setattr(engine.store, "upsert_file", upsert_then_fail)
    with pytest.raises(KeyboardInterrupt):
        engine.index(graph=graph)
    conn = engine.store.conn
    with_chunks = {r[0] for r in conn.execute("SELECT key FROM contents")}
    pending = {r[0] for r in conn.execute("SELECT content_key FROM graph_pending")}
    extracted = {r[0] for r in conn.execute("SELECT content_key FROM graph_contents")}
    assert len(with_chunks) == 1
    assert (pending, extracted) == ((set(), with_chunks) if graph else (with_chunks, set()))
    monkeypatch.setattr(engine.store, "upsert_file", original)
    engine.index()
    assert counts(engine)["pending"] == 0 and len(edges(engine)) == 2


def test_migration_from_v2_keeps_extracted_contents_not_pending(engine: Engine, tmp_path: Path) -> None:  # noqa: F811
    engine.index()
    index_dir = engine.index_dir
    engine.close()
    conn = sqlite3.connect(index_dir / "codebase.db")
    conn.execute("DROP TABLE graph_pending")
    conn.execute("UPDATE meta SET value='2' WHERE key='schema_version'")
    conn.commit()
    assert conn.execute("SELECT COUNT(*) FROM graph_contents").fetchone()[0] == 3
    conn.close()
    store = Store.open(index_dir)
    try:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION) == "3"
        assert store.conn.execute("SELECT COUNT(*) FROM graph_pending").fetchone()[0] == 0
        assert GraphStore(store.conn).extraction_counts("main")["extracted"] == 3
        _v3(store.conn)  # idempotent
    finally:
        store.close()
    again = Engine(engine.root, index_path=index_dir, workers=1)
    try:
        assert again.index().files_changed == 0
        assert counts(again)["pending"] == 0 and len(edges(again)) == 2
    finally:
        again.close()


def test_call_graph_json_carries_the_incomplete_field() -> None:
    import msgspec

    graph = CallGraph("f", "callers", 1, [], [], [], 0, False, incomplete="code graph is being built: 1 of 2")
    assert msgspec.to_builtins(graph)["incomplete"] == "code graph is being built: 1 of 2"
    assert format_call_graph(graph).endswith("(code graph is being built: 1 of 2)")


def test_a_new_sidecar_finishes_what_an_earlier_one_left_pending(repo: Path, tmp_path: Path) -> None:  # noqa: F811
    from codebase_index.tools import Runtime

    first = Engine(repo, index_path=tmp_path / "index", workers=1)
    first.index(graph=False)  # as if the sidecar that indexed was killed before its background pass
    first.close()
    rt = Runtime(repo, index_dir=tmp_path / "index")
    rt.watch_enabled = True
    try:
        rt.start_graph()
        writer = rt.writer()
        writer.graphs.wait_idle()
        assert counts(writer) == {"files": 3, "extracted": 3, "pending": 0, "unavailable": 0, "elsewhere": 0}
        assert len(edges(writer)) == 2
        status = writer.status()
        assert status.graph is not None and not status.graph.building
    finally:
        rt.close()


# -- containment: a graph worker that dies loses one file's graph, never the pass ---------------------------

POISON = "poison_marker"


def dying_extract_content(item: tuple[str, str, str, list[str]]) -> object:
    """Stands in for extractor.extract_content in spawned workers: dies on the poisoned file."""
    from codebase_index.graph.extractor import extract_content

    _, _, root, paths = item
    if any(POISON in Path(root, p).read_text() for p in paths):
        os._exit(3)
    return extract_content(item)


def dying_extract_many(items: list[tuple[str, str, str, list[str]]]) -> list[object]:
    return [dying_extract_content(item) for item in items]


def test_a_dying_graph_worker_loses_only_its_file(
    repo: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (repo / "bad.py").write_text(f"# {POISON}\ndef cursed():\n    return helper()\n")
    eng = Engine(repo, index_path=tmp_path / "index", workers=1)
    try:
        eng.index(graph=False)
        monkeypatch.setattr(extractor_module, "INLINE_MAX_FILES", 0)
        monkeypatch.setattr(extractor_module, "BATCH_FILES", 2)
        monkeypatch.setattr(extractor_module, "_extract_many", dying_extract_many)
        monkeypatch.setattr(extractor_module, "extract_content", dying_extract_content)
        report = extractor_module.extract_pending(eng.store, [(eng.branch(), repo)], workers=2)
        assert (report.extracted, report.errors, report.cancelled) == (4, 1, False)
        assert counts(eng)["pending"] == 0  # stored without a graph, not left to kill the next pass too
        assert (
            eng.store.conn.execute("SELECT COUNT(*) FROM graph_contents").fetchone()[0] == 3
        )  # all but bad.py
        rows = eng.problem_files()
        assert [(r.path, r.reason) for r in rows] == [("bad.py", "graph-error")]
        assert rows[0].detail.startswith("worker process failed")
    finally:
        eng.close()
