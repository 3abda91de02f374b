"""The engine's search wiring: parse the query, run the retrievers (BM25, vectors, the code graph, the
exact-text checks), hand their candidates to ranking, let a configured reranker reorder the head and
turn the order into results. `Engine.search` and `Engine.similar` call in here.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

import msgspec
import numpy as np

from .. import embedder
from ..config import Config
from ..literal import NO_EVIDENCE, LiteralEvidence, exact_docs
from ..literal import retrieve as literal_retrieve
from ..models import SearchResult
from ..ranking import (
    ParsedQuery,
    PathFeatures,
    is_quotation,
    may_hold_message,
    may_quote,
    merge_external,
    parse_query,
    prepare,
    quotes_query,
    rank_hits,
    verbatim_spans,
)
from ..ranking.learned import usable_model
from ..ranking.messages import message_candidates
from ..ranking.pipeline import scorer_for
from ..ranking.query import VERBATIM_CANDIDATES, VERBATIM_MIN_WORDS
from ..resilience import RERANKER, cooling_down, endpoint_key
from ..search import FieldWeights, Filters, Hit, KeywordSnapshot, preview, top_hits
from ..store import Store
from ..vectors import VectorSnapshot
from .embedding import (
    QueryEmbeddingError,
    beside,
    breaker,
    chunk_hashes,
    early_embedding,
    kb_prefixes,
    stored_path,
    usable_vectors,
)
from .embedding import query_vector as embedding_of

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger("codebase_index.search")
SEARCH_MODES = ("keyword", "semantic", "hybrid")
# Candidates each retriever hands to fusion, at least (and the rank stage's `rerankTopN`, if larger). A
# hybrid search fuses this fixed pool whatever `top_k` asks for, so its first results do not depend on how
# many are asked for; more results than the pool gives come after them, from a deeper fusion.
CANDIDATE_POOL = 50
# The vector retriever's file vote (`ranking.fusion.fuse`) reads its top VOTE_DEPTH documents, not only the
# candidates it hands to fusion: a big file with many moderately matching chunks gets its vote even when
# none of them is among the best `pool`. Only the documents' files are read; the candidates stay the pool.
# Validation split (8 repositories), hybrid file MRR@10 of descriptions 0.7013 -> 0.7026 / 0.7028 / 0.7029 /
# 0.7029 at 300 / 500 / 1000 / 2000 (relation 0.9837 -> 0.9831, one query; other styles unchanged). Over the
# ANN index the list is what the candidates' search found (`VectorSnapshot.nearest`).
VOTE_DEPTH = 1000


class SearchResponse(msgspec.Struct, omit_defaults=True):
    """`strategy` says what actually ran: keyword, semantic, hybrid, hybrid-partial (vectors still
    arriving: chunks without one come from BM25 alone) or keyword-fallback (no usable vectors, or the
    provider failed on the query). `note`: one line on anything that degraded the answer and why."""

    query: str
    strategy: str
    top_k: int
    results: list[SearchResult]
    note: str | None = None


def _join(*notes: str | None) -> str:
    return "; ".join(n for n in notes if n)


def fuse(
    parsed: ParsedQuery,
    snap: KeywordSnapshot,
    keyword_hits: Sequence[Hit],
    semantic_hits: Sequence[Hit],
    config: Config,
    keyword_scores: np.ndarray | None = None,
    verbatim: bool = False,
    relation: Sequence[int] = (),
    exact: Sequence[int] = (),
    spans: Mapping[int, int] | None = None,
    literal: LiteralEvidence = NO_EVIDENCE,
    paths: PathFeatures | None = None,
    votes: Sequence[np.ndarray | None] = (),
) -> list[Hit]:
    """THE fusion/ranking entry point of every search: candidates from both retrievers in (either list
    may be empty), final order out: fusion, then the code-aware rerank of `ranking.rank_hits`.
    `keyword_scores` (every document's keyword score) lets fusion score vector candidates that are
    outside the keyword top list; `verbatim`: a keyword candidate quotes the query (`quotes_query`);
    `votes`: deeper rankings (keyword, vector) the file votes read (`ranking.fusion.fuse`)."""

    def keyword_score(docs: Sequence[int]) -> list[float]:
        assert keyword_scores is not None
        return keyword_scores[np.asarray(docs, dtype=np.int64)].tolist()

    return rank_hits(
        parsed,
        snap,
        keyword_hits,
        semantic_hits,
        config.search,
        keyword_score=keyword_score if keyword_scores is not None else None,
        verbatim=verbatim,
        relation=relation,
        exact=exact,
        spans=spans,
        literal=literal.matches,
        paths=paths,
        votes=votes,
    )


_DOCS_BY_PATH: weakref.WeakKeyDictionary[KeywordSnapshot, tuple[int, dict[str, list[int]]]] = (
    weakref.WeakKeyDictionary()
)


def _docs_by_path(snap: KeywordSnapshot) -> dict[str, list[int]]:
    """A snapshot's live documents per path, built once per snapshot (the graph retriever's lookup)."""
    cached = _DOCS_BY_PATH.get(snap)
    if cached is None or cached[0] != len(snap.docs):
        out: dict[str, list[int]] = {}
        for doc, row in enumerate(snap.docs):
            if snap.is_live(doc):
                out.setdefault(row.path, []).append(doc)
        cached = (len(snap.docs), out)
        _DOCS_BY_PATH[snap] = cached
    return cached[1]


_TERM_IDS: weakref.WeakKeyDictionary[KeywordSnapshot, dict[str, int | None]] = weakref.WeakKeyDictionary()


def _term_ids(store: Store, snap: KeywordSnapshot, terms: Sequence[str]) -> dict[str, int]:
    """The vocabulary ids of `terms` (those the index has), remembered per snapshot: the same words recur
    query after query, and a lookup in SQLite cost ~0.06 ms of a keyword search's ~2 ms. A new snapshot
    (any write to the index) starts afresh."""
    known = _TERM_IDS.get(snap)
    if known is None:
        known = _TERM_IDS.setdefault(snap, {})
    missing = [t for t in dict.fromkeys(terms) if t not in known]
    if missing:
        found = store.term_ids(missing)
        known.update({t: found.get(t) for t in missing})
    return {t: i for t in terms if (i := known[t]) is not None}


def _innermost(snap: KeywordSnapshot, docs: Sequence[int], line: int) -> int | None:
    """The smallest of `docs` whose lines cover `line`."""
    best: int | None = None
    best_span = 0
    for doc in docs:
        row = snap.docs[doc]
        if row.start_line <= line <= row.end_line:
            span = row.end_line - row.start_line
            if best is None or span < best_span:
                best, best_span = doc, span
    return best


class Gathered(NamedTuple):
    """What a search knows before the query vector: the snapshot and its vectors (None, with why, when
    there are none to use), the parsed query, the filter, and the keyword, graph and exact-text
    retrievers' answers (with the chunk texts they read, which formatting reuses)."""

    snap: KeywordSnapshot
    vecs: VectorSnapshot | None
    why_no_vectors: str
    parsed: ParsedQuery
    mask: np.ndarray | None
    keyword_hits: list[Hit]
    keyword_scores: np.ndarray | None  # every document's keyword score, for fusion (see ranking.fusion)
    relation: list[int]
    literal: LiteralEvidence
    exact: list[int]
    read: dict[int, str]
    spans: dict[int, int]
    verbatim: bool = False  # a keyword candidate quotes the query (hybrid only: `head_quotes_query`)
    ahead: PathFeatures | None = None  # the rank stage's features of the candidates known so far (hybrid)


