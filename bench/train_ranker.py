"""Fit the learned ranker (`codebase_index.ranking.learned`) on generated training queries.

Two stages, so the fit is reproducible without the corpora:
  extract  run every golden query of the training sets through the real engine (hybrid, or keyword for a
           set without vectors), record the rank stage's candidates and features
           (`ranking.pipeline.capture`), label each candidate by the golden targets, and write a table
  fit      fit the linear model on a table: listwise softmax cross-entropy (each query's candidates,
           target mass spread over its relevant ones) with L2, full-batch Adam from zero weights on
           standardised features, a fixed number of steps: the same table gives the same weights

A training set is a folder with corpus/, index/ (indexed, embedded) and golden.json (the validation
set layout of bench/make_validation_set.py), or a manifest listing such folders. Training, validation
and evaluation sets must be disjoint by repository (`../shared/bench/reserved.txt` is never used).

Usage:
    python bench/train_ranker.py extract SET [SET ...] --out TABLE.npz [--mode hybrid] [--rows 40]
    python bench/train_ranker.py compact TABLE.npz --out tests/fixtures/ranker/table.npz [--rows 16]
    python bench/train_ranker.py fit TABLE.npz [--out python/codebase_index/ranking/weights.json]
    python bench/train_ranker.py cv TABLE.npz [--folds 3]   (held-out repositories: rules vs model)
    python bench/train_ranker.py eval TABLE.npz [--weights W.json]   (MRR@10 per style, by the table)
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from codebase_index.config import Config
from codebase_index.evaluation import Target, load_golden
from codebase_index.ranking import learned
from codebase_index.ranking.fit import STEPS, STORED_FILE_GAIN, fit, load_table, mrr_by_style
from codebase_index.ranking.learned import FEATURES, LinearModel, feature_matrix
from codebase_index.ranking.model import rank
from codebase_index.ranking.pipeline import capture
from codebase_index.ranking.query import STYLES
from codebase_index.service import Engine

HERE = Path(__file__).resolve().parent
SHIPPED = HERE.parent / "python" / "codebase_index" / "ranking" / "weights.json"

SAME_FILE_GAIN = STORED_FILE_GAIN  # a candidate in a target file whose lines miss the target's


def gain(path: str, start: int, end: int, targets: Sequence[Target]) -> float:
    """1 for a chunk that holds a target (path and overlapping lines, or the path when the target has no
    lines), `SAME_FILE_GAIN` for another chunk of a target file, else 0."""
    best = 0.0
    for t in targets:
        if t.path != path:
            continue
        if t.start_line is None or t.end_line is None or not (end < t.start_line or start > t.end_line):
            return 1.0
        best = SAME_FILE_GAIN
    return best


def extract_set(base: Path, mode: str, rows: int, max_queries: int = 0) -> dict[str, np.ndarray]:
    """Feature rows of every golden query of one set (at most `rows` candidates per query, the
    relevant ones always kept)."""
    engine = Engine(base / "corpus", index_path=base / "index", config=Config())
    golden = load_golden(base / "golden.json")
    if max_queries and len(golden) > max_queries:
        # A seeded sample per set, in the set's order (the same set gives the same sample).
        keep = sorted(random.Random(base.name).sample(range(len(golden)), max_queries))
        golden = [golden[i] for i in keep]
    xs: list[np.ndarray] = []
    gains: list[np.ndarray] = []
    ranks: list[np.ndarray] = []
    qids: list[int] = []
    styles: list[int] = []
    cats: list[str] = []
    snap = engine.snapshot()
    try:
        for qi, g in enumerate(golden):
            with capture() as seen:
                engine.search(g.query, top_k=10, mode=mode)
            if not seen:
                continue
            got = seen[-1]
            x = feature_matrix(got.candidates, got.parsed, got.evidence, got.path_weights)
            # The hand-set scorer's order of the same candidates, to compare against on the table.
            by_rules = rank(got.candidates, got.parsed, None, got.path_weights, got.evidence.relation)
            position = {r.doc: i for i, r in enumerate(by_rules)}
            rules_rank = np.array([position[c.doc] for c in got.candidates], dtype=np.int32)
            y = np.array(
                [
                    gain(c.path, snap.docs[c.doc].start_line, snap.docs[c.doc].end_line, g.relevant)
                    for c in got.candidates
                ],
                dtype=np.float32,
            )
            keep = np.flatnonzero((np.arange(len(y)) < rows) | (y > 0))
            xs.append(x[keep].astype(np.float32))
            ranks.append(rules_rank[keep])
            gains.append(y[keep])
            qids.extend([qi] * len(keep))
            styles.append(STYLES.index(got.parsed.style))
            cats.append(g.category)
    finally:
        engine.close()
    if not xs:
        return {}
    return {
        "x": np.concatenate(xs),
        "gain": np.concatenate(gains),
        "rules_rank": np.concatenate(ranks),
        "qid": np.asarray(qids, dtype=np.int32),
        "style": np.asarray(styles, dtype=np.int8),
        "category": np.asarray(cats),
    }


def read_sets(args: Sequence[str]) -> list[Path]:
    """Set folders, expanding manifests (a JSON list of folders, or {"sets": [...]})."""
    out: list[Path] = []
    for a in args:
        p = Path(a).expanduser()
        if p.is_file():
            data = json.loads(p.read_text())
            entries = data["sets"] if isinstance(data, dict) else data
            out.extend((p.parent / str(e.get("path", e) if isinstance(e, dict) else e)) for e in entries)
        else:
            out.append(p)
    return out


def cmd_extract(args: argparse.Namespace) -> int:
    args.out.parent.mkdir(parents=True, exist_ok=True)
    parts: list[dict[str, np.ndarray]] = []
    repos: list[str] = []
    offset = 0
    for base in read_sets(args.sets):
        t0 = time.time()
        part = extract_set(base, args.mode, args.rows, args.max_queries)
        if not part:
            print(f"{base.name}: no queries", file=sys.stderr)
            continue
        part["qid"] = part["qid"] + offset
        n_queries = len(part["style"])
        offset = int(part["qid"].max()) + 1
        part["repo"] = np.full(n_queries, len(repos), dtype=np.int32)
        repos.append(base.name)
        parts.append(part)
        rows = len(part["gain"])
        print(f"{base.name}: {n_queries} queries, {rows} rows, {time.time() - t0:.0f}s", flush=True)
    table = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    # Query ids renumbered 0..Q-1 in order, so per-query arrays (style, repo) index by them.
    _, table["qid"] = np.unique(table["qid"], return_inverse=True)
    arrays: dict[str, Any] = {"features": np.asarray(FEATURES), "repos": np.asarray(repos), **table}
    np.savez_compressed(args.out, **arrays)
    print(f"{args.out}: {len(table['style'])} queries, {len(table['gain'])} rows, {len(FEATURES)} features")
    return 0


def report(table: dict[str, np.ndarray], model: LinearModel) -> None:
    """MRR@10 per style on a table: the model's order beside the hand-set scorer's."""
    fitted = mrr_by_style(table, model.scores(table["x"].astype(np.float64)))
    rules = mrr_by_style(table, -table["rules_rank"].astype(np.float64))
    print(f"  {'style':<12} {'rules':>6} {'model':>6}")
    for style, v in fitted.items():
        print(f"  {style:<12} {rules[style]:6.3f} {v:6.3f}")


def cmd_fit(args: argparse.Namespace) -> int:
    table = load_table(args.table)
    model = fit(table, args.steps, args.seed)
    args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n")
    print(f"{args.out}: fitted on {len(table['style'])} queries")
    report(table, model)
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    """The table the shipped weights are fitted on and the test re-fits: per query its relevant rows and
    the first `--rows` in fused order, features as float16 (small enough to keep in the repository)."""
    table = load_table(args.table)
    qid = table["qid"]
    starts = np.r_[0, np.flatnonzero(np.diff(qid)) + 1]
    position = np.arange(len(qid)) - np.repeat(starts, np.diff(np.r_[starts, len(qid)]))
    keep = (position < args.rows) | (table["gain"] > 0)
    out = {k: v for k, v in table.items() if k not in ("x", "gain", "rules_rank", "qid")}
    out["x"] = table["x"][keep].astype(np.float16)
    out["gain"] = table["gain"][keep].astype(np.float16)
    out["rules_rank"] = table["rules_rank"][keep].astype(np.int16)
    out["qid"] = qid[keep].astype(np.int32)
    np.savez_compressed(args.out, **out)
    print(
        f"{args.out}: {len(out['style'])} queries, {int(keep.sum())} rows ({args.out.stat().st_size} bytes)"
    )
    return 0


def subset(table: dict[str, np.ndarray], queries: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of the given query ids, renumbered 0..n-1 (per-query arrays follow)."""
    rows = np.isin(table["qid"], queries)
    out = {k: v for k, v in table.items() if k in ("features", "repos")}
    for k in ("x", "gain", "rules_rank"):
        out[k] = table[k][rows]
    _, out["qid"] = np.unique(table["qid"][rows], return_inverse=True)
    for k in ("style", "repo", "category"):
        out[k] = table[k][np.sort(queries)]
    return out


