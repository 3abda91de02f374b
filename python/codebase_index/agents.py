"""`codebase-index install` / `uninstall`: wire the tools into coding agents' user-level configuration.

Each agent gets what it loads: OpenCode the npm plugin in its `plugin` list (with `pythonPath` set to this
interpreter when the engine was installed with pip, so the plugin does not build a second one), the
MCP clients an `mcpServers` entry (Codex a `[mcp_servers.codebase-index]` TOML table) that starts
`codebase-index mcp` in the workspace the agent runs in. Edits are idempotent (an entry already equal
is left alone), keep every other key, and are shown as they are made; `--dry-run` only shows them.
A JSONC file with comments is not rewritten (that would drop them): the change to make is printed.

The command written must outlive the install: this interpreter (pip), the npm package's own bin (a
global npm install), or `npx -y local-codebase-index mcp` when the package runs from npx's cache, which
npm may clean at any time. Standard library only: the npm launcher runs `install --dry-run` and
`uninstall` with any Python, without building the engine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .jsonc import ConfigError, strip_jsonc

SERVER_NAME = "codebase-index"
NPM_PACKAGE = "local-codebase-index"
LAUNCHER_ENV = "CODEBASE_INDEX_MCP_LAUNCHER"
"""JSON list: how to start the MCP server; the npm package's bin sets it to itself."""
NPX_COMMAND = ["npx", "-y", NPM_PACKAGE, "mcp"]
NPX_CACHE = "_npx"
"""The folder under npm's cache where `npx` unpacks packages (`~/.npm/_npx/<hash>/node_modules/...`)."""


# `python -m` puts the working folder first on sys.path, and agents start MCP servers in the project they
# opened: a repository's own argparse.py or json.py would run in our place. -P (3.11+) leaves it off; on
# 3.10 the -c form removes it before importing anything of ours.
SAFE_MAIN_310 = "import sys; del sys.path[0]; from codebase_index.cli import main; sys.exit(main())"


def mcp_command() -> list[str]:
    """The command line that starts this installation's MCP server (never importing from the folder it is
    started in)."""
    launcher = os.environ.get(LAUNCHER_ENV)
    if launcher:
        parsed = json.loads(launcher)
        if isinstance(parsed, list) and all(isinstance(p, str) for p in parsed) and parsed:
            return NPX_COMMAND if any(in_npx_cache(p) for p in parsed) else parsed
    if sys.version_info >= (3, 11):
        return [sys.executable, "-P", "-m", "codebase_index.cli", "mcp"]
    return [sys.executable, "-c", SAFE_MAIN_310, "mcp"]


def in_npx_cache(path: str) -> bool:
    """True for a file npx unpacked into npm's cache (gone after `npm cache clean` or npx's pruning)."""
    return NPX_CACHE in re.split(r"[\\/]", path)


@dataclass(frozen=True)
class Agent:
    name: str
    title: str
    config: Callable[[Path], Path]
    """The file written, from the home folder."""
    detect: Callable[[Path], Path]
    """A folder whose presence means the agent is installed."""
    kind: str  # "opencode", "mcp-json" or "codex-toml"
    project_args: tuple[str, ...] = ()
    """Added to the MCP command when the agent does not start servers in the workspace folder."""


def _xdg_config(home: Path) -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME")
    return Path(xdg) if xdg else home / ".config"


AGENTS: tuple[Agent, ...] = (
    Agent(
        "opencode",
        "OpenCode",
        lambda h: _xdg_config(h) / "opencode" / "opencode.json",
        lambda h: _xdg_config(h) / "opencode",
        "opencode",
    ),
    Agent("claude-code", "Claude Code", lambda h: h / ".claude.json", lambda h: h / ".claude", "mcp-json"),
    Agent(
        "cursor",
        "Cursor",
        lambda h: h / ".cursor" / "mcp.json",
        lambda h: h / ".cursor",
        "mcp-json",
        ("--project", "${workspaceFolder}"),
    ),
    Agent(
        "windsurf",
        "Windsurf",
        lambda h: h / ".codeium" / "windsurf" / "mcp_config.json",
        lambda h: h / ".codeium" / "windsurf",
        "mcp-json",
    ),
    Agent("codex", "Codex CLI", lambda h: h / ".codex" / "config.toml", lambda h: h / ".codex", "codex-toml"),
    Agent(
        "gemini", "Gemini CLI", lambda h: h / ".gemini" / "settings.json", lambda h: h / ".gemini", "mcp-json"
    ),
)
AGENT_NAMES = tuple(a.name for a in AGENTS)


