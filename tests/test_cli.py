"""The `codebase-index` command as a user runs it: a real process, real files, exit codes and output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


def run(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "codebase_index.cli", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "auth.py").write_text(
        "def check_credentials(user, password):\n"
        '    """Compare a password against the stored hash."""\n'
        "    return user.password_hash == hash(password)\n"
    )
    (root / "util.go").write_text("package util\n\nfunc ParseConfig(path string) error {\n\treturn nil\n}\n")
    return root


def test_search_builds_the_index_and_prints_json(project: Path) -> None:
    proc = run("search", "--json", "--root", str(project), "--top", "3", "check", "credentials")
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["query"] == "check credentials"
    # hybrid by default; no vectors yet (search builds the keyword index only), so keyword results
    assert payload["strategy"] == "keyword-fallback" and payload["top_k"] == 3
    first = payload["results"][0]
    assert set(first) == {
        "id",
        "score",
        "path",
        "start_line",
        "end_line",
        "kind",
        "symbol",
        "language",
        "chunk",
        "preview",
    }
    assert (first["path"], first["symbol"], first["kind"], first["language"]) == (
        "auth.py",
        "check_credentials",
        "function",
        "python",
    )
    assert (first["start_line"], first["end_line"]) == (1, 3)
    assert first["preview"].startswith("def check_credentials")
    assert (project / ".opencode" / "index" / "codebase.db").exists()


def test_index_summary_status_and_root_from_env(project: Path) -> None:
    (project / "blob.json").write_bytes(b"\x00\x01")
    proc = run("index", env={"CODEBASE_INDEX_ROOT": str(project)})
    assert proc.returncode == 0, proc.stderr
    assert "indexed 2 files" in proc.stdout and "1 binary" in proc.stdout
    status = run("status", "--json", str(project))
    data = json.loads(status.stdout)
    assert data["files"] == 2 and data["skipped"]["binary"] == 1 and data["indexed"] is True
    assert data["vocabulary"] > 5 and data["size_bytes"] > 0
    human = run("status", cwd=project)
    assert "files:       2" in human.stdout


def test_human_output_shows_location_and_code(project: Path) -> None:
    proc = run("search", "--root", str(project), "ParseConfig")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].startswith("util.go:3-5  function ParseConfig")
    assert "func ParseConfig(path string) error {" in proc.stdout


def test_filters_from_the_command_line(project: Path) -> None:
    proc = run("search", "--json", "--root", str(project), "--file-type", "go", "config", "password")
    assert [r["path"] for r in json.loads(proc.stdout)["results"]] == ["util.go"]


def test_bad_usage_and_missing_root_are_clear(project: Path, tmp_path: Path) -> None:
    unknown = run("search", "--bogus", "x")
    assert unknown.returncode == 2 and "unrecognized arguments: --bogus" in unknown.stderr
    missing = run("index", str(tmp_path / "nope"))
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    empty = run("search", "--root", str(project), " ")
    assert empty.returncode == 1 and "query is empty" in empty.stderr


def test_corrupt_index_is_reported_and_left_alone(project: Path) -> None:
    index = project / ".opencode" / "index"
    index.mkdir(parents=True)
    garbage = b"this is not a sqlite database" * 100
    (index / "codebase.db").write_bytes(garbage)
    proc = run("search", "--root", str(project), "anything")
    assert proc.returncode == 1
    assert "unreadable" in proc.stderr and "Traceback" not in proc.stderr
    assert (index / "codebase.db").read_bytes() == garbage
