"""Cut source files into searchable chunks: definitions via tree-sitter, sections for markdown,
top-level keys for data files, line windows for everything else.

Decisions worth knowing (details in `code.py`, `text.py`, `data.py`):

* One chunk per definition. A class/struct/impl/trait/module chunk is its header only (start up
  to the first member definition: docstring, fields); methods are separate chunks qualified with
  their container (`Outer.Inner.method`, Go `Receiver.method`, Rust `Foo.bar`). A Rust impl chunk
  is named `Foo` or `Trait for Foo`. C++ out-of-class definitions are functions named `Foo.bar`.
* Comments, decorators and attributes directly above a definition (no blank line) belong to it.
* Everything else becomes `block` chunks labelled with the names they declare (`MAX_RETRIES`).
* Oversized chunks become overlapping line windows; windows after the first repeat the
  signature (or markdown heading) line as their first text line.

    >>> chunks = chunk_text("a.py", "import os\\n\\ndef f():\\n    pass\\n")
    >>> [(c.start_line, c.end_line, c.kind, c.symbol) for c in chunks]
    [(1, 1, 'block', ''), (3, 4, 'function', 'f')]
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from tree_sitter import Tree

from codebase_index.chunking.code import chunk_code
from codebase_index.chunking.data import chunk_data
from codebase_index.chunking.embedded import chunk_embedded
from codebase_index.chunking.languages import SPECS, is_cpp_header, language_for_path
from codebase_index.chunking.text import budget_chars, chunk_markdown, chunk_windows
from codebase_index.models import ChunkSpan

__all__ = ["chunk_text", "language_for_path"]

_log = logging.getLogger(__name__)

_DATA = frozenset({"json", "yaml", "toml"})
_EMBEDDED = frozenset({"vue", "svelte", "astro"})
_MINIFIED_LINE_CHARS = 400  # average characters per line above which a file counts as minified


def chunk_text(
    path: str,
    text: str,
    language: str | None = None,
    *,
    max_chunk_tokens: int = 512,
    on_tree: Callable[[Tree], None] | None = None,
    on_error: Callable[[Exception], None] | None = None,
) -> list[ChunkSpan]:
    """Cut one file into chunks ordered by start line; every non-blank line lands in some chunk.

    `language` defaults to `language_for_path(path)`; unknown languages get line windows.
    `on_tree` receives the tree-sitter tree of a grammar-chunked file (the code graph reuses it).
    A structured chunker that raises falls back to line windows (the file stays searchable) and
    `on_error` receives the exception, so the caller can report it.
    `max_chunk_tokens` bounds a chunk at about 4 characters per token: larger definitions are
    split into overlapping windows that repeat the signature line.
    """
    if not text.strip():
        return []
    lines = text.splitlines()
    if language is None:
        language = language_for_path(path, text=text)
    elif language == "c" and path.lower().endswith(".h") and is_cpp_header(text):
        language = "cpp"
    max_chars = budget_chars(max_chunk_tokens)
    if len(text) > _MINIFIED_LINE_CHARS * len(lines):
        # Minified/generated code: thousands of definitions share a line; windows serve it better.
        return chunk_windows(lines, max_chars)
    try:
        return _chunk_structured(text, lines, language, max_chars, on_tree)
    except Exception as exc:  # a grammar or chunker surprise must not lose the file
        _log.warning("chunking %s as %s failed; using line windows", path, language, exc_info=True)
        if on_error is not None:
            on_error(exc)
        return chunk_windows(lines, max_chars)


def _chunk_structured(
    text: str, lines: list[str], language: str | None, max_chars: int, on_tree: Callable[[Tree], None] | None
) -> list[ChunkSpan]:
    spec = SPECS.get(language or "")
    if spec is not None:
        return chunk_code(text, lines, spec, max_chars, on_tree)
    if language == "markdown":
        return chunk_markdown(lines, max_chars)
    if language in _DATA:
        return chunk_data(text, lines, language or "", max_chars)
    if language in _EMBEDDED:
        return chunk_embedded(text, lines, language or "", max_chars)
    return chunk_windows(lines, max_chars)
