"""Retrieval over an in-memory snapshot of one branch's chunks.

The snapshot holds only what ranking and filtering need (term postings, path, kind, symbol, lines);
chunk text stays in SQLite and is fetched for the handful of results shown. Nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import msgspec
import numpy as np

from .bm25 import PostingsIndex, tokenize_query


class Filters(msgspec.Struct, frozen=True):
    """Result filters shared by the CLI, RPC and MCP faces."""

    file_type: str | None = None  # extension, with or without the dot: "py", ".ts"
    directory: str | None = None  # path prefix relative to the root: "src/api"
    kind: str | None = None  # one of models.CHUNK_KINDS

    def is_empty(self) -> bool:
        return not (self.file_type or self.directory or self.kind)


class DocRow(NamedTuple):
    """One (file, chunk) pair as loaded from the store; identical content at two paths gives two docs."""

    chunk_id: int
    path: str
    language: str
    ordinal: int
    start_line: int
    end_line: int
    kind: str
    symbol: str
    n_tokens: int
    term_ids: bytes
    term_tfs: bytes


class Hit(NamedTuple):
    doc: int
    score: float


class KeywordSnapshot:
    """BM25 over every chunk of a branch, plus the per-document metadata filters need."""

    def __init__(self, rows: Iterable[DocRow], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.docs: list[DocRow] = []
        term_ids: list[np.ndarray] = []
        term_tfs: list[np.ndarray] = []
        for row in rows:
            self.docs.append(row._replace(term_ids=b"", term_tfs=b""))
            term_ids.append(np.frombuffer(row.term_ids, dtype=np.int32))
            term_tfs.append(np.frombuffer(row.term_tfs, dtype=np.int32))
        lengths = np.array([d.n_tokens for d in self.docs], dtype=np.float32)
        vocab_size = int(max((int(a.max()) for a in term_ids if a.size), default=0)) + 1
        self.postings = PostingsIndex.from_documents(term_ids, term_tfs, lengths, vocab_size, k1=k1, b=b)
        # Filters test each distinct file once, then spread the answer to its chunks through doc_file.
        file_ids: dict[str, int] = {}
        self.doc_file = np.fromiter(
            (file_ids.setdefault(d.path, len(file_ids)) for d in self.docs),
            dtype=np.int32,
            count=len(self.docs),
        )
        self.file_paths: list[str] = list(file_ids)
        kind_ids: dict[str, int] = {}
        self.doc_kind = np.fromiter(
            (kind_ids.setdefault(d.kind, len(kind_ids)) for d in self.docs),
            dtype=np.int16,
            count=len(self.docs),
        )
        self.kind_ids = kind_ids

    def __len__(self) -> int:
        return len(self.docs)

    def candidate_mask(self, filters: Filters) -> np.ndarray | None:
        """Boolean mask of documents passing the filters, or None when nothing is filtered."""
        if filters.is_empty():
            return None
        file_mask = np.ones(len(self.file_paths), dtype=bool)
        if filters.file_type:
            ext = "." + filters.file_type.lstrip(".").lower()
            file_mask &= np.fromiter(
                (p.lower().endswith(ext) for p in self.file_paths), dtype=bool, count=len(self.file_paths)
            )
        if filters.directory:
            prefix = normalize_directory(filters.directory)
            if prefix:
                file_mask &= np.fromiter(
                    (p.startswith(prefix) for p in self.file_paths), dtype=bool, count=len(self.file_paths)
                )
        mask = file_mask[self.doc_file]
        if filters.kind:
            kind = self.kind_ids.get(filters.kind)
            mask &= self.doc_kind == kind if kind is not None else False
        return mask

    def keyword_hits(
        self, query_term_ids: Sequence[int], k: int, mask: np.ndarray | None = None
    ) -> list[Hit]:
        if not query_term_ids or not self.docs:
            return []
        docs, scores = self.postings.top_k(list(query_term_ids), k, candidate_mask=mask)
        return [Hit(int(d), float(s)) for d, s in zip(docs, scores, strict=True)]


def normalize_directory(directory: str) -> str:
    """'./src/api/' -> 'src/api/'; '' or '.' -> '' (no filter)."""
    cleaned = directory.replace("\\", "/").strip()
    while cleaned.startswith("./"):
        cleaned = cleaned[2:]
    cleaned = cleaned.strip("/")
    if cleaned in ("", "."):
        return ""
    return cleaned + "/"


def query_terms(query: str) -> list[str]:
    """Distinct query tokens in first-seen order (the tokenizer is the one documents use)."""
    return list(dict.fromkeys(tokenize_query(query)))


def preview(text: str, limit: int = 200) -> str:
    return text[:limit]
