"""Search latency of two checkouts, query by query interleaved: issue 12's latency bars against another
version of the code (the code the issue was filed on, or main before a change).

This machine's speed drifts by 20-40% over tens of seconds (shared VM), so two runs one after the other
compare the moments more than the code. Here both versions run side by side as long-lived worker
processes with every semble-26 engine open; the driver sends each query to both, in a random order per
query, and each answer is timed inside its worker. Hybrid mode embeds every query afresh (the query vector
cache is cleared first) and then times the model alone on the same text, as bench_quality.py does, so
"beyond its embedding" is the search minus the model.

An older checkout may migrate an index it opens: give it a copy (`--against-index`). Mind the floor of this
comparison: the very same code from two different worktrees (A/A, 1 round, 522 queries each) gave one side
the faster search in 193-303 of 522, and the same tree on both sides 242-298, so a win share within ~10 points
of half and p50 differences under ~0.1 ms are not a difference between the versions.

Usage:
    python bench/latency_ab.py --against /work/wt/base [--against-index /tmp/bench-copy] \\
        [--mode keyword|hybrid] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_paths import add_benchmark_arguments

HERE = Path(__file__).resolve().parent


def worker(bench: Path, repos_root: Path, index_root: Path) -> None:
    """Open every benchmark engine, then answer `mode repo index` lines with `search_ms embedding_ms`."""
    from codebase_index.config import load_config
    from codebase_index.service import Engine

    engines: dict[str, Any] = {}
    queries: dict[str, list[str]] = {}
    for spec in json.loads((bench / "repos.json").read_text()):
        name = spec["name"]
        root = repos_root / name / spec.get("benchmark_root", "")
        if not root.is_dir() or not (index_root / name).is_dir():
            continue
        tasks = json.loads((bench / "annotations" / f"{name}.json").read_text())
        queries[name] = [t["query"] for t in tasks if t.get("repo", name) == name]
        engine = Engine(root, load_config(root), index_path=index_root / name)
        engine.snapshot()
        for mode in ("keyword", "hybrid"):  # warm-up: per-snapshot caches, the model
            engine.search(queries[name][0], mode=mode)
        engines[name] = engine
    print(json.dumps({name: len(q) for name, q in queries.items()}), flush=True)
    for line in sys.stdin:
        mode, name, index = line.split()
        engine, query = engines[name], queries[name][int(index)]
        if mode == "hybrid":
            engine._query_vectors.clear()  # a fresh query: the search computes its embedding
        t0 = time.perf_counter()
        engine.search(query, mode=mode)
        took = (time.perf_counter() - t0) * 1000
        embedding = 0.0
        if mode == "hybrid":
            provider = engine.embedding_provider()
            t0 = time.perf_counter()
            provider.embed_query(query)
            embedding = (time.perf_counter() - t0) * 1000
        print(f"{took:.4f} {embedding:.4f}", flush=True)


def start_worker(checkout: Path, index_root: Path, args: argparse.Namespace) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(checkout / "python"))
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--index-root", str(index_root)]
    command += ["--bench", str(args.bench), "--repos-root", str(args.repos_root)]
    return subprocess.Popen(
        command, cwd=checkout, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", type=Path, help="the other checkout (its root)")
    parser.add_argument("--against-index", type=Path, help="its index folders (default: --index-root)")
    parser.add_argument("--mode", default="keyword", choices=["keyword", "hybrid"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    add_benchmark_arguments(parser)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.bench, args.repos_root, args.index_root)
        return
    if args.against is None:
        parser.error("--against is required")
    sides = [(HERE.parent, args.index_root), (args.against.resolve(), args.against_index or args.index_root)]
    workers = [start_worker(checkout, index, args) for checkout, index in sides]
    counts = [json.loads(w.stdout.readline()) for w in workers if w.stdout is not None]
    if len(counts) != 2 or counts[0] != counts[1]:
        raise SystemExit(f"the two workers opened different benchmarks: {counts}")
    rng = random.Random(args.seed)
    took: list[list[float]] = [[], []]
    beyond: list[list[float]] = [[], []]
    for _ in range(args.rounds):
        for name, n in counts[0].items():
            for index in range(n):
                for side in rng.sample([0, 1], 2):
                    w = workers[side]
                    assert w.stdin is not None and w.stdout is not None
                    w.stdin.write(f"{args.mode} {name} {index}\n")
                    w.stdin.flush()
                    search_ms, embedding_ms = map(float, w.stdout.readline().split())
                    took[side].append(search_ms)
                    beyond[side].append(search_ms - embedding_ms)
    for w in workers:
        if w.stdin is not None:
            w.stdin.close()
        w.wait()
    print(f"{args.mode}, {len(took[0])} searches per side ({args.rounds} rounds, interleaved query by query)")
    for side, (checkout, _) in enumerate(sides):
        line = f"  {checkout}: p50 {statistics.median(took[side]):.3f} ms, p95 {p(took[side], 0.95):.3f} ms"
        if args.mode == "hybrid":
            line += f"; beyond its embedding p50 {statistics.median(beyond[side]):+.3f} ms"
        print(line)
    faster = sum(a < b for a, b in zip(took[0], took[1], strict=True))
    print(f"  this checkout faster on {faster} of {len(took[0])} searches")


if __name__ == "__main__":
    main()
