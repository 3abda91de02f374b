"""The exact-literal retriever: the chunks whose text holds a literal of the query verbatim (the query
itself when it may be quoted code or a message, a quoted string, an identifier, a run of a pasted
message's words; `ranking.literals`), looked up in the store's FTS5 trigram index, not by reading chunks.

BM25 ranks a pasted message by its words, and common words ("invalid", "name", "version") or a message
split by punctuation can leave the chunk that raises it far down the list; the index finds every chunk
holding the text, wherever BM25 put it. Each literal answers at most `LIMIT` chunks: one held by more
is too common to point at any (it adds no candidates and is counted in `LiteralEvidence.common`); a
message window that common is grown to the longest run of the query's words from it that some chunk
still holds (`_grown`), which points at the raisers of a message many definitions share.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from . import literal_index
from .ranking.literals import MESSAGE_WINDOW, Literal, message_window
from .ranking.query import ParsedQuery, exact_matches, is_quotation
from .search import KeywordSnapshot
from .store import Store

LIMIT = 50
GROWN_LIMIT = 4 * LIMIT  # holders of a grown message run read, the best `LIMIT` by keyword score kept


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
    tokens: list[str] = []
    grown_to = 0  # query words before this one are inside a window grown already
    for lit in parsed.literals:
        rows = literal_index.chunks(store, lit.text, LIMIT + 1)
        if len(rows) > LIMIT:
            common.append(lit)
            if lit.kind != "message":
                continue
            tokens = tokens or parsed.text.split()
            grown, grown_to = _grown(store, tokens, lit, grown_to)
            if not grown:
                continue
            rows = grown
            if len(rows) > LIMIT and keyword_scores is not None:
                # Every one holds the whole run pasted: the best by their keyword score stand for it.
                rows.sort(
                    key=lambda row: (
                        -max((float(keyword_scores[d]) for d in by_chunk.get(row[0], ())), default=0.0)
                    )
                )
            rows = rows[:LIMIT]
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


def _grown(
    store: Store, tokens: Sequence[str], lit: Literal, after: int
) -> tuple[list[tuple[int, str]], int]:
    """For a message window more than `LIMIT` chunks hold ("must be greater" where 17 definitions throw
    "Value must be greater than or equal to zero." among a hundred other "must be greater" messages and
    doc comments): the chunks holding the longest run of the query's words from the window's start that
    some chunk holds (found by halving: a run no chunk holds has no longer run held either), at most
    `GROWN_LIMIT` of them (`retrieve` keeps the `LIMIT` best by keyword score); and the query word where
    that run ends (windows starting before it are not grown again). A window starting before `after`,
    not found among the query's words, or that grows no longer: nothing."""
    start = next(
        (
            i
            for i in range(after, len(tokens) - MESSAGE_WINDOW + 1)
            if message_window(tokens, i, i + MESSAGE_WINDOW) == lit.text
        ),
        None,
    )
    if start is None:
        return [], after
    lo, hi = start + MESSAGE_WINDOW, len(tokens)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if literal_index.chunks(store, message_window(tokens, start, mid), 1):
            lo = mid
        else:
            hi = mid - 1
    if lo == start + MESSAGE_WINDOW:
        return [], lo
    return literal_index.chunks(store, message_window(tokens, start, lo), GROWN_LIMIT), lo


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
