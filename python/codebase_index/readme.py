"""Keeps README.md's reference tables generated from the code (config structs, tool specs).

`python -m codebase_index.readme README.md` rewrites every generated block in place; tests/test_readme.py
fails when a block is stale, so the docs cannot drift from what the code accepts.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def _config_table() -> str:
    from .config import reference_markdown

    return reference_markdown()


def _tools_table() -> str:
    from .tools import render_markdown

    return render_markdown()


BLOCKS: dict[str, Callable[[], str]] = {"config-reference": _config_table, "tools": _tools_table}
UPDATE_HINT = "python -m codebase_index.readme README.md"


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start (generated: {UPDATE_HINT}) -->", f"<!-- {name}:end -->"


def block(text: str, name: str) -> str:
    """The current content of one generated block."""
    start, end = markers(name)
    return text[text.index(start) + len(start) : text.index(end)]


def update(text: str) -> str:
    for name, render in BLOCKS.items():
        start, end = markers(name)
        head = text.index(start) + len(start)
        text = text[:head] + "\n" + render() + text[text.index(end) :]
    return text


if __name__ == "__main__":
    readme = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    readme.write_text(update(readme.read_text(encoding="utf-8")), encoding="utf-8")
