"""Search across repositories on any backend: parse the query once, take the backend's fused candidates,
rank them with the code-aware ranker on their payloads, format them as single-repository results are,
each labelled with its repository.

Scores are comparable across repositories because the candidates are scored as ONE corpus: keyword
scores with the IDF of the union of the searched repositories (`sparse`), vector scores as cosines of
one model, fused by reciprocal rank, then reranked together; the final scores are the ranker's, scaled
to the best result of the answer (1.0), as in a single-repository search.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..config import Config
from ..models import SearchResult
from ..search import Filters, Hit, preview
from .base import Candidates, ChunkPayload, EmbedQuery, QueryInput, RepoInfo, SearchBackend

# Candidates each retriever hands to fusion, at least (as `service.retrieval.CANDIDATE_POOL`).
CANDIDATE_POOL = 50


def parse_query(text: str, config: Config) -> QueryInput:
    """The query's distinct keyword terms (`ranking.query.parse_query`, weights of repeats summed)."""
    from ..ranking.query import parse_query as parse

    parsed = parse(text)
    merged: dict[str, float] = {}
    for term, weight in zip(parsed.terms, parsed.term_weights, strict=True):
        merged[term] = merged.get(term, 0.0) + float(weight)
    return QueryInput(text, tuple(merged), tuple(merged.values()), config.search.rrf_k)


# Plain (unweighted) RRF. Weighting the lists as a single-repository search leans them per query
# (`identifier_keyword_weight`: 2w and 2(1 - w), Qdrant's weighted formula) measured worse over one
# repository on the validation sets: file nDCG@10 go 0.919 -> 0.915, js 0.955 -> 0.941, ts 0.964 -> 0.962
# (errors lost most: go 0.789 -> 0.733), so the fusion stays unweighted.
def fuse_lists(
    keyword: Sequence[tuple[ChunkPayload, float]], semantic: Sequence[tuple[ChunkPayload, float]], k: int
) -> list[tuple[ChunkPayload, float]]:
    """Reciprocal-rank fusion as Qdrant computes it (`1 / (k + rank)`, rank from 0, summed over the
    lists), best first, ties by point id.

    >>> a = ChunkPayload("r", "a.py", 1, 2, "function", "a", "python", "h1", "")
    >>> b = ChunkPayload("r", "b.py", 1, 2, "function", "b", "python", "h2", "")
    >>> [(c.path, round(s, 3)) for c, s in fuse_lists([(a, 3.0), (b, 1.0)], [(b, 0.9)], 2)]
    [('b.py', 0.833), ('a.py', 0.5)]
    """
    fused: dict[str, float] = {}
    payloads: dict[str, ChunkPayload] = {}
    for ranking in (keyword, semantic):
        for rank, (payload, _) in enumerate(ranking):
            pid = payload.point_id
            payloads.setdefault(pid, payload)
            fused[pid] = fused.get(pid, 0.0) + 1.0 / (k + rank)
    order = sorted(fused, key=lambda pid: (-fused[pid], pid))
    return [(payloads[pid], fused[pid]) for pid in order]


def rank_candidates(text: str, candidates: Candidates) -> list[tuple[ChunkPayload, float]]:
    """The code-aware rank stage (`ranking.model.rank`: definitions, paths, file kinds, coherence, file
    mass, repeat decay, then `ranking.pipeline.guarantees`) over the fused candidates. A file is named
    `repo/path`, so two repositories' files never merge and a query naming a repository leans to it; the
    layout signals (superseded copies, private modules, path-stem rarity) come from the candidates'
    paths, the verbatim guarantee from their payload text."""
    from ..ranking import Candidate, path_stem_weights, rank, shadowed_private, superseded_dirs
    from ..ranking.pipeline import guarantees
    from ..ranking.query import exact_matches, is_quotation
    from ..ranking.query import parse_query as parse

    chunks = candidates.chunks
    if not chunks:
        return []
    parsed = parse(text)
    names = [f"{c.repo}/{c.path}" for c, _ in chunks]
    files = list(dict.fromkeys(names))
    old = tuple(sorted(superseded_dirs(files)))
    shadowed = shadowed_private(files)
    cands = [
        Candidate(n, name, c.symbol, c.kind, score, bool(old) and name.startswith(old), name in shadowed)
        for n, ((c, score), name) in enumerate(zip(chunks, names, strict=True))
    ]
    exact = (
        exact_matches(parsed, ((n, c.text) for n, (c, _) in enumerate(chunks)))
        if is_quotation(parsed)
        else []
    )
    ranked = guarantees(
        [Hit(r.doc, r.score) for r in rank(cands, parsed, None, path_stem_weights(files))],
        parsed,
        cands,
        exact,
    )
    top = ranked[0].score if ranked and ranked[0].score > 0 else 1.0
    return [(chunks[r.doc][0], r.score / top) for r in ranked]


def results(ranked: Sequence[tuple[ChunkPayload, float]]) -> list[SearchResult]:
    return [
        SearchResult(
            id=c.chunk_id,
            score=round(score, 6),
            path=c.path,
            start_line=c.start_line,
            end_line=c.end_line,
            kind=c.kind,
            symbol=c.symbol,
            language=c.language,
            chunk=0,
            preview=preview(c.text),
            content=c.text,
            repo=c.repo,
        )
        for c, score in ranked
    ]


def search(
    backend: SearchBackend,
    text: str,
    repos: Sequence[RepoInfo],
    config: Config,
    embed: EmbedQuery,
    *,
    top_k: int = 10,
    filters: Filters | None = None,
    keyword_only: bool = False,
) -> tuple[list[SearchResult], str, str | None]:
    """(results, strategy, notice) of one query over `repos` on `backend`; `keyword_only` (`--mode
    keyword`) embeds no query, so no vector is searched and none is missed."""
    query = parse_query(text, config)
    pool = max(CANDIDATE_POOL, top_k * 3)
    found = backend.candidates(
        query, repos, filters or Filters(), pool, _no_vector if keyword_only else embed
    )
    ranked = results(rank_candidates(text, found)[:top_k])
    return (ranked, "keyword", None) if keyword_only else (ranked, found.strategy, found.notice)


def _no_vector(_model: str) -> None:
    return None
