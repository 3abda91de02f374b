"""The exact-literal retriever: the chunks whose text holds a literal of the query verbatim (the query
itself when it may be quoted code or a message, a quoted string, an identifier, a run of a pasted
message's words; `ranking.literals`), looked up in the store's FTS5 trigram index, not by reading chunks.

BM25 ranks a pasted message by its words, and common words ("invalid", "name", "version") or a message
split by punctuation can leave the chunk that raises it far down the list; the index finds every chunk
holding the text, wherever BM25 put it. Each literal answers at most `LIMIT` chunks: one held by more
is too common to point at any (it adds no candidates and is counted in `LiteralEvidence.common`).
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from . import literal_index
from .ranking.literals import Literal
from .ranking.query import ParsedQuery, exact_matches, is_quotation
from .search import KeywordSnapshot
from .store import Store

LIMIT = 50


class LiteralEvidence(NamedTuple):
    """What the literal retriever found, by document of the snapshot."""

    matches: dict[int, tuple[Literal, ...]]  # the literals each document's text holds, in query order
    texts: dict[int, str]  # the texts read (the rank stage's verbatim checks reuse them)
    common: tuple[Literal, ...] = ()  # held by more than LIMIT chunks: no candidates from them
    unavailable: str = ""  # why the index could not answer ("" when it could)
    looked_up: bool = False  # the index was asked (the query had literals and the index was ready)

    def docs(self, kinds: Sequence[str]) -> list[int]:
        """Documents holding a literal of one of `kinds`, in the retriever's order."""
        return [d for d, found in self.matches.items() if any(lit.kind in kinds for lit in found)]


NO_EVIDENCE = LiteralEvidence({}, {})

_DOCS_OF_CHUNK: weakref.WeakKeyDictionary[KeywordSnapshot, tuple[int, dict[int, list[int]]]] = (
    weakref.WeakKeyDictionary()
)


def _docs_of_chunk(snap: KeywordSnapshot) -> dict[int, list[int]]:
    """chunk id -> the snapshot's documents holding it (one chunk can live at several paths), once per
    snapshot."""
    cached = _DOCS_OF_CHUNK.get(snap)
    if cached is None or cached[0] != len(snap.docs):
        out: dict[int, list[int]] = {}
        for d, doc in enumerate(snap.docs):
            out.setdefault(doc.chunk_id, []).append(d)
        cached = (len(snap.docs), out)
        _DOCS_OF_CHUNK[snap] = cached
    return cached[1]


def retrieve(
    store: Store,
    snap: KeywordSnapshot,
    parsed: ParsedQuery,
    mask: np.ndarray | None = None,
    keyword_scores: np.ndarray | None = None,
) -> LiteralEvidence:
    """Look up each literal of the parsed query; documents outside the snapshot's live set or the
    filters' `mask` are left out. Each literal's documents are ordered by their keyword score (best
    first) when `keyword_scores` is given, else as the index returns them."""
    if not parsed.literals:
        return NO_EVIDENCE
    if not literal_index.ready(store):
        return LiteralEvidence({}, {}, unavailable=literal_index.status(store) or "")
    by_chunk = _docs_of_chunk(snap)
    live = snap.live
    matches: dict[int, list[Literal]] = {}
    texts: dict[int, str] = {}
    common: list[Literal] = []
    for lit in parsed.literals:
        rows = literal_index.chunks(store, lit.text, LIMIT + 1)
        if len(rows) > LIMIT:
            common.append(lit)
            continue
        docs: list[int] = []
        for chunk_id, text in rows:
            for d in by_chunk.get(chunk_id, ()):
                if (live is None or live[d]) and (mask is None or mask[d]):
                    docs.append(d)
                    texts[d] = text
        if keyword_scores is not None and len(docs) > 1:
            docs.sort(key=lambda d: -float(keyword_scores[d]))
        for d in docs:
            matches.setdefault(d, []).append(lit)
    return LiteralEvidence(
        {d: tuple(found) for d, found in matches.items()}, texts, tuple(common), looked_up=True
    )


def exact_docs(parsed: ParsedQuery, evidence: LiteralEvidence, scanned: Mapping[int, str]) -> list[int]:
    """The documents whose text holds the whole query verbatim (`ranking.exact_matches`), for a query
    that may be quoted text (`ranking.is_quotation`): among every chunk the literal index says holds its
    longest line when the index answered, else (no index, or a line too common) among the `scanned`
    texts of the best keyword candidates, as before the index existed."""
    if not is_quotation(parsed):
        return []
    whole = next((lit for lit in parsed.literals if lit.kind == "query"), None)
    if whole is None or not evidence.looked_up or whole in evidence.common:
        return exact_matches(parsed, scanned.items())
    return exact_matches(parsed, ((d, evidence.texts[d]) for d in evidence.docs(("query",))))
