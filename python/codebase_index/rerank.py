"""Deterministic, code-aware ranking: fusion of keyword and vector rankings, then a rerank of the top
candidates with signals a plain BM25 score cannot see (definitions, identifier stems, file paths, file
kind, file coherence, diversity).

Everything here is a pure function over small records, so each signal is unit-tested on its own and the
engine (``Engine.search``) only gathers candidates and calls :func:`rank`. Constants live in
:class:`RankParams`; they were chosen on two golden sets (the 26-repo benchmark and a docstring /
identifier / error-message set built from other code) and kept only where both improved.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .bm25 import QUERY_STOP_WORDS, split_identifier, tokenize
from .search import Hit, KeywordSnapshot

if TYPE_CHECKING:
    from .config import SearchConfig

__all__ = [
    "Candidate",
    "QueryProfile",
    "RankParams",
    "Ranked",
    "definition_score",
    "diversify",
    "file_coherence",
    "file_penalty",
    "fuse_rrf",
    "fuse_weighted",
    "identifier_keyword_weight",
    "merge_external",
    "path_score",
    "profile_query",
    "rank",
    "rank_hits",
    "stem",
    "stem_overlap",
]


# ------------------------------------------------------------------------------------------ query profile

# Extra words that carry no intent in a natural-language code question ("how does X work").
_QUESTION_WORDS = frozenset(
    [
        "how",
        "does",
        "do",
        "what",
        "where",
        "when",
        "why",
        "which",
        "who",
        "is",
        "are",
        "implemented",
        "implementation",
        "handled",
        "handle",
        "work",
        "works",
        "used",
        "use",
        "using",
        "code",
        "logic",
        "function",
        "functions",
        "method",
        "methods",
        "class",
        "classes",
    ]
)
_IDENTIFIER_SHAPES = (
    re.compile(r"[a-z0-9][A-Z]"),  # camelCase, getUserById
    re.compile(r"[A-Z]{2,}[a-z]"),  # HTTPServer
    re.compile(r"\w_\w|^_\w"),  # snake_case, _private
    re.compile(r"\w(::|\.|->|#)\w"),  # Foo::bar, pkg.func, obj->f, Class#method
    re.compile(r"\w\(\)?$"),  # call()
)
_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures", "mock", "mocks"})
_DOC_WORDS = frozenset({"doc", "docs", "documentation", "readme", "guide", "tutorial", "changelog"})
_EXAMPLE_WORDS = frozenset({"example", "examples", "demo", "sample", "samples"})


@dataclass(frozen=True)
class QueryProfile:
    """What the query asks for, derived once per query."""

    text: str
    words: tuple[str, ...]  # content words, lower-case, stop/question words dropped, in order
    stems: frozenset[str]  # stems of words and of their identifier parts
    identifiers: tuple[str, ...]  # code-like words as typed ("getUserById", "Foo::bar", "Session")
    symbol_query: bool  # the whole query is one identifier or qualified name
    wants_tests: bool
    wants_docs: bool
    wants_examples: bool


def _normalize_name(name: str) -> str:
    """Case-, underscore- and separator-insensitive form of an identifier: `get_user` == `getUser`."""
    return re.sub(r"[\W_]+", "", name).lower()


def profile_query(query: str) -> QueryProfile:
    """Classify a query: identifiers it names, content words and their stems, and what kind of file
    (tests, docs, examples) it explicitly asks for.

    >>> p = profile_query("how does parseConfig handle Foo::bar")
    >>> p.identifiers, p.symbol_query
    (('parseConfig', 'Foo::bar'), False)
    >>> profile_query("Session").symbol_query, profile_query("redirect following").symbol_query
    (True, False)
    """
    raw_words = query.split()
    identifiers: list[str] = []
    for raw in raw_words:
        word = raw.strip("`'\",;:!?()[]{}<>")
        if not word or not re.search(r"\w", word):
            continue
        if any(shape.search(word) for shape in _IDENTIFIER_SHAPES):
            identifiers.append(word.rstrip("()"))
    single = len(raw_words) == 1 and bool(
        re.fullmatch(r"[\w:.#>\-]+\(?\)?", raw_words[0] if raw_words else "")
    )
    if single and not identifiers:
        identifiers.append(raw_words[0].rstrip("()"))
    tokens = [t for t in tokenize(query) if t not in QUERY_STOP_WORDS]
    words = tuple(dict.fromkeys(t for t in tokens if t not in _QUESTION_WORDS)) or tuple(
        dict.fromkeys(tokens)
    )
    stems = frozenset(stem(w) for w in words)
    lowered = set(tokenize(query))
    return QueryProfile(
        text=query,
        words=words,
        stems=stems,
        identifiers=tuple(identifiers),
        symbol_query=single,
        wants_tests=bool(lowered & _TEST_WORDS),
        wants_docs=bool(lowered & _DOC_WORDS),
        wants_examples=bool(lowered & _EXAMPLE_WORDS),
    )


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light English/code stemmer so that `redirects`, `redirected`, `redirecting` and `redirect` meet.

    Deliberately crude (suffix stripping only, never below 3 letters): it is used to compare query words
    with path and symbol parts, not to build the index.

    >>> [stem(w) for w in ("redirects", "following", "parsed", "parse", "handlers", "dispatches", "class")]
    ['redirect', 'follow', 'pars', 'pars', 'handler', 'dispatch', 'class']
    >>> [stem(w) for w in ("policy", "policies", "cookie", "cookies", "is")]
    ['polici', 'polici', 'cooki', 'cooki', 'is']
    """
    w = word.lower()
    for suffix in ("ations", "ation", "ings", "ing", "ies", "es", "ed", "s"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "s" and w.endswith("ss"):
                break
            if suffix == "es" and not w.endswith(("shes", "ches", "xes", "sses", "zes")):
                w = w[:-1]
            elif suffix == "ies":
                w = w[:-3] + "i"
            else:
                w = w[: -len(suffix)]
            break
    if len(w) > 4 and w[-1] in "ey":
        w = w[:-1] + ("i" if w[-1] == "y" else "")
    return w


def identifier_keyword_weight(profile: QueryProfile, base: float) -> float:
    """Keyword share in hybrid fusion: identifier-like queries trust exact matches more than vectors.

    >>> identifier_keyword_weight(profile_query("getUserById"), 0.5)
    0.8
    >>> identifier_keyword_weight(profile_query("where are payments validated"), 0.5)
    0.5
    """
    if profile.symbol_query:
        return max(base, 0.8)
    if profile.identifiers:
        return max(base, min(1.0, base + 0.15))
    return base


# ------------------------------------------------------------------------------------------ chunk signals


@functools.lru_cache(maxsize=1 << 16)
def _name_parts(name: str) -> tuple[str, ...]:
    """Lower-case parts of every identifier in a (possibly qualified) name."""
    parts: list[str] = []
    for word in re.findall(r"\w+", name):
        split = split_identifier(word)
        parts.extend(split[1:] if len(split) > 1 else split)
    return tuple(parts)


def definition_score(symbol: str, profile: QueryProfile) -> float:
    """1.0 when the chunk defines the queried identifier (last name component, case- and
    underscore-insensitive), 0.7 when it defines a member of it or its qualified tail matches
    (`Foo::bar` vs `Foo.bar`), else 0.

    >>> p = profile_query("Session")
    >>> definition_score("Session", p), definition_score("Session.request", p), definition_score("get", p)
    (1.0, 0.7, 0.0)
    >>> definition_score("ConfigParser", profile_query("config_parser"))
    1.0
    """
    if not symbol or not profile.identifiers:
        return 0.0
    components = [c for c in re.split(r"[.:#/]+|->", symbol) if c]
    if not components:
        return 0.0
    last = _normalize_name(components[-1])
    normalized = [_normalize_name(c) for c in components]
    best = 0.0
    for ident in profile.identifiers:
        wanted = [_normalize_name(c) for c in re.split(r"[.:#/]+|->", ident) if c]
        if not wanted:
            continue
        if wanted[-1] == last and (len(wanted) == 1 or normalized[-len(wanted) :] == wanted):
            return 1.0
        if wanted[-1] == last or wanted[-1] in normalized[:-1]:
            best = max(best, 0.7)
    return best


def stem_overlap(name: str, profile: QueryProfile) -> float:
    """Share of the query's content stems found among a name's identifier parts (stemmed):
    `parse config` ~ `parseConfig`, `ConfigParser`, `config_parser`.

    >>> stem_overlap("ConfigParser", profile_query("parse config"))
    0.5
    >>> stem_overlap("parse_config", profile_query("parse config"))
    1.0
    """
    if not name or not profile.stems:
        return 0.0
    parts = {stem(p) for p in _name_parts(name)}
    return len(profile.stems & parts) / len(profile.stems)


@functools.lru_cache(maxsize=1 << 14)
def _path_parts(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """Stems of the file name (without extension) and of the directories above it."""
    head, _, name = path.rpartition("/")
    base = name.split(".", 1)[0] if not name.startswith(".") else name
    return (
        frozenset(stem(p) for p in _name_parts(base)),
        frozenset(stem(p) for p in _name_parts(head)) if head else frozenset(),
    )


def path_score(path: str, profile: QueryProfile) -> float:
    """How well the file path names the query's subject: query stems in the file name count fully,
    in directory names half; the result is the matched share of the query's stems (0..1).

    >>> path_score("src/requests/sessions.py", profile_query("how sessions persist"))
    0.5
    >>> path_score("lib/router/index.js", profile_query("router middleware"))
    0.25
    """
    if not profile.stems:
        return 0.0
    name_stems, dir_stems = _path_parts(path)
    total = 0.0
    for s in profile.stems:
        if s in name_stems:
            total += 1.0
        elif s in dir_stems:
            total += 0.5
    return total / len(profile.stems)


_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|testing|spec|specs|e2e|fixtures?|testdata|mocks?)(/|$)"
    r"|(^|/)(test_[^/]*|conftest\.py)$|(_test|_spec|\.test|\.spec|Tests?|Spec)\.\w+$"
)
_EXAMPLE_PATH = re.compile(r"(^|/)(examples?|samples?|demos?|benchmarks?|bench|playground|scripts)(/|$)")
_VENDOR_PATH = re.compile(r"(^|/)(vendor|vendored|third_party|thirdparty|external|deps|node_modules)(/|$)")
_COMPAT_PATH = re.compile(r"(^|/)(_?compat\w*|legacy|deprecated)(/|\.|$)")
_DOC_EXTENSIONS = (".md", ".mdx", ".rst", ".txt", ".adoc")
_DOC_PATH = re.compile(r"(^|/)(docs?|documentation)(/|$)")