@dataclass(frozen=True)
class Change:
    agent: str
    path: Path
    action: str  # "add", "update", "remove", "unchanged", "manual"
    detail: str

    def line(self, home: Path, dry_run: bool) -> str:
        shown = (
            "~/" + self.path.relative_to(home).as_posix()
            if self.path.is_relative_to(home)
            else str(self.path)
        )
        verbs = {
            "add": "would add" if dry_run else "added",
            "update": "would update" if dry_run else "updated",
            "remove": "would remove" if dry_run else "removed",
            "unchanged": "unchanged",
            "manual": "edit by hand",
        }
        return f"{self.agent:<12} {verbs[self.action]:<13} {shown}: {self.detail}"


def _read_json(path: Path) -> tuple[dict[str, Any], bool]:
    """The file's object (empty when absent) and whether it holds comments we would lose."""
    if not path.exists():
        return {}, False
    text = path.read_text(encoding="utf-8-sig")
    if not text.strip():
        return {}, False
    plain = strip_jsonc(text)
    try:
        data = json.loads(plain)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}; fix it first") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be an object")
    has_comments = re.sub(r"\s", "", plain) != re.sub(r"\s", "", text)
    return data, has_comments


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def _plugin_entry() -> Any:
    """`local-codebase-index`, with this interpreter as pythonPath unless we run from the npm package."""
    if os.environ.get(LAUNCHER_ENV):
        return NPM_PACKAGE
    return [NPM_PACKAGE, {"pythonPath": sys.executable}]


def _is_ours(entry: Any) -> bool:
    name = entry[0] if isinstance(entry, list) and entry else entry
    return isinstance(name, str) and (name == NPM_PACKAGE or name.startswith(NPM_PACKAGE + "@"))


def _opencode(
    data: dict[str, Any], install: bool, _extra: tuple[str, ...]
) -> tuple[dict[str, Any], str, str]:
    plugins = list(data.get("plugin") or [])
    others = [p for p in plugins if not _is_ours(p)]
    if not install:
        if len(others) == len(plugins):
            return data, "unchanged", "no codebase-index plugin"
        rest = {k: v for k, v in data.items() if k != "plugin"}
        return ({**rest, "plugin": others} if others else rest), "remove", f"plugin {NPM_PACKAGE}"
    entry = _plugin_entry()
    if entry in plugins and len(plugins) - len(others) == 1:
        return data, "unchanged", f"plugin {NPM_PACKAGE} already listed"
    action = "update" if len(others) != len(plugins) else "add"
    return {**data, "plugin": [*others, entry]}, action, f"plugin {json.dumps(entry)}"


def _mcp_json(data: dict[str, Any], install: bool, extra: tuple[str, ...]) -> tuple[dict[str, Any], str, str]:
    servers = dict(data.get("mcpServers") or {})
    if not install:
        if SERVER_NAME not in servers:
            return data, "unchanged", f"no mcpServers.{SERVER_NAME}"
        del servers[SERVER_NAME]
        rest = {k: v for k, v in data.items() if k != "mcpServers"}
        return ({**rest, "mcpServers": servers} if servers else rest), "remove", f"mcpServers.{SERVER_NAME}"
    command = [*mcp_command(), *extra]
    entry = {"command": command[0], "args": command[1:]}
    if servers.get(SERVER_NAME) == entry:
        return data, "unchanged", f"mcpServers.{SERVER_NAME} already set"
    action = "update" if SERVER_NAME in servers else "add"
    servers[SERVER_NAME] = entry
    return {**data, "mcpServers": servers}, action, f"mcpServers.{SERVER_NAME} = {json.dumps(entry)}"


_TOML_TABLE = re.compile(r"^\[mcp_servers\.(?:\"codebase-index\"|codebase-index)\]\s*$", re.M)


def _codex_block() -> str:
    command = mcp_command()
    return (
        f"[mcp_servers.{SERVER_NAME}]\n"
        f"command = {json.dumps(command[0])}\n"
        f"args = [{', '.join(json.dumps(a) for a in command[1:])}]\n"
    )


