"""Cut source files into searchable chunks: definitions via tree-sitter, sections for markdown,
top-level keys for data files, line windows for everything else.

    >>> chunks = chunk_text("a.py", "import os\\n\\ndef f():\\n    pass\\n")
    >>> [(c.start_line, c.end_line, c.kind, c.symbol) for c in chunks]
    [(1, 1, 'block', ''), (3, 4, 'function', 'f')]
"""

from __future__ import annotations

from codebase_index.chunking.code import chunk_code
from codebase_index.chunking.data import chunk_data
from codebase_index.chunking.embedded import chunk_embedded
from codebase_index.chunking.languages import SPECS, is_cpp_header, language_for_path
from codebase_index.chunking.text import budget_chars, chunk_markdown, chunk_windows
from codebase_index.models import ChunkSpan

__all__ = ["chunk_text", "language_for_path"]

_DATA = frozenset({"json", "yaml", "toml"})
_EMBEDDED = frozenset({"vue", "svelte", "astro"})


def chunk_text(
    path: str, text: str, language: str | None = None, *, max_chunk_tokens: int = 512
) -> list[ChunkSpan]:
    """Cut one file into chunks ordered by start line; every non-blank line lands in some chunk.

    `language` defaults to `language_for_path(path)`; unknown languages get line windows.
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
    spec = SPECS.get(language or "")
    if spec is not None:
        return chunk_code(text, lines, spec, max_chars)
    if language == "markdown":
        return chunk_markdown(lines, max_chars)
    if language in _DATA:
        return chunk_data(text, lines, language or "", max_chars)
    if language in _EMBEDDED:
        return chunk_embedded(text, lines, language or "", max_chars)
    return chunk_windows(lines, max_chars)
