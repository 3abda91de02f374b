"""README facts that must not drift from the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebase_index import readme

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_starts_with_the_two_setup_commands() -> None:
    text = README.read_text(encoding="utf-8")
    first_block = text.split("```")[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()[1:] if line.strip()]
    assert commands == ["make demo", "make test"]


@pytest.mark.parametrize("name", ["config-reference", "tools"])
def test_generated_blocks_are_current(name: str) -> None:
    text = README.read_text(encoding="utf-8")
    assert readme.block(text, name).strip() == readme.BLOCKS[name]().strip(), (
        f"README's {name} table is stale: run `{readme.UPDATE_HINT}`"
    )


def test_every_slash_command_and_tool_is_documented() -> None:
    text = README.read_text(encoding="utf-8")
    commands = sorted(p.stem for p in (README.parent / "commands").glob("*.md"))
    assert commands, "no slash commands found"
    for name in commands:
        assert f"`/{name}" in text, f"README does not document /{name}"


PROTOCOL = README.parent / "plugin" / "PROTOCOL.md"


def test_protocol_method_table_is_current_and_names_only_real_methods() -> None:
    """PROTOCOL.md once named `add_knowledge_base` as a method (it is the tool; the method is `kb_add`)."""
    import re

    from codebase_index import tools

    text = PROTOCOL.read_text(encoding="utf-8")
    assert readme.block(text, "protocol-methods").strip() == readme.BLOCKS["protocol-methods"]().strip(), (
        f"plugin/PROTOCOL.md's method table is stale: run `{readme.UPDATE_HINT}`"
    )
    table = readme.block(text, "protocol-methods")
    rows = re.findall(r"^\| `([a-z_]+)` \| (?:`([a-z_]+)`|-) \|", table, re.M)
    assert {m for m, _ in rows} == {*tools.BY_METHOD, "initialize", "shutdown"}
    assert all(tools.BY_METHOD[m].name == name for m, name in rows if name)
    # Any other snake_case identifier the document quotes must be a real method or tool name.
    known = {*tools.BY_METHOD, *tools.BY_NAME}
    quoted = set(re.findall(r"`([a-z]+(?:_[a-z]+)+)`", text))
    assert quoted <= known, f"PROTOCOL.md names what does not exist: {sorted(quoted - known)}"


def test_first_screen_shows_the_user_installs() -> None:
    """OpenCode (one line), MCP clients (one command) and pip, under the npm name package.json publishes."""
    import json

    name = json.loads((README.parent / "package.json").read_text(encoding="utf-8"))["name"]
    first_screen = "\n".join(README.read_text(encoding="utf-8").splitlines()[:40])
    assert f'"plugin": ["{name}"]' in first_screen
    assert f"npx -y {name} install" in first_screen
    assert f"pip install {name}" in first_screen
