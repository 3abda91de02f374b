"""numpy fp32 vs ONNX Runtime int8, in one run, interleaved (the machine is shared: compare ratios).

1. Throughput on the same real chunks (a stdlib subset as the chunker cuts it): chunks/s and chunks per
   CPU-second of each backend, A/B alternated every round.
2. Agreement: cosine between the two backends' vectors of those chunks (distribution), and whether each
   chunk's nearest int8 neighbour among the fp32 vectors is itself.
3. Query embedding p50 (fresh texts, no cache) for both, alternated per query.
4. Hybrid search p50 on a benchmark index embedded by each backend (fp32: --index-root, int8:
   --int8-index-root), alternated per query, query-vector cache cleared each time.
5. Peak RSS of a fresh process that loads each backend and embeds the chunks (growth over the same
   process after imports).
6. With --quality: bench_quality.py (semble-26, hybrid) and validate.py for both backends, side by side.
   The int8 indexes live apart (own model id): --int8-index-root and validate's index-int8 folders.

Usage: python bench/bench_onnx.py [--chunks 500] [--rounds 3] [--quality]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from codebase_index.config import Config, load_config
from codebase_index.embeddings import EmbeddingProvider, create_embedded_provider
from codebase_index.service import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_paths import SHARED_BENCH

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_vectors import bench_queries, stdlib_subset  # noqa: E402

DEFAULT_BENCH = SHARED_BENCH
BACKENDS = ("numpy", "onnx")


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def real_chunks(work: Path, count: int) -> list[str]:
    """`count` distinct chunk texts of a stdlib subset, as the indexer's chunker cuts them."""
    root = work / "subset"
    stdlib_subset(root, count * 600)
    keyword_only = msgspec.convert({"embeddingProvider": "embedded"}, Config)
    engine = Engine(root, keyword_only, index_path=work / "index")
    engine.index()
    rows = engine.store.conn.execute("SELECT text FROM chunks GROUP BY chunk_hash ORDER BY MIN(id)")
    texts = [r[0] for r in rows][:count]
    engine.close()
    return texts


def throughput(providers: dict[str, EmbeddingProvider], texts: list[str], rounds: int) -> dict[str, Any]:
    out: dict[str, Any] = {name: {"chunks_per_s": [], "chunks_per_cpu_s": []} for name in providers}
    vectors: dict[str, np.ndarray] = {}
    for r in range(rounds):
        order = BACKENDS if r % 2 == 0 else BACKENDS[::-1]
        for name in order:
            load = os.getloadavg()[0]
            c0, w0 = time.process_time(), time.perf_counter()
            vectors[name] = providers[name].embed_documents(texts)
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            out[name]["chunks_per_s"].append(round(len(texts) / wall, 1))
            out[name]["chunks_per_cpu_s"].append(round(len(texts) / cpu, 1))
            print(
                f"  round {r + 1} {name:<5} {len(texts) / wall:6.1f} chunks/s  "
                f"{len(texts) / cpu:6.1f} per CPU-s  cores {cpu / wall:.2f}  load {load:.1f}",
                flush=True,
            )
    for name in providers:
        for key in ("chunks_per_s", "chunks_per_cpu_s"):
            out[name][key + "_median"] = statistics.median(out[name][key])
    for key in ("chunks_per_s", "chunks_per_cpu_s"):
        ratios = [b / a for a, b in zip(out["numpy"][key], out["onnx"][key], strict=True)]
        out[f"ratio_{key}"] = {
            "per_round": [round(x, 2) for x in ratios],
            "median": round(statistics.median(ratios), 2),
        }
    cos = (vectors["numpy"] * vectors["onnx"]).sum(axis=1)
    nearest = np.argmax(vectors["onnx"] @ vectors["numpy"].T, axis=1) == np.arange(len(texts))
    out["agreement"] = {
        "min": round(float(cos.min()), 4),
        "p1": round(p(cos.tolist(), 0.01), 4),
        "p5": round(p(cos.tolist(), 0.05), 4),
        "p50": round(p(cos.tolist(), 0.5), 5),
        "mean": round(float(cos.mean()), 5),
        "below_0.99": int((cos < 0.99).sum()),
        "below_0.98": int((cos < 0.98).sum()),
        "nearest_is_self": round(float(nearest.mean()), 4),
    }
    return out