def cmd_cv(args: argparse.Namespace) -> int:
    """Cross-validation by repository: each fold's repositories are held out of the fit and scored."""
    table = load_table(args.table)
    repos = np.unique(table["repo"])
    folds = [repos[i :: args.folds] for i in range(args.folds)]
    held: list[dict[str, np.ndarray]] = []
    scores: list[np.ndarray] = []
    for fold in folds:
        test_q = np.flatnonzero(np.isin(table["repo"], fold))
        train_q = np.flatnonzero(~np.isin(table["repo"], fold))
        model = fit(subset(table, train_q), args.steps, args.seed)
        part = subset(table, test_q)
        held.append(part)
        scores.append(model.scores(part["x"].astype(np.float64)))
    print(f"  {'style':<12} {'rules':>6} {'model':>6}   (held-out repositories, {args.folds} folds)")
    by_model: dict[str, list[float]] = {}
    by_rules: dict[str, list[float]] = {}
    for part, sc in zip(held, scores, strict=True):
        for style, v in mrr_by_style(part, sc).items():
            by_model.setdefault(style, []).append(v * _count(part, style))
        for style, v in mrr_by_style(part, -part["rules_rank"].astype(np.float64)).items():
            by_rules.setdefault(style, []).append(v * _count(part, style))
    for style in by_model:
        n = sum(_count(p, style) for p in held)
        print(f"  {style:<12} {sum(by_rules[style]) / n:6.3f} {sum(by_model[style]) / n:6.3f}  ({n} queries)")
    return 0


