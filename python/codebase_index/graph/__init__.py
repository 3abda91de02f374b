"""Code graph: definitions, references and imports per file, resolved into call edges across files.

Storage-free on purpose: the indexer feeds `extract_file` (optionally with the tree it already parsed),
keeps the FileGraphs, and calls `resolve` over them; the store persists the result.
"""

from __future__ import annotations

from .extract import extract_file
from .languages import SPECS, language_spec
from .records import (
    MODULE_CALLER,
    Definition,
    Edge,
    FileGraph,
    ImportBinding,
    Reference,
    ResolveStats,
)
from .resolve import resolve, resolve_with_stats
from .traverse import callees, callers

SUPPORTED_LANGUAGES: tuple[str, ...] = tuple(SPECS)

__all__ = [
    "MODULE_CALLER",
    "SUPPORTED_LANGUAGES",
    "Definition",
    "Edge",
    "FileGraph",
    "ImportBinding",
    "Reference",
    "ResolveStats",
    "callees",
    "callers",
    "extract_file",
    "language_spec",
    "resolve",
    "resolve_with_stats",
]
