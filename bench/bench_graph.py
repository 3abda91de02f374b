"""Code-graph benchmark on the running Python's standard library: what the graph costs, how fast it answers.

Measures (figures only, nothing asserted; also written to bench/results/graph.json):
- cold index with and without the graph (CODEBASE_INDEX_NO_GRAPH=1), `--runs` rounds interleaved, medians,
  with the load average: index-done and keyword-searchable (index + first search) with edges resolved in
  the background as in the sidecar, graph-ready (edges resolved), and the CLI's `index` (edges resolved
  before it returns);
- the full edge refresh of the first run, and an incremental refresh after one file changes;
- `callers` query latency (p50/p95) over names drawn with a fixed seed from the stored definitions.
Usage: python bench/bench_graph.py [--root PATH] [--queries N] [--runs N]
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


def cold_index(root: Path, *, graph: bool, background: bool = True) -> tuple[dict[str, float], Engine, Path]:
    """One cold index into a fresh directory: index-done, keyword-searchable (first search answered) and
    graph-ready seconds. `background`: edges resolved off the index call as in the sidecar."""
    os.environ.pop("CODEBASE_INDEX_NO_GRAPH", None)
    if not graph:
        os.environ["CODEBASE_INDEX_NO_GRAPH"] = "1"
    index_dir = Path(tempfile.mkdtemp(prefix="cbi-graph-"))
    engine = Engine(root, index_path=index_dir)
    engine.graph_in_background = background
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    report = engine.index()
    done = time.perf_counter() - t0
    engine.search("open connection", mode="keyword")
    keyword = time.perf_counter() - t0
    if graph:
        engine.graphs.wait_idle(timeout=600)
    ready = time.perf_counter() - t0
    os.environ.pop("CODEBASE_INDEX_NO_GRAPH", None)
    if graph and report.graph is not None:
        print(f"full edge refresh: {report.graph}", file=sys.stderr)
    figures = {"index_done_s": done, "keyword_searchable_s": keyword, "graph_ready_s": ready, "load": load}
    return figures, engine, index_dir


def _median(runs: list[dict[str, float]], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 2)


def _cold(root: Path, runs: int) -> tuple[dict[str, object], Engine, Path]:
    """Interleaved rounds: without graph, with graph (sidecar), with graph (CLI); the last engine is kept."""
    rounds: dict[str, list[dict[str, float]]] = {"without_graph": [], "sidecar": [], "cli": []}
    engine: Engine | None = None
    index_dir: Path | None = None
    for i in range(runs):
        for mode in rounds:
            figures, eng, idx = cold_index(root, graph=mode != "without_graph", background=mode == "sidecar")
            rounds[mode].append(figures)
            print(mode, {k: round(v, 2) for k, v in figures.items()}, file=sys.stderr, flush=True)
            if mode == "cli" and i == runs - 1:
                engine, index_dir = eng, idx
            else:
                eng.close()
                shutil.rmtree(idx)
    assert engine is not None and index_dir is not None
    base = rounds["without_graph"]
    done0, kw0 = _median(base, "index_done_s"), _median(base, "keyword_searchable_s")

    def pct(value: float, against: float) -> float:
        return round(100 * (value - against) / against, 1)

    side, cli = rounds["sidecar"], rounds["cli"]
    out: dict[str, object] = {
        "runs": runs,
        "load_avg": [round(r["load"], 2) for mode in rounds.values() for r in mode],
        "without_graph": {"index_done_s": done0, "keyword_searchable_s": kw0},
        "sidecar": {
            "index_done_s": _median(side, "index_done_s"),
            "keyword_searchable_s": _median(side, "keyword_searchable_s"),
            "graph_ready_s": _median(side, "graph_ready_s"),
        },
        "cli_index_s": _median(cli, "index_done_s"),
        "overhead_pct": {
            "index_done": pct(_median(side, "index_done_s"), done0),
            "keyword_searchable": pct(_median(side, "keyword_searchable_s"), kw0),
            "graph_ready": pct(_median(side, "graph_ready_s"), kw0),
            "cli_index": pct(_median(cli, "index_done_s"), done0),
        },
        "per_run": {
            mode: [{k: round(v, 2) for k, v in r.items()} for r in rs] for mode, rs in rounds.items()
        },
    }
    return out, engine, index_dir


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", default=sysconfig.get_paths()["stdlib"])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3, help="interleaved cold-index rounds (medians)")
    args = parser.parse_args()
    source = Path(args.root)
    work = Path(tempfile.mkdtemp(prefix="cbi-graph-src-"))
    root = work / "src"
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("site-packages", "__pycache__"))
    out: dict[str, object] = {"root": str(source)}
    try:
        out["cold_index"], engine, index_dir = _cold(root, args.runs)
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


if __name__ == "__main__":  # the index's worker pool spawns processes that re-import this file
    main()
