"""The rank stage as the engine calls it: fuse the retrievers' candidates, score the head with the
code-aware features, keep the tail in fused order; and the merge of an external reranker's answer.
"""

from __future__ import annotations

import contextlib
import contextvars
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ..search import Hit, KeywordSnapshot, new_record
from .features import (
    definition_match,
    definition_score,
    file_penalty,
    path_stem_weights,
    shadowed_private,
    superseded_dirs,
)
from .fusion import fuse
from .learned import Evidence, rank_learned, usable_model
from .literals import Literal
from .messages import message_holder, message_holders
from .model import Candidate, PathFeatures, RankParams, path_features, rank
from .query import ParsedQuery, parse_query  # noqa: F401  (parse_query: the doctests use it)

if TYPE_CHECKING:
    from ..config import SearchConfig


class Captured(NamedTuple):
    """One rank stage's input as the scorer saw it (`capture`): for fitting the model."""

    parsed: ParsedQuery
    candidates: list[Candidate]
    evidence: Evidence
    path_weights: dict[str, float]
    exact: tuple[int, ...] = ()  # the candidates holding the whole query verbatim (`guarantees`)
    quoting: tuple[int, ...] = ()  # the candidates holding every string the query quotes (`guarantees`)


_CAPTURE: contextvars.ContextVar[list[Captured] | None] = contextvars.ContextVar("rank_capture", default=None)


@contextlib.contextmanager
def capture() -> Iterator[list[Captured]]:
    """Record every rank stage run inside the block (the training script's feature extraction reads
    the engine's real candidates this way, not a re-implementation of the search)."""
    found: list[Captured] = []
    token = _CAPTURE.set(found)
    try:
        yield found
    finally:
        _CAPTURE.reset(token)


class Layout(NamedTuple):
    """What the rank stage knows of a snapshot's files, whatever the query: computed once per snapshot."""

    superseded: tuple[str, ...]  # `superseded_dirs`, as "dir/" prefixes
    shadowed: frozenset[str]  # `shadowed_private`
    path_weights: dict[str, float]  # `path_stem_weights`
    file_ids: np.ndarray  # each document's file, one id per distinct path (fusion's file votes)
    file_flags: np.ndarray  # per file id: 1 superseded, 2 shadowed (the candidates' flags)


_LAYOUT: weakref.WeakKeyDictionary[KeywordSnapshot, tuple[tuple[int, int], Layout]] = (
    weakref.WeakKeyDictionary()
)


def layout_of(snap: KeywordSnapshot) -> Layout:
    """The snapshot's `Layout`, computed once per snapshot (and again if its file or document list grows
    or shrinks)."""
    key = (len(snap.file_paths), len(snap.docs))
    cached = _LAYOUT.get(snap)
    if cached is None or cached[0] != key:
        paths = snap.file_paths
        old = tuple(sorted(superseded_dirs(paths)))
        shadowed = shadowed_private(paths)
        # An overlay may give a changed file's path a second id: one id per distinct path.
        first_id: dict[str, int] = {}
        canonical = np.fromiter(
            (first_id.setdefault(p, i) for i, p in enumerate(paths)), np.int64, len(paths)
        )
        flags = np.fromiter(
            ((1 if old and p.startswith(old) else 0) | (2 if p in shadowed else 0) for p in paths),
            np.int8,
            len(paths),
        )
        layout = Layout(old, shadowed, path_stem_weights(paths), canonical[snap.doc_file], flags)
        cached = (key, layout)
        _LAYOUT[snap] = cached
    return cached[1]


def prepare(
    parsed: ParsedQuery,
    snap: KeywordSnapshot,
    docs: Iterable[int],
    config: SearchConfig,
    params: RankParams | None = None,
) -> PathFeatures:
    """What the rank stage can compute of candidates known before the query vector arrives (the keyword,
    graph and exact-text retrievers' documents), computed while it is being computed: their files'
    features (`model.path_features`, passed to `rank_hits` as `paths`) and their symbols' definition
    match (cached by `features.definition_match`). Only the rules scorer uses them."""
    if scorer_for(parsed, config.ranker, hybrid=True) != "rules":
        return {}
    rows = snap.docs
    found = [rows[d] for d in dict.fromkeys(docs)]
    if parsed.identifiers:
        for row in found:
            if row.symbol:
                definition_match(row.symbol, parsed.identifiers)
    return path_features(
        dict.fromkeys(row.path for row in found), parsed, params, layout_of(snap).path_weights
    )