def gather(
    engine: Engine, query: str, filters: Filters | None, mode: str | None, depth: int, pool: int
) -> Gathered:
    """Read the snapshot and its vectors, parse the query and run every retriever that does not need the
    query vector. When the vectors will join (hybrid), also the checks and rank-stage features that only
    the keyword candidates need are done now, while the model works."""
    snap = engine.snapshot()
    vecs, why = (None, "") if mode == "keyword" else usable_vectors(engine, snap, required=mode == "semantic")
    parsed = parse_query(query)
    mask = snap.candidate_mask(filters or Filters())
    keyword_hits: list[Hit] = []
    keyword_scores: np.ndarray | None = None
    if mode != "semantic":
        keyword_scores, keyword_hits = keyword_candidates(engine, parsed, snap, mask, depth)
    relation = relation_candidates(engine, parsed, snap, mask)
    literal = literal_retrieve(engine.store, snap, parsed, mask, keyword_scores)
    texts = head_texts(engine, parsed, snap, keyword_hits, literal.texts)
    exact = exact_docs(parsed, literal, texts)
    read = {**texts, **literal.texts}  # chunk texts read so far, by document: formatting reuses them
    spans = verbatim_spans(parsed, read.items()) if may_hold_message(parsed) else {}
    found = Gathered(
        snap,
        vecs,
        why,
        parsed,
        mask,
        keyword_hits,
        keyword_scores,
        relation,
        literal,
        list(exact),
        read,
        spans,
    )
    if vecs is None or mode == "semantic":
        return found
    known = [*(h.doc for h in keyword_hits[:pool]), *relation, *exact, *literal.matches]
    return found._replace(
        verbatim=head_quotes_query(parsed, snap, texts),
        ahead=prepare(parsed, snap, known, engine.config.search),
    )


