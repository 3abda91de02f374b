"""Fitting the learned ranker's weights from a training table (`bench/train_ranker.py extract` writes
one): a pairwise logistic loss over each query's (relevant, less relevant) candidate pairs, or listwise
softmax cross-entropy (the target mass spread over its relevant ones by gain), with L2, full-batch Adam
from zero weights on standardised features, a fixed number of steps. numpy only and deterministic: the
same table and seed give the same weights, which is what the test of the shipped `weights.json` checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from .learned import FEATURES, FILE_FEATURES, LinearModel, file_aggregates, file_groups
from .query import STYLES

# Fit settings (part of what makes a table give one answer).
STEPS = 400
LEARNING_RATE = 0.05
L2 = 1e-3
# Pairwise logistic loss over (relevant, less relevant) pairs of a query; "listwise": softmax
# cross-entropy. Held-out-repo cv: a tie at chunk level (0.760 / 0.761), pairwise ahead at file level
# (0.879 / 0.873; rules 0.873) and on change descriptions (0.665 / 0.630; rules 0.661).
LOSS = "pairwise"
# Target weight of a chunk in a relevant file whose lines miss the target (the table stores it as
# STORED_FILE_GAIN). 0: only the target chunk draws the target mass. At 0.25 a big target file's other
# chunks held most of it and the fit learned "the right file, any chunk", which diversification then
# turns into the wrong chunk first: held-out-repo cv on the 57-repo train table, MRR@10 0.703 at 0.25
# vs 0.761 at 0 (rules 0.734; descriptions 0.111 vs 0.277). A change description's targets are whole
# files, so each of their chunks has gain 1 either way.
FILE_GAIN = 0.0
STORED_FILE_GAIN = 0.25
# Weight of the file-level term beside the chunk-level one: each file is scored by its best candidate
# (what decides where the file first appears in the results) and every (target file, other file) pair
# of a query is a pairwise logistic term on those maxima (a multiple-instance ranking loss). 0: the
# chunk term alone.
FILE_LOSS = 10.0


def load_table(path: Path) -> dict[str, np.ndarray]:
    """A training table; one extracted before the whole-file features existed gets them computed from
    its rows (`learned.file_aggregates`: they are functions of the other columns). That is exact only
    on an uncompacted table, whose rows are each query's whole head."""
    with np.load(path, allow_pickle=False) as data:
        table = {k: data[k] for k in data.files}
    names = tuple(table["features"].tolist())
    if names == FEATURES:
        return table
    if names != tuple(f for f in FEATURES if f not in FILE_FEATURES):
        raise ValueError(f"{path}: extracted with another feature list; run extract again")
    x = np.zeros((len(table["x"]), len(FEATURES)), dtype=np.float64)
    x[:, [FEATURES.index(f) for f in names]] = table["x"]
    file_id = table["file_id"] if "file_id" in table else np.arange(len(x))
    file_aggregates(x, file_id, table["qid"])
    table["x"] = x.astype(table["x"].dtype)
    table["features"] = np.asarray(FEATURES)
    return table


class _Rows(NamedTuple):
    """The fitted rows: features, chunk gain, query starts, and per row its (query, file) group and
    whether that file is a target file (any of its candidates has a gain in the table)."""

    x: np.ndarray
    gain: np.ndarray
    starts: np.ndarray
    file_group: np.ndarray
    target_file: np.ndarray
    weight: np.ndarray  # how many head rows each row stands for (drawn negatives: more than 1)


def _rows(table: dict[str, np.ndarray]) -> _Rows:
    """The rows of the queries that have a relevant candidate, grouped by query (the table stores them
    so)."""
    qid = table["qid"].astype(np.int64)
    stored = table["gain"].astype(np.float64)
    g = np.where(np.isclose(stored, STORED_FILE_GAIN), FILE_GAIN, stored)
    n_q = int(qid.max()) + 1
    total = np.bincount(qid, weights=g, minlength=n_q)
    keep = total[qid] > 0
    qid, g, stored = qid[keep], g[keep], stored[keep]
    x = table["x"][keep].astype(np.float64)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    file_id = table["file_id"][keep].astype(np.int64) if "file_id" in table else np.arange(len(qid))
    file_group = file_groups(file_id, qid)
    target = np.bincount(file_group, weights=(stored > 0).astype(np.float64)) > 0
    weight = table["weight"][keep].astype(np.float64) if "weight" in table else np.ones(len(qid))
    return _Rows(x, g, starts, file_group, target[file_group], weight)


def _pairs(
    g: np.ndarray, starts: np.ndarray, row_weight: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(better row, worse row, weight) for every pair of one query's rows whose gains differ, a pair
    weighing as many head rows as its worse row stands for; each query's pairs weigh 1 in all (a
    query with many candidates does not count more)."""
    ends = np.r_[starts[1:], len(g)]
    better: list[np.ndarray] = []
    worse: list[np.ndarray] = []
    weight: list[np.ndarray] = []
    for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
        gq = g[a:b]
        hi = np.flatnonzero(gq > 0)
        i = np.repeat(hi, b - a)
        j = np.tile(np.arange(b - a), len(hi))
        m = gq[i] > gq[j]
        if m.any():
            better.append(i[m] + a)
            worse.append(j[m] + a)
            w = row_weight[j[m] + a]
            weight.append(w / w.sum())
    return np.concatenate(better), np.concatenate(worse), np.concatenate(weight)


def _file_pairs(rows: _Rows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(target file group, other file group, weight) for every such pair of a query; each query's
    pairs weigh 1 in all."""
    groups = rows.file_group
    first_row = np.unique(groups, return_index=True)[1]
    # A file group of drawn rows stands for as many files as its rows stand for rows.
    group_weight = np.zeros(len(first_row))
    np.maximum.at(group_weight, groups, rows.weight)
    group_query = np.searchsorted(rows.starts, first_row, side="right") - 1
    group_target = rows.target_file[first_row]
    better: list[np.ndarray] = []
    worse: list[np.ndarray] = []
    weight: list[np.ndarray] = []
    bounds = np.flatnonzero(np.r_[True, group_query[1:] != group_query[:-1], True])
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        hi = np.flatnonzero(group_target[a:b]) + a
        lo = np.flatnonzero(~group_target[a:b]) + a
        if len(hi) and len(lo):
            better.append(np.repeat(hi, len(lo)))
            worse.append(np.tile(lo, len(hi)))
            w = np.tile(group_weight[lo], len(hi))
            weight.append(w / w.sum())
    if not better:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    return np.concatenate(better), np.concatenate(worse), np.concatenate(weight)


