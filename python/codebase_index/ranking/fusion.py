"""Fusion: the retrievers' candidate lists into one first-stage order (weighted reciprocal-rank fusion
or a convex combination of scores), with the keyword share the parsed query calls for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import itemgetter
from typing import TYPE_CHECKING

import numpy as np

from .model import RankParams, best_first
from .query import LITERAL_SCORE_FUSION, VERBATIM_KEYWORD_WEIGHT, ParsedQuery, identifier_keyword_weight

if TYPE_CHECKING:
    from ..config import SearchConfig


def fuse_rrf(
    rankings: Sequence[Sequence[int]], k: int, weights: Sequence[float] | None = None
) -> dict[int, float]:
    """Weighted reciprocal-rank fusion: sum of w / (k + rank) over the rankings (rank from 1).

    >>> fused = fuse_rrf([[1, 2], [2, 3]], k=1)
    >>> {d: round(s, 3) for d, s in fused.items()}
    {1: 0.5, 2: 0.833, 3: 0.333}
    """
    if k < 1:
        raise ValueError(f"rrfK must be >= 1, got {k}")
    ws = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(ws) != len(rankings):
        raise ValueError("one weight per ranking is required")
    fused: dict[int, float] = {}
    for ranking, w in zip(rankings, ws, strict=True):
        seen: set[int] = set()
        for rank, doc in enumerate(ranking, 1):
            if doc in seen:
                continue
            seen.add(doc)
            fused[doc] = fused.get(doc, 0.0) + w / (k + rank)
    return fused


def _minmax(scores: Mapping[int, float]) -> dict[int, float]:
    """Scale to 0..1 by the max (a lone or all-equal list maps to 1.0); negative scores clip to 0."""
    if not scores:
        return {}
    top = max(scores.values())
    low = min(0.0, min(scores.values()))
    span = top - low
    if span <= 0:
        return dict.fromkeys(scores, 1.0)
    return {d: (s - low) / span for d, s in scores.items()}


def fuse_weighted(
    keyword: Mapping[int, float], semantic: Mapping[int, float], keyword_weight: float
) -> dict[int, float]:
    """Convex combination of max-normalised keyword and vector scores; a document missing from one list
    gets 0 from it.

    >>> fuse_weighted({1: 10.0, 2: 5.0}, {2: 0.9, 3: 0.3}, 0.5)
    {1: 0.5, 2: 0.75, 3: 0.16666666666666666}
    """
    if not 0.0 <= keyword_weight <= 1.0:
        raise ValueError(f"hybridWeight must be within 0..1, got {keyword_weight}")
    kw, sem = _minmax(keyword), _minmax(semantic)
    out: dict[int, float] = {}
    for doc in dict.fromkeys([*kw, *sem]):
        out[doc] = keyword_weight * kw.get(doc, 0.0) + (1.0 - keyword_weight) * sem.get(doc, 0.0)
    return out


def file_ranks(ranking: Sequence[int], file_of: Callable[[int], str]) -> dict[str, int]:
    """1-based rank of each file by its best chunk in a chunk ranking (the file-level view of it).

    >>> file_ranks([4, 5, 6], {4: "a", 5: "a", 6: "b"}.__getitem__)
    {'a': 1, 'b': 2}
    """
    out: dict[str, int] = {}
    for doc in ranking:
        out.setdefault(file_of(doc), len(out) + 1)
    return out


def fuse(
    parsed: ParsedQuery,
    keyword_hits: Sequence[tuple[int, float]],
    semantic_hits: Sequence[tuple[int, float]],
    config: SearchConfig,
    file_ids: np.ndarray | None = None,
    params: RankParams | None = None,
    keyword_score: Callable[[Sequence[int]], Sequence[float]] | None = None,
    verbatim: bool = False,
    votes: Sequence[np.ndarray | None] = (),
) -> list[tuple[int, float]]:
    """One first-stage order: keyword scores alone, or the configured fusion of both rankings.

    With RRF, each retriever also votes for files: a chunk gains `file_weight` times the RRF term of
    its file's rank in that retriever's file-level view, so a file whose chunks the vectors like as a
    whole lifts its chunks found by either retriever (`file_ids`: each document's file, one integer per
    path). `votes` (keyword, vector): a deeper ranking of that retriever's documents (best first, its
    candidates first) to take the file ranks from instead of its candidate list; None or absent: the
    candidate list. Given `keyword_score` (a document's keyword score),
    RRF ranks the vector candidates the keyword list left out by their keyword score too
    (`complete_keyword`): benchmark hybrid 0.8535 -> 0.8583. Literal queries (score fusion) keep their
    own keyword list: there the added candidates pushed definitions out of the reranked head (symbol
    queries 0.961 -> 0.951). Completing the vector list the same way (kw-only candidates at their
    cosine) measured worse (0.8550), so the vector list stays as retrieved. `verbatim` (a candidate
    quotes the query: `quotes_query`) fuses by score at `VERBATIM_KEYWORD_WEIGHT`, as pasted code."""
    if not semantic_hits:
        ordered = list(keyword_hits)
    elif not keyword_hits:
        ordered = list(semantic_hits)
    else:
        weight = identifier_keyword_weight(parsed, config.hybrid_weight)
        if verbatim:
            weight = max(weight, VERBATIM_KEYWORD_WEIGHT)
        literal = parsed.literal or verbatim
        if config.fusion_strategy == "weighted" or (LITERAL_SCORE_FUSION and literal):
            ordered = list(fuse_weighted(dict(keyword_hits), dict(semantic_hits), weight).items())
        else:
            # Weights 2w and 2(1-w): plain RRF at hybridWeight 0.5. The default 0.6 leans on keywords
            # since inflections and `complete_keyword` made them stronger: benchmark hybrid 0.8652 ->
            # 0.8676, validation hybrid 0.937 -> 0.938 (0.5 / 0.55 / 0.65 / 0.7: 0.8652 / 0.8656 /
            # 0.8652 / 0.8628). Re-checked with code-static-v2 vectors (validation, hybrid, file MRR@10
            # 0.8747 at 0.6): 0.5 / 0.55 / 0.65 / 0.7 / 0.8 gave 0.8741 / 0.8744 / 0.8751 / 0.8756 /
            # 0.8758, no style-wide win (above 0.6 description chunks and change requests fall), so 0.6
            # stays; rrfK 20 / 30 / 45 / 100 / 150 likewise (bench/ranker_hybrid.md, session 12).
            p = params or RankParams()
            keyword_docs, semantic_docs = _docs(keyword_hits), _docs(semantic_hits)
            if keyword_score is not None:
                extra, _ = _keyword_extra(keyword_docs, semantic_docs, keyword_score)
                keyword_docs = np.concatenate((keyword_docs, extra))
            rankings = [keyword_docs, semantic_docs]
            weights = [2.0 * weight, 2.0 * (1.0 - weight)]
            file_weights = (p.keyword_file, p.semantic_file) if file_ids is not None else (0.0, 0.0)
            return _rrf_with_files(rankings, weights, file_weights, config.rrf_k, file_ids, votes)
    return best_first(ordered, 1)


def _rrf_with_files(
    rankings: Sequence[np.ndarray],
    weights: Sequence[float],
    file_weights: Sequence[float],
    k: int,
    file_ids: np.ndarray | None,
    votes: Sequence[np.ndarray | None] = (),
) -> list[tuple[int, float]]:
    """`fuse_rrf` of rankings without repeats, plus each ranking's file vote (`file_ranks` of the
    ranking, or of its entry in `votes` when given) as `fuse` describes, best first (ties by document).
    In numpy over the candidates: a hybrid search fuses ~200 of them, and the dict loops with a path
    lookup per document cost ~0.2 ms of a ~2.4 ms search. Each score is the same sum in the same order
    as `fuse_rrf` then the votes (0.0 + each ranking's term, then each vote), so the floats equal the
    dict version's. Scratch arrays span the documents (`np.zeros`
    maps pages lazily: only the candidates' are touched)."""
    size = file_ids.shape[0] if file_ids is not None else 1 + max(int(r.max()) for r in rankings if r.size)
    seen = np.zeros(size, dtype=bool)
    scores = np.zeros(size)
    docs = rankings[0][:0]
    for ranking, w in zip(rankings, weights, strict=True):
        scores[ranking] += w / (k + np.arange(1, ranking.shape[0] + 1))
        docs = np.concatenate((docs, ranking[~seen[ranking]]))
        seen[ranking] = True
    fused = scores[docs]
    if file_ids is not None:
        doc_files = file_ids[docs]
        deeper = [*votes, *[None] * (len(rankings) - len(votes))]
        for ranking, w, fw, deep in zip(rankings, weights, file_weights, deeper, strict=True):
            if deep is not None:
                ranking = deep
            if fw <= 0 or not ranking.shape[0]:
                continue
            # A file's rank in this ranking: by the first position of any of its chunks.
            files = file_ids[ranking]
            first = np.zeros(size, dtype=np.int64)  # file id -> 1-based first position (0: absent)
            first[files[::-1]] = np.arange(files.shape[0], 0, -1)  # the last write (the first position) wins
            rank_at = np.cumsum(first[files] == np.arange(1, files.shape[0] + 1))  # files so far
            at = first[doc_files]
            voted = at > 0
            fused[voted] += fw * w / (k + rank_at[at[voted] - 1])
    order = np.lexsort((docs, -fused))
    return list(zip(docs[order].tolist(), fused[order].tolist(), strict=True))


def complete_keyword(
    keyword_hits: Sequence[tuple[int, float]],
    semantic_hits: Sequence[tuple[int, float]],
    keyword_score: Callable[[Sequence[int]], Sequence[float]],
) -> list[tuple[int, float]]:
    """The keyword ranking extended with the vector candidates it left out, at their true keyword score.

    The keyword retriever returns its top `pool` only, and on code that top is crowded with tiny chunks
    (a two-line chunk that repeats a query word outscores the module doc that explains the subject). A
    vector candidate outside it then counted as unmatched by keywords in fusion, below chunks both
    retrievers merely like. The added documents score at most the list's last score (they were not in
    its top), so appending them in score order keeps the list sorted; those without any query term
    (score 0) stay out.

    >>> kw_scores = {2: 2.0, 3: 0.0}
    >>> complete_keyword([(1, 5.0)], [(2, 0.9), (3, 0.8), (1, 0.7)], lambda ds: [kw_scores[d] for d in ds])
    [(1, 5.0), (2, 2.0)]
    """
    extra, scores = _keyword_extra(_docs(keyword_hits), _docs(semantic_hits), keyword_score)
    return [*keyword_hits, *zip(extra.tolist(), scores.tolist(), strict=True)]


def _docs(hits: Sequence[tuple[int, float]]) -> np.ndarray:
    return np.fromiter(map(itemgetter(0), hits), np.int64, len(hits))


def _keyword_extra(
    keyword_docs: np.ndarray,
    semantic_docs: np.ndarray,
    keyword_score: Callable[[Sequence[int]], Sequence[float]],
) -> tuple[np.ndarray, np.ndarray]:
    """The documents `complete_keyword` appends and their keyword scores, in its order (score, then doc)."""
    known = np.zeros(1 + max(int(keyword_docs.max(initial=0)), int(semantic_docs.max(initial=0))), dtype=bool)
    known[keyword_docs] = True
    missing = semantic_docs[~known[semantic_docs]]
    scores = np.asarray(keyword_score(missing.tolist()), dtype=np.float64).reshape(-1)
    keep = scores > 0
    missing, scores = missing[keep], scores[keep]
    order = np.lexsort((missing, -scores))
    return missing[order], scores[order]
