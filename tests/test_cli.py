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
    # hybrid by default, and hybrid at once: the index search builds embeds its chunks in the same pass
    assert payload["strategy"] == "hybrid" and payload["top_k"] == 3
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
    assert (project / ".codebase-index" / "codebase.db").exists()


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
    assert {r["path"] for r in json.loads(proc.stdout)["results"]} == {"util.go"}


def test_bad_usage_and_missing_root_are_clear(project: Path, tmp_path: Path) -> None:
    unknown = run("search", "--bogus", "x")
    assert unknown.returncode == 2 and "unrecognized arguments: --bogus" in unknown.stderr
    missing = run("index", str(tmp_path / "nope"))
    assert missing.returncode == 1
    assert "does not exist" in missing.stderr and "Traceback" not in missing.stderr
    empty = run("search", "--root", str(project), " ")
    assert empty.returncode == 1 and "query is empty" in empty.stderr


def test_corrupt_index_is_reported_and_left_alone(project: Path) -> None:
    index = project / ".codebase-index"
    index.mkdir(parents=True)
    garbage = b"this is not a sqlite database" * 100
    (index / "codebase.db").write_bytes(garbage)
    proc = run("search", "--root", str(project), "anything")
    assert proc.returncode == 1
    assert "unreadable" in proc.stderr and "Traceback" not in proc.stderr
    assert (index / "codebase.db").read_bytes() == garbage


def _many_results_project(root: Path) -> Path:
    for i in range(30):
        (root / f"handler_{i}.py").write_text(
            "".join(f"def handle_order_{i}_{j}(order):\n    return order.total * {j}\n\n" for j in range(8))
        )
    return root


@pytest.mark.parametrize("command", [["search", "handle", "order", "--top", "50"], ["status"]])
def test_stdout_closed_early_exits_quietly(project: Path, command: list[str]) -> None:
    """`codebase-index search ... | head -1`: the reader is gone before the output is written."""
    _many_results_project(project)
    assert run("index", str(project), "--keyword-only").returncode == 0
    proc = subprocess.Popen(
        [sys.executable, "-m", "codebase_index.cli", *command, "--root", str(project)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # nobody reads: every write gets EPIPE
    stderr = proc.stderr.read()
    assert proc.wait(timeout=300) == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr and "Exception ignored" not in stderr


def test_min_score_context_lines_and_config_defaults(project: Path) -> None:
    _many_results_project(project)
    assert run("index", str(project), "--keyword-only").returncode == 0

    def hits(*extra: str) -> list[dict[str, object]]:
        proc = run("search", "--json", "--root", str(project), "handle", "order", "total", *extra)
        assert proc.returncode == 0, proc.stderr
        return list(json.loads(proc.stdout)["results"])

    default = hits()
    assert len(default) == 20, "search.maxResults (20) when --top is not given"
    scores = sorted(float(str(r["score"])) for r in default)
    cut = scores[len(scores) // 2]
    kept = hits("--min-score", str(cut))
    assert kept and all(float(str(r["score"])) >= cut for r in kept) and len(kept) < len(default)

    (project / ".opencode").mkdir(exist_ok=True)
    (project / ".opencode" / "codebase-index.json").write_text(
        json.dumps({"search": {"maxResults": 4, "minScore": cut, "contextLines": 2}})
    )
    configured = hits()
    assert 0 < len(configured) <= 4 and all(float(str(r["score"])) >= cut for r in configured)
    assert len(hits("--top", "7", "--min-score", "0")) == 7, "flags win over the config"

    shown = run("search", "--root", str(project), "handle_order_3_4", "--top", "1")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("handler_3.py:13-14")
    # contextLines 2 from the config: numbered file lines 11..16 around the chunk (lines 13-14).
    numbered = [line.split()[0] for line in lines[1:] if line.strip()]
    assert numbered[:6] == ["11", "12", "13", "14", "15", "16"], shown.stdout
    plain = run("search", "--root", str(project), "handle_order_3_4", "--top", "1", "--context-lines", "0")
    assert plain.stdout.splitlines()[1].strip() == "def handle_order_3_4(order):"