class _Groups(NamedTuple):
    """Rows sorted by group once, so each step's per-group maximum is one reduceat."""

    order: np.ndarray  # row indices, grouped
    starts: np.ndarray  # where each group begins in `order`
    sorted_group: np.ndarray  # the group of each position of `order`


def _grouped(groups: np.ndarray) -> _Groups:
    order = np.argsort(groups, kind="stable")
    sorted_group = groups[order]
    return _Groups(order, np.flatnonzero(np.r_[True, sorted_group[1:] != sorted_group[:-1]]), sorted_group)


def _best_rows(s: np.ndarray, g: _Groups) -> np.ndarray:
    """The row of each group with the highest score (ties: the first in row order)."""
    ss = s[g.order]
    top = np.maximum.reduceat(ss, g.starts)
    at_top = np.flatnonzero(ss == top[g.sorted_group])
    _, first = np.unique(g.sorted_group[at_top], return_index=True)
    return g.order[at_top[first]]


def fit(
    table: dict[str, np.ndarray],
    steps: int = STEPS,
    seed: int = 0,
    loss: str = LOSS,
    file_loss: float = FILE_LOSS,
) -> LinearModel:
    """The fit of the module docstring, pairwise (default) or listwise, plus `file_loss` x the
    file-level term; deterministic for a table and seed (`seed` fixes nothing random today: the fit is
    full-batch from zero weights; it is kept so a future sampled fit stays reproducible)."""
    del seed
    if loss not in ("pairwise", "listwise"):
        raise ValueError(f"unknown ranker loss {loss!r}: pairwise or listwise")
    rows = _rows(table)
    x, g, starts = rows.x, rows.gain, rows.starts
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    sizes = np.diff(np.r_[starts, len(z)])
    n_q = len(starts)
    if loss == "listwise":
        target = g / np.repeat(np.add.reduceat(g, starts), sizes)
    else:
        better, worse, weight = _pairs(g, starts, rows.weight)
    if file_loss:
        f_better, f_worse, f_weight = _file_pairs(rows)
        file_groups = _grouped(rows.file_group)
    w = np.zeros(z.shape[1])
    m1 = np.zeros_like(w)
    m2 = np.zeros_like(w)
    b1, b2, eps = 0.9, 0.999, 1e-8
    for step in range(1, steps + 1):
        s = z @ w
        if loss == "listwise":
            s = s - np.repeat(np.maximum.reduceat(s, starts), sizes)
            e = np.exp(s) * rows.weight  # a drawn row stands for `weight` head rows
            ds = e / np.repeat(np.add.reduceat(e, starts), sizes) - target
        else:
            # d/ds of log(1 + exp(-(s_better - s_worse))), per row.
            sig = weight / (1.0 + np.exp(s[better] - s[worse]))
            ds = np.bincount(worse, weights=sig, minlength=len(z)) - np.bincount(
                better, weights=sig, minlength=len(z)
            )
        if file_loss:
            # The same logistic pair term on each file's best candidate (a subgradient of the max).
            best = _best_rows(s, file_groups)
            hi, lo = best[f_better], best[f_worse]
            sig = file_loss * f_weight / (1.0 + np.exp(s[hi] - s[lo]))
            ds = (
                ds
                + np.bincount(lo, weights=sig, minlength=len(z))
                - np.bincount(hi, weights=sig, minlength=len(z))
            )
        grad = z.T @ ds / n_q + L2 * w
        m1 = b1 * m1 + (1 - b1) * grad
        m2 = b2 * m2 + (1 - b2) * grad * grad
        w -= LEARNING_RATE * (m1 / (1 - b1**step)) / (np.sqrt(m2 / (1 - b2**step)) + eps)
    raw = w / scale
    return LinearModel(FEATURES, raw, float(-(raw * mean).sum()))


def mrr_by_style(table: dict[str, np.ndarray], scores: np.ndarray) -> dict[str, float]:
    """MRR@10 of an order of the table's candidates (higher score first; chunk gain 1 counts as found),
    per style and overall."""
    qid = table["qid"]
    out: dict[str, list[float]] = {}
    order = np.lexsort((-scores, qid))
    starts = np.flatnonzero(np.r_[True, np.diff(qid[order]) != 0])
    ends = np.r_[starts[1:], len(order)]
    for a, b in zip(starts, ends, strict=True):
        rows = order[a:b]
        q = int(qid[rows[0]])
        hits = np.flatnonzero(table["gain"][rows][:10] >= 1.0)
        rr = 1.0 / (1 + hits[0]) if len(hits) else 0.0
        style = STYLES[int(table["style"][q])]
        out.setdefault(style, []).append(rr)
        out.setdefault("ALL", []).append(rr)
    return {k: float(np.mean(v)) for k, v in sorted(out.items())}
