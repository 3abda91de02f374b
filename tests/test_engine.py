"""The engine end to end on real files, a real git repository and a real SQLite index."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from codebase_index.search import Filters
from codebase_index.service import Engine
from codebase_index.store import IndexLockedError, Store

PAYMENTS = '''"""Payment processing."""


def validate_payment(amount, currency):
    """Reject negative amounts and unknown currencies."""
    if amount <= 0:
        raise ValueError("amount must be positive")
    return currency in {"EUR", "USD"}


class RetryPolicy:
    """Exponential backoff for flaky gateways."""

    def next_delay(self, attempt):
        return min(30, 2 ** attempt)
'''

ROUTER = """export function resolveRedirects(url: string): string {
  // follow redirect chains until a final location
  return url;
}

export class HttpRouter {
  addRoute(path: string) {
    return path.length;
  }
}
"""


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src" / "billing").mkdir(parents=True)
    (root / "web").mkdir()
    (root / "src" / "billing" / "payments.py").write_text(PAYMENTS)
    (root / "web" / "router.ts").write_text(ROUTER)
    (root / "README.md").write_text("# Demo\n\nA demo project about payments.\n\n## Usage\n\nRun it.\n")
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    (root / "data.json").write_bytes(b'{"a": "\x00binary"}')
    (root / ".env").write_text("SECRET=1\n")
    (root / "node_modules" / "dep").mkdir(parents=True)
    (root / "node_modules" / "dep" / "index.js").write_text("function dep() {}\n")
    (root / ".gitignore").write_text("generated/\n")
    (root / "generated").mkdir()
    (root / "generated" / "out.py").write_text("def generated(): pass\n")
    git(root, "init", "-q", "-b", "main")
    return root


@pytest.fixture
def engine(repo: Path, tmp_path: Path) -> Engine:
    eng = Engine(repo, index_path=tmp_path / "index", workers=1)
    yield eng
    eng.close()


def paths(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [r.path for r in response.results]


def test_index_then_keyword_search_finds_definitions(engine: Engine) -> None:
    report = engine.index()
    assert report.branch == "main"
    assert report.files == 3  # payments.py, router.ts, README.md
    assert report.chunks >= 5
    response = engine.search("validate payment amount", top_k=5, mode="keyword")
    top = response.results[0]
    assert (top.path, top.symbol, top.kind) == ("src/billing/payments.py", "validate_payment", "function")
    assert top.start_line == 4 and top.end_line == 8
    assert response.strategy == "keyword"
    ident = engine.search("resolveRedirects", top_k=3).results[0]
    assert (ident.path, ident.symbol) == ("web/router.ts", "resolveRedirects")
    method = engine.search("next_delay backoff", top_k=3).results[0]
    assert method.symbol == "RetryPolicy.next_delay" and method.kind == "method"


def test_skipped_files_are_counted_by_reason(engine: Engine) -> None:
    report = engine.index()
    assert report.skipped.get("binary", 0) == 1  # data.json has a NUL byte
    assert report.skipped.get("unsupported", 0) >= 1  # logo.png
    assert report.skipped.get("ignored", 0) >= 1  # generated/ via .gitignore
    status = engine.status()
    assert status.skipped == report.skipped
    skipped = {row.path: row.reason for row in engine.skipped_files()}
    assert skipped["data.json"] == "binary"
    assert not any(p.startswith("node_modules/") and p != "node_modules" for p in skipped)
    assert all(p != ".env" for p in engine.store.file_rows("main"))


def test_filters(engine: Engine) -> None:
    engine.index()
    only_ts = engine.search("payment route", filters=Filters(file_type="ts"))
    assert only_ts.results and all(p.endswith(".ts") for p in paths(only_ts))
    in_dir = engine.search("payment route", filters=Filters(directory="./src/"))
    assert in_dir.results and all(p.startswith("src/") for p in paths(in_dir))
    classes = engine.search("retry router", filters=Filters(kind="class"))
    assert {r.symbol for r in classes.results} == {"RetryPolicy", "HttpRouter"}


def test_incremental_update_rechunks_only_changed_files(engine: Engine, repo: Path) -> None:
    first = engine.index()
    assert first.files_changed == 3
    again = engine.index()
    assert (again.files_changed, again.files_unchanged, again.chunks_added) == (0, 3, 0)

    payments = repo / "src" / "billing" / "payments.py"
    payments.write_text(PAYMENTS + "\n\ndef refund_payment(payment_id):\n    return payment_id\n")
    changed = engine.index()
    assert changed.files_changed == 1 and changed.files_unchanged == 2
    assert engine.search("refund_payment").results[0].symbol == "refund_payment"

    os.utime(repo / "web" / "router.ts")  # touched, same content: no new chunks
    touched = engine.index()
    assert touched.chunks_added == 0

    (repo / "web" / "router.ts").unlink()
    removed = engine.index()
    assert removed.files_removed == 1
    assert "web/router.ts" not in paths(engine.search("resolveRedirects router"))
    # chunks of content no file points at are purged
    orphans = engine.store.conn.execute(
        "SELECT COUNT(*) FROM chunks WHERE content_key NOT IN (SELECT content_key FROM files)"
    ).fetchone()[0]
    assert orphans == 0


def test_identical_content_at_two_paths_is_stored_once_and_found_at_both(engine: Engine, repo: Path) -> None:
    (repo / "web" / "copy.ts").write_text(ROUTER)
    report = engine.index()
    keys = engine.store.conn.execute("SELECT COUNT(DISTINCT content_key), COUNT(*) FROM files").fetchone()
    assert keys == (3, 4)
    found = paths(engine.search("resolveRedirects", top_k=10))
    assert "web/router.ts" in found and "web/copy.ts" in found
    assert report.files == 4


def test_force_reindex_keeps_results(engine: Engine) -> None:
    engine.index()
    before = [(r.path, r.symbol) for r in engine.search("payment").results]
    report = engine.index(force=True)
    assert report.files_changed == 3
    assert [(r.path, r.symbol) for r in engine.search("payment").results] == before


def test_failed_run_leaves_previous_index_usable(engine: Engine, repo: Path) -> None:
    engine.index()
    for i in range(450):  # enough files for several write batches
        (repo / "src" / f"mod_{i}.py").write_text(f"def function_{i}():\n    return {i}\n")

    def explode(phase: str, done: int, total: int) -> None:
        if phase == "write" and done > 0:
            raise RuntimeError("simulated crash after the first batch")

    with pytest.raises(RuntimeError):
        engine.index(progress=explode)
    assert "validate_payment" in [r.symbol for r in engine.search("validate_payment", top_k=3).results]
    report = engine.index()
    assert report.files == 453
    assert engine.search("function_449").results[0].symbol == "function_449"


def test_second_writer_gets_a_clear_error(engine: Engine) -> None:
    engine.index()
    other = Store.open(engine.index_dir)
    try:
        with other.write_lock(), pytest.raises(IndexLockedError, match="another process is indexing"):
            engine.index()
    finally:
        other.close()


def test_branch_switch_keys_files_by_branch(engine: Engine, repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "init")
    engine.index()
    git(repo, "checkout", "-qb", "feature")
    (repo / "src" / "billing" / "payments.py").write_text("def feature_only():\n    return 1\n")
    report = engine.index()
    assert report.branch == "feature"
    assert engine.search("feature_only").results[0].symbol == "feature_only"
    git(repo, "checkout", "-q", "-f", "main")
    engine.index()
    assert engine.search("feature_only", mode="keyword").results == []
    assert all(r.symbol != "feature_only" for r in engine.search("feature_only").results)
    assert engine.search("validate_payment").results[0].symbol == "validate_payment"


def test_sigkill_during_indexing_leaves_a_usable_index(repo: Path, tmp_path: Path) -> None:
    index = tmp_path / "index"
    first = Engine(repo, index_path=index, workers=1)
    first.index()
    first.close()
    for i in range(3000):
        (repo / "src" / f"bulk_{i}.py").write_text(f"def bulk_{i}():\n    return {i}\n" * 3)
    code = (
        "import sys, os, signal\n"
        "from pathlib import Path\n"
        "from codebase_index.service import Engine\n"
        "def progress(phase, done, total):\n"
        "    if phase == 'write' and done >= 400:\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
        f"Engine(Path({str(repo)!r}), index_path=Path({str(index)!r}), workers=1).index(progress=progress)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=600)
    assert proc.returncode == -9, proc.stderr.decode()
    reopened = Engine(repo, index_path=index, workers=1)
    try:
        assert "validate_payment" in [r.symbol for r in reopened.search("validate_payment", top_k=3).results]
        report = reopened.index()
        assert report.files == 3003
        assert reopened.search("bulk_2999").results[0].path == "src/bulk_2999.py"
    finally:
        reopened.close()


def test_an_index_from_another_pipeline_version_is_rechunked(engine: Engine) -> None:
    engine.index()
    assert engine.index().files_changed == 0
    with engine.store.transaction():
        engine.store.set_meta("pipeline_version", "0")
    report = engine.index()
    assert report.files_changed == report.files == 3
    assert engine.store.get_meta("pipeline_version") != "0"
    assert engine.index().files_changed == 0