def search(
    engine: Engine, query: str, *, top_k: int = 10, filters: Filters | None = None, mode: str | None = None
) -> SearchResponse:
    """`mode` None means hybrid when vectors exist for the active model, else keyword. A provider
    that fails (or cools down after failing) while embedding the query, in any mode, gives keyword
    results (`keyword-fallback`) with a note naming the cause; a failing reranker keeps the
    deterministic order."""
    if mode is not None and mode not in SEARCH_MODES:
        raise ValueError(f"unknown search mode {mode!r}; available: {', '.join(SEARCH_MODES)}")
    pool = max(CANDIDATE_POOL, engine.config.search.rerank_top_n)  # what hybrid fuses, whatever top_k
    # Keyword and semantic answers: more candidates only lengthen the tail, their order stays.
    depth = max(pool, top_k * 3)

    def ranked(
        g: Gathered,
        strategy: str,
        keyword: Sequence[Hit],
        semantic: Sequence[Hit],
        scores: np.ndarray | None = None,
        votes: Sequence[np.ndarray | None] = (),
    ) -> list[Hit]:
        """Fuse and rank the candidates (semantic mode: the vectors alone, no keyword-side evidence)."""
        keyed = strategy != "semantic"
        return fuse(
            g.parsed,
            g.snap,
            keyword,
            semantic,
            engine.config,
            scores,
            g.verbatim,
            relation=g.relation if keyed else (),
            exact=g.exact if keyed else (),
            spans=g.spans if keyed else None,
            literal=g.literal if keyed else NO_EVIDENCE,
            paths=g.ahead if keyed else None,
            votes=votes,
        )

    def answer(
        g: Gathered, strategy: str, fused: list[Hit], note: str = "", vectors: bool = False
    ) -> SearchResponse:
        """Let a configured reranker reorder the head of the order, and format the top `top_k`. `vectors`:
        the order was ranked with vector candidates (what `rank_hits` chose its scorer by)."""
        order, rerank_note = external_rerank(engine, query, g.snap, fused)
        if scorer_for(g.parsed, engine.config.search.ranker, vectors) == "learned":
            note = _join(note, usable_model()[1])
        return respond(
            engine, query, strategy, top_k, g.snap, order[:top_k], _join(note, rerank_note), g.read
        )

    def keyword_only(g: Gathered, strategy: str, note: str = "") -> SearchResponse:
        hits = g.keyword_hits
        if mode == "semantic":  # a semantic search whose query could not be embedded
            hits = keyword_candidates(engine, g.parsed, g.snap, g.mask, depth)[1]
        return answer(g, strategy, ranked(g, strategy, hits, []), note)

    def retrievers() -> Gathered:
        return gather(engine, query, filters, mode, depth, pool)

    # The query's embedding, the slowest stage, runs on this thread and starts first: the snapshot checks
    # and the retrievers run beside it (`embedding.early_embedding`: when the engine has vectors to search).
    embedding, failed = early_embedding(engine, query, mode)
    query_vector: np.ndarray | None = None
    if embedding is None or isinstance(embedding, np.ndarray):  # nothing to wait for: no thread to hop to
        query_vector, g = embedding, retrievers()
    else:
        side = beside(engine, retrievers)
        try:
            query_vector = embedding()
        except QueryEmbeddingError as exc:
            failed = str(exc)
        g = side.result()
    vecs = g.vecs
    if vecs is None:
        return keyword_only(g, "keyword" if mode == "keyword" else "keyword-fallback", g.why_no_vectors)
    if query_vector is None and not failed:  # the engine's first search with vectors: one after the other
        try:
            query_vector = embedding_of(engine, query)
        except QueryEmbeddingError as exc:
            failed = str(exc)
    if query_vector is None:
        return keyword_only(g, "keyword-fallback", failed)
    if mode == "semantic":
        alone = vecs.semantic_hits(query_vector, depth, g.mask)
        return answer(g, "semantic", ranked(g, "semantic", [], alone), vectors=bool(alone))
    strategy = "hybrid" if len(vecs) >= len(g.snap) else "hybrid-partial"
    # One scan gives the vector candidates and the deeper list its file vote reads (the keyword vote is
    # off: `RankParams.keyword_file`).
    near, cosines = vecs.nearest(query_vector, max(pool, VOTE_DEPTH), g.mask, searched=pool)
    votes = (None, near) if pool < VOTE_DEPTH else ()
    semantic_hits = [Hit(d, c) for d, c in zip(near[:pool].tolist(), cosines[:pool].tolist(), strict=True)]
    fused_keyword = g.keyword_hits[:pool]
    fused = ranked(g, strategy, fused_keyword, semantic_hits, g.keyword_scores, votes)
    if len(fused) < top_k and (len(g.keyword_hits) > pool or len(near) >= pool):
        # More results asked for than the pool gives: a fusion of deeper lists supplies the rest, after
        # the pool's answer (which stays the same whatever top_k).
        deeper_semantic = vecs.semantic_hits(query_vector, depth, g.mask)
        deeper = ranked(g, strategy, g.keyword_hits, deeper_semantic, g.keyword_scores, votes)
        fused = extend(fused, deeper)
    return answer(g, strategy, fused, vectors=bool(semantic_hits))