def scorer_for(parsed: ParsedQuery, ranker: str, hybrid: bool = False) -> str:
    """The scorer a query gets: `ranker` itself, or for "auto" the fitted model on pasted code (where it
    beats the rules on the held-out validation repositories: file MRR@10 snippet 0.924 -> 0.936, renamed
    snippet 0.755 -> 0.816) and on change requests without vector candidates (`hybrid` False: keyword
    0.649 -> 0.700 for them), and the rules elsewhere: descriptions and identifiers within 0.004 of
    them, relation questions 0.012 below, and change requests among vector candidates, where the model
    (fitted without vectors for change descriptions) is not better: validation 0.734 vs the rules' 0.738
    (bench/ranker_hybrid.md, session 9).

    >>> [scorer_for(parse_query(q), "auto") for q in ("x = f(y);", "Fix the retry delay", "retry")]
    ['learned', 'learned', 'rules']
    >>> scorer_for(parse_query("Fix the retry delay"), "auto", hybrid=True)
    'rules'
    """
    if ranker != "auto":
        return ranker
    return "learned" if parsed.style == "snippet" or (parsed.change and not hybrid) else "rules"


def rank_hits(
    parsed: ParsedQuery,
    snap: KeywordSnapshot,
    keyword_hits: Sequence[tuple[int, float]],
    semantic_hits: Sequence[tuple[int, float]],
    config: SearchConfig,
    params: RankParams | None = None,
    keyword_score: Callable[[Sequence[int]], Sequence[float]] | None = None,
    verbatim: bool = False,
    relation: Sequence[int] = (),
    exact: Sequence[int] = (),
    spans: Mapping[int, int] | None = None,
    literal: Mapping[int, tuple[Literal, ...]] | None = None,
    paths: PathFeatures | None = None,
    votes: Sequence[np.ndarray | None] = (),
) -> list[Hit]:
    """THE ranking entry point of every search mode: fuse the retrievers' candidates (either list may
    be empty), rerank the best `config.rerank_top_n` with the code-aware signals, keep the rest after
    them in fused order. Scores are comparable within one answer only. `keyword_score` gives any
    document's keyword score, `verbatim` says a keyword candidate quotes the query (see `fusion.fuse`).
    `relation`: the documents the code graph answers a relation question with (the callers of X, best
    first); they join the head as candidates with their relation as a feature. `exact`: the keyword
    candidates whose text holds the whole query verbatim (see `guarantees`); `spans`: the longest verbatim
    run of the query's words in each candidate whose text was read (`messages.verbatim_spans`); `literal`:
    the literals of the query each document holds verbatim (`codebase_index.literal`); `paths`: the
    candidates' file features computed ahead (`prepare`); `votes`: the deeper rankings the retrievers' file
    votes read (`fusion.fuse`). The exact-text
    evidence (the exact holders, the message holder, quoted-string holders) joins the head like the
    graph's answers, wherever the other retrievers put it."""
    spans = spans or {}
    literal = literal or {}
    docs = snap.docs
    layout = layout_of(snap)
    ordered = fuse(
        parsed, keyword_hits, semantic_hits, config, layout.file_ids, params, keyword_score, verbatim, votes
    )
    top_n = config.rerank_top_n
    if top_n <= 0 or not ordered:
        return [Hit(d, s) for d, s in ordered]
    head, tail = ordered[:top_n], ordered[top_n:]
    related = frozenset(relation)
    quoted = frozenset(d for d, found in literal.items() if any(lit.kind == "quoted" for lit in found))
    wanted = {lit for lit in parsed.literals if lit.kind == "quoted"}
    # The one chunk holding every string the user quoted is promoted; a pasted snippet's string literals
    # are evidence, not a pointer ('abcb' in a doctest is held by another function's doctest too).
    quoting = [] if parsed.code_like else [d for d in quoted if wanted <= set(literal[d])]
    holder = message_holder(spans) if spans else None
    joining = [*relation, *exact, *([holder] if holder is not None else []), *quoted, *literal]
    if joining:
        # Graph answers and the literal retriever's hits (every chunk holding a literal of the query:
        # at most literal.LIMIT per literal) outside the head join it at its lowest score: their
        # relation, the guarantees or the scorer lift them.
        have = {d for d, _ in head}
        floor = head[-1][1]
        joined = frozenset(joining)
        tail = [(d, s) for d, s in tail if d not in joined]
        head = head + [(d, floor) for d in dict.fromkeys(joining) if d not in have]
    path_weights = layout.path_weights
    head_docs = [d for d, _ in head]
    flags = layout.file_flags[layout.file_ids[head_docs]].tolist() if head_docs else []
    candidates = []
    for (d, s), flag in zip(head, flags, strict=True):
        doc = docs[d]
        candidates.append(
            new_record(Candidate, (d, doc.path, doc.symbol, doc.kind, s, bool(flag & 1), bool(flag & 2)))
        )
    recording = _CAPTURE.get()
    model = usable_model()[0] if scorer_for(parsed, config.ranker, bool(semantic_hits)) == "learned" else None
    learned = model is not None  # an unreadable model: the rules (`usable_model`; the search says so)
    if learned or recording is not None:
        evidence = Evidence(
            {d: (s, r) for r, (d, s) in enumerate(keyword_hits)},
            {d: (s, r) for r, (d, s) in enumerate(semantic_hits)},
            related,
            spans,
            literal,
        )
        if recording is not None:
            recording.append(
                Captured(parsed, candidates, evidence, path_weights, tuple(exact), tuple(quoting))
            )
    if model is not None:
        ranked = rank_learned(candidates, parsed, evidence, path_weights, model)
    else:
        ranked = rank(candidates, parsed, params, path_weights, related, quoted, paths)
    out = guarantees(ranked, parsed, candidates, exact, spans, quoting)
    if tail:
        # The tail keeps its fused order, scaled to sit strictly below the reranked head.
        floor = min((r.score for r in ranked), default=1.0)
        last = head[-1][1] or 1.0
        out += [Hit(d, floor * 0.999 * (s / last if last > 0 else 1.0)) for d, s in tail]
    return out


