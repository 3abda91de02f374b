"""Single-file components (.vue, .svelte, .astro): their scripts are chunked as JavaScript or
TypeScript definitions, the markup and styles around them as line windows."""

from __future__ import annotations

import re

from codebase_index.chunking.code import chunk_code
from codebase_index.chunking.languages import SPECS
from codebase_index.chunking.text import (
    TEXT_WINDOW_LINES,
    TEXT_WINDOW_OVERLAP,
    Piece,
    line_windows,
    materialize,
)
from codebase_index.models import ChunkSpan

_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script\s*>", re.DOTALL | re.IGNORECASE)
_LANG = re.compile(r"""\blang\s*=\s*["']?(\w+)""", re.IGNORECASE)
_TYPE = re.compile(r"""\btype\s*=\s*["']?([\w/+.-]+)""", re.IGNORECASE)
_ASTRO_FRONTMATTER = re.compile(r"\A\s*---[ \t]*\r?\n(.*?)^---[ \t]*$", re.DOTALL | re.MULTILINE)


def _script_language(attrs: str, default: str) -> str | None:
    typ = _TYPE.search(attrs)
    if typ and typ.group(1).lower() not in ("module", "text/javascript", "application/javascript", "ts"):
        return None  # JSON-LD, templates, ...
    lang = _LANG.search(attrs)
    name = lang.group(1).lower() if lang else default
    return {"ts": "typescript", "typescript": "typescript", "tsx": "tsx", "jsx": "javascript"}.get(
        name, "javascript"
    )


def _line_of(text: str, offset: int) -> int:
    """Line index (as `splitlines` counts) of the character at `offset`."""
    return len((text[:offset] + "x").splitlines()) - 1


def chunk_embedded(text: str, lines: list[str], language: str, max_chars: int) -> list[ChunkSpan]:
    regions: list[tuple[int, int, str]] = []
    default = "typescript" if language == "astro" else "javascript"
    if language == "astro":
        front = _ASTRO_FRONTMATTER.match(text)
        if front:
            regions.append((front.start(1), front.end(1), "typescript"))
    for m in _SCRIPT.finditer(text):
        lang = _script_language(m.group(1), default)
        if lang is not None:
            regions.append((m.start(2), m.end(2), lang))

    out: list[ChunkSpan] = []
    in_script = bytearray(len(lines))
    for a, b, lang in regions:
        body = text[a:b]
        stripped = body.strip()
        if not stripped:
            continue
        first = _line_of(text, a + body.index(stripped[0]))
        last = _line_of(text, a + len(body.rstrip()) - 1)
        in_script[first : last + 1] = b"\x01" * (last - first + 1)
        # Blank everything before the script so tree rows equal file lines.
        masked = "\n" * _line_of(text, a) + " " * (a - text.rfind("\n", 0, a) - 1) + body
        masked_lines = masked.splitlines()
        spans = chunk_code(masked, masked_lines, SPECS[lang], max_chars)
        out.extend(spans)

    pieces: list[Piece] = []
    i = 0
    while i < len(lines):
        if in_script[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(lines) and not in_script[j + 1]:
            j += 1
        for a, b in line_windows(lines, i, j, max_chars, TEXT_WINDOW_OVERLAP, max_lines=TEXT_WINDOW_LINES):
            pieces.append(Piece(a, b, "block", ""))
        i = j + 1
    out.extend(materialize(pieces, lines, max_chars))
    out.sort(key=lambda c: (c.start_line, c.end_line))
    return out
