"""Quality benchmark on the semble 26-repo subset: index each repo, answer every query in-process, then
score with ../shared/bench/score.py (semble's exact NDCG@10) beside semble's published figures.

Needs the corpora checked out (see ../shared/bench/README.md). Usage:
    python bench/bench_quality.py [--repos-root ~/.cache/bench-repos] [--mode keyword] [--repo NAME ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import msgspec

from codebase_index import embedder
from codebase_index.config import load_config
from codebase_index.service import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_paths import SHARED_BENCH

HERE = Path(__file__).resolve().parent
DEFAULT_BENCH = SHARED_BENCH


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH, help="folder with score.py, repos.json")
    parser.add_argument("--repos-root", type=Path, default=Path.home() / ".cache" / "bench-repos")
    parser.add_argument("--index-root", type=Path, default=Path.home() / ".cache" / "codebase-index-bench")
    parser.add_argument("--mode", default=None, help="keyword, semantic or hybrid (default: the engine's)")
    parser.add_argument("--no-index", action="store_true", help="search the existing indexes as they are")
    parser.add_argument("--repo", action="append", help="only these repos (repeatable)")
    parser.add_argument(
        "--header",
        action="store_true",
        help="embed a 'path: kind symbol' header per chunk (embedder.EMBED_HEADER); own --index-root",
    )
    parser.add_argument(
        "--backend",
        choices=["auto", "onnx", "numpy"],
        help="embedded model engine (config embeddedBackend); give int8 runs their own index folder",
    )
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "quality-results.json")
    parser.add_argument("--compare", default="semble,semble_bm25,bm25_raw")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument(
        "--ranker", choices=["auto", "rules", "learned"], help="search.ranker (default: the config's)"
    )
    args = parser.parse_args()
    embedder.EMBED_HEADER = args.header

    specs = json.loads((args.bench / "repos.json").read_text())
    results: dict[str, dict[str, list[dict[str, object]]]] = {}
    latencies: list[float] = []
    embedding_ms: list[float] = []  # hybrid only: the query's embedding timed alone
    beyond_ms: list[float] = []  # hybrid only: search minus its query's embedding, per query
    for spec in specs:
        name = spec["name"]
        if args.repo and name not in args.repo:
            continue
        checkout = args.repos_root / name
        root = checkout / spec["benchmark_root"] if spec.get("benchmark_root") else checkout
        if not root.is_dir():
            print(f"skip {name}: no checkout at {root}", file=sys.stderr)
            continue
        annotations = json.loads((args.bench / "annotations" / f"{name}.json").read_text())
        queries = [task["query"] for task in annotations if task.get("repo", name) == name]
        config = load_config(root)
        if args.backend:
            config = msgspec.structs.replace(config, embedded_backend=args.backend)
        engine = Engine(root, config, index_path=args.index_root / name)
        if args.ranker:
            engine.config = msgspec.structs.replace(
                engine.config, search=msgspec.structs.replace(engine.config.search, ranker=args.ranker)
            )
        t0 = time.perf_counter()
        report = None if args.no_index else engine.index()
        if args.backend and not args.no_index:
            engine.embed()  # this backend's vectors (own model id), resumable
        index_s = time.perf_counter() - t0
        engine.snapshot()
        if queries:  # warm-up (query embedding model, caches): not charged to the latency figures
            engine.search(queries[0], top_k=args.top, mode=args.mode)
        per_repo: dict[str, list[dict[str, object]]] = {}
        provider = engine.embedding_provider() if args.mode != "keyword" else None
        for query in queries:
            t0 = time.perf_counter()
            response = engine.search(query, top_k=args.top, mode=args.mode)
            latencies.append((time.perf_counter() - t0) * 1000)
            if provider is not None and response.strategy.startswith("hybrid"):
                # The model alone on the same query: what a hybrid search costs beyond its embedding.
                t0 = time.perf_counter()
                provider.embed_query(query)
                embedding_ms.append((time.perf_counter() - t0) * 1000)
                beyond_ms.append(latencies[-1] - embedding_ms[-1])
            per_repo[query] = [
                {"path": r.path, "start_line": r.start_line, "end_line": r.end_line} for r in response.results
            ]
        results[name] = per_repo
        engine.close()
        sizes = f"files={report.files:<5} chunks={report.chunks:<6} " if report is not None else ""
        print(f"{name:<12} {sizes}index={index_s:.2f}s queries={len(queries)}", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results))
    if latencies:
        ordered = sorted(latencies)
        print(
            f"in-process query latency: p50 {statistics.median(ordered):.2f} ms, "
            f"p95 {ordered[int(0.95 * (len(ordered) - 1))]:.2f} ms over {len(ordered)} queries",
            file=sys.stderr,
        )
    if embedding_ms:
        print(
            f"query embedding alone: p50 {statistics.median(embedding_ms):.2f} ms; hybrid search beyond its "
            f"embedding: p50 {statistics.median(beyond_ms):+.2f} ms over {len(beyond_ms)} queries",
            file=sys.stderr,
        )
    command = [
        sys.executable,
        str(args.bench / "score.py"),
        "--repos",
        str(args.bench / "repos.json"),
        "--annotations",
        str(args.bench / "annotations"),
        "--root",
        str(args.repos_root),
        "--results",
        str(args.out),
        "--compare",
        args.compare,
    ]
    if args.repo:
        for name in args.repo:
            command += ["--repo", name]
    if args.verbose:
        command.append("--verbose")
    return subprocess.call(command)


if __name__ == "__main__":
    sys.exit(main())
