"""Engine benchmark: index the running Python's standard library, re-index it, and time queries.

Prints one JSON object (also written to bench/results/engine.json). Figures only: nothing is asserted.
Usage: python bench/bench_engine.py [--root PATH] [--queries N]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

from codebase_index.search import Filters
from codebase_index.service import Engine


def peak_rss_mib() -> dict[str, float]:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"self": round(own, 1), "largest_child": round(children, 1)}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def make_queries(engine: Engine, count: int, seed: int = 7) -> list[tuple[str, str]]:
    """Queries in several styles drawn from the indexed code itself (identifier, phrase, long, snippet)."""
    rng = random.Random(seed)
    rows = engine.store.conn.execute(
        "SELECT symbol, text FROM chunks WHERE symbol != '' ORDER BY id"
    ).fetchall()
    rng.shuffle(rows)
    queries: list[tuple[str, str]] = []
    styles = ["identifier", "phrase", "long", "snippet"]
    for i, (symbol, text) in enumerate(rows):
        if len(queries) >= count:
            break
        style = styles[i % len(styles)]
        name = symbol.rsplit(".", 1)[-1]
        if style == "identifier":
            queries.append((style, name))
        elif style == "phrase":
            words = [w.lower() for w in re.findall(r"[A-Z]?[a-z]+", name) if len(w) > 2]
            if words:
                queries.append((style, " ".join(words[:3])))
        elif style == "long":
            prose = re.findall(r"[A-Za-z]{3,}", text)
            if len(prose) > 12:
                start = rng.randrange(0, len(prose) - 12)
                queries.append((style, " ".join(prose[start : start + 12])))
        else:
            lines = [ln.strip() for ln in text.splitlines() if len(ln.strip()) > 20]
            if lines:
                queries.append((style, rng.choice(lines)))
    return queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", default=sysconfig.get_paths()["stdlib"])
    parser.add_argument("--queries", type=int, default=400)
    args = parser.parse_args()
    root = Path(args.root)
    index_dir = Path(tempfile.mkdtemp(prefix="cbi-bench-"))
    out: dict[str, object] = {"root": str(root)}
    try:
        engine = Engine(root, index_path=index_dir)
        t0 = time.perf_counter()
        report = engine.index()
        cold = time.perf_counter() - t0
        out["cold_index"] = {
            "seconds": round(cold, 2),
            "files": report.files,
            "chunks": report.chunks,
            "files_per_s": round(report.files / cold, 1),
            "chunks_per_s": round(report.chunks / cold, 1),
            "skipped": report.skipped,
        }
        out["peak_rss_mib_after_index"] = peak_rss_mib()
        engine.close()

        engine = Engine(root, index_path=index_dir)
        t0 = time.perf_counter()
        engine.index()
        out["nochange_reindex_s"] = round(time.perf_counter() - t0, 3)

        t0 = time.perf_counter()
        engine.snapshot()
        out["snapshot_load_s"] = round(time.perf_counter() - t0, 3)

        queries = make_queries(engine, args.queries)
        for _, q in queries[:20]:  # warm caches
            engine.search(q, top_k=10)
        latencies: dict[str, list[float]] = {}
        for style, q in queries:
            t0 = time.perf_counter()
            engine.search(q, top_k=10)
            latencies.setdefault(style, []).append((time.perf_counter() - t0) * 1000)
        everything = [x for xs in latencies.values() for x in xs]
        out["keyword_query_ms"] = {
            "n": len(everything),
            "p50": round(statistics.median(everything), 3),
            "p95": round(percentile(everything, 0.95), 3),
            "by_style_p50": {k: round(statistics.median(v), 3) for k, v in latencies.items()},
        }
        filtered = []
        for _, q in queries[:100]:
            t0 = time.perf_counter()
            engine.search(q, top_k=10, filters=Filters(directory="email"))
            filtered.append((time.perf_counter() - t0) * 1000)
        out["filtered_query_ms_p50"] = round(statistics.median(filtered), 3)
        out["index_size_mib"] = round(engine.store.size_on_disk() / 1_048_576, 1)
        out["peak_rss_mib"] = peak_rss_mib()
        engine.close()
    finally:
        shutil.rmtree(index_dir, ignore_errors=True)
    text = json.dumps(out, indent=2)
    print(text)
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "engine.json").write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