def ms(wall: list[float], cpu: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(p(wall, 0.5), 2),
        "p95_ms": round(p(wall, 0.95), 2),
        "cpu_p50_ms": round(p(cpu, 0.5), 2),
    }


def query_latency(providers: dict[str, EmbeddingProvider], queries: list[str]) -> dict[str, Any]:
    """Wall and calling-thread CPU milliseconds (the CPU figure is what an idle core would show: both
    backends embed a query in the calling thread)."""
    wall: dict[str, list[float]] = {name: [] for name in providers}
    cpu: dict[str, list[float]] = {name: [] for name in providers}
    for i, query in enumerate(queries):
        for name in BACKENDS if i % 2 == 0 else BACKENDS[::-1]:
            t0, c0 = time.perf_counter(), time.thread_time()
            providers[name].embed_query(query)
            wall[name].append((time.perf_counter() - t0) * 1000)
            cpu[name].append((time.thread_time() - c0) * 1000)
    return {name: ms(wall[name], cpu[name]) for name in providers}


def complete_engine(root: Path, index: Path, backend: str) -> Engine | None:
    if not (index / "codebase.db").exists():
        return None
    config = msgspec.structs.replace(load_config(root), embedded_backend=backend)
    engine = Engine(root, config, index_path=index)
    status = engine.status().embeddings
    if status is None or status.total == 0 or status.embedded < status.total:
        engine.close()
        return None
    return engine


def hybrid_latency(args: argparse.Namespace, queries: list[str]) -> dict[str, Any]:
    specs = {s["name"]: s for s in json.loads((args.bench / "repos.json").read_text())}
    for name in [args.repo, *sorted(specs)]:
        spec = specs[name]
        checkout = args.repos_root / name
        root = checkout / spec["benchmark_root"] if spec.get("benchmark_root") else checkout
        if not root.is_dir():
            continue
        engines = {
            "numpy": complete_engine(root, args.index_root / name, "numpy"),
            "onnx": complete_engine(root, args.int8_index_root / name, "onnx"),
        }
        if all(engines.values()):
            break
        for engine in engines.values():
            if engine is not None:
                engine.close()
    else:
        return {"skipped": "no benchmark repo is fully embedded by both backends"}
    times: dict[str, list[float]] = {b: [] for b in BACKENDS}
    cpu: dict[str, list[float]] = {b: [] for b in BACKENDS}
    ready = {b: e for b, e in engines.items() if e is not None}
    for engine in ready.values():
        engine.search(queries[0], top_k=10)  # warm-up
    for i, query in enumerate(queries):
        for backend in BACKENDS if i % 2 == 0 else BACKENDS[::-1]:
            engine = ready[backend]
            engine._query_vectors.clear()
            t0, c0 = time.perf_counter(), time.thread_time()
            engine.search(query, top_k=10, mode="hybrid")
            times[backend].append((time.perf_counter() - t0) * 1000)
            cpu[backend].append((time.thread_time() - c0) * 1000)
    chunks = ready["onnx"].status().chunks
    for engine in ready.values():
        engine.close()
    return {
        "repo": name,
        "chunks": chunks,
        **{b: ms(times[b], cpu[b]) for b in BACKENDS},
    }


_RSS_CHILD = """
import json, sys
from codebase_index.embeddings import create_embedded_provider

def hwm_mb():  # peak resident set of this process (VmHWM: per address space, reset by exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
texts = json.load(open(sys.argv[2]))
provider = create_embedded_provider(backend=sys.argv[1])
base = hwm_mb()
provider.embed_query("load")
loaded = hwm_mb()
provider.embed_documents(texts)
peak = hwm_mb()
print(json.dumps({"after_imports_mb": round(base, 1), "after_load_mb": round(loaded, 1),
                  "peak_mb": round(peak, 1), "growth_mb": round(peak - base, 1)}))
"""


def peak_rss(texts: list[str], work: Path) -> dict[str, Any]:
    path = work / "texts.json"
    path.write_text(json.dumps(texts))
    out = {}
    for backend in BACKENDS:
        run = subprocess.run(
            [sys.executable, "-c", _RSS_CHILD, backend, str(path)], capture_output=True, text=True, check=True
        )
        out[backend] = json.loads(run.stdout.strip().splitlines()[-1])
    return out


