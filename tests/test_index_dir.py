"""The index folder keeps itself out of git: `git add -A` in a project never stages the SQLite files."""

from __future__ import annotations

import subprocess
from pathlib import Path

from codebase_index.index_dir import GITIGNORE_TEXT, make_index_dir
from codebase_index.service import Engine


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def test_git_add_all_never_stages_the_index(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q")
    (root / "app.py").write_text("def main():\n    return 0\n")
    engine = Engine(root)  # default index folder: <root>/.codebase-index
    try:
        engine.index()
    finally:
        engine.close()
    index = root / ".codebase-index"
    assert (index / "codebase.db").exists()
    assert (index / ".gitignore").read_text() == GITIGNORE_TEXT
    git(root, "add", "-A")
    staged = git(root, "diff", "--cached", "--name-only").split()
    assert staged == ["app.py"]


def test_an_existing_index_folder_gets_one_but_a_work_tree_root_never(tmp_path: Path) -> None:
    old = tmp_path / "old-index"
    old.mkdir()
    (old / "codebase.db").write_bytes(b"")
    make_index_dir(old)
    assert (old / ".gitignore").read_text() == GITIGNORE_TEXT
    (old / ".gitignore").write_text("custom\n")
    make_index_dir(old)
    assert (old / ".gitignore").read_text() == "custom\n"  # never overwritten
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    make_index_dir(project)  # an index dir set to the project root itself
    assert not (project / ".gitignore").exists()
