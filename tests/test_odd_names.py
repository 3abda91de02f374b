"""Issue 27: a repository's odd corners never stop a run. Ignore files are read the way git reads them (a
line git cannot use is dropped and noted with file:line, an unreadable or huge ignore file is noted), and
file or folder names that are not UTF-8, hold control characters or are very long never abort indexing.
Driven through the CLI and the JSON-RPC sidecar, on real git repositories."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from codebase_index.bounded_read import SMALL_FILE_LIMIT
from test_cli import run
from test_rpc import Sidecar


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout


def hostile_ignores(root: Path) -> Path:
    """psf/black's `tests/data/invalid_gitignore_tests/.gitignore` shape (a lone `!`) and friends."""
    (root / "src").mkdir(parents=True)
    (root / "src" / "kept.py").write_text("def kept_quokka():\n    return 1\n")
    (root / "src" / "dropped.py").write_text("def dropped_wombat():\n    return 2\n")
    (root / ".gitignore").write_text("src/dropped.py\n!\n\\\n*.log\n")
    (root / "data").mkdir()
    (root / "data" / ".gitignore").write_bytes(b"!\n\xff\xfe bad bytes\n")
    (root / "data" / "notes.md").write_text("# numbat notes\n")
    (root / "big").mkdir()
    (root / "big" / ".gitignore").write_text("x\n" * (SMALL_FILE_LIMIT // 2 + 1))
    (root / "big" / "x").write_text("not indexed anyway")
    (root / "big" / "y.py").write_text("def bilby():\n    return 3\n")
    git(root, "init", "-q")
    return root


def test_invalid_ignore_lines_are_dropped_and_noted_through_the_cli(tmp_path: Path) -> None:
    root = hostile_ignores(tmp_path / "proj")
    proc = run("index", "--keyword-only", "--verbose", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "indexed 3 files" in proc.stdout, proc.stdout  # kept.py, notes.md, y.py
    out = proc.stdout
    assert ".gitignore:2" in out and ".gitignore:3" in out
    assert "data/.gitignore:1" in out
    assert "big/.gitignore:*" in out  # too large: noted, not read
    assert "src/dropped.py" in out  # the valid lines of the same file still apply
    status = run("status", "--json", str(root))
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["skipped"]["invalid-ignore"] == 4
    found = run("search", "--json", "--mode", "keyword", "--root", str(root), "kept_quokka")
    assert json.loads(found.stdout)["results"][0]["path"] == "src/kept.py"
    # A second run notes each line once again (replaced, not piled up).
    again = run("index", "--keyword-only", str(root))
    assert again.returncode == 0, again.stderr
    status = run("status", "--json", str(root))
    assert json.loads(status.stdout)["skipped"]["invalid-ignore"] == 4


def test_invalid_ignore_lines_through_the_sidecar(tmp_path: Path) -> None:
    root = hostile_ignores(tmp_path / "proj")
    sidecar = Sidecar(root, tmp_path / "index")
    try:
        report = sidecar.result("index", {"verbose": True})
        assert report["data"]["skipped"]["invalid-ignore"] == 4, report
        assert ".gitignore:2" in report["text"]
        status = sidecar.result("status")
        assert status["data"]["skipped"]["invalid-ignore"] == 4
        found = sidecar.result("search", {"query": "kept_quokka", "mode": "keyword"})
        assert found["data"]["results"][0]["path"] == "src/kept.py"
    finally:
        sidecar.close()