@dataclass(frozen=True)
class Penalties:
    """Multipliers (< 1 demotes) for files that are rarely the answer to an implementation question."""

    test: float = 0.55
    example: float = 0.6
    vendor: float = 0.6
    compat: float = 0.75
    stub: float = 0.7
    doc: float = 0.6


def file_penalty(path: str, profile: QueryProfile, penalties: Penalties | None = None) -> float:
    """Multiplier for the file kind unless the query asks for that kind (a query about tests is not
    penalised for finding tests). Penalties of several kinds multiply.

    >>> file_penalty("tests/test_api.py", profile_query("session cookies"))
    0.55
    >>> file_penalty("tests/test_api.py", profile_query("session cookie tests"))
    1.0
    >>> file_penalty("src/api.py", profile_query("session cookies"))
    1.0
    """
    pen = penalties or Penalties()
    factor = 1.0
    lower = path.lower()
    if not profile.wants_tests and _TEST_PATH.search(path):
        factor *= pen.test
    if not profile.wants_examples and _EXAMPLE_PATH.search(lower):
        factor *= pen.example
    if _VENDOR_PATH.search(lower):
        factor *= pen.vendor
    if _COMPAT_PATH.search(lower):
        factor *= pen.compat
    if lower.endswith(".d.ts"):
        factor *= pen.stub
    if not profile.wants_docs and (lower.endswith(_DOC_EXTENSIONS) or _DOC_PATH.search(lower)):
        factor *= pen.doc
    return factor


