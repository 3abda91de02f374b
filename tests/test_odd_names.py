"""Issue 27: a repository's odd corners never stop a run. Ignore files are read the way git reads them (a
line git cannot use is dropped and noted with file:line, an unreadable or huge ignore file is noted), and
file or folder names that are not UTF-8, hold control characters or are very long never abort indexing.
Driven through the CLI and the JSON-RPC sidecar, on real git repositories."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from codebase_index.bounded_read import SMALL_FILE_LIMIT
from codebase_index.service import Engine
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


BAD_FILE = b"notes\xff.bin"
BAD_PY = b"bad\xfe.py"
BAD_DIR = b"dir\xff"


def odd_names(root: Path) -> Path:
    """Names no editor would make but a clone, an archive or a test fixture can: bytes that are not
    UTF-8 (a file, a Python file, a folder), a newline and an escape in a name, a 250-byte name."""
    root.mkdir(parents=True)
    (root / "main.py").write_text("def main_entry():\n    return 0\n")
    broot = os.fsencode(root)
    (Path(os.fsdecode(broot + b"/" + BAD_FILE))).write_bytes(b"\x00\x01")
    (Path(os.fsdecode(broot + b"/" + BAD_PY))).write_text("def hidden_by_name():\n    pass\n")
    os.mkdir(broot + b"/" + BAD_DIR)
    (Path(os.fsdecode(broot + b"/" + BAD_DIR + b"/inside.py"))).write_text("def inside_bad():\n    pass\n")
    (root / "new\nline.py").write_text("def newline_named():\n    pass\n")
    (root / "esc\x1b[2J.py").write_text("def escape_named():\n    pass\n")
    (root / ("L" * 247 + ".py")).write_text("def long_named():\n    pass\n")
    git(root, "init", "-q")
    return root


def test_odd_file_and_folder_names_never_abort_the_cli(tmp_path: Path) -> None:
    root = odd_names(tmp_path / "proj")
    proc = run("index", "--keyword-only", "--verbose", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "indexed 4 files" in proc.stdout, proc.stdout  # main, newline, escape, long
    assert "3 unreadable-name" in proc.stdout
    assert "notes\\xff.bin" in proc.stdout and "bad\\xfe.py" in proc.stdout and "dir\\xff" in proc.stdout
    assert "\x1b" not in proc.stdout  # the escape in a name is shown escaped
    status = run("status", "--json", str(root))
    assert json.loads(status.stdout)["skipped"]["unreadable-name"] == 3

    def paths(query: str) -> list[str]:
        found = run("search", "--json", "--mode", "keyword", "--root", str(root), query)
        assert found.returncode == 0, found.stderr
        return [r["path"] for r in json.loads(found.stdout)["results"]]

    assert paths("newline_named")[0] == "new\nline.py"
    assert paths("long_named")[0] == "L" * 247 + ".py"
    shown = run("search", "--mode", "keyword", "--root", str(root), "escape_named")
    assert "esc\\x1b[2J.py" in shown.stdout and "\x1b" not in shown.stdout
    again = run("index", "--keyword-only", str(root))  # every run, not only the first
    assert again.returncode == 0, again.stderr


def test_odd_names_through_the_sidecar_and_a_path_update(tmp_path: Path) -> None:
    root = odd_names(tmp_path / "proj")
    sidecar = Sidecar(root, tmp_path / "index")
    try:
        report = sidecar.result("index", {"verbose": True})
        assert report["data"]["skipped"]["unreadable-name"] == 3, report
        assert report["data"]["files"] == 4
        found = sidecar.result("search", {"query": "newline_named", "mode": "keyword"})
        assert found["data"]["results"][0]["path"] == "new\nline.py"
    finally:
        sidecar.close()
    # What the watcher hands over: the name as Python reads it from the OS (lone surrogates).
    engine = Engine(root, index_path=tmp_path / "index2", workers=1)
    try:
        engine.index()
        newer = os.fsdecode(os.fsencode(root) + b"/late\xfd.py")
        Path(newer).write_text("def late():\n    pass\n")
        update = engine.index_paths([newer, os.fsdecode(BAD_PY), "main.py"])
        assert update.skipped.get("unreadable-name") == 2, update  # this update's: late and bad
        named = {row.path for row in engine.skipped_files() if row.reason == "unreadable-name"}
        assert named == {"late\\xfd.py", "bad\\xfe.py", "notes\\xff.bin", "dir\\xff"}
    finally:
        engine.close()


def test_an_ignore_pattern_that_would_backtrack_for_hours_is_noted_not_applied(tmp_path: Path) -> None:
    """`*a*a*a*a*a*ab` against a 250-character name of `a`s took ~50 s per name through a regular expression;
    a repository's ignore file held enough of them to stall indexing for hours."""
    root = tmp_path / "proj"
    root.mkdir()
    (root / ".gitignore").write_text("*.log\n*a*a*a*a*a*ab\n*_*_*.tmp\n")
    long_name = "a" * 240 + ".md"
    (root / long_name).write_text("# echidna notes\n")
    (root / "x_y_z.tmp").write_text("scratch\n")
    git(root, "init", "-q")
    proc = run("index", "--keyword-only", "--verbose", str(root))
    assert proc.returncode == 0, proc.stderr
    assert ".gitignore:2" in proc.stdout and "more than 3 `*`" in proc.stdout, proc.stdout
    assert ".gitignore:3" not in proc.stdout  # three wildcards: applied as git does
    status = json.loads(run("status", "--json", str(root)).stdout)
    assert status["skipped"]["invalid-ignore"] == 1
    assert status["files"] == 1  # the long name is indexed, x_y_z.tmp ignored by line 3