def extend(hits: list[Hit], more: Sequence[Hit]) -> list[Hit]:
    """`hits`, then the documents of `more` it lacks in `more`'s order, scored strictly below its last.

    >>> extend([Hit(1, 2.0)], [Hit(3, 9.0), Hit(1, 5.0), Hit(2, 1.0)])
    [Hit(doc=1, score=2.0), Hit(doc=3, score=1.9998), Hit(doc=2, score=1.9996)]
    """
    have = {h.doc for h in hits}
    floor = hits[-1].score if hits else 0.0
    step = max(abs(floor), 1e-6) * 1e-4
    added = [h.doc for h in more if h.doc not in have]
    return [*hits, *(Hit(d, floor - step * i) for i, d in enumerate(added, 1))]


def keyword_candidates(
    engine: Engine, parsed: ParsedQuery, snap: KeywordSnapshot, mask: np.ndarray | None, pool: int
) -> tuple[np.ndarray | None, list[Hit]]:
    """The keyword retriever: every document's BM25 score over the chunk text, symbol and path
    fields for the parsed query's weighted terms, and its best `pool` hits."""
    terms, term_weights = list(parsed.terms), list(parsed.term_weights)
    ids = _term_ids(engine.store, snap, terms)
    term_ids = [ids[t] for t in terms if t in ids]
    id_weights = [w for t, w in zip(terms, term_weights, strict=True) if t in ids]
    if not terms or not len(snap.docs):
        return None, []
    scores = snap.enriched_scores(terms, term_ids, FieldWeights(), mask, term_weights, id_weights)
    return scores, top_hits(scores, pool)


def relation_candidates(
    engine: Engine, parsed: ParsedQuery, snap: KeywordSnapshot, mask: np.ndarray | None
) -> list[int]:
    """The code-graph retriever: for a relation question ("who calls X", "what does X call", "where
    is X used") the chunks holding the answer (each call site's enclosing chunk for callers and
    references, each callee's definition for callees), resolved calls first, then calls matched by
    name only. Empty for other queries, without a graph, or when the graph cannot be read."""
    rel = parsed.relation
    if rel is None:
        return []
    direction = "callees" if rel.kind == "callees" else "callers"
    try:
        graph = engine.call_graph(rel.name, direction=direction, include_name_matches=True, limit=60)
    except Exception:  # a graph that cannot answer leaves the other retrievers' answer as it is
        return []
    if direction == "callers":
        sites = [(e.caller_path, e.line) for e in [*graph.edges, *graph.name_matches]]
    else:
        sites = [(e.callee_path, e.callee_line) for e in [*graph.edges, *graph.name_matches]]
    by_path = _docs_by_path(snap)
    out: list[int] = []
    for path, line in sites:
        doc = _innermost(snap, by_path.get(path, ()), line)
        if doc is not None and (mask is None or mask[doc]) and doc not in out:
            out.append(doc)
    return out


