"""Paired comparison of runs over the same queries: per-group means and paired bootstrap 95% intervals.

Two kinds of run:
  validation  bench/acceptance.py --save files (one mode each, or NAME=PATH:MODE): every query's ranks;
              metrics file nDCG@10, chunk nDCG@10, file MRR@10, chunk MRR@10, file Hit@1 (evaluation.py's),
              grouped overall, per style and per language
  changes     bench/eval_changes.py run --out files ({repo: [[file, ...] per query]}) of one split;
              metrics MRR@10, Hit@1, Recall@10, nDCG@10 (eval_changes.query_metrics), overall and per
              language
Runs are named NAME=PATH; `--pair A-B` (repeatable) prints the mean of A - B over the queries both answered
with its bootstrap interval (resampling queries within each group, --samples, seeded). Queries are paired by
position; their texts must agree.

Usage:
    python bench/paired_bootstrap.py validation keyword=K.json minilm=M.json static=S.json \\
        --pair static-minilm --pair static-keyword [--markdown]
    python bench/paired_bootstrap.py changes keyword=K.json minilm=M.json static=S.json [--split eval] \\
        --pair static-minilm --pair static-keyword
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from eval_changes import DEFAULT_TRAIN, eval_sets, query_metrics  # noqa: E402

VALIDATION_METRICS = ("file nDCG@10", "chunk nDCG@10", "file MRR@10", "chunk MRR@10", "Hit@1")
CHANGE_METRICS = ("MRR@10", "Hit@1", "Recall@10", "nDCG@10")
from acceptance import STYLES  # noqa: E402  (the validation styles, in report order)


def ndcg(ranks: list[int], n_relevant: int, k: int = 10) -> float:
    """evaluation.ndcg_at_k: binary gains, a rank shared by two targets counted once."""
    if n_relevant <= 0:
        return 0.0
    found = {r for r in ranks if 1 <= r <= k}
    ideal = sum(1.0 / np.log2(i + 2) for i in range(min(k, n_relevant)))
    return float(sum(1.0 / np.log2(r + 1) for r in found) / ideal)


def validation_rows(path: Path, mode: str | None) -> tuple[list[str], list[dict[str, str]], np.ndarray]:
    """(query keys, labels (style, language), metrics [queries x VALIDATION_METRICS]) of one acceptance
    run."""
    saved = json.loads(path.read_text())
    if mode is None:
        if len(saved) != 1:
            raise SystemExit(f"{path}: holds modes {sorted(saved)}: name one as NAME=PATH:MODE")
        mode = next(iter(saved))
    queries = saved[mode]["queries"]
    rows = []
    for q in queries:
        f, c = q["file_ranks"], q["chunk_ranks"]
        rows.append(
            (
                ndcg(f, q["n_relevant"]),
                ndcg(c, q["n_relevant"]),
                1 / f[0] if f else 0.0,
                1 / c[0] if c else 0.0,
                1.0 if f and f[0] == 1 else 0.0,
            )
        )
    labels = [{"style": q["category"], "language": q["language"]} for q in queries]
    return [f"{q['repo']}\0{q['query']}" for q in queries], labels, np.asarray(rows)


def change_rows(path: Path, train: Path, split: str) -> tuple[list[str], list[dict[str, str]], np.ndarray]:
    """The same for one eval_changes.py run."""
    results = json.loads(path.read_text())
    texts, labels, rows = [], [], []
    for repo, _, queries in eval_sets(train, split):
        if repo not in results:
            continue
        for q, files in zip(queries, results[repo], strict=True):
            texts.append(f"{repo}\0{q['query']}")
            labels.append({"language": q["language"]})
            rows.append(query_metrics(files, q["relevant"]))
    return texts, labels, np.asarray(rows)


def groups(labels: list[dict[str, str]], keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """{"ALL": every index, "style=x": ..., "language=y": ...} in a stable order."""
    out = {"ALL": np.arange(len(labels))}
    for key in keys:
        values = sorted(
            {lab[key] for lab in labels},
            key=lambda v: (v not in STYLES, STYLES.index(v) if v in STYLES else 0, v),
        )
        for v in values:
            out[f"{key}={v}"] = np.asarray([i for i, lab in enumerate(labels) if lab[key] == v])
    return out


def bootstrap(diff: np.ndarray, samples: int, rng: np.random.Generator) -> tuple[float, float, float]:
    """(mean, 2.5th, 97.5th percentile) of the mean of `diff` over resampled queries."""
    n = len(diff)
    means = diff[rng.integers(0, n, size=(samples, n))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(diff.mean()), float(lo), float(hi)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("kind", choices=["validation", "changes"])
    parser.add_argument("runs", nargs="+", help="NAME=PATH (validation: NAME=PATH[:MODE])")
    parser.add_argument("--pair", action="append", default=[], help="A-B: bootstrap of A - B (repeatable)")
    parser.add_argument("--train", type=Path, default=DEFAULT_TRAIN)
    parser.add_argument("--split", default="eval", help="changes: the manifest's split")
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--metric", action="append", help="only these metrics (default: all of the kind's)")
    args = parser.parse_args()
    metrics = VALIDATION_METRICS if args.kind == "validation" else CHANGE_METRICS
    shown = [metrics.index(m) for m in args.metric or metrics]
    keys = ("style", "language") if args.kind == "validation" else ("language",)
    data: dict[str, np.ndarray] = {}
    texts: list[str] | None = None
    labels: list[dict[str, str]] = []
    for spec in args.runs:
        name, _, where = spec.partition("=")
        if args.kind == "validation":
            path, _, mode = where.partition(":")
            got_texts, got_labels, rows = validation_rows(Path(path), mode or None)
        else:
            got_texts, got_labels, rows = change_rows(Path(where), args.train, args.split)
        if texts is None:
            texts, labels = got_texts, got_labels
        elif got_texts != texts:
            raise SystemExit(f"{name}: its queries are not the first run's (same sets, same order?)")
        data[name] = rows
    names = list(data)
    by = groups(labels, keys)
    print("| group | n | " + " | ".join(f"{metrics[j]} {n}" for j in shown for n in names) + " |")
    print("|---|---|" + "---|" * (len(shown) * len(names)))
    for group, idx in by.items():
        cells = [f"{data[n][idx, j].mean():.3f}" for j in shown for n in names]
        print(f"| {group} | {len(idx)} | " + " | ".join(cells) + " |")
    for pair in args.pair:
        a, _, b = pair.partition("-")
        print(f"\n{a} - {b}, paired bootstrap 95% ({args.samples} samples, seed {args.seed}):\n")
        first = metrics[shown[0]]
        print("| group | n | " + " | ".join(metrics[j] for j in shown) + f" | better / worse ({first}) |")
        print("|---|---|" + "---|" * len(shown) + "---|")
        rng = np.random.default_rng(args.seed)
        for group, idx in by.items():
            cells = []
            for j in shown:
                mean, lo, hi = bootstrap(data[a][idx, j] - data[b][idx, j], args.samples, rng)
                mark = "*" if lo > 0 or hi < 0 else ""
                cells.append(f"{mean:+.3f} [{lo:+.3f}, {hi:+.3f}]{mark}")
            d = data[a][idx, shown[0]] - data[b][idx, shown[0]]
            moved = f"{int((d > 1e-9).sum())} / {int((d < -1e-9).sum())}"
            print(f"| {group} | {len(idx)} | " + " | ".join(cells) + f" | {moved} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
