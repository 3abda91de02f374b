"""Ranking: the stages between the retrievers and the formatted answer.

query     parse the query once into a typed `ParsedQuery` (style, literals, keyword terms)
style     which kind of text the query is (identifier, snippet, pasted error, description...)
fusion    the retrievers' candidate lists into one first-stage order
features  what a candidate's definition, name, path and file say about the query
model     the scoring function over those features, then diversification
pipeline  the rank stage as `Engine.search` calls it (fuse -> score the head -> keep the tail)
"""

from __future__ import annotations

from .features import (
    Penalties,
    definition_score,
    file_coherence,
    file_mass,
    file_penalty,
    path_score,
    path_stem_weights,
    shadowed_private,
    stem_overlap,
    superseded_dirs,
)
from .fusion import complete_keyword, file_ranks, fuse, fuse_rrf, fuse_weighted
from .messages import may_hold_message, verbatim_spans
from .model import Candidate, PathFeatures, Ranked, RankParams, diversify, rank
from .pipeline import merge_external, prepare, rank_hits
from .query import (
    STYLES,
    ParsedQuery,
    Relation,
    exact_matches,
    identifier_keyword_weight,
    is_quotation,
    keyword_query,
    may_quote,
    parse_query,
    quotes_query,
    verbatim_run,
)

__all__ = [
    "STYLES",
    "Candidate",
    "ParsedQuery",
    "PathFeatures",
    "Penalties",
    "RankParams",
    "Ranked",
    "Relation",
    "complete_keyword",
    "definition_score",
    "diversify",
    "exact_matches",
    "file_coherence",
    "file_mass",
    "file_penalty",
    "file_ranks",
    "fuse",
    "fuse_rrf",
    "fuse_weighted",
    "identifier_keyword_weight",
    "is_quotation",
    "keyword_query",
    "may_hold_message",
    "may_quote",
    "merge_external",
    "parse_query",
    "path_score",
    "path_stem_weights",
    "prepare",
    "quotes_query",
    "rank",
    "rank_hits",
    "shadowed_private",
    "stem_overlap",
    "superseded_dirs",
    "verbatim_run",
    "verbatim_spans",
]
