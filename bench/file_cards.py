"""File cards: one short text per FILE that says what the file is about, for a file-level vector (a bench
experiment, not used by the engine: see bench/file_vector_experiment.md).

Chunk vectors describe a function or a block; questions about architecture ("how the timer wheel tracks
sleep deadlines") are answered by a whole file, whose many small chunks each match the question only a
little. A card gathers the file's path, its module documentation (docstring or leading comment, licence
headers skipped) and its definitions with the first sentence of their documentation, in file order, within
what MiniLM reads (256 word pieces, ~`CARD_CHARS` characters of code-like text). Everything is built from
the stored chunks (kind, symbol, text), so cards need no second parse of the file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

__all__ = ["CARD_CHARS", "CardChunk", "doc_sentence", "file_card", "leading_doc", "module_doc"]

# MiniLM truncates at 256 word pieces; code-like text averages ~3.5-4 characters per piece.
CARD_CHARS = 1000
_MODULE_DOC_CHARS = 300
_SENTENCE_CHARS = 120

_LINE_COMMENT = re.compile(r"^\s*(///?!?|//|#(?![\[!]|include|define|if|endif|else|pragma|undef)|--|;+)\s?")
_BLOCK_START = re.compile(r"^\s*/\*+!?\s?")
_BLOCK_MID = re.compile(r"^\s*\*+(?!/)\s?")
_BLOCK_END = re.compile(r"\s*\*+/\s*$")
_DOCSTRING_OPEN = re.compile(r"^\s*[rRbBuU]?(\"\"\"|''')")
_DECORATOR = re.compile(r"^\s*(@[\w.]|#\[|#!\[)")
_LEGAL = re.compile(r"copyright|licen[cs]e|spdx|all rights reserved|\(c\) \d{4}", re.IGNORECASE)
_TAG_LINE = re.compile(r"^\s*@\w+")  # javadoc / jsdoc tags end the description


class CardChunk(NamedTuple):
    """What a card needs of a stored chunk."""

    kind: str
    symbol: str
    text: str


def _comment_block(lines: Sequence[str]) -> list[str]:
    """The text of the comment at the top of `lines` (line comments or one /* */ block), markers
    stripped; empty when the lines do not start with a comment. Blank lines inside are kept as ''."""
    out: list[str] = []
    i = 0
    if i < len(lines) and _BLOCK_START.match(lines[i]):
        first = _BLOCK_START.sub("", lines[i], count=1)
        if _BLOCK_END.search(first):
            return [_BLOCK_END.sub("", first).strip()]
        out.append(first.strip())
        for line in lines[i + 1 :]:
            ended = bool(_BLOCK_END.search(line))
            text = _BLOCK_END.sub("", line)
            out.append(_BLOCK_MID.sub("", text, count=1).strip())
            if ended:
                break
        return out
    while i < len(lines):
        m = _LINE_COMMENT.match(lines[i])
        if m is None:
            break
        out.append(lines[i][m.end() :].strip())
        i += 1
    return out


def _docstring(lines: Sequence[str]) -> list[str]:
    """A Python-style docstring opening within the first lines after a `def`/`class` header (or at the
    very top of a module), quotes stripped; empty when there is none."""
    for start, line in enumerate(lines[:8]):
        m = _DOCSTRING_OPEN.match(line)
        if m is None:
            continue
        quote = m.group(1)
        rest = line[m.end() :]
        if quote in rest:
            return [rest.split(quote, 1)[0].strip()]
        out = [rest.strip()]
        for more in lines[start + 1 :]:
            if quote in more:
                out.append(more.split(quote, 1)[0].strip())
                break
            out.append(more.strip())
        return out
    return []


def _first_sentence(lines: Sequence[str], limit: int = _SENTENCE_CHARS) -> str:
    """The first sentence of a comment's text: up to the first blank line, tag line or '. ', clipped."""
    words: list[str] = []
    for line in lines:
        if not line or _TAG_LINE.match(line):
            if words:
                break
            continue
        words.append(line)
    text = " ".join(words)
    cut = re.search(r"(?<=[.!?])\s", text)
    if cut is not None:
        text = text[: cut.start()]
    if len(text) > limit:
        text = text[: limit - 3].rstrip() + "..."
    return text


