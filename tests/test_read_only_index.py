"""Issue 27: a read-only index folder was reported as "unreadable, run repair", repair crashed and the
sidecar said "another sidecar" and exited. Now searches answer from it, and indexing, embedding and repair
say the folder is read-only; nothing is moved or changed. Through the CLI and a real sidecar process.

chmod does not stop root: as root the processes run as `nobody` (setpriv), over a copy of the index that
user owns, as tests/test_index_home.py does."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebase_index.service import Engine

PY = Path(__file__).resolve().parents[1] / "python"
NOBODY = 65534
AS_ROOT = os.geteuid() == 0

pytestmark = pytest.mark.skipif(
    AS_ROOT and shutil.which("setpriv") is None, reason="running as root without setpriv to drop to nobody"
)


def _tree(path: Path, dirs: int, files: int, owner: int | None) -> None:
    for folder, _, names in os.walk(path):
        if owner is not None:
            os.chown(folder, owner, owner)
        os.chmod(folder, dirs)
        for name in names:
            if owner is not None:
                os.chown(os.path.join(folder, name), owner, owner)
            os.chmod(os.path.join(folder, name), files)


@pytest.fixture
def read_only_index() -> Iterator[tuple[Path, Path, dict[str, str]]]:
    base = Path(tempfile.mkdtemp())
    os.chmod(base, 0o755)
    root = base / "proj"
    root.mkdir()
    (root / "billing.py").write_text("def compute_invoice_total(lines):\n    return sum(lines)\n")
    (root / "dates.py").write_text("def parse_wombat_date(text):\n    return text.split('-')\n")
    index = base / "index"
    engine = Engine(root, index_path=index, workers=1)
    engine.index()
    engine.close()
    home = base / "home"
    home.mkdir()
    owner = NOBODY if AS_ROOT else None
    _tree(home, 0o777, 0o666, owner)
    _tree(index, 0o500, 0o400, owner)  # the index: readable, nothing writable
    env = {**os.environ, "PYTHONPATH": str(PY), "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "CODEBASE_INDEX_ROOT"):
        env.pop(name, None)
    try:
        yield root, index, env
    finally:
        _tree(index, 0o700, 0o600, None)
        shutil.rmtree(base)


def _drop() -> list[str]:
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"] if AS_ROOT else []


def _digest(index: Path) -> str:
    return hashlib.sha256((index / "codebase.db").read_bytes()).hexdigest()


def test_the_cli_searches_a_read_only_index_and_says_what_needs_write_access(
    read_only_index: tuple[Path, Path, dict[str, str]],
) -> None:
    root, index, env = read_only_index
    before = _digest(index)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        cmd = [
            *_drop(),
            sys.executable,
            "-m",
            "codebase_index.cli",
            *args,
            "--index-dir",
            str(index),
            "--root",
            str(root),
        ]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)

    search = cli("search", "invoice total")
    assert search.returncode == 0, search.stderr
    assert "compute_invoice_total" in search.stdout
    status = cli("status")
    assert status.returncode == 0, status.stderr
    assert "chunks:" in status.stdout
    for args in (("index",), ("repair",)):
        done = cli(*args)
        assert done.returncode != 0, (args, done.stdout)
        assert "is read-only for this process: searches answer from it" in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    assert not any("broken" in p.name for p in index.iterdir())
    assert _digest(index) == before


def test_a_sidecar_serves_a_read_only_index(read_only_index: tuple[Path, Path, dict[str, str]]) -> None:
    root, index, env = read_only_index
    before = _digest(index)
    cmd = [
        *_drop(),
        sys.executable,
        "-m",
        "codebase_index.rpc",
        "--project",
        str(root),
        "--index-dir",
        str(index),
    ]
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
        {"jsonrpc": "2.0", "id": 2, "method": "search", "params": {"query": "wombat date"}},
        {"jsonrpc": "2.0", "id": 3, "method": "health_check", "params": {}},
        {"jsonrpc": "2.0", "id": 4, "method": "index", "params": {}},
    ]
    proc = subprocess.Popen(
        cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    answers: dict[int, dict] = {}
    try:
        for request in requests:  # one at a time: each answer before the next request
            proc.stdin.write(json.dumps(request).encode() + b"\n")
            proc.stdin.flush()
            while request["id"] not in answers:
                line = proc.stdout.readline()
                assert line, proc.stderr.read().decode() if proc.stderr else ""
                message = json.loads(line)
                if "id" in message and message["id"] is not None:
                    answers[message["id"]] = message
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert "result" in answers[1], answers[1]
    assert "parse_wombat_date" in answers[2]["result"]["text"], answers[2]
    assert "repairs skipped: the index folder is read-only" in answers[3]["result"]["text"], answers[3]
    assert "is read-only for this process: searches answer from it" in answers[4]["error"]["message"]
    assert _digest(index) == before
