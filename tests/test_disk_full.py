"""Issue 27: a full disk was reported as "cannot rollback - no transaction is active" (SQLite had already
rolled the write back; the second ROLLBACK hid the real error). Now the answer says the disk holding the
index is full, where, and that everything committed before is kept."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebase_index.service import Engine
from codebase_index.store import DiskFullError

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "codebase_index"


def _project(root: Path, files: int = 60) -> Path:
    root.mkdir(parents=True)
    for i, source in enumerate(sorted(PACKAGE.glob("*.py"))[:files]):
        (root / f"m{i}_{source.name}").write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    return root


def test_a_full_database_says_so_and_keeps_what_was_committed(tmp_path: Path) -> None:
    """SQLite's page limit gives the same SQLITE_FULL a full disk gives, in any environment."""
    root = _project(tmp_path / "proj")
    small = tmp_path / "small"
    small.mkdir()
    (small / "only.py").write_text("def first_committed_function():\n    return 1\n")
    engine = Engine(small, index_path=tmp_path / "index", workers=1)
    engine.index()
    engine.close()
    engine = Engine(root, index_path=tmp_path / "index", workers=1)  # same index folder, a larger project
    try:
        pages = engine.store.conn.execute("PRAGMA page_count").fetchone()[0]
        engine.store.conn.execute(f"PRAGMA max_page_count={pages + 30}")
        with pytest.raises(DiskFullError) as raised:
            engine.index()
        message = str(raised.value)
        assert f"the disk holding the index ({tmp_path / 'index'}" in message
        assert "everything committed before it is kept" in message
        assert "cannot rollback" not in message
        engine.store.conn.execute("PRAGMA max_page_count=1073741823")
        engine.index()  # space again: the run completes
        assert engine.status().files == len(list(root.iterdir()))
    finally:
        engine.close()


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "tiny"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_real_full_disk_through_the_cli_and_the_sidecar(tmp_path: Path, tiny_disk: Path) -> None:
    root = _project(tmp_path / "proj")
    index = tiny_disk / "index"
    cmd = [
        sys.executable,
        "-m",
        "codebase_index.cli",
        "index",
        "--root",
        str(root),
        "--index-dir",
        str(index),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    assert f"the disk holding the index ({index}" in done.stderr, done.stderr
    assert "cannot rollback" not in done.stderr and "Traceback" not in done.stderr

    sidecar = [sys.executable, "-m", "codebase_index.rpc", "--project", str(root), "--index-dir", str(index)]
    proc = subprocess.Popen(sidecar, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        answers: dict[int, dict] = {}
        for request in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
            {"jsonrpc": "2.0", "id": 2, "method": "index", "params": {}},
            {"jsonrpc": "2.0", "id": 3, "method": "status", "params": {}},
        ):
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            while request["id"] not in answers:
                line = proc.stdout.readline()
                assert line, "the sidecar stopped"
                message = json.loads(line)
                if message.get("id") is not None:
                    answers[message["id"]] = message
        assert "the disk holding the index" in answers[2]["error"]["message"], answers[2]
        assert "result" in answers[3], answers[3]  # still answering
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
