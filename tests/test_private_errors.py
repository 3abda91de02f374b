"""An error about an unknown repository names the one asked for and how to list repositories, never the
other repositories indexed on this machine (or published to a shared collection): a hostile project's
agent asking for a made-up name must not learn what else the user works on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from codebase_index import tools
from codebase_index.backends.base import BackendError, RepoInfo
from codebase_index.multirepo import backend_repos

PRIVATE = "acme-merger-due-diligence"  # another project the user indexed


def _project(root: Path, text: str) -> Path:
    root.mkdir(parents=True)
    (root / "main.py").write_text(text)
    return root


def test_unknown_repository_error_lists_no_other_repository(tmp_path: Path) -> None:
    cloned = _project(tmp_path / "cloned", "def greet():\n    return 'hi'\n")
    private = _project(tmp_path / PRIVATE, "def valuation():\n    return 42\n")
    other = tools.Runtime(private, index_dir=tmp_path / "private-index")
    rt = tools.Runtime(cloned, index_dir=tmp_path / "cloned-index")
    try:
        other.writer().index()  # registers it on this machine
        rt.writer().index()
        for tool in ("codebase_search", "codebase_peek", "codebase_context"):
            with pytest.raises(tools.InvalidParams) as caught:
                tools.call(rt, tool, {"query": "greet", "repos": ["no-such-repo"]})
            message = str(caught.value)
            assert "no-such-repo" in message and "codebase-index repos list" in message, tool
            assert PRIVATE not in message and "cloned" not in message, tool
    finally:
        rt.close()
        other.close()
    proc = subprocess.run(
        [sys.executable, "-m", "codebase_index.cli", "search", "greet", "--repo", "no-such-repo"],
        cwd=cloned,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0
    assert "no-such-repo" in proc.stderr and "codebase-index repos list" in proc.stderr
    assert PRIVATE not in proc.stderr


class _Collection:
    """The two things `backend_repos` asks a shared backend: its collection name and what it holds."""

    collection = "team"

    def repos(self) -> list[RepoInfo]:
        return [RepoInfo(PRIVATE, "main", 10, "/srv/" + PRIVATE, "model")]


def test_unknown_published_repository_error_lists_no_other_repository() -> None:
    with pytest.raises(BackendError) as caught:
        backend_repos(_Collection(), ["no-such-repo"], None)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "no-such-repo" in message and "codebase-index repos list --backend" in message
    assert PRIVATE not in message