def _count(part: dict[str, np.ndarray], style: str) -> int:
    """Queries of a style in a table (what mrr_by_style averages over)."""
    present = np.zeros(len(part["style"]), dtype=bool)
    present[part["qid"]] = True
    if style == "ALL":
        return int(present.sum())
    return int((present & (part["style"] == STYLES.index(style))).sum())


def cmd_eval(args: argparse.Namespace) -> int:
    table = load_table(args.table)
    report(table, learned.load_model(args.weights))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="cmd", required=True)
    ex = sub.add_parser("extract")
    ex.add_argument("sets", nargs="+")
    ex.add_argument("--out", type=Path, required=True)
    ex.add_argument("--mode", default="hybrid")
    ex.add_argument("--max-queries", type=int, default=0, help="seeded sample per set (0 = all)")
    ex.add_argument("--rows", type=int, default=40, help="candidates kept per query (relevant ones always)")
    ex.set_defaults(run=cmd_extract)
    ft = sub.add_parser("fit")
    ft.add_argument("table", type=Path)
    ft.add_argument("--out", type=Path, default=SHIPPED)
    ft.add_argument("--steps", type=int, default=STEPS)
    ft.add_argument("--seed", type=int, default=0)
    ft.set_defaults(run=cmd_fit)
    cp = sub.add_parser("compact")
    cp.add_argument("table", type=Path)
    cp.add_argument("--out", type=Path, required=True)
    cp.add_argument("--rows", type=int, default=16, help="rows kept per query besides the relevant ones")
    cp.set_defaults(run=cmd_compact)
    cv = sub.add_parser("cv")
    cv.add_argument("table", type=Path)
    cv.add_argument("--folds", type=int, default=3)
    cv.add_argument("--steps", type=int, default=STEPS)
    cv.add_argument("--seed", type=int, default=0)
    cv.set_defaults(run=cmd_cv)
    ev = sub.add_parser("eval")
    ev.add_argument("table", type=Path)
    ev.add_argument("--weights", type=Path, default=SHIPPED)
    ev.set_defaults(run=cmd_eval)
    args = parser.parse_args()
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
