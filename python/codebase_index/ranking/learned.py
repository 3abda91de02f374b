"""The fitted scorer: one feature vector per candidate, a linear model over it, fitted on generated
training queries from repositories the project is never evaluated on (`bench/train_ranker.py`).

Every signal of the hand-set scorer (`model.rank`) is a feature here instead of a constant: each
retriever's score and rank, definition, identifier-stem and path matches, file kinds, file coherence
and mass, the graph relation, and the query style, alone and crossed with the main signals (a
definition match means more to an identifier than to a description). The weights ship as
`weights.json` beside this module; `make train-ranker` rebuilds them.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .features import (
    _file_kinds,
    definition_score,
    file_coherence,
    file_mass,
    path_score,
    stem_overlap,
)
from .literals import Literal
from .messages import message_holder
from .model import Candidate, Ranked, diversify
from .query import STYLES, ParsedQuery

WEIGHTS_FILE = Path(__file__).with_name("weights.json")

# Signals each retriever or feature gives a candidate, before the style crosses.
BASE_FEATURES = (
    "fused",  # first-stage (fused) score / the head's best
    "fused_sqrt",
    "fused_rr",  # 1 / (1 + position in the fused order)
    "fused_log",  # log of it: the hand-set scorer's multiplicative file-kind factors are additive here
    "kw",  # keyword score / the head's best keyword score (0: not a keyword candidate)
    "kw_rr",  # 1 / (1 + keyword rank)
    "sem",  # cosine of the vector candidate (0: not a vector candidate)
    "sem_rr",
    "both",  # found by both retrievers
    "definition",  # `definition_score`
    "definition_fused",  # definition x sqrt(fused): a definition the retrievers also like
    "stem",  # `stem_overlap`
    "path",  # `path_score`
    "path_fused",
    "test",  # a test file the query did not ask for
    "example",
    "vendor",
    "compat",
    "stub",
    "doc",
    "superseded",
    "shadowed",
    "coherence",  # `file_coherence` over the file's candidates
    "mass",  # `file_mass` of the candidate's file
    "file_best",  # the best-scored candidate of its file
    "named",  # the chunk defines a symbol (not a module-level or text chunk)
    "relation",  # the graph names it as the relation the query asks about (a caller of X)
    "relation_target",  # defines the symbol a relation question names (not the answer)
    "verbatim",  # longest verbatim run of the query's words in the chunk / the query's words
    "message_holder",  # the one chunk holding the longest such run (`messages.message_holder`)
    # Whole-file evidence, over the candidates of the chunk's file (`file_aggregates`): what decides
    # where a file first appears in the results, which is what a file-level question is judged on.
    "file_kw",  # the file's best keyword score
    "file_sem",  # the file's best cosine
    "file_fused_rr",  # 1 / (1 + the file's place among files ordered by their best fused score)
    "file_kw_rr",  # ... by their best keyword score (0: no keyword candidate)
    "file_sem_rr",  # ... by their best cosine (0: no vector candidate)
    "file_count",  # log(1 + the file's candidates in the head)
)
# Computed from the other columns of the same query's rows by `file_aggregates`.
FILE_FEATURES = ("file_kw", "file_sem", "file_fused_rr", "file_kw_rr", "file_sem_rr", "file_count")
# Crossed with each style: the signals whose worth depends most on what kind of query it is.
CROSSED = ("fused", "kw", "sem", "definition", "path", "test", "mass")
FEATURES = (
    *BASE_FEATURES,
    *(f"style_{s}" for s in STYLES),
    *(f"{name}*{s}" for s in STYLES for name in CROSSED),
)
_INDEX = {name: i for i, name in enumerate(FEATURES)}
_CROSS = tuple((_INDEX[name], i) for i, name in enumerate(BASE_FEATURES) if name in CROSSED)
# Column numbers `feature_matrix` writes, looked up once.
_FUSED, _FUSED_SQRT, _FUSED_RR, _FUSED_LOG = (
    _INDEX[n] for n in ("fused", "fused_sqrt", "fused_rr", "fused_log")
)
_KW, _KW_RR, _SEM, _SEM_RR, _BOTH = (_INDEX[n] for n in ("kw", "kw_rr", "sem", "sem_rr", "both"))
_DEFINITION, _DEFINITION_FUSED, _RELATION_TARGET = (
    _INDEX[n] for n in ("definition", "definition_fused", "relation_target")
)
_STEM, _PATH, _PATH_FUSED = (_INDEX[n] for n in ("stem", "path", "path_fused"))
_KINDS = tuple(_INDEX[n] for n in ("test", "example", "vendor", "compat", "stub", "doc"))
_SUPERSEDED, _SHADOWED, _COHERENCE, _MASS, _FILE_BEST, _NAMED = (
    _INDEX[n] for n in ("superseded", "shadowed", "coherence", "mass", "file_best", "named")
)
_RELATION, _VERBATIM, _MESSAGE_HOLDER = (_INDEX[n] for n in ("relation", "verbatim", "message_holder"))

# Final-order diversification as in the hand-set scorer (a file's n-th chunk keeps decay**n).
REPEAT_DECAY = 0.5


class Evidence(NamedTuple):
    """What each retriever said about the fused head, by document: (score, 0-based rank)."""

    keyword: Mapping[int, tuple[float, int]]
    semantic: Mapping[int, tuple[float, int]]
    relation: frozenset[int] = frozenset()  # documents the code graph answers the relation with
    spans: Mapping[int, int] = {}  # longest verbatim run of the query's words, by document read
    # The literals of the query each document holds verbatim (the literal retriever's answer); not a
    # feature yet: FEATURES (and the shipped weights fitted on them) are unchanged.
    literal: Mapping[int, tuple[Literal, ...]] = {}


def feature_matrix(
    cands: Sequence[Candidate],
    parsed: ParsedQuery,
    evidence: Evidence,
    path_weights: Mapping[str, float] | None = None,
) -> np.ndarray:
    """One row of `FEATURES` per candidate (in the fused order given)."""
    n = len(cands)
    x = np.zeros((n, len(FEATURES)), dtype=np.float64)
    if not n:
        return x
    top = max(c.score for c in cands)
    scale = 1.0 / top if top > 0 else 1.0
    kw_top = max((s for s, _ in evidence.keyword.values()), default=0.0)
    kw_scale = 1.0 / kw_top if kw_top > 0 else 0.0
    per_path: dict[str, tuple[float, tuple[bool, ...]]] = {}
    by_file: dict[str, list[float]] = {}
    fused = [max(0.0, c.score * scale) for c in cands]
    for c, f in zip(cands, fused, strict=True):
        by_file.setdefault(c.path, []).append(f)
    mass = file_mass(by_file)
    coherence = {p: file_coherence(v, 3) for p, v in by_file.items()}
    best_of: dict[str, int] = {}
    for i, c in enumerate(cands):
        if c.path not in best_of or fused[i] > fused[best_of[c.path]]:
            best_of[c.path] = i
    relation_target = parsed.relation is not None
    holder = message_holder(evidence.spans) if evidence.spans else None
    n_words = max(1, len(parsed.plain_words))
    keyword, semantic, related, spans = evidence.keyword, evidence.semantic, evidence.relation, evidence.spans
    has_identifiers = bool(parsed.identifiers)
    # Plain Python rows, written into the matrix once: a numpy item assignment per feature per candidate
    # cost ~1.5 ms of a ~2 ms feature matrix (100 candidates); the values are the same floats.
    width = len(BASE_FEATURES)
    rows: list[list[float]] = []
    for i, c in enumerate(cands):
        row = [0.0] * width
        f = fused[i]
        root = math.sqrt(f)
        row[_FUSED] = f
        row[_FUSED_SQRT] = root
        row[_FUSED_RR] = 1.0 / (1 + i)
        row[_FUSED_LOG] = math.log(f + 1e-3)
        kw = keyword.get(c.doc)
        sem = semantic.get(c.doc)
        if kw is not None:
            row[_KW] = max(0.0, kw[0] * kw_scale)
            row[_KW_RR] = 1.0 / (1 + kw[1])
        if sem is not None:
            row[_SEM] = max(0.0, sem[0])
            row[_SEM_RR] = 1.0 / (1 + sem[1])
        row[_BOTH] = float(kw is not None and sem is not None)
        d = definition_score(c.symbol, parsed) if has_identifiers else 0.0
        if relation_target and d >= 1.0:
            row[_RELATION_TARGET] = 1.0
            d = 0.0
        row[_DEFINITION] = d
        row[_DEFINITION_FUSED] = d * root
        row[_STEM] = stem_overlap(c.symbol, parsed)
        found = per_path.get(c.path)
        if found is None:
            found = (path_score(c.path, parsed, 0.5, path_weights), _unwanted_kinds(c.path, parsed))
            per_path[c.path] = found
        row[_PATH] = found[0]
        row[_PATH_FUSED] = found[0] * root
        for k, on in zip(_KINDS, found[1], strict=True):
            row[k] = float(on)
        row[_SUPERSEDED] = float(c.superseded)
        row[_SHADOWED] = float(c.shadowed)
        row[_COHERENCE] = coherence[c.path]
        row[_MASS] = mass[c.path]
        row[_FILE_BEST] = float(best_of[c.path] == i)
        row[_NAMED] = float(bool(c.symbol))
        row[_RELATION] = float(c.doc in related)
        row[_VERBATIM] = spans.get(c.doc, 0) / n_words
        row[_MESSAGE_HOLDER] = float(c.doc == holder)
        rows.append(row)
    x[:, :width] = rows
    col = _INDEX
    file_ids = np.unique(np.asarray([c.path for c in cands]), return_inverse=True)[1]
    file_aggregates(x, file_ids, np.zeros(n, dtype=np.int64))
    style = parsed.style
    x[:, col[f"style_{style}"]] = 1.0
    offset = len(BASE_FEATURES) + len(STYLES) + STYLES.index(style) * len(CROSSED)
    for k, (src, _) in enumerate(_CROSS):
        x[:, offset + k] = x[:, src]
    return x


def file_groups(file_ids: np.ndarray, query_ids: np.ndarray) -> np.ndarray:
    """Each row's (query, file) group, numbered 0..G-1 in (query, file) order."""
    q = query_ids.astype(np.int64)
    f = file_ids.astype(np.int64)
    return np.unique(q * (int(f.max()) + 1) + f, return_inverse=True)[1]


