"""The worker-pool path of the indexer stores exactly what the in-process path stores.

Small runs stay in-process (PARALLEL_THRESHOLD_BYTES), so no other test reaches the pool: here the threshold
is lowered to force it, and both stores are compared row by row (chunks, terms, code-graph records, edges).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from codebase_index import processing
from codebase_index.service import Engine

MODULE = '''"""Module {i}."""
from pkg.mod{prev} import work_{prev}


class Thing{i}:
    def run(self, x):
        return work_{prev}(x) + {i}


def work_{i}(value):
    return Thing{i}().run(value)
'''


def make_repo(root: Path, n: int) -> None:
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "pkg").mkdir()
    for i in range(n):
        (root / "pkg" / f"mod{i}.py").write_text(MODULE.format(i=i, prev=(i - 1) % n))
    (root / "pkg" / "notes.md").write_text("# Notes\n\nThe pool must agree with the serial path.\n")


def dump(index: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(index / "codebase.db")
    try:
        queries = {
            "files": "SELECT path, content_key, language FROM files ORDER BY path",
            "chunks": "SELECT content_key, chunk_hash, start_line, end_line FROM chunks ORDER BY 1, 3, 2",
            "defs": "SELECT content_key, ordinal, name, qualified, kind FROM graph_defs ORDER BY 1, 2",
            "graph_contents": "SELECT content_key, refs, imports FROM graph_contents ORDER BY 1",
            "edges": "SELECT caller_path, caller, line, callee_path, callee, confidence FROM graph_edges "
            "ORDER BY 1, 2, 3, 4, 5",
        }
        return {name: conn.execute(sql).fetchall() for name, sql in queries.items()}
    finally:
        conn.close()


def test_pool_and_serial_store_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, 12)
    serial = Engine(repo, index_path=tmp_path / "serial", workers=2)
    try:
        report = serial.index()
    finally:
        serial.close()
    assert report.files == 13 and report.graph_errors == 0

    monkeypatch.setattr(processing, "PARALLEL_THRESHOLD_BYTES", 0)
    seen: list[str] = []
    pooled = Engine(repo, index_path=tmp_path / "pooled", workers=2)
    try:
        pooled_report = pooled.index(progress=lambda phase, done, total: seen.append(phase))
    finally:
        pooled.close()
    assert pooled_report.chunks == report.chunks and pooled_report.chunks_added == report.chunks_added
    a, b = dump(tmp_path / "serial"), dump(tmp_path / "pooled")
    assert a["edges"], "the fixture must produce cross-file edges"
    assert len(a["files"]) == 13 and a["defs"]
    assert a == b
    assert "chunk" in seen and "write" in seen


def test_small_runs_stay_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Below the byte threshold no worker process is started, whatever the file count."""
    repo = tmp_path / "repo"
    make_repo(repo, 80)  # more files than the old count threshold (64), far fewer bytes than the new one

    def no_pool(*args: object, **kwargs: object) -> None:
        raise AssertionError("a worker pool was started for a small run")

    monkeypatch.setattr(processing, "ProcessPoolExecutor", no_pool)
    engine = Engine(repo, index_path=tmp_path / "index", workers=2)
    try:
        report = engine.index()
    finally:
        engine.close()
    assert report.files == 81 and report.chunks_added > 0


# -- containment: a worker that dies or raises loses one file, never the run ------------------------------

POISON = "poison"


def dying_process_file(path: str, text: str, language: str, extract_graph: bool = False) -> object:
    """Stands in for processing.process_file inside the spawned workers (pickled by reference to this
    module): the process dies on the poisoned file the way a native crash or the OOM killer ends it."""
    import os

    from codebase_index.processing import process_file

    if POISON in text:
        os._exit(3)
    return process_file(path, text, language, extract_graph)


def dying_item(item: tuple[str, str, str, bool]) -> object:
    return dying_process_file(*item)


