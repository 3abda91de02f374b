"""One large project, hybrid-ready (issue 25's scale bar: >= 500k real chunks in <= 10 minutes, peak RSS
<= 3 GB on 2 cores). Figures only.

The corpus is a folder of real repositories side by side (each a `git archive` of a fetched mirror's
HEAD: see `--make-corpus`), indexed as one project with the default configuration, so every chunk is
embedded in the index pass. Prints the index wall and CPU time, chunks, vectors, the index size, the peak
RSS of this process (the index pass runs in it), then keyword and hybrid query latency (p50/p95 over
queries made from the corpus's own symbols and their words, each timed once after a warm-up pass): hybrid
first exact (what a search sees right after the pass), then with the ANN index the sidecar's next round
builds (its build time is printed too). Beside this process's peak RSS, the largest chunk worker's (two
run beside it on two cores).

Usage:
    python bench/bench_large_index.py --make-corpus --mirrors /work/.mirror --count 80 CORPUS
    python bench/bench_large_index.py --make-corpus --subset-of CORPUS --smallest 62 SUBSET
        (hard links to the 62 smallest trees of CORPUS: ~580k chunks, the scale bar's size)
    python bench/bench_large_index.py CORPUS [--index DIR] [--queries 200]
Results also go to bench/results/large_index.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codebase_index.config import Config
from codebase_index.service import Engine

HERE = Path(__file__).resolve().parent


def make_corpus(mirrors: Path, count: int, corpus: Path) -> None:
    """The `count` largest mirrors' HEAD trees under `corpus` (skipping what is already there)."""
    sizes = []
    for mirror in mirrors.iterdir():
        git_dir = mirror / "repo" if (mirror / "repo").is_dir() else mirror
        size = sum(f.stat().st_size for f in (git_dir / "objects" / "pack").glob("*.pack"))
        sizes.append((size, mirror.name, git_dir))
    corpus.mkdir(parents=True, exist_ok=True)
    for _, name, git_dir in sorted(sizes, reverse=True)[:count]:
        out = corpus / name
        if out.exists():
            continue
        out.mkdir()
        archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", "HEAD"], capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=False, capture_output=True)


def make_subset(corpus: Path, smallest: int, subset: Path) -> None:
    """Hard links to the `smallest` trees of `corpus` (by bytes) under `subset`."""
    sizes = sorted(
        (sum(f.stat().st_size for f in tree.rglob("*") if f.is_file() and not f.is_symlink()), tree.name)
        for tree in corpus.iterdir()
        if tree.is_dir()
    )
    subset.mkdir(parents=True, exist_ok=True)
    for _, name in sizes[:smallest]:
        if not (subset / name).exists():
            subprocess.run(["cp", "-al", str(corpus / name), str(subset / name)], check=True)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def sample_queries(engine: Engine, count: int, seed: int) -> list[str]:
    """Half identifiers as typed, half their words as a phrase (`parse_http_header` -> `parse http
    header`)."""
    rows = engine.store.conn.execute(
        "SELECT DISTINCT symbol FROM chunks WHERE symbol IS NOT NULL AND length(symbol) > 6 LIMIT 200000"
    ).fetchall()
    symbols = sorted({r[0].split(".")[-1] for r in rows if r[0]})
    rng = random.Random(seed)
    picked = rng.sample(symbols, min(count, len(symbols)))
    out = []
    for i, symbol in enumerate(picked):
        words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", symbol).replace("_", " ").lower().split()
        out.append(symbol if i % 2 == 0 or len(words) < 2 else " ".join(words))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--make-corpus", action="store_true")
    parser.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--count", type=int, default=80)
    parser.add_argument("--subset-of", type=Path, help="with --make-corpus: link trees of this corpus")
    parser.add_argument("--smallest", type=int, default=62, help="with --subset-of: how many trees")
    parser.add_argument("--index", type=Path, help="index folder (default: a temporary one, removed)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=HERE / "results" / "large_index.json")
    args = parser.parse_args()
    if args.make_corpus:
        if args.subset_of is not None:
            make_subset(args.subset_of, args.smallest, args.corpus)
        else:
            make_corpus(args.mirrors, args.count, args.corpus)
        return 0
    index = args.index or Path(tempfile.mkdtemp(prefix="cbi-large-"))
    load_before = os.getloadavg()[0]
    engine = Engine(args.corpus, Config(), index_path=index)
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        report = engine.index()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        workers_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        status = engine.status()
        vectors = status.embeddings.embedded if status.embeddings is not None else 0
        size_mb = sum(f.stat().st_size for f in index.rglob("*") if f.is_file()) / 2**20
        print(
            f"indexed {status.files} files, {status.chunks} chunks, {vectors} vectors "
            f"({report.embedded} in the pass) in {wall:.1f} s wall, {cpu:.1f} s CPU; "
            f"peak RSS {peak_mb:.0f} MB (+ {workers_mb:.0f} MB the largest worker); "
            f"index {size_mb:.0f} MB; load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after",
            flush=True,
        )
        queries = sample_queries(engine, args.queries, args.seed)
        latency: dict[str, dict[str, float]] = {}
        ann_s = 0.0

        def build_ann() -> None:
            nonlocal ann_s
            started = time.perf_counter()
            outcome = engine.sync_ann_index()
            ann_s = time.perf_counter() - started
            print(f"ANN index: {outcome} in {ann_s:.1f} s", flush=True)

        for mode in ("keyword", "hybrid", "hybrid-ann"):
            if mode == "hybrid-ann":
                build_ann()
            for q in queries[:20]:  # warm-up: caches, the ANN index, the model
                engine.search(q, mode=mode.removesuffix("-ann"))
            times = []
            strategies: dict[str, int] = {}
            for q in queries:
                started = time.perf_counter()
                response = engine.search(q, mode=mode.removesuffix("-ann"))
                times.append((time.perf_counter() - started) * 1000)
                strategies[response.strategy] = strategies.get(response.strategy, 0) + 1
            latency[mode] = {
                "p50_ms": round(statistics.median(times), 2),
                "p95_ms": round(percentile(times, 0.95), 2),
            }
            print(f"{mode}: p50 {latency[mode]['p50_ms']} ms, p95 {latency[mode]['p95_ms']} ms; {strategies}")
        peak_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak RSS after the queries {peak_after:.0f} MB")
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {
                    "files": status.files,
                    "chunks": status.chunks,
                    "vectors": vectors,
                    "index_wall_s": round(wall, 1),
                    "index_cpu_s": round(cpu, 1),
                    "peak_rss_mb_index": round(peak_mb),
                    "peak_rss_mb_worker": round(workers_mb),
                    "ann_build_s": round(ann_s, 1),
                    "peak_rss_mb_after_queries": round(peak_after),
                    "index_mb": round(size_mb),
                    "latency": latency,
                    "queries": len(queries),
                    "load_before": load_before,
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
    finally:
        engine.close()
        if args.index is None:
            shutil.rmtree(index, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
