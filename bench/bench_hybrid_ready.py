"""Hybrid-ready vs keyword-only index time (issue 25): how much the default model's inline embedding adds to
an index pass. Figures only.

Per target, in one run, interleaved (the order alternates every round): a fresh index with
`Engine.index(embed=False)` (keyword, literal and graph: what search needs without vectors) and a fresh
index with `Engine.index()` (the same plus every chunk's vector with the default model, in the pass).
The model is loaded once before the first round, so neither side pays for it. Best of the rounds, wall
and CPU seconds (every thread of this process and of its chunk workers, which embed beside chunking), and
the ratio of each. Targets: semble-26 checkouts
(`--repos-root`, `--repo`; ../shared/bench/README.md) and, with `--stdlib`, this interpreter's standard
library (read in place; the index goes to a temporary folder).

Usage: python bench/bench_hybrid_ready.py [--repo fastapi ...] [--stdlib] [--rounds 2]
Results also go to bench/results/hybrid_ready.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from codebase_index.config import Config
from codebase_index.service import Engine

HERE = Path(__file__).resolve().parent
DEFAULT_REPOS = ["fastapi", "zod", "gin", "tokio", "gson"]


def children_cpu() -> float:
    """CPU seconds of this process's finished children (the index pass's chunk workers, joined at its end)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_index(root: Path, scratch: Path, *, embed: bool) -> dict[str, float]:
    """A fresh index of `root` under `scratch`; wall and CPU seconds, chunks and vectors."""
    index = Path(tempfile.mkdtemp(dir=scratch))
    engine = Engine(root, Config(), index_path=index)
    try:
        wall, cpu = time.perf_counter(), time.process_time() + children_cpu()
        report = engine.index(embed=embed)
        wall, cpu = time.perf_counter() - wall, time.process_time() + children_cpu() - cpu
        status = engine.status()
        vectors = status.embeddings.embedded if status.embeddings is not None else 0
        return {
            "wall": wall,
            "cpu": cpu,
            "chunks": float(status.chunks),
            "vectors": float(vectors),
            "embedded": float(report.embedded),
        }
    finally:
        engine.close()
        shutil.rmtree(index, ignore_errors=True)


def warm_model(scratch: Path) -> float:
    """Load the default model once (a one-file project), so no timed run pays for it."""
    project = scratch / "warm"
    project.mkdir()
    (project / "a.py").write_text("def warm():\n    return 1\n", encoding="utf-8")
    started = time.perf_counter()
    timed_index(project, scratch, embed=True)
    return time.perf_counter() - started


def bench_target(name: str, root: Path, scratch: Path, rounds: int) -> dict[str, object]:
    runs: dict[str, list[dict[str, float]]] = {"keyword": [], "hybrid": []}
    for r in range(rounds):
        order = ["keyword", "hybrid"] if r % 2 == 0 else ["hybrid", "keyword"]
        for side in order:
            runs[side].append(timed_index(root, scratch, embed=side == "hybrid"))
    best = {side: min(rs, key=lambda x: x["wall"]) for side, rs in runs.items()}
    best_cpu = {side: min(x["cpu"] for x in rs) for side, rs in runs.items()}
    out = {
        "target": name,
        "chunks": int(best["keyword"]["chunks"]),
        "vectors": int(best["hybrid"]["vectors"]),
        "keyword_wall": round(best["keyword"]["wall"], 3),
        "hybrid_wall": round(best["hybrid"]["wall"], 3),
        "keyword_cpu": round(best_cpu["keyword"], 3),
        "hybrid_cpu": round(best_cpu["hybrid"], 3),
        "runs": runs,
    }
    out["ratio_wall"] = round(best["hybrid"]["wall"] / best["keyword"]["wall"], 3)
    out["ratio_cpu"] = round(best_cpu["hybrid"] / best_cpu["keyword"], 3)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repos-root", type=Path, default=Path.home() / ".cache" / "bench-repos")
    parser.add_argument("--repo", action="append", help=f"repositories (repeatable; default {DEFAULT_REPOS})")
    parser.add_argument("--stdlib", action="store_true", help="also this interpreter's standard library")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path, default=HERE / "results" / "hybrid_ready.json")
    args = parser.parse_args()

    targets = [(name, args.repos_root / name) for name in (args.repo or DEFAULT_REPOS)]
    targets = [(n, p) for n, p in targets if p.is_dir()] or []
    if args.stdlib:
        targets.append(("cpython-stdlib", Path(sysconfig.get_paths()["stdlib"])))
    if not targets:
        print(f"no targets: no checkouts under {args.repos_root} and no --stdlib", file=sys.stderr)
        return 1
    load_before = os.getloadavg()[0]
    results = []
    with tempfile.TemporaryDirectory(prefix="cbi-hybrid-ready-") as tmp:
        scratch = Path(tmp)
        load_s = warm_model(scratch)
        print(f"model warm-up (load + a one-file index): {load_s:.2f} s; load average {load_before:.2f}")
        print("| target | chunks | vectors | keyword-only s (CPU s) | hybrid-ready s (CPU s) | ratio (CPU) |")
        print("|---|---|---|---|---|---|")
        for name, root in targets:
            row = bench_target(name, root, scratch, args.rounds)
            results.append(row)
            print(
                f"| {name} | {row['chunks']} | {row['vectors']} | {row['keyword_wall']:.2f} "
                f"({row['keyword_cpu']:.2f}) | {row['hybrid_wall']:.2f} ({row['hybrid_cpu']:.2f}) | "
                f"{row['ratio_wall']:.2f}x ({row['ratio_cpu']:.2f}x) |",
                flush=True,
            )
    if len(results) > 1:
        kw = sum(float(r["keyword_wall"]) for r in results)  # type: ignore[arg-type]
        hy = sum(float(r["hybrid_wall"]) for r in results)  # type: ignore[arg-type]
        kc = sum(float(r["keyword_cpu"]) for r in results)  # type: ignore[arg-type]
        hc = sum(float(r["hybrid_cpu"]) for r in results)  # type: ignore[arg-type]
        print(
            f"| **all** | | | {kw:.2f} ({kc:.2f}) | {hy:.2f} ({hc:.2f}) | {hy / kw:.2f}x ({hc / kc:.2f}x) |"
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"load average after {os.getloadavg()[0]:.2f}; peak RSS of this process {peak_mb:.0f} MB")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps({"load_before": load_before, "peak_rss_mb": peak_mb, "results": results}, indent=1) + "\n",
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