def dying_chunk_many(
    items: list[tuple[str, str, str]], extract_graph: bool = False, embed_folder: str = ""
) -> list[object]:
    return [dying_process_file(path, text, language, extract_graph) for path, text, language in items]


def raising_chunk_many(
    items: list[tuple[str, str, str]], extract_graph: bool = False, embed_folder: str = ""
) -> list[object]:
    if any(POISON in text for _, text, _ in items):
        raise MemoryError("worker ran out of memory")
    return dying_chunk_many(items, extract_graph)


@pytest.mark.parametrize("batch_fn", [dying_chunk_many, raising_chunk_many])
def test_a_failing_worker_loses_only_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_fn: object
) -> None:
    repo = tmp_path / "repo"
    make_repo(repo, 6)
    (repo / "pkg" / "bad.py").write_text(f"# {POISON}\ndef cursed():\n    return 1\n")
    real_chunk_many, real_item = processing._chunk_many, processing._process_item
    monkeypatch.setattr(processing, "PARALLEL_THRESHOLD_BYTES", 0)
    monkeypatch.setattr(processing, "_chunk_many", batch_fn)
    monkeypatch.setattr(processing, "_process_item", dying_item)
    engine = Engine(repo, index_path=tmp_path / "index", workers=2)
    try:
        report = engine.index()
        status = engine.status()
        assert report.files == 7 and report.skipped.get("error") == 1
        assert [(e.path, "worker process failed" in e.detail) for e in status.errors] == [
            ("pkg/bad.py", True)
        ]
        assert engine.search("work_3", mode="keyword").results  # the other files are all there
        # Retried, not cached as done: once the file no longer kills its worker it is indexed.
        monkeypatch.setattr(processing, "_chunk_many", real_chunk_many)
        monkeypatch.setattr(processing, "_process_item", real_item)
        again = engine.index()
        assert again.files == 8 and "error" not in again.skipped and engine.status().errors == []
    finally:
        engine.close()


# -- the pass: slices, and vectors made beside chunking ---------------------------------------------------


def vectors(index: Path) -> dict[str, bytes]:
    conn = sqlite3.connect(index / "codebase.db")
    try:
        return dict(conn.execute("SELECT chunk_hash, vector FROM embeddings"))
    finally:
        conn.close()


@pytest.mark.parametrize("pooled", [False, True])
def test_vectors_made_in_the_pass_equal_the_embedding_jobs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pooled: bool
) -> None:
    """The chunk workers embed with the static model as they chunk (the index is hybrid-ready when the
    pass ends, and embedding no longer runs after it on one core): the same vectors, byte for byte, as the
    embedding job makes from the stored chunks, here made with the pass's model switched off."""
    repo = tmp_path / "repo"
    make_repo(repo, 12)
    if pooled:
        monkeypatch.setattr(processing, "PARALLEL_THRESHOLD_BYTES", 0)
    engine = Engine(repo, index_path=tmp_path / "pass", workers=2)
    try:
        report = engine.index()
        assert engine.status().embeddings.embedded == report.chunks > 0
    finally:
        engine.close()
    assert report.embedded == report.chunks  # all of them in the pass, none left for the job

    from codebase_index.service import embedding

    monkeypatch.setattr(embedding, "pass_embedding", lambda engine: None)
    job = Engine(repo, index_path=tmp_path / "job", workers=2)
    try:
        assert job.index().embedded == report.chunks
    finally:
        job.close()
    made_in_pass, made_by_job = vectors(tmp_path / "pass"), vectors(tmp_path / "job")
    assert len(made_in_pass) == report.chunks
    assert made_in_pass == made_by_job


