"""Line-based chunking: windows, leftover blocks, markdown sections, and the pieces -> chunks step.

Everything here works on `text.splitlines()` lines with 0-based indexes; only the final
`ChunkSpan`s are 1-based. Sizes are measured in characters (`budget` = tokens x 4), which is
close enough to a subword tokenizer for code and prose and costs nothing to compute.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from codebase_index.models import ChunkSpan

CHARS_PER_TOKEN = 4
TEXT_WINDOW_LINES = 60
TEXT_WINDOW_OVERLAP = 10
CODE_WINDOW_OVERLAP = 5
_MAX_CONTEXT_CHARS = 200  # a signature/heading line repeated as context is cut to this length


@dataclass(slots=True)
class Piece:
    """A chunk before it gets text: 0-based inclusive line range plus the line repeated as context."""

    start: int
    end: int
    kind: str
    symbol: str
    sig: int = -1


def budget_chars(max_chunk_tokens: int) -> int:
    return max(16, max_chunk_tokens) * CHARS_PER_TOKEN


def _trim(lines: Sequence[str], start: int, end: int) -> tuple[int, int]:
    """Shrink [start, end] to its first and last non-blank line (start > end when all blank)."""
    while start <= end and not lines[start].strip():
        start += 1
    while end >= start and not lines[end].strip():
        end -= 1
    return start, end


def line_windows(
    lines: Sequence[str],
    start: int,
    end: int,
    max_chars: int,
    overlap: int,
    max_lines: int = 0,
) -> list[tuple[int, int]]:
    """Windows over [start, end] of at most `max_chars` (and `max_lines`), overlapping by up to
    `overlap` lines; a window always holds at least one line, so progress is guaranteed."""
    out: list[tuple[int, int]] = []
    i = start
    while i <= end:
        size = 0
        j = i
        while j <= end:
            add = len(lines[j]) + 1
            if j > i and (size + add > max_chars or (max_lines and j - i >= max_lines)):
                break
            size += add
            j += 1
        a, b = _trim(lines, i, j - 1)
        if a <= b and not (out and out[-1][0] <= a and b <= out[-1][1]):
            out.append((a, b))
        if j > end:
            break
        i = max(i + 1, j - min(overlap, (j - i) // 4))
    return out


def block_splits(lines: Sequence[str], start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut leftover code into consecutive blocks under `max_chars`, preferring blank-line cuts."""
    out: list[tuple[int, int]] = []
    i = start
    while i <= end:
        size = 0
        j = i
        last_blank = -1
        while j <= end:
            add = len(lines[j]) + 1
            if j > i and size + add > max_chars:
                break
            if not lines[j].strip():
                last_blank = j
            size += add
            j += 1
        cut = j
        if j <= end and last_blank > i + (j - i) // 2:
            cut = last_blank
        a, b = _trim(lines, i, cut - 1)
        if a <= b:
            out.append((a, b))
        i = cut
    return out


def _split_long(text: str, max_chars: int) -> Iterator[str]:
    """A single line longer than the budget (minified code, data) is cut by characters."""
    if len(text) <= max_chars:
        yield text
        return
    for k in range(0, len(text), max_chars):
        yield text[k : k + max_chars]


