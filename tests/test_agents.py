"""`codebase-index install` / `uninstall` on a temporary HOME: every agent's file, idempotent, reversible."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from codebase_index import agents
from codebase_index.agents import mcp_command
from codebase_index.cli import main

ALL = list(agents.AGENT_NAMES)
FILES = {
    "opencode": ".config/opencode/opencode.json",
    "claude-code": ".claude.json",
    "cursor": ".cursor/mcp.json",
    "windsurf": ".codeium/windsurf/mcp_config.json",
    "codex": ".codex/config.toml",
    "gemini": ".gemini/settings.json",
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv(agents.LAUNCHER_ENV, raising=False)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    assert main(list(argv)) == 0
    return capsys.readouterr().out.splitlines()


def test_dry_run_shows_every_file_it_would_write_and_writes_none(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert set(FILES) == set(ALL)
    out = run(capsys, "install", "--dry-run", *ALL)
    for name, rel in FILES.items():
        line = next(line for line in out if line.startswith(name + " "))
        assert f"would add     ~/{rel}:" in line, line
    assert "local-codebase-index" in "\n".join(out) and sys.executable in "\n".join(out)
    assert out[-1] == "dry run: nothing was written"
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*")) == []


def test_install_finds_agents_keeps_other_settings_and_is_idempotent(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (home / ".cursor").mkdir()
    (home / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").write_text('model = "o3"\n\n[mcp_servers.other]\ncommand = "y"\n')
    out = run(capsys, "install")
    assert [line.split()[0:2] for line in out[:-1]] == [["cursor", "added"], ["codex", "added"]]
    cursor = json.loads((home / ".cursor" / "mcp.json").read_text())
    assert cursor["mcpServers"]["other"] == {"command": "x"}
    ours = cursor["mcpServers"]["codebase-index"]
    assert ours["command"] == sys.executable and ours["args"][:-2] == mcp_command()[1:]
    toml = (home / ".codex" / "config.toml").read_text()
    assert '[mcp_servers.other]\ncommand = "y"' in toml and "[mcp_servers.codebase-index]" in toml
    again = run(capsys, "install")
    assert [line.split()[1] for line in again[:-1]] == ["unchanged", "unchanged"]
    assert (home / ".codex" / "config.toml").read_text() == toml

    removed = run(capsys, "uninstall")
    assert [line.split()[1] for line in removed] == ["removed", "removed"]
    assert json.loads((home / ".cursor" / "mcp.json").read_text()) == {
        "mcpServers": {"other": {"command": "x"}}
    }
    assert (
        home / ".codex" / "config.toml"
    ).read_text() == 'model = "o3"\n\n[mcp_servers.other]\ncommand = "y"\n'
    assert [line.split()[1] for line in run(capsys, "uninstall")] == ["unchanged", "unchanged"]


def test_opencode_plugin_entry_and_files_with_comments(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = home / ".config" / "opencode" / "opencode.json"
    config.parent.mkdir(parents=True)
    config.write_text(json.dumps({"plugin": ["some-plugin", "local-codebase-index@0.0.9"], "model": "m"}))
    assert run(capsys, "install", "opencode")[0].split()[1] == "updated"
    data = json.loads(config.read_text())
    assert data["plugin"] == ["some-plugin", ["local-codebase-index", {"pythonPath": sys.executable}]]
    assert data["model"] == "m"
    run(capsys, "uninstall", "opencode")
    assert json.loads(config.read_text())["plugin"] == ["some-plugin"]
    # A file with comments is never rewritten (the comments would be lost): the change is printed instead.
    config.write_text('{\n  // mine\n  "plugin": [],\n}\n')
    line = run(capsys, "install", "opencode")[0]
    assert "edit by hand" in line and "local-codebase-index" in line
    assert config.read_text() == '{\n  // mine\n  "plugin": [],\n}\n'


def test_unknown_agent_is_an_error(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["install", "notepad"]) != 0
    assert "unknown agent notepad" in capsys.readouterr().err


def test_the_mcp_command_never_imports_from_the_project_it_starts_in(tmp_path: Path) -> None:
    """Agents start MCP servers in the opened project: a repository's argparse.py must not run."""
    project = tmp_path / "cloned"
    project.mkdir()
    marker = tmp_path / "ran"
    for name in ("argparse.py", "json.py", "msgspec.py"):
        (project / name).write_text(f"open({str(marker)!r}, 'w').close()\n")
    command = mcp_command()
    done = subprocess.run(
        [*command, "--help"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "--project" in done.stdout and not marker.exists()


def test_uninstall_finds_and_removes_exactly_what_install_wrote(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Claude Code's file is ~/.claude.json: install creates it with no ~/.claude folder beside it."""
    claude = home / ".claude.json"
    claude.write_text(json.dumps({"numStartups": 3}))
    assert run(capsys, "install", "claude-code")[0].split()[:2] == ["claude-code", "added"]
    assert not (home / ".claude").exists()
    assert run(capsys, "uninstall")[0].split()[:2] == ["claude-code", "removed"]
    assert json.loads(claude.read_text()) == {"numStartups": 3}
    opencode = home / ".config" / "opencode" / "opencode.json"
    run(capsys, "install", "opencode")
    run(capsys, "uninstall", "opencode")
    assert json.loads(opencode.read_text()) == {}


def test_from_npx_cache_the_command_written_is_npx_not_the_cache_path(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cached = home / ".npm" / "_npx" / "9f2c1e" / "node_modules" / "local-codebase-index"
    monkeypatch.setenv(agents.LAUNCHER_ENV, json.dumps(["/usr/bin/node", str(cached / "bin" / "mcp.mjs")]))
    assert mcp_command() == ["npx", "-y", "local-codebase-index", "mcp"]
    run(capsys, "install", "cursor", "codex")
    cursor = json.loads((home / ".cursor" / "mcp.json").read_text())["mcpServers"]["codebase-index"]
    assert cursor == {
        "command": "npx",
        "args": ["-y", "local-codebase-index", "mcp", "--project", "${workspaceFolder}"],
    }
    codex = (home / ".codex" / "config.toml").read_text()
    assert 'command = "npx"\nargs = ["-y", "local-codebase-index", "mcp"]' in codex and "_npx" not in codex
    # A global npm install is stable: its own bin is written.
    stable = ["/usr/bin/node", "/usr/lib/node_modules/local-codebase-index/bin/codebase-index-mcp.mjs"]
    monkeypatch.setenv(agents.LAUNCHER_ENV, json.dumps(stable))
    assert mcp_command() == stable


def test_install_and_uninstall_need_only_the_standard_library(tmp_path: Path) -> None:
    """The npm launcher runs them with any Python before the engine (and its dependencies) exists."""
    probe = (
        f"import sys; sys.path.insert(0, {str(Path(agents.__file__).parent.parent)!r}); "
        "before = set(sys.modules); import codebase_index.agents; "
        "print(*sorted({m.split('.')[0] for m in set(sys.modules) - before} - set(sys.stdlib_module_names)))"
    )
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["codebase_index"]