def test_a_run_in_many_slices_stores_what_one_slice_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run reads, chunks and writes a slice at a time (its memory is a few slices, not the project):
    cut into one-file slices, with the workers' lookahead, it stores exactly what one slice stores; a
    content that recurs in a later slice is chunked once, and a file that kills its worker is lost alone,
    at every path that holds it."""
    from codebase_index import indexer

    repo = tmp_path / "repo"
    make_repo(repo, 10)
    (repo / "pkg" / "copy_a.py").write_text((repo / "pkg" / "mod3.py").read_text())
    (repo / "zz_copy.py").write_text((repo / "pkg" / "mod3.py").read_text())
    whole = Engine(repo, index_path=tmp_path / "whole", workers=2)
    try:
        whole_report = whole.index()
    finally:
        whole.close()

    monkeypatch.setattr(indexer, "READ_SLICE_BYTES", 1)
    monkeypatch.setattr(processing, "PARALLEL_THRESHOLD_BYTES", 0)
    chunked: list[int] = []
    sliced = Engine(repo, index_path=tmp_path / "sliced", workers=2)
    try:
        report = sliced.index(
            progress=lambda phase, done, total: chunked.append(done) if phase == "chunk" else None
        )
    finally:
        sliced.close()
    assert (report.files, report.chunks, report.chunks_added) == (
        whole_report.files,
        whole_report.chunks,
        whole_report.chunks_added,
    )
    assert dump(tmp_path / "whole") == dump(tmp_path / "sliced")
    assert vectors(tmp_path / "whole") == vectors(tmp_path / "sliced")
    assert max(chunked) == whole_report.files - 2  # the two copies were not chunked again

    (repo / "pkg" / "bad.py").write_text(f"# {POISON}\ndef cursed():\n    return 1\n")
    (repo / "zz_bad_copy.py").write_text(f"# {POISON}\ndef cursed():\n    return 1\n")
    monkeypatch.setattr(processing, "_chunk_many", dying_chunk_many)
    monkeypatch.setattr(processing, "_process_item", dying_item)
    again = Engine(repo, index_path=tmp_path / "sliced", workers=2)
    try:
        report = again.index()
        assert report.skipped.get("error") == 2 and report.files == whole_report.files
        assert sorted(e.path for e in again.status().errors) == ["pkg/bad.py", "zz_bad_copy.py"]
    finally:
        again.close()


def test_a_run_that_only_rereads_skipped_files_writes_nothing(tmp_path: Path) -> None:
    """A fresh indexer re-reads the files it skipped before (binary, generated): when they are skipped
    again for the same reasons, the run commits nothing (the index's generation stays)."""
    repo = tmp_path / "repo"
    make_repo(repo, 3)
    (repo / "blob.py").write_bytes(b"\x00\x01binary\x00" * 100)
    first = Engine(repo, index_path=tmp_path / "index", workers=2)
    try:
        assert first.index().skipped.get("binary") == 1
        generation = first.store.generation()
    finally:
        first.close()
    second = Engine(repo, index_path=tmp_path / "index", workers=2)
    try:
        report = second.index()
        assert report.files_changed == 0 and report.skipped.get("binary") == 1
        assert second.store.generation() == generation
    finally:
        second.close()


def test_a_pass_model_that_does_not_load_in_the_workers_loses_no_file_and_no_vector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers that cannot load the pass model chunk as before; the vectors come from the embedding pass
    after the write (the index is still hybrid-ready when the run returns)."""
    from codebase_index.service import embedding

    real = embedding.pass_embedding

    def broken(engine: Engine) -> processing.PassEmbedding | None:
        found = real(engine)
        return None if found is None else found._replace(folder=str(tmp_path / "no-model-here"))

    monkeypatch.setattr(embedding, "pass_embedding", broken)
    monkeypatch.setattr(processing, "PARALLEL_THRESHOLD_BYTES", 0)
    repo = tmp_path / "repo"
    make_repo(repo, 6)
    engine = Engine(repo, index_path=tmp_path / "index", workers=2)
    try:
        report = engine.index()
        status = engine.status()
        assert report.files == 7 and not report.skipped.get("error") and status.errors == []
        assert status.embeddings is not None and status.embeddings.embedded == report.chunks > 0
        assert report.embedded == report.chunks
    finally:
        engine.close()
