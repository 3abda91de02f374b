"""Search never refuses: a search-type tool on an unindexed project (or a branch with no catalog yet)
indexes it first, with progress, and answers with keyword and vectors ready; `autoIndex: false` keeps
the explicit behaviour; a served project too large to wait for indexes in the background."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from codebase_index import tools
from codebase_index.config import EXTRA_CONFIG_ENV
from codebase_index.tools import first_index
from git_repo import GitRepo, git

GEOMETRY = (
    "def polygon_area(points):\n"
    '    """Shoelace formula for the area of a simple polygon."""\n'
    "    total = 0.0\n"
    "    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]):\n"
    "        total += x1 * y2 - x2 * y1\n"
    "    return abs(total) / 2\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    r = GitRepo(tmp_path / "proj")
    r.commit(
        "geometry", {"lib/geometry.py": GEOMETRY, "lib/util.py": "def clamp(x, lo, hi):\n    return x\n"}
    )
    return r


def _embedded(status: str) -> tuple[int, int]:
    found = re.search(r"(\d+)/(\d+) chunks \(", status)
    assert found, status
    return int(found.group(1)), int(found.group(2))


@pytest.mark.parametrize("tool", ["codebase_search", "codebase_peek", "codebase_context"])
def test_first_search_indexes_with_progress_and_answers_with_vectors(
    repo: GitRepo, tmp_path: Path, tool: str
) -> None:
    rt = tools.Runtime(repo.path, index_dir=tmp_path / "index")
    phases: list[str] = []
    try:
        ctx = tools.CallContext(progress=lambda phase, done, total: phases.append(phase))
        result = tools.call(rt, tool, {"query": "shoelace polygon area"}, ctx)
        status = tools.call(rt, "index_status", {}).text
    finally:
        rt.close()
    assert "lib/geometry.py" in result.text, result.text
    assert "not indexed" not in result.text
    assert {"discover", "chunk", "write"} <= set(phases), phases
    done, total = _embedded(status)
    assert total > 0 and done == total, status  # vectors came with the same pass


def test_auto_index_false_keeps_the_explicit_behaviour(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "user-config.jsonc"
    config.write_text('{"indexing": {"autoIndex": false}}\n')
    monkeypatch.setenv(EXTRA_CONFIG_ENV, str(config))
    rt = tools.Runtime(repo.path, index_dir=tmp_path / "index")
    try:
        with pytest.raises(tools.NotIndexed, match=r"autoIndex.*index_codebase"):
            tools.call(rt, "codebase_search", {"query": "polygon"})
        assert not (tmp_path / "index" / "codebase.db").exists() or not rt.reader().has_index()
    finally:
        rt.close()


def test_a_branch_without_a_catalog_is_indexed_before_answering(repo: GitRepo, tmp_path: Path) -> None:
    rt = tools.Runtime(repo.path, index_dir=tmp_path / "index")
    try:
        tools.call(rt, "codebase_peek", {"query": "polygon"})  # indexes main
        git(repo.path, "checkout", "-q", "-b", "feature")
        repo.commit("spline", {"lib/spline.py": "def catmull_rom_spline(points):\n    return points\n"})
        found = tools.call(rt, "codebase_peek", {"query": "catmull_rom_spline"}).text
    finally:
        rt.close()
    assert "lib/spline.py" in found, found


def test_a_served_project_too_large_to_wait_for_indexes_in_the_background(
    repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(first_index, "AUTO_INDEX_MAX_FILES", 1)  # the repo's 2 files are "too many"
    rt = tools.Runtime(repo.path, index_dir=tmp_path / "index")
    rt.watch_enabled = True  # what a serving face (ServeCore) sets
    try:
        try:
            first = tools.call(rt, "codebase_peek", {"query": "polygon"}).text
        except tools.NotIndexed as exc:  # nothing indexed yet to answer from
            first = exc.message
        first_index._background[rt].join(60)
        later = tools.call(rt, "codebase_peek", {"query": "polygon area"}).text
    finally:
        rt.close()
    assert "indexing 2 files in the background" in first, first
    assert "lib/geometry.py" in later and "in the background" not in later, later


def test_cli_search_in_an_unindexed_folder_ends_with_vectors(repo: GitRepo, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    index = str(tmp_path / "index")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "codebase_index.cli", *args, "--index-dir", index],
            cwd=repo.path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    searched = cli("search", "shoelace polygon area")
    assert searched.returncode == 0, searched.stderr
    assert "lib/geometry.py" in searched.stdout
    status = cli("status")
    done, total = _embedded(status.stdout)
    assert total > 0 and done == total, status.stdout