def head_texts(
    engine: Engine,
    parsed: ParsedQuery,
    snap: KeywordSnapshot,
    keyword_hits: Sequence[Hit],
    known: Mapping[int, str] | None = None,
) -> dict[int, str]:
    """The texts of the best keyword candidates, for the checks the literal index does not answer
    alone (`verbatim_spans` of a message without a failure word before it, `head_quotes_query`, and
    `exact_matches` without the index or for a plain-words quotation), read only for a query they apply
    to: three or more words or pasted code. `known`: texts the literal retriever read already."""
    if len(parsed.plain_words) < VERBATIM_MIN_WORDS and not parsed.code_like:
        return {}
    if not (is_quotation(parsed) or may_hold_message(parsed) or may_quote(parsed)):
        return {}
    docs = [h.doc for h in keyword_hits[: message_candidates(parsed)]]
    known = known or {}
    texts = chunk_texts(engine.store, [snap.docs[d].chunk_id for d in docs if d not in known])
    return {d: known[d] if d in known else texts.get(snap.docs[d].chunk_id, "") for d in docs}


def head_quotes_query(parsed: ParsedQuery, snap: KeywordSnapshot, texts: dict[int, str]) -> bool:
    """Whether one of the best keyword candidates holds the query verbatim (`ranking.quotes_query`):
    hybrid fusion then leans on keywords as for pasted code."""
    if not may_quote(parsed):
        return False
    best = list(texts.items())[:VERBATIM_CANDIDATES]
    return quotes_query(parsed, ((snap.docs[d].path, text) for d, text in best))


def external_rerank(
    engine: Engine, query: str, snap: KeywordSnapshot, hits: list[Hit]
) -> tuple[list[Hit], str]:
    """Let the configured rerank API reorder the head of the deterministic order; on ANY failure
    (no key, network, timeout, bad answer) keep the deterministic order, remember and log why, and
    return the note to show. A reranker that keeps failing is skipped for a cool-down."""
    cfg = engine.config.reranker
    if not cfg.enabled or not hits:
        return hits, ""
    from ..rerank_providers import RerankError, RerankSettings, create_reranker

    guard = breaker(engine, RERANKER)
    endpoint = endpoint_key(cfg.provider, cfg.model, cfg.base_url, cfg.api_key)
    blocked = guard.allow(endpoint)
    if blocked is not None:
        engine.reranker_error = blocked.error
        return hits, f"reranker skipped: it {cooling_down(blocked)}; results in the built-in order"
    top_n = min(cfg.top_n, len(hits))
    try:
        if engine._reranker is None:
            engine._reranker = create_reranker(
                RerankSettings(
                    provider=cfg.provider,
                    model=cfg.model,
                    api_key=cfg.api_key,
                    base_url=cfg.base_url,
                    top_n=cfg.top_n,
                    timeout_ms=cfg.timeout_ms,
                )
            )
        ids = [snap.docs[h.doc].chunk_id for h in hits[:top_n]]
        texts = chunk_texts(engine.store, ids)
        documents = [f"{snap.docs[h.doc].path}\n{texts.get(i, '')}" for h, i in zip(hits, ids, strict=False)]
        answer = engine._reranker.rerank(query, documents, top_n)
        merged = [Hit(d, s) for d, s in merge_external(hits, answer, top_n)]
    except Exception as exc:  # any failure means: keep the deterministic order
        error = str(exc) if isinstance(exc, (RerankError, ValueError)) else f"{type(exc).__name__}: {exc}"
        engine.reranker_error = error
        health = guard.failure(endpoint, error)
        log.warning("reranker failed (%d in a row), built-in order kept: %s", health.failures, error)
        return hits, f"reranker failed ({error}); results in the built-in order"
    engine.reranker_error = None
    guard.success(endpoint)
    return merged, ""