def guarantees(
    ranked: list[Hit],
    parsed: ParsedQuery,
    candidates: Sequence[Candidate],
    exact: Sequence[int],
    spans: Mapping[int, int] | None = None,
    quoting: Sequence[int] = (),
) -> list[Hit]:
    """What no scorer may trade away: a query one chunk alone holds verbatim ranks that chunk first; else
    the one chunk holding the longest verbatim stretch of it (a pasted message with words around it:
    `messages.message_holders`), or when several do (a message several definitions raise) the first of them
    whose file kind is not demoted; else the one chunk holding every string the query quotes (`quoting`, from
    the literal retriever); a lone identifier that exactly one candidate defines ranks that definition
    first (a relation question names a symbol to find its callers, so not there). The promoted chunk
    takes the top score."""
    first = guaranteed_first(parsed, candidates, exact, spans, quoting)
    if first is None or not ranked or ranked[0].doc == first:
        return ranked
    at = next((i for i, h in enumerate(ranked) if h.doc == first), None)
    if at is None:
        return ranked
    top = ranked[0].score
    return [Hit(first, top + abs(top) * 1e-6 + 1e-9), *ranked[:at], *ranked[at + 1 :]]


def guaranteed_first(
    parsed: ParsedQuery,
    candidates: Sequence[Candidate],
    exact: Sequence[int],
    spans: Mapping[int, int] | None = None,
    quoting: Sequence[int] = (),
) -> int | None:
    """The document `guarantees` ranks first whatever the scorer says, or None. Several chunks holding
    the query verbatim that are windows of one definition (an oversized function cut with overlap)
    count as one: the first of them in the candidates' order."""
    if len(exact) == 1:
        return exact[0]
    if exact:
        exact_holders = set(exact)
        windows = [c for c in candidates if c.doc in exact_holders]
        if len(windows) == len(exact_holders) and len({(c.path, c.symbol) for c in windows}) == 1:
            return windows[0].doc
    holders = message_holders(spans) if spans else frozenset()
    if len(holders) == 1:
        return next(iter(holders))
    if holders:
        # A message several definitions raise: each holder of its longest run raises (or asserts) it, so
        # one of them goes first, not a chunk that only mentions its words: the first in the candidates'
        # order among those whose file kind the scorer does not demote (a test asserting the message).
        holding = [c for c in candidates if c.doc in holders]
        if holding:
            return max(holding, key=lambda c: file_penalty(c.path, parsed)).doc
    if len(quoting) == 1:
        return quoting[0]
    if parsed.symbol_query and parsed.relation is None:
        defining = [c.doc for c in candidates if definition_score(c.symbol, parsed) >= 1.0]
        if len(defining) == 1:
            return defining[0]
    return None


def merge_external(
    hits: Sequence[tuple[int, float]], external: Sequence[tuple[int, float]], top_n: int
) -> list[Hit]:
    """Apply an external reranker's answer ((index into hits[:top_n], relevance) pairs, best first) to
    the deterministic order: the indices it returned come first in its order, the rest of the head
    keeps its deterministic order after them, then the tail. Scores become ranks (1/position) so that
    the two scales are never mixed. Raises ValueError on an index outside the head or a repeat.

    >>> merge_external([Hit(7, 3.0), Hit(8, 2.0), Hit(9, 1.0)], [(1, 0.9)], 2)
    [Hit(doc=8, score=1.0), Hit(doc=7, score=0.5), Hit(doc=9, score=0.333333)]
    """
    head = list(hits[:top_n])
    chosen: list[int] = []
    for index, _ in external:
        if not 0 <= index < len(head):
            raise ValueError(f"reranker returned index {index} outside the {len(head)} documents sent")
        if index in chosen:
            raise ValueError(f"reranker returned index {index} twice")
        chosen.append(index)
    rest = [i for i in range(len(head)) if i not in set(chosen)]
    order = [head[i][0] for i in chosen + rest] + [h[0] for h in hits[top_n:]]
    return [Hit(doc, round(1.0 / (pos + 1), 6)) for pos, doc in enumerate(order)]
