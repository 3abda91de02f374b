"""Vector ("Meaning") speed figures for the issue's bars. Figures only: nothing is asserted.

1. Embedding throughput in the pipeline: `Engine.embed()` over a fresh index of a CPython stdlib subset
   (chunks as the chunker cuts them), in chunks/s and 128-token-equivalent chunks/s, with the machine's load.
2. Hybrid query latency (p50/p95) including the query embedding (cache cleared before every query), with a
   breakdown (query embedding, keyword retrieval, vector scan), on an embedded benchmark index
   (~/.cache/codebase-index-bench/<repo>, from bench/embed_bench_indexes.py) or, when none is complete,
   on the subset embedded in step 1.
3. Exact numpy vs usearch crossover on synthetic clustered 384-d vectors (10k..200k): query time, recall@10
   of the ANN, build rate.
4. CPython stdlib: keyword-index time and the estimated time to full embeddings (distinct chunks / the
   throughput of step 1, plus the ANN build).

Writes bench/results/vectors.json. Usage:
    python bench/bench_vectors.py [--repo tokio] [--embed-chunks 400] [--sizes 10000,50000,100000,200000]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import resource
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from codebase_index.config import Config
from codebase_index.embeddings.blas_threads import single_blas_thread
from codebase_index.service import Engine
from codebase_index.vectors import exact_top_k, usearch_index_class

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_paths import SHARED_BENCH

HERE = Path(__file__).resolve().parent
DEFAULT_BENCH = SHARED_BENCH
EMBEDDED = msgspec.convert({"embeddingProvider": "embedded"}, Config)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))], 2)


def summary(values: list[float]) -> dict[str, float]:
    return {"p50": pct(values, 0.5), "p95": pct(values, 0.95), "n": len(values)}


@contextmanager
def load_meter() -> Iterator[dict[str, float]]:
    """Machine load while the body runs: 1-min load average at both ends and this process's CPU share."""
    out: dict[str, float] = {"loadavg_before": round(os.getloadavg()[0], 2)}
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0 = time.perf_counter()
    yield out
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    wall = time.perf_counter() - wall0
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    out["loadavg_after"] = round(os.getloadavg()[0], 2)
    out["own_cpu_cores"] = round(cpu / wall, 2) if wall > 0 else 0.0
    out["cores"] = os.cpu_count() or 0


# -- 1. embedding throughput ------------------------------------------------------------------------------


def stdlib_subset(dest: Path, target_bytes: int) -> None:
    """Copy whole stdlib modules (sorted by name) until about `target_bytes` of source."""
    src = Path(sysconfig.get_paths()["stdlib"])
    dest.mkdir(parents=True)
    total = 0
    for path in sorted(src.glob("*.py")):
        if total >= target_bytes:
            break
        shutil.copy2(path, dest / path.name)
        total += path.stat().st_size


def embedding_throughput(work: Path, chunks_wanted: int) -> tuple[dict[str, Any], Engine]:
    root = work / "subset"
    # ~500 bytes of source per chunk on the stdlib
    stdlib_subset(root, chunks_wanted * 500)
    engine = Engine(root, EMBEDDED, index_path=work / "subset-index")
    engine.index(embed=False)  # keyword only: the default model would embed in the pass, leaving none to time
    provider = engine.embedding_provider()
    assert provider is not None, engine.embedding_error()
    provider.embed_query("load the weights before timing")
    cpu0 = time.process_time()
    with load_meter() as load:
        report = engine.embed()
    cpu_s = time.process_time() - cpu0
    assert report is not None
    texts = [r[0] for r in engine.store.conn.execute("SELECT text FROM chunks GROUP BY chunk_hash")]
    encode = getattr(provider, "_encode", None)
    loaded = getattr(provider, "_loaded", None)
    # The numpy MiniLM encodes with its loaded model (`_encode(model, texts)`); the onnx engine holds its
    # own tokenizer (`_encode(texts)`).
    if encode is None:
        tokens: list[int] = []
    elif len(inspect.signature(encode).parameters) == 1:
        tokens = [len(ids) for ids in encode(texts)]
    else:
        tokens = [len(ids) for ids in encode(loaded(), texts)] if loaded else []
    rate = report.embedded / report.seconds if report.seconds else 0.0
    mean_tokens = statistics.mean(tokens) if tokens else 0.0
    return {
        "chunks": report.embedded,
        "seconds": report.seconds,
        "chunks_per_s": round(rate, 1),
        "mean_tokens_per_chunk": round(mean_tokens, 1),
        "tokens_per_s": round(rate * mean_tokens, 0),
        "chunks_per_s_at_128_tokens": round(rate * mean_tokens / 128, 1) if mean_tokens else None,
        # What two otherwise idle cores would do: chunks per CPU-second of this process, times the cores.
        "chunks_per_cpu_s": round(report.embedded / cpu_s, 1) if cpu_s else None,
        "load": load,
    }, engine


# -- 2. hybrid latency ------------------------------------------------------------------------------------