# ------------------------------------------------------------------------------------------ fusion


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


# ------------------------------------------------------------------------------------------ rerank


@dataclass(frozen=True)
class Candidate:
    """One chunk as the reranker sees it: identity, where it lives, and its first-stage score."""

    doc: int
    path: str
    symbol: str
    kind: str
    score: float


@dataclass(frozen=True)
class Ranked:
    doc: int
    score: float


@dataclass(frozen=True)
class RankParams:
    """Weights of the rerank signals; see the module docstring for how they were chosen."""

    definition: float = 0.6
    # Identifier-stem bonus: measured neutral on the benchmark (-0.0006) and harmful on the validation
    # set (chunk nDCG@10 -0.008), so off by default; the signal stays for callers who want it.
    stem: float = 0.0
    path: float = 0.5
    coherence: float = 0.15
    coherence_chunks: int = 3
    repeat_decay: float = 0.5
    penalties: Penalties = field(default_factory=Penalties)


def file_coherence(chunk_scores: Sequence[float], max_chunks: int) -> float:
    """Support from a file's other matching chunks: the mean of its next-best `max_chunks` normalised
    chunk scores after the best (0 for a file with one matching chunk).

    >>> file_coherence([1.0, 0.5, 0.5], 3)
    0.3333333333333333
    >>> file_coherence([0.9], 3)
    0.0
    """
    if max_chunks <= 0 or len(chunk_scores) < 2:
        return 0.0
    rest = sorted(chunk_scores, reverse=True)[1 : 1 + max_chunks]
    return sum(rest) / max_chunks