def similar(
    engine: Engine,
    *,
    snippet: str | None = None,
    at: tuple[str, int] | None = None,
    top_k: int = 10,
    filters: Filters | None = None,
) -> SearchResponse:
    """Chunks nearest in meaning to a code snippet or to the chunk at (path, line), never the source.

    For a snippet, chunks whose text is exactly the snippet count as the source."""
    if (snippet is None) == (at is None):
        raise ValueError("give either a code snippet or a path:line location, not both")
    snap = engine.snapshot()
    vecs, note = usable_vectors(engine, snap, required=True)
    assert vecs is not None
    provider = engine.embedding_provider()
    assert provider is not None
    if at is not None:
        source = doc_at(snap, *at)
        vector = vecs.vector_of(source)
        if vector is None:
            row = snap.docs[source]
            text = chunk_texts(engine.store, [row.chunk_id]).get(row.chunk_id, "")
            path = stored_path(row.path, kb_prefixes(engine))
            text = embedder.embedding_text(
                path, row.symbol, row.kind, text, header=embedder.header_for(provider)
            )
            vector = provider.embed_documents([text])[0]

        def exclude(doc: int) -> bool:
            return doc == source

        label = f"{at[0]}:{at[1]}"
    else:
        assert snippet is not None
        if not snippet.strip():
            raise ValueError("the code snippet is empty")
        vector = provider.embed_documents([snippet])[0]
        from ..processing import chunk_hash

        target = chunk_hash(snippet)
        hashes = chunk_hashes(engine.store, [d.chunk_id for d in snap.docs])
        same = {cid for cid, h in hashes.items() if h == target}

        def exclude(doc: int) -> bool:
            return snap.docs[doc].chunk_id in same

        label = snippet if len(snippet) <= 80 else snippet[:77] + "..."
    mask = snap.candidate_mask(filters or Filters())
    hits = vecs.semantic_hits(vector, top_k, mask, exclude=exclude)
    return respond(engine, label, "similar", top_k, snap, hits, note or None)


def doc_at(snap: KeywordSnapshot, path: str, line: int) -> int:
    """The innermost chunk of `path` covering `line` (1-based); ValueError naming what is missing."""
    wanted = path.replace("\\", "/").removeprefix("./")
    best: int | None = None
    seen_path = False
    for doc, row in enumerate(snap.docs):
        if row.path != wanted or not snap.is_live(doc):
            continue
        seen_path = True
        span = row.end_line - row.start_line
        if row.start_line <= line <= row.end_line and (
            best is None or span < snap.docs[best].end_line - snap.docs[best].start_line
        ):
            best = doc
    if best is None:
        if not seen_path:
            raise ValueError(f"{wanted} is not in the index (check the path, relative to the root)")
        raise ValueError(f"no chunk of {wanted} covers line {line}")
    return best


def respond(
    engine: Engine,
    query: str,
    strategy: str,
    top_k: int,
    snap: KeywordSnapshot,
    hits: Sequence[Hit],
    note: str | None = None,
    known: Mapping[int, str] | None = None,
) -> SearchResponse:
    """The answer to send; `known`: chunk texts the search already read (by document), not read again."""
    return SearchResponse(
        query=query,
        strategy=strategy,
        top_k=top_k,
        results=to_results(engine.store, snap, [(h.doc, h.score) for h in hits], known),
        note=note or None,
    )


def to_results(
    store: Store,
    snap: KeywordSnapshot,
    hits: Sequence[tuple[int, float]],
    known: Mapping[int, str] | None = None,
) -> list[SearchResult]:
    known = known or {}
    docs = [snap.docs[doc] for doc, _ in hits]
    texts = chunk_texts(store, [d.chunk_id for (n, _), d in zip(hits, docs, strict=True) if n not in known])
    results = []
    for (n, score), doc in zip(hits, docs, strict=True):
        text = known[n] if n in known else texts.get(doc.chunk_id, "")
        results.append(
            SearchResult(
                id=doc.chunk_id,
                score=round(score, 6),
                path=doc.path,
                start_line=doc.start_line,
                end_line=doc.end_line,
                kind=doc.kind,
                symbol=doc.symbol,
                language=doc.language,
                chunk=doc.ordinal,
                preview=preview(text),
                content=text,
            )
        )
    return results


def chunk_texts(store: Store, chunk_ids: Sequence[int]) -> dict[int, str]:
    if not chunk_ids:
        return {}
    marks = ",".join("?" * len(chunk_ids))
    rows = store.conn.execute(f"SELECT id, text FROM chunks WHERE id IN ({marks})", list(chunk_ids))
    return dict(rows)
