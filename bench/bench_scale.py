"""Scale simulation of the shared index: a synthetic corpus of N chunks (default 1M) published to Qdrant
through the real backend code (`backends.qdrant.QdrantBackend.upsert`, `backends.sparse`), then queried
with the hybrid prefetch + fusion request a search sends.

Reports: the local side's cost of building points (payload + sparse BM25 vector) per second, publish
throughput (points/s into the target), the incremental diff (scrolling the collection's ids of one repo),
a re-publish of a 0.1% change, hybrid query latency (p50/p95), and peak RSS of this process.

The corpus: Zipf-distributed terms over a 50k vocabulary (~90 tokens per chunk, as real chunks), random
unit vectors of 384 dimensions (MiniLM's width), paths in 1000-file repositories.

    python bench/bench_scale.py --chunks 1000000                       # embedded store in a temp folder
    python bench/bench_scale.py --chunks 1000000 --to qdrant://127.0.0.1:6333/bench   # a server

The embedded store (qdrant-client's local mode) is a pure-Python/numpy reference implementation: it keeps
every vector in this process and scans them per query, so its figures are the floor, not what a server
does; run against a server for production numbers.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from codebase_index.backends import sparse
from codebase_index.backends.base import ChunkPayload, RepoInfo
from codebase_index.backends.federated import parse_query
from codebase_index.backends.qdrant import QdrantBackend
from codebase_index.config import Config
from codebase_index.search import Filters

DIMS = 384
VOCAB = 50_000
BATCH = 512


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def make_batch(rng: np.random.Generator, start: int, n: int, repos: int, hashes: np.ndarray, tag: str = ""):
    lengths = rng.integers(20, 200, size=n)
    chunks, vectors, sparse_vectors = [], [], []
    for i in range(n):
        k = start + i
        terms = np.minimum(rng.zipf(1.3, size=int(lengths[i])), VOCAB) - 1
        ids, tfs = np.unique(terms, return_counts=True)
        sparse_vectors.append(sparse.sparse_vector(ids, tfs, float(lengths[i]), hashes))
        v = rng.standard_normal(DIMS).astype(np.float32)
        vectors.append(v / np.linalg.norm(v))
        repo = f"repo{k % repos}"
        path = f"src/mod{(k // repos) % 1000}/file{(k // repos) % 97}.py"
        chunks.append(
            ChunkPayload(
                repo=repo,
                path=path,
                start_line=1 + (k // (repos * 1000)) * 20,
                end_line=20 + (k // (repos * 1000)) * 20,
                kind="function",
                symbol=f"fn_{k}{tag}",
                language="python",
                content_hash=f"{k:016x}{tag}",
                text=f"def fn_{k}():\n    pass\n",
                branches=("main",),
            )
        )
    return chunks, vectors, sparse_vectors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--repos", type=int, default=20)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument(
        "--to", help="qdrant://HOST:PORT/collection (default: an embedded store in a temp folder)"
    )
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    hashes = np.array([sparse.term_index(f"term{i}") for i in range(VOCAB)], dtype=np.int64)
    tmp = tempfile.mkdtemp(prefix="bench-scale-")
    backend = QdrantBackend.connect(args.to or f"qdrant+local://{tmp}#bench")
    backend.ensure_collection(DIMS)
    base_rss = rss_mib()
    build = send = 0.0
    for start in range(0, args.chunks, BATCH):
        n = min(BATCH, args.chunks - start)
        t0 = time.perf_counter()
        batch = make_batch(rng, start, n, args.repos, hashes)
        t1 = time.perf_counter()
        backend.upsert(*batch)
        t2 = time.perf_counter()
        build += t1 - t0
        send += t2 - t1
        if start and start % (BATCH * 200) == 0:
            print(f"  {start} points, {start / send:.0f}/s, rss {rss_mib():.0f} MiB", file=sys.stderr)
    print(f"chunks: {args.chunks} in {args.repos} repos, target: {backend.location}")
    print(f"build points (payload + sparse vector, local side): {args.chunks / build:.0f} chunks/s")
    print(f"publish (upsert): {args.chunks / send:.0f} points/s, {send:.1f} s")
    t0 = time.perf_counter()
    ids = backend.branch_map("repo0")
    diff = time.perf_counter() - t0
    print(f"incremental diff of one repo ({len(ids)} points, ids + branches scroll): {diff:.2f} s")
    change = max(1, args.chunks // 1000)
    t0 = time.perf_counter()
    backend.upsert(*make_batch(rng, 0, change, args.repos, hashes, tag="v2"))
    print(f"re-publish of a 0.1% change ({change} points): {time.perf_counter() - t0:.2f} s + the diff")
    config = Config()
    repos = [RepoInfo(f"repo{r}", "main", model="bench") for r in range(args.repos)]
    latencies = []
    for q in range(args.queries):
        words = " ".join(f"term{int(w)}" for w in rng.zipf(1.5, size=3) % VOCAB)
        query = parse_query(words, config)
        v = rng.standard_normal(DIMS).astype(np.float32)
        vector = v / np.linalg.norm(v)
        t0 = time.perf_counter()
        backend.candidates(query, repos[: 1 + q % args.repos], Filters(), 50, lambda _m, v=vector: v)
        latencies.append(time.perf_counter() - t0)
    lat = np.array(latencies) * 1000
    print(
        f"hybrid query (prefetch sparse 50 + dense 50, RRF): p50 {np.percentile(lat, 50):.1f} ms, "
        f"p95 {np.percentile(lat, 95):.1f} ms over {args.queries} queries"
    )
    print(f"peak RSS: {rss_mib():.0f} MiB (before publishing {base_rss:.0f} MiB)")
    backend.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