def _codex(text: str, install: bool) -> tuple[str, str, str]:
    """Codex's TOML: our table is found by its header and ends at the next table header."""
    match = _TOML_TABLE.search(text)
    current = ""
    if match:
        nxt = re.search(r"^\[", text[match.end() :], re.M)
        end = match.end() + nxt.start() if nxt else len(text)
        current = text[match.start() : end]
    if not install:
        if not match:
            return text, "unchanged", f"no [mcp_servers.{SERVER_NAME}]"
        rest = (text[: match.start()] + text[match.start() + len(current) :]).rstrip("\n")
        return (rest + "\n" if rest else ""), "remove", f"[mcp_servers.{SERVER_NAME}]"
    block = _codex_block()
    if current.strip() == block.strip():
        return text, "unchanged", f"[mcp_servers.{SERVER_NAME}] already set"
    if match:
        new = text[: match.start()] + block + ("\n" if text[match.start() + len(current) :] else "")
        new += text[match.start() + len(current) :]
        return new, "update", f"[mcp_servers.{SERVER_NAME}] command = {mcp_command()[0]}"
    sep = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
    return text + sep + block, "add", f"[mcp_servers.{SERVER_NAME}] command = {mcp_command()[0]}"


def apply(agent: Agent, home: Path, *, install: bool, dry_run: bool) -> Change:
    path = agent.config(home)
    if agent.kind == "codex-toml":
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        new_text, action, detail = _codex(text, install)
        if action in ("add", "update", "remove") and not dry_run:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(new_text, encoding="utf-8")
        return Change(agent.name, path, action, detail)
    data, has_comments = _read_json(path)
    edit = _opencode if agent.kind == "opencode" else _mcp_json
    new, action, detail = edit(data, install, agent.project_args)
    if action in ("add", "update", "remove"):
        if has_comments:
            return Change(agent.name, path, "manual", f"the file has comments; {action} {detail}")
        if not dry_run:
            _write_json(path, new)
    return Change(agent.name, path, action, detail)


def select(names: list[str], home: Path, *, install: bool = True) -> list[Agent]:
    """The named agents, or when none is named: for install every agent found (its folder or its config
    file), for uninstall every agent whose config file exists (install may have created it, e.g. Claude
    Code's ~/.claude.json without a ~/.claude folder)."""
    if names:
        unknown = [n for n in names if n not in AGENT_NAMES]
        if unknown:
            raise ConfigError(f"unknown agent {', '.join(unknown)}; known: {', '.join(AGENT_NAMES)}")
        return [a for a in AGENTS if a.name in names]
    if not install:
        return [a for a in AGENTS if a.config(home).is_file()]
    return [a for a in AGENTS if a.detect(home).exists() or a.config(home).is_file()]


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`install` and `uninstall`, for the CLI and for `main` below."""
    for name, what in (("install", "add codebase-index to"), ("uninstall", "remove codebase-index from")):
        p = sub.add_parser(name, help=f"{what} coding agents' configuration (all found, or the ones named)")
        p.add_argument("agents", nargs="*", metavar="AGENT", help="opencode, claude-code, cursor, codex, ...")
        p.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
        p.set_defaults(func=run, command=name)


def run(args: argparse.Namespace) -> int:
    home = Path.home()
    install = args.command == "install"
    chosen = select(args.agents, home, install=install)
    if not chosen:
        names = ", ".join(AGENT_NAMES)
        found = "no coding agent found" if install else "no coding agent's configuration found"
        print(f"{found} in {home} (looked for {names}); name one: codebase-index {args.command} AGENT")
        return 0
    for agent in chosen:
        print(apply(agent, home, install=install, dry_run=args.dry_run).line(home, args.dry_run))
    if args.dry_run:
        print("dry run: nothing was written")
    elif install:
        print("restart the agent to load codebase-index; it indexes a project on first use (index_codebase)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`install` / `uninstall` alone (the npm launcher's path that needs no engine)."""
    parser = argparse.ArgumentParser(prog="codebase-index")
    add_parsers(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        return run(args)
    except ConfigError as exc:
        print(f"codebase-index: error: {exc}", file=sys.stderr)
        return 1
