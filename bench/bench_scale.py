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

    python bench/bench_scale.py --chunks 1000000 --engine edge      # Qdrant's engine in-process (one shard)

The embedded store (qdrant-client's local mode, what the tests use) is a pure-Python/numpy reference
implementation: ~40 points/s and seconds per query already at a few thousand points, so it is not a
scale target. `--engine edge` runs the same points and the same hybrid request (sparse + dense prefetch
with the repo/branch filter, RRF) on Qdrant Edge (`pip install qdrant-edge-py`: the server's storage and
search engine as an in-process single shard, the closest stand-in for one server shard here); it does
not go through `QdrantBackend`, whose requests are the qdrant-client equivalents. A server or cluster:
`--to qdrant://HOST:PORT/collection`.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
        sparse_vectors.append(sparse.sparse_vector(hashes[ids], tfs, float(lengths[i])))
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


class EdgeTarget:
    """The same points and hybrid request on a Qdrant Edge shard (see the module docstring)."""

    location = "qdrant-edge (in-process shard)"

    def __init__(self, path: str) -> None:
        import qdrant_edge as q

        self.q = q
        config = q.EdgeConfig(
            vectors={"dense": q.EdgeVectorParams(size=DIMS, distance=q.Distance.Cosine)},
            sparse_vectors={"bm25": q.EdgeSparseVectorParams(modifier=q.Modifier.Idf)},
        )
        self.shard = q.EdgeShard.create(path, config)
        for key in ("repo", "branches"):
            self.shard.update(q.UpdateOperation.create_field_index(key, q.PayloadSchemaType.Keyword))

    def upsert(self, chunks, vectors, sparse_vectors) -> None:
        q = self.q
        points = []
        for c, dense, (indices, values) in zip(chunks, vectors, sparse_vectors, strict=True):
            vector = {"bm25": q.SparseVector(indices=indices, values=values)}
            if dense is not None:
                vector["dense"] = dense.tolist()
            payload = {
                "repo": c.repo,
                "branches": list(c.branches),
                "path": c.path,
                "symbol": c.symbol,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "text": c.text,
            }
            points.append(q.Point(id=c.point_id, vector=vector, payload=payload))
        self.shard.update(q.UpdateOperation.upsert_points(points))

    def branch_map(self, repo: str) -> dict[str, list[str]]:
        q = self.q
        flt = q.Filter(must=[q.FieldCondition(key="repo", match=q.MatchValue(value=repo))])
        out: dict[str, list[str]] = {}
        offset = None
        while True:
            records, offset = self.shard.scroll(
                q.ScrollRequest(
                    limit=2048, offset=offset, filter=flt, with_payload=["branches"], with_vector=False
                )
            )
            for r in records:
                out[str(r.id)] = list(r.payload.get("branches", []))
            if offset is None:
                return out

    def candidates(self, query, repos, _filters, pool, embed) -> list:
        q = self.q
        should = [
            q.Filter(
                must=[
                    q.FieldCondition(key="repo", match=q.MatchValue(value=r.name)),
                    q.FieldCondition(key="branches", match=q.MatchValue(value=r.branch)),
                ]
            )
            for r in repos
        ]
        flt = q.Filter(should=should)
        weights: dict[int, float] = {}
        for term, weight in zip(query.terms, query.weights, strict=True):
            weights[sparse.term_index(term)] = weights.get(sparse.term_index(term), 0.0) + weight
        dense = embed("bench")
        terms = q.SparseVector(indices=list(weights), values=list(weights.values()))
        prefetches = [
            q.Prefetch(limit=pool, query=q.Query.Nearest(terms, using="bm25"), filter=flt),
            q.Prefetch(limit=pool, query=q.Query.Nearest(dense.tolist(), using="dense"), filter=flt),
        ]
        request = q.QueryRequest(
            limit=2 * pool, prefetches=prefetches, query=q.Fusion.Rrf(k=query.rrf_k), with_payload=True
        )
        return self.shard.query(request)

    # What `backends.publish.publish` calls besides upsert/branch_map (the manifest is not simulated).
    collection = "bench"

    def ensure_collection(self, dimensions: int | None) -> None:
        if dimensions not in (None, DIMS):
            raise SystemExit(f"the edge target is built for {DIMS} dimensions, the index has {dimensions}")

    def set_branches(self, updates) -> None:
        q = self.q
        for pid, branches in updates:
            self.shard.update(q.UpdateOperation.set_payload([pid], {"branches": branches}))

    def delete(self, ids) -> None:
        if ids:
            self.shard.update(self.q.UpdateOperation.delete_points(list(ids)))

    def record_repo(self, *_args: object) -> None:
        pass

    def optimize(self) -> None:
        self.shard.optimize()

    def close(self) -> None:
        self.shard.close()


def publish_real(backend: Any, name: str) -> None:
    """publish() of one real benchmark index (copied, so the shared cache is never written)."""
    import shutil

    from codebase_index.backends.publish import publish
    from codebase_index.service import Engine

    source = Path.home() / ".cache" / "codebase-index-bench" / name
    root = Path.home() / ".cache" / "bench-repos" / name
    copy = Path(tempfile.mkdtemp(prefix=f"bench-scale-{name}-"))
    shutil.copy(source / "codebase.db", copy / "codebase.db")
    engine = Engine(root, index_path=copy, workers=1)
    try:
        t0 = time.perf_counter()
        branch = next(iter(engine.store.branches()), None)  # the benchmark indexes' one catalog
        report = publish(engine, backend, name, embed=False, branch=branch)
        seconds = time.perf_counter() - t0
        again = publish(engine, backend, name, embed=False, branch=branch)
    finally:
        engine.close()
    rate = report.chunks / seconds
    print(
        f"real publish {name}: {report.chunks} chunks ({report.without_vector} without a vector) in "
        f"{seconds:.1f} s = {rate:.0f} chunks/s end to end; re-publish with no change {again.seconds:.2f} s "
        f"({again.sent} sent)"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--repos", type=int, default=20)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument(
        "--to", help="qdrant://HOST:PORT/collection (default: an embedded store in a temp folder)"
    )
    ap.add_argument("--engine", choices=["client", "edge"], default="client")
    ap.add_argument(
        "--index",
        action="append",
        default=[],
        metavar="NAME",
        help="first publish this benchmark index (~/.cache/codebase-index-bench/NAME, copied) with the real "
        "publish(): the local side on real chunks and vectors",
    )
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    hashes = np.array([sparse.term_index(f"term{i}") for i in range(VOCAB)], dtype=np.int64)
    tmp = tempfile.mkdtemp(prefix="bench-scale-")
    backend: Any
    if args.engine == "edge":
        backend = EdgeTarget(tmp)
    else:
        backend = QdrantBackend.connect(args.to or f"qdrant+local://{tmp}#bench")
        backend.ensure_collection(DIMS)
    for name in args.index:
        publish_real(backend, name)
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
    if hasattr(backend, "optimize"):
        t0 = time.perf_counter()
        backend.optimize()  # build the HNSW and sparse indexes a server builds in the background
        print(f"index build (optimize): {time.perf_counter() - t0:.1f} s")
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