def quality(args: argparse.Namespace) -> None:
    """bench_quality (hybrid) and validate for both backends; prints their summaries side by side."""
    runs = {
        "numpy": (["--index-root", str(args.index_root)], ["--backend", "numpy"]),
        "onnx": (
            ["--backend", "onnx", "--index-root", str(args.int8_index_root)],
            ["--backend", "onnx", "--index-name", "index-int8"],
        ),
    }
    summaries: dict[str, list[str]] = {}
    for backend, (bq, val) in runs.items():
        res = subprocess.run(
            [sys.executable, str(HERE / "bench_quality.py"), "--bench", str(args.bench), "--mode", "hybrid",
             *bq, "--out", str(HERE / "results" / f"quality-{backend}.json")],
            capture_output=True, text=True,
        )  # fmt: skip
        lines = [ln for ln in res.stdout.splitlines() if re.search(r"overall|mean|NDCG", ln, re.I)]
        res = subprocess.run(
            [sys.executable, str(HERE / "validate.py"), "--mode", "hybrid", *val],
            capture_output=True,
            text=True,
        )
        lines += [ln for ln in res.stdout.splitlines() if "/ALL" in ln]
        summaries[backend] = lines
    width = max((len(ln) for ln in summaries["numpy"]), default=10)
    print(f"  {'numpy fp32':<{width}} | onnx int8")
    for a, b in zip(summaries["numpy"], summaries["onnx"], strict=False):
        print(f"  {a:<{width}} | {b}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--repos-root", type=Path, default=Path.home() / ".cache" / "bench-repos")
    parser.add_argument("--index-root", type=Path, default=Path.home() / ".cache" / "codebase-index-bench")
    parser.add_argument(
        "--int8-index-root", type=Path, default=Path.home() / ".cache" / "codebase-index-bench-int8"
    )
    parser.add_argument(
        "--repo", default="flask", help="benchmark repo for hybrid latency (if embedded by both)"
    )
    parser.add_argument("--quality", action="store_true", help="also bench_quality + validate for both")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "onnx.json")
    args = parser.parse_args()

    results: dict[str, Any] = {"cores": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-onnx-") as tmp:
        work = Path(tmp)
        texts = real_chunks(work, args.chunks)
        providers = {b: create_embedded_provider(backend=b) for b in BACKENDS}  # type: ignore[arg-type]
        t0 = time.perf_counter()
        providers["onnx"].embed_query("build or load the int8 model")
        results["onnx_first_use_s"] = round(time.perf_counter() - t0, 2)
        providers["numpy"].embed_query("load the weights")
        print(
            f"1. throughput on {len(texts)} stdlib chunks as the chunker cuts them (A/B alternated)",
            flush=True,
        )
        results["throughput"] = throughput(providers, texts, args.rounds)
        t = results["throughput"]
        print(
            f"   ratio onnx/numpy: chunks/s {t['ratio_chunks_per_s']}, "
            f"per CPU-s {t['ratio_chunks_per_cpu_s']}"
        )
        print(f"2. agreement (cos int8 vs fp32): {t['agreement']}", flush=True)
        queries = bench_queries(args.bench, args.queries) if args.bench.is_dir() else [x[:80] for x in texts]
        results["query_embedding"] = query_latency(providers, queries)
        print(f"3. query embedding: {results['query_embedding']}", flush=True)
        results["hybrid"] = hybrid_latency(args, queries) if args.bench.is_dir() else {"skipped": "no bench"}
        print(f"4. hybrid search: {results['hybrid']}", flush=True)
        results["peak_rss"] = peak_rss(texts, work)
        print(f"5. peak RSS: {results['peak_rss']}", flush=True)
        stdlib = 68_000
        rate = t["onnx"]["chunks_per_cpu_s_median"] * (os.cpu_count() or 1)
        results["stdlib_estimate_min"] = round(stdlib / rate / 60, 1)
        print(f"   CPython stdlib ({stdlib} chunks) at the int8 per-CPU-second rate on all cores: "
              f"~{results['stdlib_estimate_min']} min on a quiet machine")  # fmt: skip
    results["load_after"] = os.getloadavg()[0]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    if args.quality:
        print("6. quality, hybrid NDCG@10 (semble-26, then validation sets)", flush=True)
        quality(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
