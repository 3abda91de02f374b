"""The scoring function: one pass over the fused candidates that combines each chunk's first-stage score
with its features (`ranking.features`) into the final order, then `diversify`.

The weights live in `RankParams`; they were chosen on two golden sets (the 26-repo benchmark and a
docstring / identifier / error-message set built from other code) and kept where both improved.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import NamedTuple, TypeVar

from ..search import Hit, new_record
from .features import (
    Penalties,
    definition_match,
    file_coherence,
    file_mass,
    file_penalty,
    path_score,
    stem_overlap,
)
from .query import ParsedQuery

_T = TypeVar("_T", bound=tuple)


class Candidate(NamedTuple):
    """One chunk as the reranker sees it: identity, where it lives, and its first-stage score. A named
    tuple, not a frozen dataclass: a search builds 100 of these and 100 `Ranked`, and a frozen
    dataclass's __init__ costs 0.8 us (0.3 us for two fields) against a tuple's 0.25 us."""

    doc: int
    path: str
    symbol: str
    kind: str
    score: float
    superseded: bool = False  # lives in an old-version copy of the code (see `superseded_dirs`)
    shadowed: bool = False  # a private module behind a public one (see `shadowed_private`)


# The scorer's output is the search's hit type itself: no copy per candidate between the stages.
Ranked = Hit


@dataclass(frozen=True)
class RankParams:
    """Weights of the rerank signals; see the module docstring for how they were chosen."""

    definition: float = 0.6
    # The definition bonus when the whole query is one identifier (a symbol lookup): the definition must
    # outweigh path matches, mentions and file coherence. Benchmark symbol queries 0.961 -> 0.979 (hybrid
    # 0.8676 -> 0.8703), validation identifiers 0.995 -> 0.998; 1.0: 0.968, 2.5: same as 1.5. Raising
    # `definition` itself instead cost pasted snippets 0.957 -> 0.919 (they name many identifiers).
    symbol_definition: float = 1.5
    # Identifier-stem bonus: measured neutral on the benchmark (-0.0006) and harmful on the validation
    # set (chunk nDCG@10 -0.008), so off by default; the signal stays for callers who want it.
    stem: float = 0.0
    path: float = 0.5
    # Share of a path match given to an abbreviation (`impls.rs` ~ "implementations"); benchmark
    # keyword nDCG@10 0.8032 -> 0.8053, validation unchanged (0.938 -> 0.939).
    path_abbreviation: float = 0.5
    coherence: float = 0.15
    coherence_chunks: int = 3
    repeat_decay: float = 0.5
    # RRF only: weight of each retriever's file-level vote (see `_fused`); 0 turns it off. The vector
    # vote at 0.5 gave hybrid 0.8491 -> 0.8517 on the benchmark (1.0: 0.8508; a keyword vote hurt).
    keyword_file: float = 0.0
    semantic_file: float = 0.5
    # Descriptions only (literal queries skip it): each file's best chunk gains this times the file's
    # total candidate score relative to the largest total (`file_mass`), so the file most of the
    # evidence points at wins over a sibling with one sharper chunk (cobra command.go over cobra.go,
    # gson GsonBuilder). Benchmark hybrid 0.8706 -> 0.8715 (15 -> 17 repos >= semble), keyword 0.839 ->
    # 0.840; validation MEAN keyword 0.9422 -> 0.9434, hybrid 0.9385 -> 0.9375 (one Go docstring query,
    # rank 1 -> 3); file-level set keyword 0.668 -> 0.672, hybrid 0.707 -> 0.713. 0.075 / 0.1: 0.8709 /
    # 0.8709 with validation hybrid 0.9373 / 0.935; on literal queries too it cost symbol lookups.
    file_mass: float = 0.05
    # Added to the graph's answers to a relation question (see `rank`): above any other candidate.
    relation: float = 2.0
    # A chunk holding a string the query quotes verbatim, or a string literal of pasted code (the literal
    # retriever): a bonus like a path match's. Training validation split (8 repos, keyword, file Hit@1):
    # with it error_pasted 130 -> 136 of 201, snippet_renamed 381 -> 385 of 612 (strings survive
    # renaming); at 0 (and no snippet strings) 131 and 381. It cost one description its chunk
    # (bench/literal_index.md).
    quoted: float = 0.5
    penalties: Penalties = field(default_factory=Penalties)


def diversify(items: Sequence[tuple[int, str, float]], decay: float) -> list[Hit]:
    """Reorder (doc, file, score) so repeated chunks of one file sink: the n-th chunk of a file (n from
    0, in score order) keeps score * decay**n. decay 1.0 leaves the order alone.

    >>> diversify([(1, "a", 1.0), (2, "a", 0.9), (3, "b", 0.6)], 0.5)
    [Hit(doc=1, score=1.0), Hit(doc=3, score=0.6), Hit(doc=2, score=0.45)]
    """
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"repeat decay must be within (0, 1], got {decay}")
    seen: dict[str, int] = {}
    out: list[Hit] = []
    for doc, file, score in best_first(list(items), 2):
        n = seen.get(file, 0)
        seen[file] = n + 1
        out.append(new_record(Hit, (doc, score * (decay**n))))
    return best_first(out, 1)


def best_first(items: list[_T], score: int) -> list[_T]:
    """`items` (tuples with the document first) sorted in place by item[score] descending, then document:
    two stable C-level sorts, the same order as the key (-score, doc) without a Python call per item.

    >>> best_first([(3, 0.5), (1, 0.9), (2, 0.5)], 1)
    [(1, 0.9), (2, 0.5), (3, 0.5)]
    """
    items.sort(key=itemgetter(0))
    items.sort(key=itemgetter(score), reverse=True)
    return items


# (path bonus, file penalty) per file path: what the scorer needs of a candidate's file (`path_features`).
PathFeatures = dict[str, tuple[float, float]]


def path_features(
    paths: Iterable[str],
    parsed: ParsedQuery,
    params: RankParams | None = None,
    path_weights: Mapping[str, float] | None = None,
    into: PathFeatures | None = None,
) -> PathFeatures:
    """The scorer's per-file features of `paths` (added to `into` when given). A hybrid search computes
    them for the keyword candidates while the query vector is being computed, so that `rank` (given them
    as `paths`) scores only the files the vectors add once the vector arrives."""
    p = params or RankParams()
    out: PathFeatures = {} if into is None else into
    for path in paths:
        if path not in out:
            out[path] = (
                p.path * path_score(path, parsed, p.path_abbreviation, path_weights),
                file_penalty(path, parsed, p.penalties),
            )
    return out


def rank(
    candidates: Iterable[Candidate],
    parsed: ParsedQuery,
    params: RankParams | None = None,
    path_weights: Mapping[str, float] | None = None,
    relation: frozenset[int] = frozenset(),
    quoted: frozenset[int] = frozenset(),
    paths: PathFeatures | None = None,
) -> list[Ranked]:
    """Rerank first-stage candidates (any score scale, higher is better) into the final order.

    Per chunk: normalised first-stage score, plus definition, identifier-stem and path bonuses, times
    the file-kind penalty; per file: a coherence bonus from its other matching chunks and, for
    descriptions, a bonus on its best chunk from its share of all the candidates' score (`file_mass`);
    finally repeated chunks of one file are decayed so other plausible files surface. `paths`: per-file
    features computed ahead (`path_features`, same parameters); the others are computed here.
    """
    p = params or RankParams()
    cands = candidates if isinstance(candidates, list) else list(candidates)
    if not cands:
        return []
    top = max([c[4] for c in cands])
    scale = 1.0 / top if top > 0 else 1.0
    # One pass, the same arithmetic in the same order as a plain per-candidate loop; locals instead of
    # attribute lookups (this loop runs over ~100 candidates per search).
    values: list[float] = []
    by_file: dict[str, list[float]] = {}
    # Chunks share files: each file's features once (those computed ahead, `paths`, are reused).
    per_path = path_features(
        dict.fromkeys(c[1] for c in cands), parsed, p, path_weights, dict(paths) if paths else None
    )
    definition = p.symbol_definition if parsed.symbol_query else p.definition
    identifiers = parsed.identifiers
    superseded_factor, shadowed_factor = p.penalties.superseded, p.penalties.shadowed
    stem_weight, quoted_bonus, relation_bonus = p.stem, p.quoted, p.relation
    for c in cands:
        doc, path, symbol, _, score, superseded, shadowed = c
        scaled = score * scale
        base = scaled if scaled > 0.0 else 0.0  # max(0.0, scaled)
        # Without identifiers the definition score is 0 (a description: no call per candidate).
        bonus = definition * definition_match(symbol, identifiers) if identifiers and symbol else 0.0
        if stem_weight:
            bonus += stem_weight * stem_overlap(symbol, parsed)
        found = per_path[path]
        bonus += found[0]
        if doc in quoted:
            bonus += quoted_bonus
        value = (base + bonus * base**0.5) * found[1]
        if superseded:
            value *= superseded_factor
        if shadowed:
            value *= shadowed_factor
        if doc in relation:
            # The graph's answer to a relation question ("who calls X": a caller) outranks every chunk
            # that only matches the words, the named symbol's own definition included.
            value += relation_bonus
        values.append(value)
        chunk_values = by_file.get(path)
        if chunk_values is None:
            by_file[path] = [value]
        else:
            chunk_values.append(value)
    coherence_weight, coherence_chunks = p.coherence, p.coherence_chunks
    coherence = {
        path: coherence_weight * file_coherence(vals, coherence_chunks) for path, vals in by_file.items()
    }
    items = [(c[0], c[1], v + coherence[c[1]]) for c, v in zip(cands, values, strict=True)]
    if p.file_mass and not parsed.literal:
        # Only each file's best chunk: the file is lifted once, its other chunks still decay behind it.
        mass = file_mass(by_file)
        best: dict[str, int] = {}
        for i, (_, path, v) in enumerate(items):
            if path not in best or v > items[best[path]][2]:
                best[path] = i
        for path, i in best.items():
            doc, _, v = items[i]
            items[i] = (doc, path, v + p.file_mass * mass[path])
    return diversify(items, p.repeat_decay)