def complete_bench_index(index_root: Path, repos_root: Path, bench: Path, wanted: str) -> Engine | None:
    """An Engine over a fully embedded benchmark index (the wanted repo, else the biggest complete one)."""
    specs = {s["name"]: s for s in json.loads((bench / "repos.json").read_text())}

    def size(name: str) -> int:
        db = index_root / name / "codebase.db"
        return db.stat().st_size if db.exists() else 0

    order = [wanted, *sorted(specs, key=size, reverse=True)]
    for name in dict.fromkeys(order):
        spec = specs.get(name)
        if spec is None or not (index_root / name / "codebase.db").exists():
            continue
        checkout = repos_root / name
        root = checkout / spec["benchmark_root"] if spec.get("benchmark_root") else checkout
        if not root.is_dir():
            continue
        engine = Engine(root, EMBEDDED, index_path=index_root / name)
        emb = engine.status().embeddings
        if emb is not None and emb.total and emb.embedded == emb.total:
            return engine
        engine.close()
    return None


def bench_queries(bench: Path, limit: int) -> list[str]:
    """Natural-language and identifier queries of the 26-repo benchmark (distinct, in file order)."""
    out: dict[str, None] = {}
    for path in sorted((bench / "annotations").glob("*.json")):
        for task in json.loads(path.read_text()):
            out[task["query"]] = None
    return list(out)[:limit]


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000


def hybrid_latency(engine: Engine, queries: list[str]) -> dict[str, Any]:
    snap = engine.snapshot()
    vecs = engine.vector_snapshot(snap)
    provider = engine.embedding_provider()
    assert vecs is not None and provider is not None
    engine.search(queries[0], top_k=10)  # warm-up: model weights, snapshot fields
    parts: dict[str, list[float]] = {k: [] for k in ("hybrid", "query_embedding", "keyword", "vector_scan")}
    cached: list[float] = []
    cpu: list[float] = []  # CPU time of the search thread: the latency an idle machine would show
    strategies: set[str] = set()
    with load_meter() as load:
        for query in queries:
            engine._query_vectors.clear()  # charge the query embedding to every hybrid query
            t0, c0 = time.perf_counter(), time.thread_time()
            response = engine.search(query, top_k=10)
            parts["hybrid"].append((time.perf_counter() - t0) * 1000)
            cpu.append((time.thread_time() - c0) * 1000)
            strategies.add(response.strategy)
            cached.append(timed(lambda q=query: engine.search(q, top_k=10)))
            vector = provider.embed_query(query)
            parts["query_embedding"].append(timed(lambda q=query: provider.embed_query(q)))
            parts["keyword"].append(timed(lambda q=query: engine.search(q, top_k=10, mode="keyword")))
            parts["vector_scan"].append(timed(lambda v=vector: vecs.semantic_hits(v, 100)))
    return {
        "index": str(engine.index_dir),
        "documents": len(snap),
        "vectors": len(vecs),
        "ann": vecs.ann is not None,
        "strategies": sorted(strategies),
        "queries": len(queries),
        "hybrid_ms": summary(parts["hybrid"]),
        "hybrid_cpu_ms": summary(cpu),
        "hybrid_cached_query_vector_ms": summary(cached),
        "breakdown_ms": {k: summary(v) for k, v in parts.items() if k != "hybrid"},
        "load": load,
    }


# -- 3. exact vs ANN crossover ----------------------------------------------------------------------------


def clustered(rng: np.random.Generator, n: int, centers: np.ndarray) -> np.ndarray:
    """Unit vectors around random centres: closer to real embeddings than uniform noise."""
    x = centers[rng.integers(0, centers.shape[0], n)] + 0.6 * rng.normal(size=(n, centers.shape[1]))
    x = x.astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def crossover(sizes: list[int], queries: int = 40, dims: int = 384) -> dict[str, Any]:
    Index = usearch_index_class()

    rng = np.random.default_rng(11)
    centers = rng.normal(size=(512, dims)).astype(np.float32)
    qs = clustered(rng, queries, centers)
    index = Index(ndim=dims, metric="cos", dtype="f16")
    matrix = np.zeros((0, dims), dtype=np.float32)
    rows: list[dict[str, Any]] = []
    build_s = 0.0
    for size in sorted(sizes):
        fresh = clustered(rng, size - matrix.shape[0], centers)
        t0 = time.perf_counter()
        index.add(np.arange(matrix.shape[0], size, dtype=np.uint64), fresh)
        build_s += time.perf_counter() - t0
        matrix = np.concatenate([matrix, fresh])
        exact_ms: list[float] = []
        masked_ms: list[float] = []
        ann_ms: list[float] = []
        recall: list[float] = []
        half = np.zeros(size, dtype=bool)
        half[::2] = True  # a filter that keeps half the documents
        with single_blas_thread():
            for q in qs:
                exact_ms.append(timed(lambda q=q, m=matrix: exact_top_k(m, q, 100, None)))
                masked_ms.append(timed(lambda q=q, m=matrix, h=half: exact_top_k(m, q, 100, h)))
                truth = {r for r, _ in exact_top_k(matrix, q, 10, None)}
                t0 = time.perf_counter()
                found = index.search(q, 100)
                ann_ms.append((time.perf_counter() - t0) * 1000)
                recall.append(len(truth & {int(k) for k in found.keys[:10]}) / 10)
        rows.append(
            {
                "vectors": size,
                "exact_ms": summary(exact_ms),
                "exact_half_filter_ms": summary(masked_ms),
                "usearch_ms": summary(ann_ms),
                "usearch_recall_at_10": round(statistics.mean(recall), 3),
                "usearch_build_per_s": round(size / build_s, 0),
            }
        )
        print(
            f"  {size:>7} vectors: exact p50 {rows[-1]['exact_ms']['p50']} ms, usearch p50 "
            f"{rows[-1]['usearch_ms']['p50']} ms (recall@10 {rows[-1]['usearch_recall_at_10']})",
            flush=True,
        )
    faster = [r["vectors"] for r in rows if r["usearch_ms"]["p50"] < r["exact_ms"]["p50"] / 2]
    return {"rows": rows, "usearch_2x_faster_from": faster[0] if faster else None}


