"""Ranking check on the validation sets (bench/make_validation_set.py): code the ranking was never tuned
on, in four query styles (description, identifier, error message, code snippet). Run it beside
bench_quality.py for every ranking change: a change that lifts the benchmark but lowers these is tuned
to the benchmark.

Prints file-level nDCG@10 (chunk-level in brackets), MRR@10 and Hit@1 per set, mode and style, then the
same over every set per style x language and per repository (`--by`; generated sets label each query
with its language and repo); `--save` writes the run, `--compare` prints the delta against a saved run.

Build the sets once (commands in make_validation_set.py's docstring), then index and embed each:
    codebase-index index --root VAL/py/corpus --index-dir VAL/py/index
Usage: python bench/validate.py [--val ~/.cache/codebase-index-val] [--set py ...] [--mode hybrid ...]
       python bench/validate.py --sets ~/.cache/codebase-index-train/manifest.json --split validation
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import msgspec

from codebase_index.config import load_config
from codebase_index.evaluation import BREAKDOWN_KEYS, EvalRun, QueryResult, breakdown, evaluate, load_golden
from codebase_index.service import Engine

DEFAULT_VAL = Path.home() / ".cache" / "codebase-index-val"


def run_set(
    base: Path,
    modes: list[str],
    backend: str | None = None,
    index_name: str = "index",
    ranker: str | None = None,
    golden_name: str = "golden.json",
) -> dict[str, EvalRun]:
    """{mode: the run} for one validation set. With `backend`, the index `index_name` is brought up to
    date and embedded by that engine first; `ranker` sets search.ranker, `golden_name` the golden file
    read."""
    config = load_config(base / "corpus")
    if backend:
        config = msgspec.structs.replace(config, embedded_backend=backend)
    if ranker:
        config = msgspec.structs.replace(config, search=msgspec.structs.replace(config.search, ranker=ranker))
    engine = Engine(base / "corpus", config, index_path=base / index_name)
    if backend:
        engine.index()
        engine.embed()
    try:
        golden = load_golden(base / golden_name)
        return {mode: evaluate(engine, golden, mode=mode, label=f"{base.name}-{mode}") for mode in modes}
    finally:
        engine.close()


def summary_rows(run: EvalRun) -> dict[str, tuple[float, ...]]:
    """{"style": (file nDCG@10, chunk nDCG@10, file MRR@10, file Hit@1, chunk MRR@10)}, "ALL" included."""
    return {
        style: (s.ndcg10, s.chunk_ndcg10, s.mrr10, s.hit1, s.chunk_mrr10)
        for style, s in [("ALL", run.overall), *sorted(run.by_category.items())]
    }


def read_sets(val: Path, names: list[str] | None, sets: list[Path], split: str | None) -> list[Path]:
    """The set folders: `sets` (folders, or make_training_set.py manifests whose repos of `split` are
    taken), else the sets under `val` (all, or `names`)."""
    if not sets:
        found = sorted(p.name for p in val.iterdir() if (p / "golden.json").is_file())
        return [val / n for n in (names or found)]
    out: list[Path] = []
    for path in sets:
        if path.is_file():
            manifest = json.loads(path.read_text())
            out += [
                path.parent / Path(r["corpus"]).parent
                for r in manifest["repos"]
                if split is None or r["split"] == split
            ]
        else:
            out.append(path)
    return out


def print_breakdowns(by: list[str], queries: dict[str, list[QueryResult]]) -> None:
    """Every set's queries together, grouped per `by` (comma-separated QueryResult labels; a set
    without language labels shows "-")."""
    for spec in by:
        keys = [k.strip() for k in spec.split(",")]
        for mode, results in queries.items():
            print(f"-- {mode} by {' x '.join(keys)}")
            for group, s in breakdown(results, keys).items():
                print(
                    f"   {' / '.join(group):<40} n={s.queries:<5} nDCG {s.ndcg10:.3f} ({s.chunk_ndcg10:.3f})"
                    f"  MRR {s.mrr10:.3f}  Hit@1 {s.hit1:.3f}"
                )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--val", type=Path, default=DEFAULT_VAL)
    parser.add_argument("--set", action="append", help="only these sets (py, js, ts, go); repeatable")
    parser.add_argument(
        "--sets", type=Path, nargs="+", default=[], help="set folders or training manifests (not --val)"
    )
    parser.add_argument("--split", help="with a manifest in --sets: only its repos of this split")
    parser.add_argument(
        "--by",
        action="append",
        help=f"also report every set's queries grouped by these labels ({','.join(BREAKDOWN_KEYS)}; "
        "comma-separated, repeatable; default: category,language and repo)",
    )
    parser.add_argument("--mode", action="append", help="keyword/semantic/hybrid (default: both k+h)")
    parser.add_argument(
        "--backend",
        choices=["auto", "onnx", "numpy"],
        help="embedded model engine (config embeddedBackend); give int8 runs their own index folder",
    )
    parser.add_argument("--index-name", default="index", help="index folder inside each set")
    parser.add_argument("--save", type=Path, help="write this run as JSON")
    parser.add_argument("--compare", type=Path, help="a run saved with --save to compare against")
    parser.add_argument("--golden", default="golden.json", help="golden file name in each set")
    parser.add_argument(
        "--ranker", choices=["auto", "rules", "learned"], help="search.ranker (default: the config's)"
    )
    args = parser.parse_args()
    modes = args.mode or ["keyword", "hybrid"]
    bases = read_sets(args.val, args.set, args.sets, args.split)
    names = [b.name for b in bases]
    before: dict[str, dict[str, list[float]]] = json.loads(args.compare.read_text()) if args.compare else {}
    results: dict[str, dict[str, tuple[float, ...]]] = {}
    means: dict[str, list[float]] = {}
    queries: dict[str, list[QueryResult]] = {mode: [] for mode in modes}
    for base in bases:
        name = base.name
        runs = run_set(base, modes, args.backend, args.index_name, args.ranker, args.golden)
        results[name] = {}
        for mode, run in runs.items():
            for q in run.queries:
                q.repo = q.repo or name  # a hand-written set is one repository
            queries[mode] += run.queries
            results[name] |= {f"{mode}/{style}": row for style, row in summary_rows(run).items()}
        for key, (file_ndcg, chunk_ndcg, mrr, hit1, chunk_mrr) in results[name].items():
            old = before.get(name, {}).get(key)
            delta = f"  {file_ndcg - old[0]:+.3f}" if old else ""
            print(
                f"{name:<3} {key:<22} {file_ndcg:.3f} ({chunk_ndcg:.3f})  MRR {mrr:.3f} ({chunk_mrr:.3f})"
                f"  Hit@1 {hit1:.3f}{delta}"
            )
            if key.endswith("/ALL"):
                means.setdefault(key, []).append(file_ndcg)
    for key, values in means.items():
        old_values = [before[n][key][0] for n in names if key in before.get(n, {})]
        mean = sum(values) / len(values)
        delta = f"  {mean - sum(old_values) / len(old_values):+.3f}" if old_values else ""
        print(f"MEAN {key:<21} {mean:.3f}{delta}")
    print_breakdowns(args.by or ["category,language", "repo"], queries)
    if args.save:
        args.save.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