def file_aggregates(x: np.ndarray, file_ids: np.ndarray, query_ids: np.ndarray) -> None:
    """Fill the `FILE_FEATURES` columns of `x` in place from its keyword, cosine and fused columns,
    grouping rows by (query, file). Run by `feature_matrix` on one query's head and by the training
    table loader on many queries at once (so the fitted and the served features are one function).
    Rows of a query must be contiguous and in fused order."""
    if not len(x):
        return
    col = _INDEX
    q = query_ids.astype(np.int64)
    groups = file_groups(file_ids, q)
    n_groups = int(groups.max()) + 1
    group_query = np.zeros(n_groups, dtype=np.int64)
    group_query[groups] = q
    for name, source in (("file_kw", "kw"), ("file_sem", "sem"), ("file_fused_rr", "fused")):
        best = np.full(n_groups, -np.inf)
        np.maximum.at(best, groups, x[:, col[source]])
        if name != "file_fused_rr":
            x[:, col[name]] = best[groups]
        rank_name = {"file_kw": "file_kw_rr", "file_sem": "file_sem_rr"}.get(name, name)
        # The file's place among the query's files by that best value (0 when the file has none).
        order = np.lexsort((-best, group_query))
        place = np.empty(n_groups, dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, group_query[order][1:] != group_query[order][:-1]])
        first = np.repeat(starts, np.diff(np.r_[starts, n_groups]))
        place[order] = np.arange(n_groups) - first
        rr = np.where(best > 0, 1.0 / (1.0 + place), 0.0)
        x[:, col[rank_name]] = rr[groups]
    x[:, col["file_count"]] = np.log1p(np.bincount(groups, minlength=n_groups))[groups]


