"""The small files a repository controls and the engine reads besides its code (ignore files, git's HEAD,
go.mod): a FIFO or a link to /dev/zero in their place must neither hang indexing nor fill memory, and a
link out of the project must not be read as patterns."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from codebase_index.bounded_read import read_small
from codebase_index.git import current_branch, local_branches, worktree_heads
from codebase_index.graph.gomod import find_modules
from codebase_index.service import Engine


def _within(seconds: float, work: object) -> object:
    """Run `work` on a thread; fail (instead of hanging the suite) if it has not returned in time."""
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)  # type: ignore[operator]
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the read hung"
    return out[0]


def test_read_small_refuses_fifos_devices_links_and_large_files(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert _within(5, lambda: read_small(fifo)) is None
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    assert _within(5, lambda: read_small(zero, follow=True)) is None
    plain = tmp_path / "plain"
    plain.write_text("x" * 100)
    link = tmp_path / "link"
    link.symlink_to(plain)
    assert read_small(link) is None and read_small(link, follow=True) == "x" * 100
    assert read_small(plain, limit=99) is None and read_small(plain, limit=100) == "x" * 100


def test_indexing_survives_a_fifo_gitignore_and_a_dev_zero_head(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def serve_requests():\n    return 1\n")
    os.mkfifo(root / ".gitignore")
    (root / "src" / ".gitignore").symlink_to(tmp_path / "outside-patterns")
    (tmp_path / "outside-patterns").write_text("app.py\n")  # would hide app.py if read through the link
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").symlink_to("/dev/zero")
    (root / "go.mod").symlink_to("/dev/zero")
    assert _within(10, lambda: current_branch(root)) == "default"
    assert _within(10, lambda: find_modules(root, [""])) == {}

    def index() -> list[str]:
        engine = Engine(root, index_path=tmp_path / "index", workers=1)
        try:
            engine.index(graph=False)
            return [r.path for r in engine.search("serve_requests", mode="keyword").results]
        finally:
            engine.close()

    assert _within(60, index) == ["src/app.py"]


def test_git_files_are_read_bounded(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / ".git" / "refs" / "heads").mkdir(parents=True)
    (root / ".git" / "refs" / "heads" / "main").write_text("0" * 40 + "\n")
    os.mkfifo(root / ".git" / "packed-refs")
    os.mkfifo(root / ".git" / "HEAD")
    assert _within(10, lambda: current_branch(root)) == "default"
    assert _within(10, lambda: local_branches(root)) == {"main"}
    assert _within(10, lambda: worktree_heads(root)) == set()
