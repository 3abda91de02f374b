"""The file watcher on real folders with watchdog's inotify observer, its fallback, and sidecar wiring."""

from __future__ import annotations

import errno
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from watchdog.observers.api import BaseObserver

from codebase_index import tools
from codebase_index.service import Engine
from codebase_index.watcher import Watcher


def wait_for(check: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def start_app():\n    pass\n")
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / ".gitignore").write_text("generated/\n")
    return root


def test_save_is_searchable_and_ignored_paths_are_not_indexed(project: Path, tmp_path: Path) -> None:
    engine = Engine(project, index_path=tmp_path / "index", workers=1)
    engine.index()
    batches: list[list[str]] = []

    def reindex_paths(paths: list[str]) -> None:
        batches.append(paths)
        engine.index_paths(paths)

    watcher = Watcher([project], reindex_paths=reindex_paths, reindex_all=engine.index, debounce=0.05)
    watcher.start()
    try:
        (project / "src" / "app.py").write_text(
            "def start_app():\n    pass\n\ndef freshly_saved():\n    pass\n"
        )
        assert wait_for(lambda: bool(engine.search("freshly_saved", mode="keyword").results))
        (project / "node_modules" / "dep").mkdir(parents=True)
        (project / "node_modules" / "dep" / "x.js").write_text("function vendored_thing() {}\n")
        (project / "generated").mkdir()
        (project / "generated" / "out.py").write_text("def generated_thing(): pass\n")
        (project / "src" / "late.py").write_text("def late_arrival():\n    pass\n")
        assert wait_for(lambda: bool(engine.search("late_arrival", mode="keyword").results))
    finally:
        watcher.stop()
    flat = [p for batch in batches for p in batch]
    assert not any("node_modules" in p or "generated" in p for p in flat)
    assert engine.search("vendored_thing generated_thing", mode="keyword").results == []
    assert watcher.status.ignored_events >= 1
    assert watcher.status.errors == 0
    engine.close()


def test_burst_of_saves_is_coalesced(project: Path) -> None:
    batches: list[list[str]] = []
    watcher = Watcher([project], reindex_paths=batches.append, reindex_all=lambda: None, debounce=0.3)
    watcher.start()
    try:
        for i in range(20):
            (project / "src" / f"f{i}.py").write_text(f"X = {i}\n")
        assert wait_for(lambda: sum(len(b) for b in batches) >= 20)
    finally:
        watcher.stop()
    assert len(batches) <= 3  # 20 files, one or two debounced batches, not 20 runs
    assert {Path(p).name for b in batches for p in b} >= {f"f{i}.py" for i in range(20)}


class _RefusingObserver(BaseObserver):
    """What the inotify observer does when the kernel is out of watches."""

    def __init__(self, code: int) -> None:
        super().__init__(emitter_class=object)  # type: ignore[arg-type]
        self.code = code

    def schedule(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
        raise OSError(self.code, "No space left on device")


@pytest.mark.parametrize("code,word", [(errno.ENOSPC, "max_user_watches"), (errno.EMFILE, "instance")])
def test_inotify_limits_degrade_to_periodic_scans(project: Path, code: int, word: str) -> None:
    scans = threading.Semaphore(0)
    watcher = Watcher(
        [project],
        reindex_paths=lambda paths: None,
        reindex_all=scans.release,
        poll_interval=0.05,
        observer_factory=lambda: _RefusingObserver(code),
    )
    status = watcher.start()
    try:
        assert status.state == "polling"
        assert status.reason is not None and word in status.reason
        assert scans.acquire(timeout=5) and scans.acquire(timeout=5)  # re-scans keep coming
    finally:
        watcher.stop()
    assert watcher.status.state == "stopped"


def test_failing_reindex_is_counted_not_raised(project: Path) -> None:
    def broken(paths: list[str]) -> None:
        raise RuntimeError("disk on fire")

    watcher = Watcher([project], reindex_paths=broken, reindex_all=lambda: None, debounce=0.02)
    watcher.start()
    try:
        (project / "src" / "app.py").write_text("X = 2\n")
        assert wait_for(lambda: watcher.status.errors >= 1)
    finally:
        watcher.stop()
    assert "disk on fire" in (watcher.status.last_error or "")


def test_runtime_watches_only_folders_with_a_project_marker(project: Path, tmp_path: Path) -> None:
    bare = tmp_path / "home"
    bare.mkdir()
    (bare / "notes.md").write_text("# notes\n")
    rt = tools.Runtime(bare, index_dir=tmp_path / "bare-index")
    try:
        assert "project marker" in rt.start_watcher()
        assert rt.watcher is None
        assert rt.watcher_status()["state"] == "disabled"
    finally:
        rt.close()
    rt = tools.Runtime(project, index_dir=tmp_path / "proj-index")
    try:
        tools.call(rt, "index", {})
        assert rt.start_watcher() == "watching"
        (project / "src" / "app.py").write_text("def via_runtime_watcher():\n    pass\n")
        assert wait_for(
            lambda: "via_runtime_watcher" in tools.call(rt, "search", {"query": "via_runtime_watcher"}).text
        )
        assert wait_for(lambda: rt.watcher_status()["reindexes"] >= 1)
        status = tools.call(rt, "status", {}).data
        assert status["watcher"]["state"] == "watching"
        assert status["watcher"]["watches"] >= 2
    finally:
        rt.close()
    assert rt.watcher is None


def test_watch_files_false_is_honoured(project: Path, tmp_path: Path) -> None:
    (project / ".opencode").mkdir()
    (project / ".opencode" / "codebase-index.json").write_text('{"indexing": {"watchFiles": false}}')
    rt = tools.Runtime(project, index_dir=tmp_path / "index")
    try:
        assert "watchFiles" in rt.start_watcher()
    finally:
        rt.close()


def test_git_dir_changes_other_than_refs_are_ignored(project: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=project, check=True)
    moves: list[str] = []
    watcher = Watcher([project], reindex_paths=lambda p: None, reindex_all=lambda: moves.append("x"))
    watcher.start()
    try:
        (project / ".git" / "objects" / "scratch").write_text("x")
        (project / ".git" / "HEAD").write_text("ref: refs/heads/other\n")
        assert wait_for(lambda: bool(moves))
    finally:
        watcher.stop()
    assert watcher.status.branch_switches >= 1
