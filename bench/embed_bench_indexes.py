"""Fill the quality benchmark's indexes (~/.cache/codebase-index-bench/<repo>) with embeddings, so hybrid
search can be evaluated by bench/bench_quality.py. Resumable: a killed run keeps every committed batch.

Usage: python bench/embed_bench_indexes.py [--repo NAME ...] [--ready-file /tmp/embeddings_ready.txt]
"""

from __future__ import annotations

import argparse
import json
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
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--repos-root", type=Path, default=Path.home() / ".cache" / "bench-repos")
    parser.add_argument("--index-root", type=Path, default=Path.home() / ".cache" / "codebase-index-bench")
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
    parser.add_argument("--ready-file", type=Path, help="append a line here when every repo is done")
    args = parser.parse_args()
    embedder.EMBED_HEADER = args.header

    specs = json.loads((args.bench / "repos.json").read_text())
    done: list[str] = []
    total_chunks = 0
    started = time.perf_counter()
    for spec in specs:
        name = spec["name"]
        if args.repo and name not in args.repo:
            continue
        checkout = args.repos_root / name
        root = checkout / spec["benchmark_root"] if spec.get("benchmark_root") else checkout
        if not root.is_dir():
            print(f"skip {name}: no checkout at {root}", file=sys.stderr)
            continue
        config = load_config(root)
        if args.backend:
            config = msgspec.structs.replace(config, embedded_backend=args.backend)
        engine = Engine(root, config, index_path=args.index_root / name)
        engine.index()
        t0 = time.perf_counter()
        report = engine.embed()
        status = engine.status().embeddings
        engine.close()
        if report is None or status is None:
            print(f"{name}: no embedding provider", file=sys.stderr)
            return 1
        total_chunks += report.embedded
        rate = report.embedded / max(report.seconds, 1e-9)
        print(
            f"{name:<12} embedded {report.embedded:>6} (now {status.embedded}/{status.total}, "
            f"{report.failed} failed) in {time.perf_counter() - t0:7.1f}s ({rate:.1f}/s)",
            flush=True,
        )
        if status.embedded == status.total:
            done.append(name)
    elapsed = time.perf_counter() - started
    print(f"total: {total_chunks} chunks in {elapsed:.0f}s", flush=True)
    if args.ready_file:
        with args.ready_file.open("a") as out:
            out.write(
                f"embeddings ready (model embedded:all-MiniLM-L6-v2, "
                f"{'path/symbol header + chunk text' if args.header else 'chunk text as is'}) in "
                f"{args.index_root}: {', '.join(done)} ({len(done)} repos)\n"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
