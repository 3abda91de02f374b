"""Keeps README.md's reference tables generated from the code (config structs, tool specs).

`python -m codebase_index.readme README.md` rewrites every generated block in place, in the README and in
the plugin/PROTOCOL.md beside it; tests/test_readme.py fails when a block is stale, so the docs cannot
drift from what the code accepts.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def _config_table() -> str:
    from .config import reference_markdown

    return reference_markdown()


def _tools_table() -> str:
    from .tools.faces import render_markdown

    return render_markdown()


def _protocol_methods() -> str:
    from .tools.faces import render_protocol_methods

    return render_protocol_methods()


BLOCKS: dict[str, Callable[[], str]] = {
    "config-reference": _config_table,
    "tools": _tools_table,
    "protocol-methods": _protocol_methods,
}
UPDATE_HINT = "python -m codebase_index.readme README.md"
PROTOCOL = Path("plugin") / "PROTOCOL.md"  # updated with the README it sits beside


def markers(name: str) -> tuple[str, str]:
    return f"<!-- {name}:start (generated: {UPDATE_HINT}) -->", f"<!-- {name}:end -->"


def block(text: str, name: str) -> str:
    """The current content of one generated block."""
    start, end = markers(name)
    return text[text.index(start) + len(start) : text.index(end)]


def update(text: str) -> str:
    """Every generated block the text holds, re-rendered (README.md and plugin/PROTOCOL.md each hold some)."""
    for name, render in BLOCKS.items():
        start, end = markers(name)
        if start not in text:
            continue
        head = text.index(start) + len(start)
        text = text[:head] + "\n" + render() + text[text.index(end) :]
    return text


if __name__ == "__main__":
    readme = Path(sys.argv[1] if len(sys.argv) > 1 else "README.md")
    for doc in (readme, readme.parent / PROTOCOL):
        if doc.exists():
            doc.write_text(update(doc.read_text(encoding="utf-8")), encoding="utf-8")