def _unwanted_kinds(path: str, parsed: ParsedQuery) -> tuple[bool, ...]:
    """(test, example, vendored, compat, stub, docs) flags of a path, each off when the query asks for
    that kind (as `features.file_penalty` reads them)."""
    test, example, vendor, compat, stub, doc = _file_kinds(path)
    return (
        test and not parsed.wants_tests,
        example and not parsed.wants_examples,
        vendor,
        compat,
        stub,
        doc and not parsed.wants_docs,
    )


@dataclass(frozen=True)
class LinearModel:
    """score = x . weights, over standardised features ((x - mean) / scale folded into the weights)."""

    features: tuple[str, ...]
    weights: np.ndarray  # per feature, on raw (unstandardised) features
    bias: float = 0.0

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> LinearModel:
        names = tuple(str(n) for n in data["features"])  # type: ignore[attr-defined]
        weights = np.asarray(data["weights"], dtype=np.float64)
        if len(names) != len(weights):
            raise ValueError("ranker weights: one weight per feature is required")
        by_name = dict(zip(names, weights.tolist(), strict=True))
        unknown = set(names) - set(FEATURES)
        if unknown:
            raise ValueError(f"ranker weights name features this version does not compute: {sorted(unknown)}")
        # Features the file does not name weigh 0 (a file fitted before they existed).
        full = np.array([by_name.get(name, 0.0) for name in FEATURES], dtype=np.float64)
        return cls(FEATURES, full, float(data.get("bias", 0.0)))  # type: ignore[arg-type]

    def to_json(self) -> dict[str, object]:
        return {
            "features": list(self.features),
            "weights": [round(float(w), 6) for w in self.weights],
            "bias": round(self.bias, 6),
        }

    def scores(self, x: np.ndarray) -> np.ndarray:
        return np.asarray(x @ self.weights + self.bias, dtype=np.float64)