def diversify(items: Sequence[tuple[int, str, float]], decay: float) -> list[tuple[int, float]]:
    """Reorder (doc, file, score) so repeated chunks of one file sink: the n-th chunk of a file (n from
    0, in score order) keeps score * decay**n. decay 1.0 leaves the order alone.

    >>> diversify([(1, "a", 1.0), (2, "a", 0.9), (3, "b", 0.6)], 0.5)
    [(1, 1.0), (3, 0.6), (2, 0.45)]
    """
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"repeat decay must be within (0, 1], got {decay}")
    seen: dict[str, int] = {}
    out: list[tuple[int, float]] = []
    for doc, file, score in sorted(items, key=lambda it: (-it[2], it[0])):
        n = seen.get(file, 0)
        seen[file] = n + 1
        out.append((doc, score * (decay**n)))
    out.sort(key=lambda it: (-it[1], it[0]))
    return out


def rank(
    candidates: Iterable[Candidate], profile: QueryProfile, params: RankParams | None = None
) -> list[Ranked]:
    """Rerank first-stage candidates (any score scale, higher is better) into the final order.

    Per chunk: normalised first-stage score, plus definition, identifier-stem and path bonuses, times
    the file-kind penalty; per file: a coherence bonus from its other matching chunks; finally repeated
    chunks of one file are decayed so other plausible files surface.
    """
    p = params or RankParams()
    cands = list(candidates)
    if not cands:
        return []
    top = max(c.score for c in cands)
    scale = 1.0 / top if top > 0 else 1.0
    per_chunk: list[tuple[Candidate, float]] = []
    by_file: dict[str, list[float]] = {}
    for c in cands:
        base = max(0.0, c.score * scale)
        bonus = p.definition * definition_score(c.symbol, profile) + p.stem * stem_overlap(c.symbol, profile)
        bonus += p.path * path_score(c.path, profile)
        value = (base + bonus * base**0.5) * file_penalty(c.path, profile, p.penalties)
        per_chunk.append((c, value))
        by_file.setdefault(c.path, []).append(value)
    coherence = {path: file_coherence(vals, p.coherence_chunks) for path, vals in by_file.items()}
    items = [(c.doc, c.path, v + p.coherence * coherence[c.path]) for c, v in per_chunk]
    return [Ranked(doc, score) for doc, score in diversify(items, p.repeat_decay)]


def _fused(
    profile: QueryProfile,
    keyword_hits: Sequence[tuple[int, float]],
    semantic_hits: Sequence[tuple[int, float]],
    config: SearchConfig,
) -> list[tuple[int, float]]:
    """One first-stage order: keyword scores alone, or the configured fusion of both rankings."""
    if not semantic_hits:
        ordered = list(keyword_hits)
    elif not keyword_hits:
        ordered = list(semantic_hits)
    else:
        weight = identifier_keyword_weight(profile, config.hybrid_weight)
        if config.fusion_strategy == "weighted":
            fused = fuse_weighted(dict(keyword_hits), dict(semantic_hits), weight)
        else:
            # Weights 2w and 2(1-w) keep plain RRF at the default hybridWeight 0.5.
            fused = fuse_rrf(
                [[d for d, _ in keyword_hits], [d for d, _ in semantic_hits]],
                config.rrf_k,
                [2.0 * weight, 2.0 * (1.0 - weight)],
            )
        ordered = list(fused.items())
    ordered.sort(key=lambda item: (-item[1], item[0]))
    return ordered


def rank_hits(
    query: str,
    snap: KeywordSnapshot,
    keyword_hits: Sequence[tuple[int, float]],
    semantic_hits: Sequence[tuple[int, float]],
    config: SearchConfig,
    params: RankParams | None = None,
) -> list[Hit]:
    """THE ranking entry point of every search mode: fuse the retrievers' candidates (either list may
    be empty), rerank the best `config.rerank_top_n` with the code-aware signals, keep the rest after
    them in fused order. Scores are comparable within one answer only."""
    profile = profile_query(query)
    ordered = _fused(profile, keyword_hits, semantic_hits, config)
    top_n = config.rerank_top_n
    if top_n <= 0 or not ordered:
        return [Hit(d, s) for d, s in ordered]
    head, tail = ordered[:top_n], ordered[top_n:]
    docs = snap.docs
    candidates = [Candidate(d, docs[d].path, docs[d].symbol, docs[d].kind, s) for d, s in head]
    ranked = rank(candidates, profile, params)
    out = [Hit(r.doc, r.score) for r in ranked]
    if tail:
        # The tail keeps its fused order, scaled to sit strictly below the reranked head.
        floor = min((r.score for r in ranked), default=1.0)
        last = head[-1][1] or 1.0
        out += [Hit(d, floor * 0.999 * (s / last if last > 0 else 1.0)) for d, s in tail]
    return out


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
