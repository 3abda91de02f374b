"""Fitting the learned ranker's weights from a training table (`bench/train_ranker.py extract` writes
one): a pairwise logistic loss over each query's (relevant, less relevant) candidate pairs, or listwise
softmax cross-entropy (the target mass spread over its relevant ones by gain), with L2, full-batch Adam
from zero weights on standardised features, a fixed number of steps. numpy only and deterministic: the
same table and seed give the same weights, which is what the test of the shipped `weights.json` checks.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .learned import FEATURES, LinearModel
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


def load_table(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        table = {k: data[k] for k in data.files}
    if tuple(table["features"].tolist()) != FEATURES:
        raise ValueError(f"{path}: extracted with another feature list; run extract again")
    return table


def _rows(table: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x [N, F], each row's gain [N], query starts) over the queries that have a relevant candidate,
    rows grouped by query (the table stores them so)."""
    qid = table["qid"].astype(np.int64)
    g = table["gain"].astype(np.float64)
    g = np.where(np.isclose(g, STORED_FILE_GAIN), FILE_GAIN, g)
    n_q = int(qid.max()) + 1
    total = np.bincount(qid, weights=g, minlength=n_q)
    keep = total[qid] > 0
    qid, g = qid[keep], g[keep]
    x = table["x"][keep].astype(np.float64)
    starts = np.flatnonzero(np.r_[True, qid[1:] != qid[:-1]])
    return x, g, starts


def _pairs(g: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(better row, worse row, weight) for every pair of one query's rows whose gains differ; each
    query's pairs weigh 1 in all (a query with many candidates does not count more)."""
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
            weight.append(np.full(int(m.sum()), 1.0 / int(m.sum())))
    return np.concatenate(better), np.concatenate(worse), np.concatenate(weight)


def fit(table: dict[str, np.ndarray], steps: int = STEPS, seed: int = 0, loss: str = LOSS) -> LinearModel:
    """The fit of the module docstring, pairwise (default) or listwise; deterministic for a table and
    seed (`seed` fixes nothing random today: the fit is full-batch from zero weights; it is kept so a
    future sampled fit stays reproducible)."""
    del seed
    if loss not in ("pairwise", "listwise"):
        raise ValueError(f"unknown ranker loss {loss!r}: pairwise or listwise")
    x, g, starts = _rows(table)
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = (x - mean) / scale
    sizes = np.diff(np.r_[starts, len(z)])
    n_q = len(starts)
    if loss == "listwise":
        target = g / np.repeat(np.add.reduceat(g, starts), sizes)
    else:
        better, worse, weight = _pairs(g, starts)
    w = np.zeros(z.shape[1])
    m1 = np.zeros_like(w)
    m2 = np.zeros_like(w)
    b1, b2, eps = 0.9, 0.999, 1e-8
    for step in range(1, steps + 1):
        s = z @ w
        if loss == "listwise":
            s = s - np.repeat(np.maximum.reduceat(s, starts), sizes)
            e = np.exp(s)
            ds = e / np.repeat(np.add.reduceat(e, starts), sizes) - target
        else:
            # d/ds of log(1 + exp(-(s_better - s_worse))), per row.
            sig = weight / (1.0 + np.exp(s[better] - s[worse]))
            ds = np.bincount(worse, weights=sig, minlength=len(z)) - np.bincount(
                better, weights=sig, minlength=len(z)
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
