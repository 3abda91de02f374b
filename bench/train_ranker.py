"""Fit the learned ranker (`codebase_index.ranking.learned`) on generated training queries.

Two stages, so the fit is reproducible without the corpora:
  extract  run every golden query of the training sets through the real engine (hybrid, or keyword for a
           set without vectors), record the rank stage's candidates and features
           (`ranking.pipeline.capture`), label each candidate by the golden targets, and write a table
  fit      fit the linear model on a table (`ranking.fit`: pairwise logistic, or --loss listwise) with
           L2, full-batch Adam from zero weights on standardised features, a fixed number of steps:
           the same table gives the same weights

A training set is a folder with corpus/, index/ (indexed, embedded) and golden.json (the validation
set layout of bench/make_validation_set.py), or a manifest listing such folders. Training, validation
and evaluation sets must be disjoint by repository (`../shared/bench/reserved.txt` is never used).

Usage:
    python bench/train_ranker.py extract SET [SET ...] --out TABLE.npz [--mode hybrid] [--rows 40]
        [--split validation] [--index-name index-static-v2] [--changes-index changes-index-static-v2]
    python bench/train_ranker.py compact TABLE.npz --out tests/fixtures/ranker/table.npz [--rows 16]
    python bench/train_ranker.py fit TABLE.npz [--out python/codebase_index/ranking/weights.json]
    python bench/train_ranker.py cv TABLE.npz [--folds 3]   (held-out repositories: rules vs model)
    python bench/train_ranker.py eval TABLE.npz [--weights W.json]   (MRR@10 per style, by the table)
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from codebase_index.config import Config
from codebase_index.evaluation import Target, load_golden
from codebase_index.ranking import learned
from codebase_index.ranking.fit import FILE_LOSS, LOSS, STEPS, STORED_FILE_GAIN, fit, load_table
from codebase_index.ranking.learned import FEATURES, LinearModel, feature_matrix
from codebase_index.ranking.model import diversify, rank
from codebase_index.ranking.pipeline import capture, guaranteed_first
from codebase_index.ranking.query import STYLES
from codebase_index.service import Engine

HERE = Path(__file__).resolve().parent
SHIPPED = HERE.parent / "python" / "codebase_index" / "ranking" / "weights.json"

SAME_FILE_GAIN = STORED_FILE_GAIN  # a candidate in a target file whose lines miss the target's
SAMPLED = 16  # compact: rows drawn per query from the head beyond its first ones


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


# Per candidate (`weight`: how many head rows a compacted row stands for); the rest per query.
ROW_KEYS = ("x", "gain", "rules_rank", "qid", "guaranteed", "file_id", "weight")


def extract_set(
    base: Path,
    mode: str,
    rows: int,
    max_queries: int = 0,
    index_name: str = "index",
    changes_index: str = "changes-index",
) -> dict[str, np.ndarray]:
    """Feature rows of every golden query of one set (at most `rows` candidates per query, the
    relevant ones always kept), then of its change descriptions (changes.json) if it has any;
    `index_name` / `changes_index` name the index folders read (one copy per embedding model)."""
    golden = load_golden(base / "golden.json")
    raw = json.loads((base / "golden.json").read_text())
    # The golden entries' language (extra key load_golden ignores; the same order, one entry each).
    languages = [str(r.get("language", "")) for r in raw] if len(raw) == len(golden) else [""] * len(golden)
    if max_queries and len(golden) > max_queries:
        # A seeded sample per set, in the set's order (the same set gives the same sample).
        keep = sorted(random.Random(base.name).sample(range(len(golden)), max_queries))
        golden = [golden[i] for i in keep]
        languages = [languages[i] for i in keep]
    parts: list[dict[str, Any]] = []
    engine = Engine(base / "corpus", index_path=base / index_name, config=Config())
    try:
        for g, language in zip(golden, languages, strict=True):
            part = _query_rows(engine, g.query, g.relevant, mode, rows)
            if part is not None:
                parts.append(part | {"category": g.category, "language": language})
    finally:
        engine.close()
    changes = base / "changes.json"
    if changes.is_file():
        parts += _change_rows(base, json.loads(changes.read_text()), mode, rows, changes_index)
    if not parts:
        return {}
    out: dict[str, np.ndarray] = {
        k: np.concatenate([p[k] for p in parts]) for k in ROW_KEYS if k != "qid" and k in parts[0]
    }
    out["qid"] = np.concatenate([np.full(len(p["gain"]), i, dtype=np.int32) for i, p in enumerate(parts)])
    out["style"] = np.asarray([p["style"] for p in parts], dtype=np.int8)
    out["change"] = np.asarray([p["change"] for p in parts], dtype=bool)
    out["category"] = np.asarray([p["category"] for p in parts])
    out["language"] = np.asarray([p["language"] for p in parts])
    return out


def _change_rows(
    base: Path, entries: list[dict[str, Any]], mode: str, rows: int, index_name: str = "changes-index"
) -> list[dict[str, Any]]:
    """Change descriptions: each searched over its parent snapshot (branch of changes/, indexed in
    changes-index/ by make_training_set.py); any chunk of a changed file is relevant (file level)."""
    clone = base / "changes"
    out: list[dict[str, Any]] = []
    for e in entries:
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", "-f", e["branch"]], check=True)
        engine = Engine(clone, index_path=base / index_name, config=Config())
        try:
            targets = [Target(str(p)) for p in e["relevant"]]
            part = _query_rows(engine, e["query"], targets, mode, rows)
        finally:
            engine.close()
        if part is not None:
            out.append(part | {"category": "change", "language": str(e.get("language", ""))})
    return out


def _query_rows(
    engine: Engine, query: str, relevant: Sequence[Target], mode: str, rows: int
) -> dict[str, Any] | None:
    """One query's rank-stage candidates as table rows: features, gain, the hand-set scorer's rank, the
    candidate `guarantees` puts first whatever the scorer says, and the candidate's file (an index per
    query, for the final diversification)."""
    snap = engine.snapshot()
    with capture() as seen:
        engine.search(query, top_k=10, mode=mode)
    if not seen:
        return None
    got = seen[-1]
    x = feature_matrix(got.candidates, got.parsed, got.evidence, got.path_weights)
    # The hand-set scorer's order of the same candidates, to compare against on the table.
    # As the engine calls it (`pipeline.rank_hits`): with the chunks holding a string the query quotes.
    quoted = frozenset(
        d for d, found in got.evidence.literal.items() if any(lit.kind == "quoted" for lit in found)
    )
    by_rules = rank(got.candidates, got.parsed, None, got.path_weights, got.evidence.relation, quoted)
    position = {r.doc: i for i, r in enumerate(by_rules)}
    rules_rank = np.array([position[c.doc] for c in got.candidates], dtype=np.int32)
    first = guaranteed_first(got.parsed, got.candidates, got.exact, got.evidence.spans, got.quoting)
    files: dict[str, int] = {}
    y = np.array(
        [
            gain(c.path, snap.docs[c.doc].start_line, snap.docs[c.doc].end_line, relevant)
            for c in got.candidates
        ],
        dtype=np.float32,
    )
    # The whole head by default: a table cut at the first rows (with the relevant ones kept wherever they
    # sit) shows the fit no deep negatives and scores a model on heads it never ranks in the engine.
    keep = np.flatnonzero((np.arange(len(y)) < rows) | (y > 0)) if rows > 0 else np.arange(len(y))
    return {
        "x": x[keep].astype(np.float32),
        "gain": y[keep],
        "rules_rank": rules_rank[keep],
        "guaranteed": np.array([got.candidates[i].doc == first for i in keep], dtype=bool),
        "file_id": np.array(
            [files.setdefault(got.candidates[i].path, len(files)) for i in keep], dtype=np.int16
        ),
        "style": STYLES.index(got.parsed.style),
        "change": got.parsed.change,
    }


def read_sets(args: Sequence[str], split: str = "train") -> list[Path]:
    """Set folders, expanding manifests: a JSON list of folders, {"sets": [...]}, or the manifest of
    bench/make_training_set.py ({"repos": [{"repo", "split", "corpus", ...}]}, its `split` only)."""
    out: list[Path] = []
    for a in args:
        p = Path(a).expanduser()
        if not p.is_file():
            out.append(p)
            continue
        data = json.loads(p.read_text())
        if isinstance(data, dict) and "repos" in data:
            chosen = [r for r in data["repos"] if r["split"] == split]
            if not chosen:
                raise SystemExit(f"{p}: no repository of split {split!r}")
            out.extend(p.parent / Path(str(r["corpus"])).parent for r in chosen)
            continue
        entries = data["sets"] if isinstance(data, dict) else data
        out.extend((p.parent / str(e.get("path", e) if isinstance(e, dict) else e)) for e in entries)
    return out


def cmd_extract(args: argparse.Namespace) -> int:
    args.out.parent.mkdir(parents=True, exist_ok=True)
    parts: list[dict[str, np.ndarray]] = []
    repos: list[str] = []
    offset = 0
    for base in read_sets(args.sets, args.split):
        t0 = time.time()
        part = extract_set(base, args.mode, args.rows, args.max_queries, args.index_name, args.changes_index)
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


def final_rr(
    table: dict[str, np.ndarray], scores: np.ndarray, rules: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Reciprocal rank@10 per query of the order the engine would return: a model's scores -> exp ->
    `diversify` (rank_learned), the rules' order as it is (`rank` diversifies), then the candidate
    `guarantees` puts first. Two of them: of the first chunk of gain 1 (chunk level), and of the first
    chunk of a target file (file level: any gain; as bench/validate.py reads its top 10 results).
    NaN for a query without rows."""
    qid = table["qid"]
    chunk_rr = np.full(len(table["style"]), np.nan)
    file_rr = np.full(len(table["style"]), np.nan)
    starts = np.flatnonzero(np.r_[True, np.diff(qid) != 0])
    ends = np.r_[starts[1:], len(qid)]
    guaranteed = table.get("guaranteed", np.zeros(len(qid), dtype=bool))
    file_id = table.get("file_id", np.arange(len(qid)))
    for a, b in zip(starts, ends, strict=True):
        s = scores[a:b]
        if not rules:
            probs = np.exp(s - s.max()).tolist()
            items = [(i, str(f), probs[i]) for i, f in enumerate(file_id[a:b].tolist())]
            s = np.zeros(b - a)
            for i, v in diversify(items, learned.REPEAT_DECAY):
                s[i] = v
        order = np.lexsort((np.arange(b - a), -s))
        first = np.flatnonzero(guaranteed[a:b][order])
        if len(first):
            order = np.r_[order[first[0]], np.delete(order, first[0])]
        gains = table["gain"][a:b][order]
        hits = np.flatnonzero(gains[:10] >= 1.0)
        chunk_rr[qid[a]] = 1.0 / (1 + hits[0]) if len(hits) else 0.0
        file_hits = np.flatnonzero(gains[:10] > 0)
        file_rr[qid[a]] = 1.0 / (1 + file_hits[0]) if len(file_hits) else 0.0
    return chunk_rr, file_rr


