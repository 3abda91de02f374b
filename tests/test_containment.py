"""One bad file never aborts an index run: whatever raises while reading, chunking or tokenizing it, the
file is skipped under reason "error" (or cut into line windows), named in status with the exception's
one line, logged, and tried again by the next run. The pool path is covered in test_indexer_pool.py."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from codebase_index import chunking, processing
from codebase_index import files as discovery
from codebase_index.format import format_index_report, format_status
from codebase_index.service import Engine


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "good.py").write_text("def settle_invoice(total):\n    return total * 2\n")
    (root / "bad.py").write_text("def cursed_function():\n    return 1\n")
    (root / "config.json").write_text('{\n  "retry_budget": 3,\n  "gateway": "eu"\n}\n')
    return root


def _engine(repo: Path, tmp_path: Path) -> Engine:
    return Engine(repo, index_path=tmp_path / "index", workers=1)


def test_a_chunk_error_skips_the_file_names_it_and_is_retried(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    real = processing.chunk_text

    def flaky(path: str, text: str, language: str | None = None, **kwargs: object) -> object:
        if path == "bad.py":
            raise RecursionError("maximum recursion depth exceeded\nwhile walking the tree")
        return real(path, text, language, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(processing, "chunk_text", flaky)
    engine = _engine(repo, tmp_path)
    try:
        with caplog.at_level(logging.WARNING, logger="codebase_index.indexer"):
            report = engine.index()
        assert report.files == 2 and report.skipped.get("error") == 1
        assert any("bad.py" in r.getMessage() and "RecursionError" in r.getMessage() for r in caplog.records)
        status = engine.status()
        assert status.skipped.get("error") == 1
        assert [(e.path, e.detail) for e in status.errors] == [
            ("bad.py", "RecursionError: maximum recursion depth exceeded")
        ]
        assert "error bad.py: RecursionError" in format_status(status)
        assert "1 files not indexed because of an error" in format_index_report(report)
        assert engine.search("settle_invoice", mode="keyword").results
        assert not engine.search("cursed_function", mode="keyword").results

        # Nothing changed on disk, but the file is tried again (its error is not cached as done).
        monkeypatch.setattr(processing, "chunk_text", real)
        again = engine.index()
        assert again.files == 3 and "error" not in again.skipped
        assert engine.status().errors == []
        assert engine.search("cursed_function", mode="keyword").results[0].path == "bad.py"
    finally:
        engine.close()


def test_a_changed_file_that_now_fails_loses_its_stale_chunks(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(repo, tmp_path)
    try:
        engine.index()
        assert engine.search("cursed_function", mode="keyword").results
        real = processing.chunk_text

        def broken(path: str, text: str, language: str | None = None, **kwargs: object) -> object:
            if path == "bad.py":
                raise ValueError("tokenizer state corrupted")
            return real(path, text, language, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(processing, "chunk_text", broken)
        (repo / "bad.py").write_text("def renamed_function():\n    return 2\n")
        report = engine.index()
        assert report.files == 2 and report.skipped.get("error") == 1
        assert not engine.search("cursed_function", mode="keyword").results
    finally:
        engine.close()


def test_a_structured_chunker_error_falls_back_to_line_windows(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object) -> object:
        raise IndexError("list index out of range")

    monkeypatch.setattr(chunking, "chunk_data", boom)
    engine = _engine(repo, tmp_path)
    try:
        report = engine.index()
        assert report.files == 3 and "error" not in report.skipped
        assert report.chunk_fallbacks == 1
        assert "1 files indexed as line windows" in format_index_report(report)
        hit = engine.search("retry_budget", mode="keyword").results[0]
        assert hit.path == "config.json" and hit.kind == "block"
        named = [(r.path, r.reason, r.detail) for r in engine.status().errors]
        assert named == [("config.json", "chunk-fallback", "IndexError: list index out of range")]
        assert "chunk-fallback config.json: IndexError" in format_status(engine.status())
        # Fixed chunker, changed file: the row goes with the next run that chunks it.
        monkeypatch.undo()
        (repo / "config.json").write_text('{\n  "retry_budget": 4\n}\n')
        engine.index()
        assert engine.status().errors == [] and engine.problem_files() == []
    finally:
        engine.close()


def test_a_graph_extraction_error_is_named_and_the_chunks_kept(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(path: str, *args: object) -> object:
        if path == "bad.py":
            raise KeyError("missing capture")
        return real(path, *args)

    real = processing.extract_rows
    monkeypatch.setattr(processing, "extract_rows", boom)
    engine = _engine(repo, tmp_path)
    try:
        report = engine.index()  # waits for the graph: extracted in the run
        assert report.files == 3 and report.graph_errors == 1
        assert [(r.path, r.reason) for r in engine.problem_files()] == [("bad.py", "graph-error")]
        assert engine.status().errors[0].detail == "KeyError: 'missing capture'"
        assert engine.search("cursed_function", mode="keyword").results[0].path == "bad.py"
        assert "1 files indexed without a code graph" in format_index_report(report)
    finally:
        engine.close()


def test_a_read_error_is_contained_and_retried(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = discovery.read_inside  # the indexer's read (inside the root, links never followed)

    def failing(root: str, rel_path: str, max_size: int | None) -> object:
        if rel_path == "bad.py":
            raise UnicodeError("codec exploded")
        return real(root, rel_path, max_size)

    monkeypatch.setattr(discovery, "read_inside", failing)
    engine = _engine(repo, tmp_path)
    try:
        report = engine.index()
        assert report.files == 2 and report.skipped.get("error") == 1
        assert engine.skipped_files()[0].detail == "while reading: UnicodeError: codec exploded"
        assert engine.index().skipped.get("error") == 1  # read again, failed again: still listed
        monkeypatch.setattr(discovery, "read_inside", real)
        assert engine.index().files == 3
    finally:
        engine.close()


def test_every_error_detail_is_one_short_line() -> None:
    assert processing.one_line(ValueError("first\nsecond")) == "ValueError: first"
    assert processing.one_line(KeyError()) == "KeyError"
    assert len(processing.one_line(RuntimeError("x" * 5000))) == processing.ERROR_DETAIL_CHARS