def leading_doc(text: str) -> list[str]:
    """Documentation lines of a definition chunk: the comment above it (decorators and attributes may sit
    between), else a docstring right below its header.

    >>> leading_doc('/// Wheel for one level.\\n/// More.\\npub struct Level {')
    ['Wheel for one level.', 'More.']
    >>> leading_doc('def get(url):\\n    \"\"\"Send a GET request.\"\"\"\\n    return 1')
    ['Send a GET request.']
    >>> leading_doc('func Run() {}')
    []
    """
    lines = text.splitlines()
    body = [ln for ln in lines if not _DECORATOR.match(ln)]
    found = _comment_block(body)
    if any(found):
        return found
    return _docstring(body)


def doc_sentence(text: str) -> str:
    """First sentence of a definition's documentation ('' without any); licence boilerplate is ignored.

    >>> doc_sentence('/**\\n * Parses the config. Then more.\\n * @param x input\\n */\\nfunction p(x) {}')
    'Parses the config.'
    """
    lines = leading_doc(text)
    if any(_LEGAL.search(ln) for ln in lines):
        return ""
    return _first_sentence(lines)


def module_doc(text: str, limit: int = _MODULE_DOC_CHARS) -> str:
    """The documentation at the top of a file (first chunk): a module docstring or the first comment that
    is not a licence header or a shebang, joined to one line and clipped to `limit` characters.

    >>> module_doc('#!/bin/env python\\n\"\"\"Handlers for Content-Encoding.\\n\\nSee RFC.\"\"\"\\nimport io')
    'Handlers for Content-Encoding. See RFC.'
    >>> module_doc('// Copyright 2020 X. MIT license.\\n\\n// Package gin is a web framework.\\npackage gin')
    'Package gin is a web framework.'
    """
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.startswith("#!") or line.lstrip().startswith(("<?php", "'use strict'")):
            i += 1
            continue
        doc = _docstring(lines[i : i + 1]) and _docstring(lines[i:])
        block = doc or _comment_block(lines[i:])
        if not any(block):
            return ""
        consumed = max(1, len(block))
        if any(_LEGAL.search(ln) for ln in block):
            i += consumed
            continue
        joined = " ".join(ln for ln in block if ln)
        return joined if len(joined) <= limit else joined[: limit - 3].rstrip() + "..."
    return ""


def _entry(chunk: CardChunk) -> str:
    sentence = doc_sentence(chunk.text)
    label = f"{chunk.kind} {chunk.symbol}"
    return f"{label}: {sentence}" if sentence else label


def file_card(path: str, chunks: Sequence[CardChunk], limit: int = CARD_CHARS) -> str:
    """The card of one file: its path, module documentation, then one line per named definition
    (`kind symbol: first doc sentence`) in file order. When they do not all fit in `limit` characters,
    top-level definitions and documented ones are kept first (the card is what the model reads, and
    MiniLM stops at 256 word pieces); repeated names (split chunks of one definition) appear once.

    >>> print(file_card("wheel/level.rs", [CardChunk("block", "", "use std::fmt;"),
    ...     CardChunk("struct", "Level", "/// Wheel for a single level.\\nstruct Level {}"),
    ...     CardChunk("method", "Level.new", "fn new() -> Level {}")]))
    wheel/level.rs
    struct Level: Wheel for a single level.
    method Level.new
    """
    head = [path]
    if chunks:
        doc = module_doc(chunks[0].text)
        if doc:
            head.append(doc)
    budget = limit - sum(len(h) + 1 for h in head)
    seen: set[str] = set()
    entries: list[tuple[int, int, str]] = []  # (priority, position, line); lower priority is kept first
    for pos, chunk in enumerate(chunks):
        if not chunk.symbol or chunk.symbol in seen:
            continue
        seen.add(chunk.symbol)
        line = _entry(chunk)
        nested = "." in chunk.symbol or "::" in chunk.symbol
        documented = ":" in line[len(chunk.kind) + len(chunk.symbol) + 1 :]
        entries.append(((2 if nested else 0) + (0 if documented else 1), pos, line))
    kept: list[tuple[int, str]] = []
    for _, pos, line in sorted(entries):
        if len(line) + 1 > budget:
            continue
        budget -= len(line) + 1
        kept.append((pos, line))
    return "\n".join(head + [line for _, line in sorted(kept)])