def level_rrs(table: dict[str, np.ndarray], orders: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """{"NAME chunk": rr, "NAME file": rr} of each named order (scores; "rules" is the rules' rank)."""
    out: dict[str, np.ndarray] = {}
    for name, scores in orders.items():
        out[f"{name} chunk"], out[f"{name} file"] = final_rr(table, scores, rules=name == "rules")
    return out


def print_groups(table: dict[str, np.ndarray], rrs: dict[str, np.ndarray], title: str) -> None:
    """MRR@10 of each order per query style (as generated) and per language, with query counts; the
    queries parsed as change requests (`ParsedQuery.change`, whatever style they were generated as); for a
    merged table (`merge`), per source table (say keyword and hybrid) and per style within each."""
    names = list(rrs)
    n = len(table["style"])
    flagged = table["change"] if "change" in table else np.zeros(n, dtype=bool)
    sources = table.get("source")

    def by(labels: np.ndarray) -> list[tuple[str, np.ndarray]]:
        return [(str(v), labels == v) for v in sorted(set(labels.tolist()))]

    views: dict[str, list[tuple[str, np.ndarray]]] = {
        "category": [*by(table["category"]), ("(change flag)", flagged)],
        "language": by(table["language"]),
    }
    if sources is not None:
        views["source"] = [(f"table {v}", m) for v, m in by(sources)]
        views["category x source"] = [
            (f"{c} {v}", cm & sm)
            for v, sm in by(sources)
            for c, cm in [*by(table["category"]), ("(change flag)", flagged)]
        ]
    for key, groups in views.items():
        print(f"{title}, by {key}")
        print(f"  {key:<16} {'n':>6} " + " ".join(f"{n:>12}" for n in names))
        for group, mask in [("ALL", np.ones(n, dtype=bool)), *groups]:
            m = mask & ~np.isnan(rrs[names[0]])
            if not m.any():
                continue
            row = " ".join(f"{float(np.mean(rrs[name][m])):12.3f}" for name in names)
            print(f"  {group:<16} {int(m.sum()):>6} {row}")


def report(table: dict[str, np.ndarray], model: LinearModel, title: str) -> None:
    """MRR@10 on a table (chunk and file level): the model's final order beside the hand-set scorer's."""
    orders = {
        "rules": -table["rules_rank"].astype(np.float64),
        "model": model.scores(table["x"].astype(np.float64)),
    }
    print_groups(table, level_rrs(table, orders), title)


def cmd_fit(args: argparse.Namespace) -> int:
    table = load_table(args.table)
    model = fit(table, args.steps, args.seed, args.loss, args.file_loss)
    args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n")
    print(f"{args.out}: fitted on {len(table['style'])} queries")
    report(table, model, "on its own table")
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    """The table the shipped weights are fitted on and the test re-fits: per query its relevant rows and
    the first `--rows` in fused order, features as float16 (small enough to keep in the repository);
    `--max-queries` keeps a seeded sample of the queries, stratified by style x language."""
    table = load_table(args.table)
    if args.max_queries and len(table["style"]) > args.max_queries:
        table = subset(table, sample_queries(table, args.max_queries, args.seed))
    out = compact(table, args.rows, args.sampled, args.seed)
    np.savez_compressed(args.out, **out)
    print(
        f"{args.out}: {len(out['style'])} queries, {len(out['qid'])} rows ({args.out.stat().st_size} bytes)"
    )
    return 0


def sample_queries(table: dict[str, np.ndarray], n: int, seed: int) -> np.ndarray:
    """About `n` query ids, the same share of every style x language group (each keeps at least one)."""
    rng = np.random.default_rng(seed)
    groups: dict[tuple[str, str], list[int]] = {}
    for q, key in enumerate(zip(table["category"].tolist(), table["language"].tolist(), strict=True)):
        groups.setdefault(key, []).append(q)
    share = n / len(table["style"])
    chosen: list[int] = []
    for key in sorted(groups):
        ids = np.asarray(groups[key])
        k = max(1, round(len(ids) * share))
        chosen.extend(rng.choice(ids, size=min(k, len(ids)), replace=False).tolist())
    return np.asarray(sorted(chosen), dtype=np.int64)


def subset(table: dict[str, np.ndarray], queries: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of the given query ids, renumbered 0..n-1 (per-query arrays follow)."""
    rows = np.isin(table["qid"], queries)
    out = {k: v for k, v in table.items() if k in ("features", "repos")}
    for k in ROW_KEYS:
        if k in table and k != "qid":
            out[k] = table[k][rows]
    _, out["qid"] = np.unique(table["qid"][rows], return_inverse=True)
    for k in ("style", "repo", "category", "language", "source", "change"):
        if k in table:
            out[k] = table[k][np.sort(queries)]
    return out


def compact(
    table: dict[str, np.ndarray], rows: int, sampled: int = 0, seed: int = 0
) -> dict[str, np.ndarray]:
    """Per query its relevant rows, the first `rows` in fused order and `sampled` more drawn (seeded)
    from the rest of its head, each drawn row weighing (rest / drawn) in the fit so the drawn
    negatives stand for the whole head (a fit on the first rows alone never meets the deep candidates
    it has to keep down); features as float16."""
    qid = table["qid"]
    starts = np.r_[0, np.flatnonzero(np.diff(qid)) + 1]
    sizes = np.diff(np.r_[starts, len(qid)])
    position = np.arange(len(qid)) - np.repeat(starts, sizes)
    relevant = table["gain"] > 0
    keep = (position < rows) | relevant
    weight = (
        np.ones(len(qid), dtype=np.float64) if "weight" not in table else table["weight"].astype(np.float64)
    )
    if sampled:
        rng = np.random.default_rng(seed)
        for a, n in zip(starts.tolist(), sizes.tolist(), strict=True):
            rest = np.flatnonzero(~keep[a : a + n]) + a
            if not len(rest):
                continue
            drawn = rng.choice(rest, size=min(sampled, len(rest)), replace=False)
            keep[drawn] = True
            weight[drawn] *= len(rest) / len(drawn)
    out = {k: v for k, v in table.items() if k not in ROW_KEYS}
    for k in ROW_KEYS:
        if k in table:
            out[k] = table[k][keep]
    out["weight"] = weight[keep].astype(np.float32)
    out["x"] = out["x"].astype(np.float16)
    out["gain"] = out["gain"].astype(np.float16)
    out["rules_rank"] = out["rules_rank"].astype(np.int16)
    out["qid"] = out["qid"].astype(np.int32)
    return out


def cmd_merge(args: argparse.Namespace) -> int:
    """One table from several (say a keyword table and a hybrid one, so one model serves both modes):
    query ids renumbered in order, repositories merged by name (a repository in two tables is one
    repository for cv's folds)."""
    tables = [load_table(t) for t in args.tables]
    repos = sorted({str(r) for t in tables for r in t["repos"].tolist()})
    out: dict[str, Any] = {"features": np.asarray(FEATURES), "repos": np.asarray(repos)}
    offset = 0
    parts: dict[str, list[np.ndarray]] = {}
    for t in tables:
        index = np.asarray([repos.index(str(r)) for r in t["repos"].tolist()], dtype=np.int32)
        for k, v in t.items():
            if k in ("features", "repos", "source"):
                continue
            parts.setdefault(k, []).append(v + offset if k == "qid" else index[v] if k == "repo" else v)
        parts.setdefault("source", []).append(np.full(len(t["style"]), len(parts["source"]), dtype=np.int8))
        offset += len(t["style"])
    out |= {k: np.concatenate(v) for k, v in parts.items()}
    np.savez_compressed(args.out, **out)
    print(f"{args.out}: {len(out['style'])} queries, {len(out['gain'])} rows, {len(repos)} repositories")
    return 0


def cmd_cv(args: argparse.Namespace) -> int:
    """Cross-validation by repository: each fold's repositories are held out of the fit (on their
    compacted rows, as the shipped fit) and scored on all their rows."""
    table = load_table(args.table)
    repos = np.unique(table["repo"])
    folds = [repos[i :: args.folds] for i in range(args.folds)]
    losses = [float(v) for v in args.file_loss_grid.split(",")] if args.file_loss_grid else [args.file_loss]
    # Ablations: the default fit again with the features whose names end with each suffix zeroed.
    ablated = [a for a in args.ablate.split(",") if a]
    names = ["rules", *(f"f{v:g}" for v in losses), *(f"no-{a}" for a in ablated)]
    rrs = {f"{n} {level}": np.full(len(table["style"]), np.nan) for n in names for level in ("chunk", "file")}
    for fold in folds:
        test_q = np.flatnonzero(np.isin(table["repo"], fold))
        train_q = np.flatnonzero(~np.isin(table["repo"], fold))
        train = compact(subset(table, train_q), args.rows, args.sampled, args.seed)
        part = subset(table, test_q)
        orders = {"rules": -part["rules_rank"].astype(np.float64)}
        for v in losses:
            model = fit(train, args.steps, args.seed, args.loss, v)
            orders[f"f{v:g}"] = model.scores(part["x"].astype(np.float64))
        for a in ablated:
            off = [i for i, name in enumerate(FEATURES) if name.endswith(a)]
            x = train["x"].copy()
            x[:, off] = 0
            model = fit(train | {"x": x}, args.steps, args.seed, args.loss, args.file_loss)
            held = part["x"].astype(np.float64)
            held[:, off] = 0
            orders[f"no-{a}"] = model.scores(held)
        for key, rr in level_rrs(part, orders).items():
            rrs[key][test_q] = rr
    print_groups(table, rrs, f"held-out repositories ({args.folds} folds), MRR@10")
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    table = load_table(args.table)
    report(table, learned.load_model(args.weights), f"{args.table.name}, MRR@10")
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
    ex.add_argument("--split", default="train", help="the split a make_training_set manifest gives")
    ex.add_argument("--max-queries", type=int, default=0, help="seeded sample per set (0 = all)")
    ex.add_argument("--index-name", default="index", help="the index folder of each set's corpus")
    ex.add_argument(
        "--changes-index", default="changes-index", help="the index folder of each set's change snapshots"
    )
    ex.add_argument(
        "--rows",
        type=int,
        default=0,
        help="candidates kept per query (relevant ones always; 0: the whole head)",
    )
    ex.set_defaults(run=cmd_extract)
    ft = sub.add_parser("fit")
    ft.add_argument("table", type=Path)
    ft.add_argument("--out", type=Path, default=SHIPPED)
    ft.add_argument("--steps", type=int, default=STEPS)
    ft.add_argument("--seed", type=int, default=0)
    ft.add_argument("--loss", default=LOSS, choices=("pairwise", "listwise"))
    ft.add_argument("--file-loss", type=float, default=FILE_LOSS, help="weight of the file-level term")
    ft.set_defaults(run=cmd_fit)
    cp = sub.add_parser("compact")
    cp.add_argument("table", type=Path)
    cp.add_argument("--out", type=Path, required=True)
    cp.add_argument("--rows", type=int, default=16, help="rows kept per query besides the relevant ones")
    cp.add_argument("--sampled", type=int, default=SAMPLED, help="rows drawn from the rest of each head")
    cp.add_argument("--max-queries", type=int, default=0, help="seeded stratified sample (0 = all)")
    cp.add_argument("--seed", type=int, default=0)
    cp.set_defaults(run=cmd_compact)
    mg = sub.add_parser("merge")
    mg.add_argument("tables", nargs="+", type=Path)
    mg.add_argument("--out", type=Path, required=True)
    mg.set_defaults(run=cmd_merge)
    cv = sub.add_parser("cv")
    cv.add_argument("table", type=Path)
    cv.add_argument("--folds", type=int, default=3)
    cv.add_argument("--steps", type=int, default=STEPS)
    cv.add_argument("--seed", type=int, default=0)
    cv.add_argument("--loss", default=LOSS, choices=("pairwise", "listwise"))
    cv.add_argument("--rows", type=int, default=16, help="fit rows per query, as compact")
    cv.add_argument("--sampled", type=int, default=SAMPLED, help="rows drawn from the rest, as compact")
    cv.add_argument("--file-loss", type=float, default=FILE_LOSS, help="weight of the file-level term")
    cv.add_argument("--file-loss-grid", default="", help="comma-separated weights to compare (one fit each)")
    cv.add_argument("--ablate", default="", help="comma-separated feature-name suffixes to fit without")
    cv.set_defaults(run=cmd_cv)
    ev = sub.add_parser("eval")
    ev.add_argument("table", type=Path)
    ev.add_argument("--weights", type=Path, default=SHIPPED)
    ev.set_defaults(run=cmd_eval)
    args = parser.parse_args()
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
