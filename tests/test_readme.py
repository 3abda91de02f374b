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


@pytest.mark.parametrize("name", sorted(readme.BLOCKS))
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
