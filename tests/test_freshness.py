"""Every answer says how fresh it is: the branch and commit the index reflects, and whether HEAD moved
or files changed since; a stale answer leads with one line saying so. Real git repositories."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from codebase_index import tools
from codebase_index.freshness import head_commit
from git_repo import GitRepo, git

FILES = {"lib/geometry.py": "def polygon_area(points):\n    return 0.0\n"}


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    r = GitRepo(tmp_path / "proj")
    r.commit("geometry", FILES)
    return r


def test_head_commit_reads_loose_packed_and_detached_heads(repo: GitRepo) -> None:
    sha = git(repo.path, "rev-parse", "HEAD")
    assert head_commit(repo.path) == sha
    git(repo.path, "pack-refs", "--all")  # the loose ref is gone, packed-refs holds it
    assert not (repo.path / ".git" / "refs" / "heads" / "main").exists()
    assert head_commit(repo.path) == sha
    git(repo.path, "checkout", "-q", "--detach")
    assert head_commit(repo.path) == sha
    assert head_commit(repo.path.parent) is None  # not a checkout


def test_a_crafted_head_never_reads_outside_the_git_folder_or_echoes_what_it_holds(
    repo: GitRepo, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("hunter2-not-a-commit\n")
    head = repo.path / ".git" / "HEAD"
    head.write_text(f"ref: refs/heads/../../../../{os.path.relpath(secret, repo.path / '.git')}\n")
    assert head_commit(repo.path) is None
    head.write_text(f"ref: {secret}\n")  # an absolute "ref"
    assert head_commit(repo.path) is None
    head.write_text("hunter2 detached\n")  # detached HEAD holding no commit id
    assert head_commit(repo.path) is None


@pytest.mark.parametrize("tool", ["codebase_search", "codebase_peek", "codebase_context"])
def test_a_current_answer_names_branch_and_commit(repo: GitRepo, tmp_path: Path, tool: str) -> None:
    sha = git(repo.path, "rev-parse", "HEAD")
    rt = tools.Runtime(repo.path, index_dir=tmp_path / "index")
    try:
        result = tools.call(rt, tool, {"query": "polygon area"})
    finally:
        rt.close()
    assert result.data["freshness"] == {"branch": "main", "commit": sha, "head": sha}
    line = f"index: main @ {sha[:10]}, current"
    if tool == "codebase_context":  # a pack's text is its token budget: the line is in data only
        assert line not in result.text
    else:
        assert result.text.rstrip().endswith(line), result.text


def test_an_answer_after_a_pull_says_it_is_stale_in_one_line(repo: GitRepo, tmp_path: Path) -> None:
    old = git(repo.path, "rev-parse", "HEAD")
    rt = tools.Runtime(repo.path, index_dir=tmp_path / "index")  # one-shot: no watcher catches up
    try:
        tools.call(rt, "codebase_peek", {"query": "polygon"})
        new = repo.commit("pulled", {"lib/spline.py": "def spline(points):\n    return points\n"})
        stale = tools.call(rt, "codebase_peek", {"query": "polygon"})
        tools.call(rt, "index_codebase", {})
        current = tools.call(rt, "codebase_peek", {"query": "polygon"})
    finally:
        rt.close()
    first = stale.text.splitlines()[0]
    assert first == f"note: stale: the index reflects main @ {old[:10]}; HEAD is now {new[:10]}", stale.text
    assert stale.data["freshness"]["commit"] == old and stale.data["freshness"]["head"] == new
    assert "stale" not in current.text and current.text.rstrip().endswith(f"main @ {new[:10]}, current")


def test_saves_the_watcher_holds_make_the_answer_stale(repo: GitRepo, tmp_path: Path) -> None:
    rt = tools.Runtime(repo.path, index_dir=tmp_path / "index")
    rt.watch_enabled = True
    gate = threading.Event()
    try:
        tools.call(rt, "index_codebase", {})
        assert rt.watcher is not None
        rt.watcher.reindex_paths = lambda paths: gate.wait(30)  # hold the re-index: the save stays pending
        rt.watcher.debounce = 30.0
        (repo.path / "lib" / "geometry.py").write_text("def polygon_area(points):\n    return 1.0\n")
        deadline = 200
        while rt.watcher.pending_count() == 0 and deadline:  # the save event arrives asynchronously
            threading.Event().wait(0.05)
            deadline -= 1
        answer = tools.call(rt, "codebase_peek", {"query": "polygon"})
    finally:
        gate.set()
        rt.close()
    assert answer.text.startswith("note: stale: the index reflects main @ "), answer.text
    assert "1 file(s) changed since" in answer.text.splitlines()[0]


def test_cli_search_catches_up_after_a_pull_and_says_how_fresh(repo: GitRepo, tmp_path: Path) -> None:
    index = str(tmp_path / "index")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codebase_index.cli", *args, "--index-dir", index],
            cwd=repo.path,
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=300,
        )

    first = cli("search", "polygon area")
    assert first.returncode == 0, first.stderr
    new = repo.commit("pulled", {"lib/spline.py": "def catmull_rom(points):\n    return points\n"})
    after = cli("search", "catmull_rom")
    assert after.returncode == 0, after.stderr
    assert "lib/spline.py" in after.stdout
    assert f"index: main @ {new[:10]}, current" in after.stderr
    # An uncommitted edit: the next one-shot search re-reads it (stat-first) before answering.
    (repo.path / "lib" / "spline.py").write_text("def bezier_curve(points):\n    return points\n")
    edited = cli("search", "bezier_curve")
    assert edited.returncode == 0, edited.stderr
    assert "lib/spline.py" in edited.stdout and "bezier_curve" in edited.stdout