def materialize(pieces: list[Piece], lines: Sequence[str], max_chars: int) -> list[ChunkSpan]:
    """Turn pieces into ChunkSpans, splitting oversized ones into overlapping windows whose text
    starts with the signature (or heading) line so each window still says what it belongs to."""
    pieces.sort(key=lambda p: (p.start, p.end))
    out: list[ChunkSpan] = []
    for p in pieces:
        a, b = _trim(lines, p.start, p.end)
        if a > b:
            continue
        text = "\n".join(lines[a : b + 1])
        if len(text) <= max_chars:
            out.append(ChunkSpan(a + 1, b + 1, p.kind, p.symbol, text))
            continue
        sig_row = p.sig if a <= p.sig <= b else a
        context = lines[sig_row][:_MAX_CONTEXT_CHARS]
        room = max(max_chars - len(context) - 1, max_chars // 2)
        for ws, we in line_windows(lines, a, b, room, CODE_WINDOW_OVERLAP):
            body = "\n".join(lines[ws : we + 1])
            if ws > sig_row and context.strip():
                body = context + "\n" + body
            for part in _split_long(body, max_chars):
                out.append(ChunkSpan(ws + 1, we + 1, p.kind, p.symbol, part))
    return out


# --------------------------------------------------------------------------------------------
# Plain text


def chunk_windows(lines: list[str], max_chars: int) -> list[ChunkSpan]:
    """Prose, HTML and languages without a grammar: ~60-line windows overlapping by ~10."""
    pieces = [
        Piece(a, b, "block", "")
        for a, b in line_windows(
            lines, 0, len(lines) - 1, max_chars, TEXT_WINDOW_OVERLAP, max_lines=TEXT_WINDOW_LINES
        )
    ]
    return materialize(pieces, lines, max_chars)


# --------------------------------------------------------------------------------------------
# Markdown

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _frontmatter_end(lines: list[str]) -> int:
    """Index of the first line after a YAML (`---`) or TOML (`+++`) frontmatter, else 0."""
    if not lines or lines[0].strip() not in ("---", "+++"):
        return 0
    fence = lines[0].strip()
    closers = ("---", "...") if fence == "---" else ("+++",)
    for i in range(1, min(len(lines), 500)):
        if lines[i].strip() in closers:
            return i + 1
    return 0


def _headings(lines: list[str], first: int) -> list[tuple[int, int, str]]:
    """(line, level, title) of every heading outside fenced code; setext headings use the title line."""
    out: list[tuple[int, int, str]] = []
    fence = ""
    for i in range(first, len(lines)):
        line = lines[i]
        m = _FENCE.match(line)
        if m:
            marker = m.group(1)
            if not fence:
                fence = marker[0] * len(marker)
            elif marker.startswith(fence) and not line.strip()[len(marker) :].strip():
                fence = ""
            continue
        if fence:
            continue
        m = _ATX.match(line)
        if m:
            out.append((i, len(m.group(1)), (m.group(2) or "").strip()))
            continue
        if i > first and lines[i - 1].strip() and not line.startswith(("    ", "\t")):
            s = _SETEXT.match(line)
            prev = lines[i - 1]
            if (
                s
                and not _ATX.match(prev)
                and not prev.lstrip().startswith(("-", "*", "+", ">", "|"))
                and (not out or out[-1][0] != i - 1)
            ):
                out.append((i - 1, 1 if s.group(1)[0] == "=" else 2, prev.strip()))
    return out


def _paragraphs(lines: list[str], start: int, end: int) -> list[tuple[int, int]]:
    """Blank-line separated runs; a fenced code block stays one paragraph even with blank lines."""
    out: list[tuple[int, int]] = []
    i = start
    while i <= end:
        while i <= end and not lines[i].strip():
            i += 1
        if i > end:
            break
        j = i
        fence = ""
        while j <= end:
            m = _FENCE.match(lines[j])
            if m:
                fence = "" if fence else m.group(1)[0] * 3
            elif not fence and not lines[j].strip():
                break
            j += 1
        out.append((i, j - 1))
        i = j
    return out


def chunk_markdown(lines: list[str], max_chars: int) -> list[ChunkSpan]:
    """One chunk per heading section (symbol = heading path `A > B`), long sections packed into
    paragraph groups under the budget, each later group led by its heading line."""
    first = _frontmatter_end(lines)
    heads = _headings(lines, first)
    sections: list[tuple[int, int, str, int]] = []  # start, end, symbol, heading line or -1
    stack: list[tuple[int, str]] = []
    if not heads or heads[0][0] > first:
        end = heads[0][0] - 1 if heads else len(lines) - 1
        sections.append((first, end, "", -1))
    for k, (line, level, title) in enumerate(heads):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = heads[k + 1][0] - 1 if k + 1 < len(heads) else len(lines) - 1
        sections.append((line, end, " > ".join(t for _, t in stack), line))

    # A heading with nothing under it but a deeper heading joins that child section.
    merged: list[tuple[int, int, str, int]] = []
    carry = -1
    for k, (start, end, symbol, head) in enumerate(sections):
        if carry >= 0:
            start, carry = carry, -1
        body_empty = head >= 0 and _trim(lines, head + 1, end)[0] > end
        nxt = sections[k + 1] if k + 1 < len(sections) else None
        if body_empty and nxt is not None and nxt[2].startswith(symbol + " > "):
            carry = start
            continue
        merged.append((start, end, symbol, head))

    pieces: list[Piece] = []
    out: list[ChunkSpan] = []
    for start, end, symbol, head in merged:
        a, b = _trim(lines, start, end)
        if a > b:
            continue
        if sum(len(lines[i]) + 1 for i in range(a, b + 1)) <= max_chars:
            pieces.append(Piece(a, b, "section", symbol, head))
            continue
        out.extend(materialize(pieces, lines, max_chars))
        pieces = []
        out.extend(_pack_section(lines, a, b, symbol, head, max_chars))
    out.extend(materialize(pieces, lines, max_chars))
    out.sort(key=lambda c: (c.start_line, c.end_line))
    return out


def _pack_section(
    lines: list[str], start: int, end: int, symbol: str, head: int, max_chars: int
) -> list[ChunkSpan]:
    context = lines[head][:_MAX_CONTEXT_CHARS] if head >= 0 else ""
    room = max(max_chars - len(context) - 1, max_chars // 2)
    groups: list[tuple[int, int]] = []
    cur_start, cur_end, size = -1, -1, 0
    for a, b in _paragraphs(lines, start, end):
        psize = sum(len(lines[i]) + 1 for i in range(a, b + 1))
        if cur_start >= 0 and size + psize <= room:
            cur_end, size = b, size + psize
            continue
        if cur_start >= 0:
            groups.append((cur_start, cur_end))
        if psize > room:
            groups.extend(line_windows(lines, a, b, room, 2))
            cur_start, size = -1, 0
        else:
            cur_start, cur_end, size = a, b, psize
    if cur_start >= 0:
        groups.append((cur_start, cur_end))
    out: list[ChunkSpan] = []
    for a, b in groups:
        body = "\n".join(lines[a : b + 1])
        if a > head >= 0 and context:
            body = context + "\n" + body
        for part in _split_long(body, max_chars):
            out.append(ChunkSpan(a + 1, b + 1, "section", symbol, part))
    return out
