"""`index estimateOnly` counts what the index run then stores: exact where it chunks (every file up to its
budget), close where it extrapolates. It counted about half the real chunks when it divided file sizes by
an average chunk size (overlapping windows and small definitions make more chunks than bytes suggest)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codebase_index import upkeep
from codebase_index.config import Config
from codebase_index.service import Engine

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "chunking"
PACKAGE = HERE.parent / "python" / "codebase_index"


def project(tmp_path: Path, source: Path) -> Path:
    root = tmp_path / "proj"
    # The shipped model folder (a 466 KB tokenizer.json) is data, not the source this corpus stands for.
    shutil.copytree(source, root / "src", ignore=shutil.ignore_patterns("__pycache__", "code-static"))
    (root / "src" / "one-line.json").write_text('{"name":"demo","version":"1.0.0","private":true}')
    (root / "src" / "vendor.min.js").write_text("var a=1;")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return root


def real_index(root: Path, tmp_path: Path) -> tuple[int, int, int]:
    engine = Engine(root, index_path=tmp_path / "index", workers=1)
    try:
        report = engine.index()
        chars = engine.store.conn.execute("SELECT COALESCE(SUM(LENGTH(text)), 0) FROM chunks").fetchone()[0]
        return report.files, report.chunks, int(chars)
    finally:
        engine.close()


def test_estimate_matches_the_real_index_exactly_within_budget(tmp_path: Path) -> None:
    root = project(tmp_path, FIXTURES)
    estimate = upkeep.estimate(root, Config(), None, "main")
    files, chunks, chars = real_index(root, tmp_path)
    assert (estimate.files, estimate.chunks, estimate.tokens) == (
        files,
        chunks,
        chars // upkeep.CHARS_PER_TOKEN,
    )
    assert estimate.files_to_index == files and estimate.chunks_to_embed == chunks
    assert estimate.skipped.get("generated") == 1
    engine = Engine(root, index_path=tmp_path / "index", workers=1)
    try:
        after = engine.estimate()
    finally:
        engine.close()
    assert (after.files_to_index, after.chunks_to_embed, after.chunks) == (0, 0, chunks)


def test_estimate_counts_the_chunks_the_index_has_not_embedded_yet(tmp_path: Path) -> None:
    """A keyword-only index holds every chunk and no vector: all of them are still to embed."""
    root = project(tmp_path, FIXTURES)
    engine = Engine(root, index_path=tmp_path / "index", workers=1)
    try:
        report = engine.index(embed=False, graph=False)
        distinct, chars = engine.store.conn.execute(
            "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM "
            "(SELECT MAX(LENGTH(text)) AS n FROM chunks GROUP BY chunk_hash)"
        ).fetchone()
        waiting = engine.estimate()
        engine.embed()
        done = engine.estimate()
    finally:
        engine.close()
    assert waiting.files_to_index == 0 and waiting.chunks == report.chunks
    assert waiting.chunks_to_embed == distinct > 0
    assert waiting.tokens_to_embed == chars // upkeep.CHARS_PER_TOKEN
    assert done.chunks_to_embed == 0 and done.tokens_to_embed == 0


def test_estimate_over_budget_extrapolates_close(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path, PACKAGE)
    total = sum(p.stat().st_size for p in (root / "src").rglob("*.py"))
    monkeypatch.setattr(upkeep, "ESTIMATE_CHUNK_BYTES", total // 3)
    estimate = upkeep.estimate(root, Config(), None, "main")
    files, chunks, _ = real_index(root, tmp_path)
    assert estimate.files == files
    assert abs(estimate.chunks - chunks) <= 0.15 * chunks, (estimate.chunks, chunks)