@functools.lru_cache(maxsize=4)
def load_model(path: Path = WEIGHTS_FILE) -> LinearModel:
    """The shipped (or given) weights file, parsed once per process."""
    return LinearModel.from_json(json.loads(path.read_text(encoding="utf-8")))


def usable_model(path: Path | None = None) -> tuple[LinearModel | None, str]:
    """The shipped model, or None and why it cannot be read (a damaged install): the search then ranks
    with the hand-set scorer and says so, instead of failing."""
    try:
        return load_model(path or WEIGHTS_FILE), ""
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return (
            None,
            f"the ranking model could not be read ({type(exc).__name__}: {exc}); hand-set ranking used",
        )


def rank_learned(
    cands: Sequence[Candidate],
    parsed: ParsedQuery,
    evidence: Evidence,
    path_weights: Mapping[str, float] | None = None,
    model: LinearModel | None = None,
) -> list[Ranked]:
    """Score the fused head with the fitted model, then diversify (repeated chunks of a file sink)."""
    if not cands:
        return []
    m = model or load_model()
    scores = m.scores(feature_matrix(cands, parsed, evidence, path_weights))
    # The model's score differences are log-odds (a pairwise logistic or softmax fit): exp turns them
    # into relative odds, which diversify's decay then halves per repeated chunk of a file.
    probs = np.exp(scores - float(scores.max()))
    items = [(c.doc, c.path, float(p)) for c, p in zip(cands, probs, strict=True)]
    return diversify(items, REPEAT_DECAY)
