"""Code-graph benchmark on the running Python's standard library: what the graph costs, how fast it answers.

Measures (figures only, nothing asserted; also written to bench/results/graph.json):
- cold index with and without the graph (CODEBASE_INDEX_NO_GRAPH=1), same machine, one after the other;
- the full edge refresh of the first run, and an incremental refresh after one file changes;
- `callers` query latency (p50/p95) over names drawn with a fixed seed from the stored definitions.
Usage: python bench/bench_graph.py [--root PATH] [--queries N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import msgspec

from codebase_index.service import Engine


def cold_index(root: Path, *, graph: bool) -> tuple[float, Engine, Path]:
    os.environ.pop("CODEBASE_INDEX_NO_GRAPH", None)
    if not graph:
        os.environ["CODEBASE_INDEX_NO_GRAPH"] = "1"
    index_dir = Path(tempfile.mkdtemp(prefix="cbi-graph-"))
    engine = Engine(root, index_path=index_dir)
    t0 = time.perf_counter()
    report = engine.index()
    seconds = time.perf_counter() - t0
    os.environ.pop("CODEBASE_INDEX_NO_GRAPH", None)
    if graph and report.graph is not None:
        print(f"full edge refresh: {report.graph}", file=sys.stderr)
    return seconds, engine, index_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", default=sysconfig.get_paths()["stdlib"])
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()
    source = Path(args.root)
    work = Path(tempfile.mkdtemp(prefix="cbi-graph-src-"))
    root = work / "src"
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("site-packages", "__pycache__"))
    out: dict[str, object] = {"root": str(source)}
    try:
        without, engine, index_dir = cold_index(root, graph=False)
        engine.close()
        shutil.rmtree(index_dir)
        with_graph, engine, index_dir = cold_index(root, graph=True)
        out["cold_index_s"] = {
            "without_graph": round(without, 2),
            "with_graph": round(with_graph, 2),
            "overhead_pct": round(100 * (with_graph - without) / without, 1),
        }
        out["index_size_mib"] = round(engine.store.size_on_disk() / 1_048_576, 1)
        branch = engine.branch()
        counts = dict(
            engine.store.conn.execute(
                "SELECT confidence, COUNT(*) FROM graph_edges WHERE branch=? GROUP BY confidence", (branch,)
            ).fetchall()
        )
        sites = engine.store.conn.execute("SELECT COUNT(*) FROM graph_name_sites").fetchone()[0]
        out["edges"] = {**counts, "name_only_sites": sites}

        # One edited file -> incremental refresh (os.py: imported nearly everywhere; then a leaf module).
        changes: dict[str, object] = {}
        for rel in ("os.py", "colorsys.py", "textwrap.py"):
            target = root / rel
            target.write_text(target.read_text() + "\n\ndef _bench_added():\n    return 1\n")
            t0 = time.perf_counter()
            report = engine.index()
            changes[rel] = {
                "index_s": round(time.perf_counter() - t0, 3),
                "refresh": None if report.graph is None else msgspec.to_builtins(report.graph),
            }
        out["one_file_change"] = changes

        rng = random.Random(11)
        names = [
            r[0]
            for r in engine.store.conn.execute(
                "SELECT DISTINCT callee FROM graph_edges WHERE branch=? ORDER BY callee", (branch,)
            )
        ]
        picked = rng.sample(names, min(args.queries, len(names)))
        for name in picked[:20]:
            engine.call_graph(name)
        latencies = []
        for name in picked:
            t0 = time.perf_counter()
            engine.call_graph(name)
            latencies.append((time.perf_counter() - t0) * 1000)
        ordered = sorted(latencies)
        out["callers_query_ms"] = {
            "n": len(latencies),
            "p50": round(statistics.median(latencies), 3),
            "p95": round(ordered[int(0.95 * (len(ordered) - 1))], 3),
        }
        depth3 = []
        for name in picked[:100]:
            t0 = time.perf_counter()
            engine.call_graph(name, depth=3)
            depth3.append((time.perf_counter() - t0) * 1000)
        out["callers_depth3_ms_p50"] = round(statistics.median(depth3), 3)
        engine.close()
        shutil.rmtree(index_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(out, indent=2)
    print(text)
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "graph.json").write_text(text + "\n")


if __name__ == "__main__":
    main()
