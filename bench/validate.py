"""Ranking check on the validation sets (bench/make_validation_set.py): code the ranking was never tuned
on, in four query styles (description, identifier, error message, code snippet). Run it beside
bench_quality.py for every ranking change: a change that lifts the benchmark but lowers these is tuned
to the benchmark.

Prints file-level nDCG@10 (chunk-level in brackets), MRR@10 and Hit@1 per set, mode and style;
`--save` writes the run, `--compare` prints the delta against a saved run.

Build the sets once (commands in make_validation_set.py's docstring), then index and embed each:
    codebase-index index --root VAL/py/corpus --index-dir VAL/py/index
Usage: python bench/validate.py [--val ~/.cache/codebase-index-val] [--set py ...] [--mode hybrid ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import msgspec

from codebase_index.config import load_config
from codebase_index.evaluation import evaluate, load_golden
from codebase_index.service import Engine

DEFAULT_VAL = Path.home() / ".cache" / "codebase-index-val"


def run_set(
    base: Path,
    modes: list[str],
    backend: str | None = None,
    index_name: str = "index",
    ranker: str | None = None,
    golden_name: str = "golden.json",
) -> dict[str, tuple[float, ...]]:
    """{"mode/style": (file nDCG@10, chunk nDCG@10, file MRR@10, file Hit@1, chunk MRR@10)} for one
    validation set. With `backend`, the index `index_name` is brought up to date and embedded by that
    engine first; `ranker` sets search.ranker, `golden_name` the golden file read."""
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
        out: dict[str, tuple[float, ...]] = {}
        for mode in modes:
            run = evaluate(engine, golden, mode=mode, label=f"{base.name}-{mode}")
            for style, summary in [("ALL", run.overall), *sorted(run.by_category.items())]:
                out[f"{mode}/{style}"] = (
                    summary.ndcg10,
                    summary.chunk_ndcg10,
                    summary.mrr10,
                    summary.hit1,
                    summary.chunk_mrr10,
                )
        return out
    finally:
        engine.close()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--val", type=Path, default=DEFAULT_VAL)
    parser.add_argument("--set", action="append", help="only these sets (py, js, ts, go); repeatable")
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
        "--ranker", choices=["rules", "learned"], help="search.ranker (default: the config's)"
    )
    args = parser.parse_args()
    modes = args.mode or ["keyword", "hybrid"]
    names = args.set or sorted(p.name for p in args.val.iterdir() if (p / "golden.json").is_file())
    before: dict[str, dict[str, list[float]]] = json.loads(args.compare.read_text()) if args.compare else {}
    results: dict[str, dict[str, tuple[float, ...]]] = {}
    means: dict[str, list[float]] = {}
    for name in names:
        results[name] = run_set(
            args.val / name, modes, args.backend, args.index_name, args.ranker, args.golden
        )
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
    if args.save:
        args.save.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
