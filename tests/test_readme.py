"""README facts that must not drift from the code."""

from __future__ import annotations

from pathlib import Path

from codebase_index.config import README_END, README_START, reference_markdown

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_starts_with_the_two_setup_commands() -> None:
    text = README.read_text(encoding="utf-8")
    first_block = text.split("```")[1]
    commands = [line.split("#")[0].strip() for line in first_block.splitlines()[1:] if line.strip()]
    assert commands == ["make demo", "make test"]


def test_configuration_table_is_generated_from_the_config_structs() -> None:
    text = README.read_text(encoding="utf-8")
    block = text[text.index(README_START) + len(README_START) : text.index(README_END)]
    assert block.strip() == reference_markdown().strip(), (
        "README's configuration table is stale: run `python -m codebase_index.config --update README.md`"
    )
