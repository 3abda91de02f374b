"""Code-graph benchmark on the running Python's standard library: what the graph costs, how fast it answers.

Measures (figures only, nothing asserted; also written to bench/results/graph.json):
- cold index without the graph (CODEBASE_INDEX_NO_GRAPH=1) and with it, `--runs` rounds interleaved,
  medians, with the load average: as in the sidecar (graph extracted and resolved in the background:
  index-done, keyword-searchable, keyword search latency while the graph builds, graph-ready), the CLI's
  `index` (returns with the graph complete) and `index --keyword-only` (graph left pending); CPU seconds
  of each (this process plus its joined worker pools);
- the full edge refresh of the first run, and an incremental refresh after one file changes;
- `callers` query latency (p50/p95) over names drawn with a fixed seed from the stored definitions.
Usage: python bench/bench_graph.py [--root PATH] [--queries N] [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import msgspec

from codebase_index.service import Engine

SEARCHES = ("open connection", "parse arguments", "read config file", "thread pool", "decode json")


def _cpu() -> float:
    """CPU seconds of this process plus its finished children (the joined worker pools)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _search_ms(engine: Engine, query: str) -> float:
    t0 = time.perf_counter()
    engine.search(query, mode="keyword")
    return (time.perf_counter() - t0) * 1000


def cold_index(root: Path, mode: str) -> tuple[dict[str, float], Engine, Path]:
    """One cold index into a fresh directory. Modes: `without_graph` (CODEBASE_INDEX_NO_GRAPH=1),
    `sidecar` (graph extracted and resolved in the background: index-done, keyword-searchable, search
    latency while the graph builds, graph-ready), `cli` (index() returns with the graph complete, as
    `codebase-index index`), `cli_keyword_only` (the graph left pending, as `index --keyword-only`)."""
    os.environ.pop("CODEBASE_INDEX_NO_GRAPH", None)
    if mode == "without_graph":
        os.environ["CODEBASE_INDEX_NO_GRAPH"] = "1"
    index_dir = Path(tempfile.mkdtemp(prefix="cbi-graph-"))
    engine = Engine(root, index_path=index_dir)
    engine.graph_in_background = mode == "sidecar"
    load = os.getloadavg()[0]
    cpu0 = _cpu()
    t0 = time.perf_counter()
    engine.index(graph=mode != "cli_keyword_only")
    done = time.perf_counter() - t0
    first_ms = _search_ms(engine, "open connection")
    keyword = time.perf_counter() - t0
    figures = {"index_done_s": done, "keyword_searchable_s": keyword, "first_search_ms": first_ms}
    if mode == "sidecar":
        during: list[float] = []
        while engine.graphs.busy() and len(during) < 200:
            during.append(_search_ms(engine, SEARCHES[len(during) % len(SEARCHES)]))
            time.sleep(0.05)
        engine.graphs.wait_idle(timeout=600)
        figures["graph_ready_s"] = time.perf_counter() - t0
        after = [_search_ms(engine, SEARCHES[i % len(SEARCHES)]) for i in range(max(len(during), 10))]
        figures["search_during_build_p50_ms"] = statistics.median(during) if during else 0.0
        figures["search_during_build_max_ms"] = max(during) if during else 0.0
        figures["search_after_p50_ms"] = statistics.median(after)
        figures["searches_during_build"] = len(during)
        last = engine.graphs.last_extract
        figures["extract_pass_s"] = last.seconds if last is not None else 0.0
    figures["cpu_s"] = _cpu() - cpu0
    figures["load"] = load
    os.environ.pop("CODEBASE_INDEX_NO_GRAPH", None)
    return figures, engine, index_dir


def _median(runs: list[dict[str, float]], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 2)


MODES = ("without_graph", "sidecar", "cli", "cli_keyword_only")


def _cold(root: Path, runs: int) -> tuple[dict[str, object], Engine, Path]:
    """Interleaved rounds of every mode; the last `cli` engine (graph complete) is kept."""
    rounds: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    engine: Engine | None = None
    index_dir: Path | None = None
    for i in range(runs):
        for mode in MODES:
            figures, eng, idx = cold_index(root, mode)
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

    side, cli, kwo = rounds["sidecar"], rounds["cli"], rounds["cli_keyword_only"]
    out: dict[str, object] = {
        "runs": runs,
        "load_avg": {mode: [round(r["load"], 2) for r in rs] for mode, rs in rounds.items()},
        "without_graph": {
            "index_done_s": done0,
            "keyword_searchable_s": kw0,
            "cpu_s": _median(base, "cpu_s"),
        },
        "sidecar": {
            key: _median(side, key)
            for key in (
                "index_done_s",
                "keyword_searchable_s",
                "graph_ready_s",
                "first_search_ms",
                "search_during_build_p50_ms",
                "search_during_build_max_ms",
                "search_after_p50_ms",
                "searches_during_build",
                "extract_pass_s",
                "cpu_s",
            )
        },
        "cli_index_s": _median(cli, "index_done_s"),
        "cli_cpu_s": _median(cli, "cpu_s"),
        "cli_keyword_only_index_s": _median(kwo, "index_done_s"),
        "overhead_pct": {
            "index_done": pct(_median(side, "index_done_s"), done0),
            "keyword_searchable": pct(_median(side, "keyword_searchable_s"), kw0),
            "graph_ready": pct(_median(side, "graph_ready_s"), kw0),
            "cli_index": pct(_median(cli, "index_done_s"), done0),
            "cli_keyword_only_index": pct(_median(kwo, "index_done_s"), done0),
            "cpu_sidecar": pct(_median(side, "cpu_s"), _median(base, "cpu_s")),
            "cpu_cli": pct(_median(cli, "cpu_s"), _median(base, "cpu_s")),
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