# -- 4. stdlib --------------------------------------------------------------------------------------------


def stdlib_estimate(
    work: Path, chunks_per_s: float, idle_chunks_per_s: float | None, ann_build_per_s: float | None
) -> dict[str, Any]:
    root = Path(sysconfig.get_paths()["stdlib"])
    engine = Engine(root, EMBEDDED, index_path=work / "stdlib-index")
    t0 = time.perf_counter()
    report = engine.index(embed=False)
    seconds = time.perf_counter() - t0
    distinct = engine.store.conn.execute("SELECT COUNT(DISTINCT chunk_hash) FROM chunks").fetchone()[0]
    engine.close()
    embed_s = distinct / chunks_per_s if chunks_per_s else None
    ann_s = distinct / ann_build_per_s if ann_build_per_s else None
    total = (embed_s or 0) + (ann_s or 0)
    idle = distinct / idle_chunks_per_s + (ann_s or 0) if idle_chunks_per_s else None
    return {
        "root": str(root),
        "files": report.files,
        "chunks": report.chunks,
        "distinct_chunks": int(distinct),
        "keyword_index_s": round(seconds, 2),
        "estimated_embedding_s": round(embed_s, 0) if embed_s else None,
        "estimated_ann_build_s": round(ann_s, 0) if ann_s else None,
        "estimated_full_embeddings_min": round(total / 60, 1) if total else None,
        "estimated_full_embeddings_min_idle_cores": round(idle / 60, 1) if idle else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--repos-root", type=Path, default=Path.home() / ".cache" / "bench-repos")
    parser.add_argument("--index-root", type=Path, default=Path.home() / ".cache" / "codebase-index-bench")
    parser.add_argument("--repo", default="tokio", help="benchmark index for hybrid latency (if complete)")
    parser.add_argument("--embed-chunks", type=int, default=300, help="chunks to embed for throughput")
    parser.add_argument("--queries", type=int, default=120)
    parser.add_argument("--sizes", default="10000,50000,100000,200000")
    parser.add_argument("--skip-stdlib", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "vectors.json")
    args = parser.parse_args()

    results: dict[str, Any] = {"python": sys.version.split()[0], "cpus": os.cpu_count()}
    work = Path(tempfile.mkdtemp(prefix="bench-vectors-"))
    try:
        print("1. embedding throughput (pipeline, stdlib subset)", flush=True)
        results["embedding"], subset = embedding_throughput(work, args.embed_chunks)
        print(f"  {json.dumps(results['embedding'])}", flush=True)

        print("2. hybrid latency", flush=True)
        engine = complete_bench_index(args.index_root, args.repos_root, args.bench, args.repo) or subset
        queries = bench_queries(args.bench, args.queries) if args.bench.is_dir() else []
        if not queries:
            queries = [f"function that handles {w}" for w in ("errors", "paths", "dates", "sockets", "text")]
        results["hybrid"] = hybrid_latency(engine, queries)
        print(f"  {json.dumps(results['hybrid'])}", flush=True)
        if engine is not subset:
            engine.close()
        subset.close()

        print("3. exact vs usearch crossover (synthetic, 384 d)", flush=True)
        results["crossover"] = crossover([int(s) for s in args.sizes.split(",") if s])

        if not args.skip_stdlib:
            print("4. CPython stdlib: keyword index, estimated time to full embeddings", flush=True)
            rows = results["crossover"]["rows"]
            build = rows[-1]["usearch_build_per_s"] if rows else None
            emb = results["embedding"]
            idle_rate = emb["chunks_per_cpu_s"] * emb["load"]["cores"] if emb["chunks_per_cpu_s"] else None
            results["stdlib"] = stdlib_estimate(work, emb["chunks_per_s"], idle_rate, build)
            print(f"  {json.dumps(results['stdlib'])}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
