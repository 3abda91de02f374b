"""Typed records that flow between the pipeline stages (discover -> chunk -> store -> search).

They are msgspec Structs so the same types serialise to the CLI's JSON, the JSON-RPC wire and MCP
without hand-written converters.
"""

from __future__ import annotations

from typing import Literal

import msgspec

ChunkKind = Literal[
    "function",
    "method",
    "class",
    "interface",
    "type",
    "enum",
    "struct",
    "impl",
    "trait",
    "module",
    "block",
    "section",
]
CHUNK_KINDS: tuple[str, ...] = ChunkKind.__args__  # type: ignore[attr-defined]

SkipReason = Literal[
    "ignored",
    "too-large",
    "binary",
    "unreadable",
    "unsupported",
    "generated",
    "secret",
    "error",
    "invalid-ignore",
    "unreadable-name",
]
SKIP_REASONS: tuple[str, ...] = SkipReason.__args__  # type: ignore[attr-defined]


class ChunkSpan(msgspec.Struct, frozen=True):
    """One searchable piece of a file as the chunker cuts it (lines are 1-based, inclusive)."""

    start_line: int
    end_line: int
    kind: str
    symbol: str
    text: str


class DiscoveredFile(msgspec.Struct, frozen=True):
    """A file that passed discovery; `path` is relative to the root, POSIX separators."""

    path: str
    abs_path: str
    size: int
    mtime_ns: int
    inode: int


class SkippedFile(msgspec.Struct, frozen=True):
    path: str
    reason: str
    detail: str = ""


class SearchResult(msgspec.Struct):
    id: int
    score: float
    path: str
    start_line: int
    end_line: int
    kind: str
    symbol: str
    language: str
    chunk: int
    preview: str
    content: str | None = None
    repo: str | None = None  # set by multi-repository searches: which repository the chunk is from
