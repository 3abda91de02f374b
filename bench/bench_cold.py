"""Cold index time per repository: keyword-searchable (index + first search, edges left to the background
as in the sidecar), graph-ready (edges resolved too), and the same run without the graph. Figures only.

Usage: python bench/bench_cold.py [--repos-root ~/.cache/bench-repos] [--repo NAME ...] [--runs 3]
Results also go to bench/results/cold.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from codebase_index.service import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_paths import SHARED_BENCH

HERE = Path(__file__).resolve().parent
DEFAULT_BENCH = SHARED_BENCH


def one_run(root: Path, *, graph: bool) -> dict[str, float]:
    os.environ.pop("CODEBASE_INDEX_NO_GRAPH", None)
    if not graph:
        os.environ["CODEBASE_INDEX_NO_GRAPH"] = "1"
    index_dir = Path(tempfile.mkdtemp(prefix="cbi-cold-"))
    engine = Engine(root, index_path=index_dir)
    engine.graph_in_background = True
    try:
        t0 = time.perf_counter()
        report = engine.index()
        engine.search("open connection", mode="keyword")
        keyword = time.perf_counter() - t0
        engine.graphs.wait_idle(timeout=600)
        ready = time.perf_counter() - t0
        return {"keyword_s": keyword, "graph_ready_s": ready, "files": report.files, "chunks": report.chunks}
    finally:
        engine.close()
        shutil.rmtree(index_dir, ignore_errors=True)
        os.environ.pop("CODEBASE_INDEX_NO_GRAPH", None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--repos-root", type=Path, default=Path.home() / ".cache" / "bench-repos")
    parser.add_argument("--repo", action="append", help="only these repos (default: aiohttp, cobra, tokio)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    specs = {s["name"]: s for s in json.loads((args.bench / "repos.json").read_text())}
    out: dict[str, object] = {}
    for name in args.repo or ["aiohttp", "cobra", "tokio"]:
        spec = specs[name]
        root = args.repos_root / name / spec.get("benchmark_root", ".")
        with_graph = [one_run(root, graph=True) for _ in range(args.runs)]
        without = [one_run(root, graph=False) for _ in range(args.runs)]
        figures = {
            "files": with_graph[0]["files"],
            "chunks": with_graph[0]["chunks"],
            "keyword_searchable_s": round(statistics.median(r["keyword_s"] for r in with_graph), 3),
            "graph_ready_s": round(statistics.median(r["graph_ready_s"] for r in with_graph), 3),
            "no_graph_s": round(statistics.median(r["keyword_s"] for r in without), 3),
        }
        out[name] = figures
        print(name, json.dumps(figures), file=sys.stderr)
    print(json.dumps(out, indent=2))
    dest = HERE / "results" / "cold.json"
    dest.parent.mkdir(exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
