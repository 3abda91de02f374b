"""Scale simulation of the shared index: a synthetic corpus of N chunks (default 1M) published to Qdrant
through the real publishing code, then queried with the hybrid prefetch + fusion request a search sends.
Results and their reading: bench/scale.md.

The local side runs what `backends.publish.publish` runs per chunk: a chunk row as the local store returns
it (term ids + term frequencies, as indexed) becomes a `ChunkPayload` and a sparse BM25 vector
(`publish._sparse_of`: text terms + name/path terms, `sparse.sparse_vector`), then the target's points
(`qdrant.point_payload`, the payload a server gets). Timed apart: making the synthetic rows (the bench's
own cost, not the local side's), building payload + sparse vector, converting to the engine's points, and
the engine's upsert.

Reports: those rates, the index build (optimize), the incremental diff (scrolling one repo's ids and
branches), a re-publish of a 0.1% change (new points + deletes of the old ones), hybrid query latency
p50/p95 for 1, 5 and all repositories in the filter (before the index build: exact scans; after: HNSW +
sparse index), RSS (current and peak) at each stage and the store's size on disk.

The corpus: per chunk 20-200 tokens drawn Zipf(1.3) from a 50k vocabulary of letter words (one token each
under our tokenizer), text of ~6 characters per token, a random unit vector of 384 dimensions (MiniLM's
width), 8 chunks per file, files spread over `--repos` repositories. Queries: 3 words of log-uniform rank
(common and rare terms), parsed as a search parses them (`federated.parse_query`: inflections and all).

    python bench/bench_scale.py --chunks 1000000 --engine edge      # Qdrant's engine in-process (one shard)
    python bench/bench_scale.py --chunks 1000000 --to qdrant://127.0.0.1:6333/bench   # a server

`--engine edge` is Qdrant Edge (`make bench-scale` installs `qdrant-edge-py`): the server's storage and
search engine as an in-process single shard, the closest stand-in for one server shard when no server runs;
it gets the same points (ids, payload, dense + sparse-with-idf vectors, keyword indexes on the filter keys)
and the same hybrid request as `QdrantBackend`, in Edge's own API. `--engine client` (the default) goes
through `QdrantBackend` itself: a server with `--to`, else qdrant-client's embedded store, a pure-Python
reference (~40 points/s, seconds per query at a few thousand points): no scale target.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

from codebase_index.backends import sparse
from codebase_index.backends.base import RepoInfo, point_id
from codebase_index.backends.federated import parse_query
from codebase_index.backends.publish import _sparse_of, chunk_payload
from codebase_index.backends.qdrant import INDEXED_KEYS, QdrantBackend, point_payload
from codebase_index.config import Config
from codebase_index.search import Filters

DIMS = 384
VOCAB = 50_000
BATCH = 512
CHUNKS_PER_FILE = 8
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def word(i: int) -> str:
    """A letter word per vocabulary rank (our tokenizer keeps it as one token): 0 -> 'qa', 27 -> 'qbb'."""
    out = "q"
    while True:
        out += LETTERS[i % 26]
        i //= 26
        if i == 0:
            return out


def memory() -> str:
    """Current and peak resident memory of this process (engine included: Edge runs in-process)."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return f"rss {fields.get('VmRSS', 0):.0f} MiB (peak {fields.get('VmHWM', 0):.0f})"


def disk(path: str) -> str:
    out = subprocess.run(["du", "-sm", path], capture_output=True, text=True).stdout.split()
    return f"{out[0]} MiB on disk" if out else "size on disk unknown"


def load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


class Corpus:
    """Synthetic chunk rows shaped as `publish` reads them from the local store (see the docstring)."""

    def __init__(self, rng: np.random.Generator, repos: int) -> None:
        self.rng = rng
        self.repos = repos
        self.hashes = np.array([sparse.term_index(word(i)) for i in range(VOCAB)], dtype=np.int64)
        # Text payload: slices of one long string of vocabulary words (realistic bytes, no per-chunk cost).
        ranks = np.minimum(rng.zipf(1.3, size=400_000), VOCAB) - 1
        self.text = " ".join(word(int(r)) for r in ranks)

    def rows(self, start: int, n: int, tag: str = "") -> tuple[list[tuple], list[str], np.ndarray]:
        rng = self.rng
        lengths = rng.integers(20, 200, size=n)
        terms = np.minimum(rng.zipf(1.3, size=int(lengths.sum())), VOCAB) - 1
        owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
        keys, counts = np.unique(owner * VOCAB + terms, return_counts=True)
        term_ids = (keys % VOCAB).astype(np.int32)
        tfs = counts.astype(np.int32)
        bounds = np.searchsorted(keys // VOCAB, np.arange(n + 1))
        offsets = rng.integers(0, len(self.text) - 1300, size=n)
        vectors = rng.standard_normal((n, DIMS), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        rows, texts = [], []
        for i in range(n):
            k = start + i
            j = k // self.repos  # the chunk's ordinal in its repository
            f = j // CHUNKS_PER_FILE
            line = 1 + (j % CHUNKS_PER_FILE) * 25
            b0, b1 = bounds[i], bounds[i + 1]
            rows.append(
                (
                    k,
                    f"src/pkg{f % 50}/mod{f}.py",
                    "python",
                    line,
                    line + 20,
                    "function",
                    f"handle_{word(k % VOCAB)}_{k}",
                    int(lengths[i]),
                    term_ids[b0:b1].tobytes(),
                    tfs[b0:b1].tobytes(),
                    f"{k:016x}{tag}",
                )
            )
            o = int(offsets[i])
            texts.append(self.text[o : o + 6 * int(lengths[i])])
        return rows, texts, vectors

    def repo_of(self, k: int) -> str:
        return f"repo{k % self.repos}"


def local_side(corpus: Corpus, rows: list[tuple], texts: list[str]) -> tuple[list, list]:
    """What `publish` builds per chunk: the payload (`chunk_payload`) and the sparse vector (`_sparse_of`)."""
    chunks = [
        chunk_payload(r, corpus.repo_of(r[0]), text, ("main",)) for r, text in zip(rows, texts, strict=True)
    ]
    return chunks, [_sparse_of(r, corpus.hashes) for r in rows]


class EdgeTarget:
    """The same points and hybrid request on a Qdrant Edge shard (see the module docstring)."""

    location = "qdrant-edge (in-process shard)"
    collection = "bench"

    def __init__(self, path: str) -> None:
        import qdrant_edge as q

        self.q = q
        config = q.EdgeConfig(
            vectors={"dense": q.EdgeVectorParams(size=DIMS, distance=q.Distance.Cosine)},
            sparse_vectors={"bm25": q.EdgeSparseVectorParams(modifier=q.Modifier.Idf)},
        )
        self.shard = q.EdgeShard.create(path, config)
        for key in INDEXED_KEYS:
            self.shard.update(q.UpdateOperation.create_field_index(key, q.PayloadSchemaType.Keyword))

    def points(self, chunks, vectors, sparse_vectors) -> list:
        """The engine's point objects (the client-side work a server publish does too)."""
        q = self.q
        out = []
        for c, dense, (indices, values) in zip(chunks, vectors, sparse_vectors, strict=True):
            vector: dict[str, Any] = {"bm25": q.SparseVector(indices=indices, values=values)}
            if dense is not None:
                vector["dense"] = dense.tolist()
            out.append(q.Point(id=c.point_id, vector=vector, payload=point_payload(c)))
        return out

    def send(self, points: list) -> None:
        self.shard.update(self.q.UpdateOperation.upsert_points(points))

    def upsert(self, chunks, vectors, sparse_vectors) -> None:
        self.send(self.points(chunks, vectors, sparse_vectors))

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

    def delete(self, ids) -> None:
        if ids:
            self.shard.update(self.q.UpdateOperation.delete_points(list(ids)))

    def optimize(self) -> None:
        self.shard.optimize()

    def segments(self) -> str:
        info = self.shard.info()
        return (
            f"{info.segments_count} segments, {info.points_count} points, "
            f"{info.indexed_vectors_count} indexed vectors"
        )

    def close(self) -> None:
        self.shard.close()


class _Unsent:
    """Stands in for qdrant-client so that `QdrantBackend.upsert`'s own work (pydantic `PointStruct`s of
    the same payload and vectors) is timed alone; nothing is sent or kept. Only for the figure below."""

    def __init__(self) -> None:
        self.init_options: dict[str, Any] = {}
        self.points = 0

    def upsert(self, _collection: str, points: list, wait: bool = True) -> None:
        self.points += len(points)


def client_side(n: int, repos: int) -> None:
    """Points per second `publish` builds for a server (payload + sparse vector + PointStruct)."""
    from qdrant_client import models  # noqa: F401  (its import and schema build are not the per-point cost)

    corpus = Corpus(np.random.default_rng(8), repos)
    client = _Unsent()
    backend = QdrantBackend(client, "not sent", "bench")
    build = cpu = 0.0
    for start in range(0, n, BATCH):
        rows, texts, vectors = corpus.rows(start, min(BATCH, n - start))
        t0, c0 = time.perf_counter(), time.process_time()
        chunks, sparse_vectors = local_side(corpus, rows, texts)
        backend.upsert(chunks, list(vectors), sparse_vectors)
        build += time.perf_counter() - t0
        cpu += time.process_time() - c0
    print(
        f"local side for a server (payload + sparse vector + QdrantBackend.upsert's PointStructs, not sent): "
        f"{client.points / build:.0f} points/s ({client.points / cpu:.0f} per CPU-second) over "
        f"{client.points}; {load()}",
        flush=True,
    )


def query_latency(backend: Any, rng: np.random.Generator, n: int, repos: list[RepoInfo], label: str) -> None:
    config = Config()
    for count in sorted({1, min(5, len(repos)), len(repos)}):
        latencies, hits = [], 0
        for q in range(n):
            ranks = np.exp(rng.uniform(0, np.log(VOCAB), size=3)).astype(int) - 1
            query = parse_query(" ".join(word(int(r)) for r in ranks), config)
            v = rng.standard_normal(DIMS).astype(np.float32)
            vector = v / np.linalg.norm(v)
            chosen = [repos[(q + i) % len(repos)] for i in range(count)]
            t0 = time.perf_counter()
            answer = backend.candidates(query, chosen, Filters(), 50, lambda _m, v=vector: v)
            latencies.append(time.perf_counter() - t0)
            hits += len(answer.chunks if hasattr(answer, "chunks") else answer)
        lat = np.array(latencies) * 1000
        print(
            f"hybrid query {label}, {count} repo(s) in the filter (sparse 50 + dense 50, RRF): "
            f"p50 {np.percentile(lat, 50):.1f} ms, p95 {np.percentile(lat, 95):.1f} ms, "
            f"max {lat.max():.1f} ms over {n} queries ({hits / n:.0f} candidates each); {load()}",
            flush=True,
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=1_000_000)
    ap.add_argument("--repos", type=int, default=20)
    ap.add_argument("--queries", type=int, default=50, help="per filter size, after the index build")
    ap.add_argument("--queries-before", type=int, default=20, help="per filter size, before the index build")
    ap.add_argument(
        "--to", help="qdrant://HOST:PORT/collection (default: an embedded store in a temp folder)"
    )
    ap.add_argument("--engine", choices=["client", "edge"], default="client")
    ap.add_argument("--dir", help="where the store goes (default: a temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the store (default: deleted at the end)")
    ap.add_argument("--no-optimize", action="store_true", help="stop after the queries on unindexed segments")
    ap.add_argument("--progress", type=int, default=50_000, help="print a progress line every N points")
    ap.add_argument(
        "--client-sample",
        type=int,
        default=20_000,
        help="first time the points QdrantBackend.upsert builds for a server for this many chunks (0: skip)",
    )
    args = ap.parse_args()
    if args.client_sample:
        client_side(args.client_sample, args.repos)
    rng = np.random.default_rng(7)
    tmp = tempfile.mkdtemp(prefix="bench-scale-", dir=args.dir)
    backend: Any
    if args.engine == "edge":
        backend = EdgeTarget(tmp)
    else:
        backend = QdrantBackend.connect(args.to or f"qdrant+local://{tmp}#bench")
        backend.ensure_collection(DIMS)
    corpus = Corpus(rng, args.repos)
    print(
        f"chunks: {args.chunks} in {args.repos} repos, target: {backend.location} ({tmp}); "
        f"{load()}, {memory()}"
    )
    synth = build = convert = send = 0.0
    cpu = [0.0, 0.0, 0.0, 0.0]  # CPU seconds of the same four stages (the machine may be shared)
    window_t, window_n = time.perf_counter(), 0
    for start in range(0, args.chunks, BATCH):
        n = min(BATCH, args.chunks - start)
        t0, c0 = time.perf_counter(), time.process_time()
        rows, texts, vectors = corpus.rows(start, n)
        t1, c1 = time.perf_counter(), time.process_time()
        chunks, sparse_vectors = local_side(corpus, rows, texts)
        t2, c2 = time.perf_counter(), time.process_time()
        if hasattr(backend, "points"):
            points = backend.points(chunks, vectors, sparse_vectors)
            t3, c3 = time.perf_counter(), time.process_time()
            backend.send(points)
        else:  # QdrantBackend: point building and sending in one call
            t3, c3 = t2, c2
            backend.upsert(chunks, list(vectors), sparse_vectors)
        t4, c4 = time.perf_counter(), time.process_time()
        for k, spent in enumerate((c1 - c0, c2 - c1, c3 - c2, c4 - c3)):
            cpu[k] += spent
        synth += t1 - t0
        build += t2 - t1
        convert += t3 - t2
        send += t4 - t3
        done = start + n
        if done // args.progress != start // args.progress:
            now = time.perf_counter()
            print(
                f"  {done} points: last {done - window_n} at {(done - window_n) / (now - window_t):.0f}/s "
                f"end to end; upsert so far {done / send:.0f}/s; {memory()}; {load()}",
                flush=True,
            )
            window_t, window_n = now, done
    n = args.chunks
    print(
        f"synthetic rows (the bench's own cost): {n / synth:.0f} chunks/s, {synth:.1f} s ({cpu[0]:.1f} CPU-s)"
    )
    print(
        f"local side, payload struct + sparse BM25 vector (publish's code): {n / build:.0f} chunks/s, "
        f"{build:.1f} s ({n / cpu[1]:.0f} per CPU-second)"
    )
    if convert:
        print(
            f"local side, engine point objects (payload dict, vectors to lists): {n / convert:.0f} points/s, "
            f"{convert:.1f} s ({n / cpu[2]:.0f} per CPU-second)"
        )
    print(f"engine upsert: {n / send:.0f} points/s, {send:.1f} s ({n / cpu[3]:.0f} per CPU-second)")
    print(f"after publishing: {memory()}, {disk(tmp)}; {load()}", flush=True)
    if hasattr(backend, "segments"):
        print(f"  {backend.segments()}")
    repos = [RepoInfo(f"repo{r}", "main", model="bench") for r in range(args.repos)]
    if args.queries_before:
        query_latency(backend, rng, args.queries_before, repos, "before the index build")
    if hasattr(backend, "optimize") and not args.no_optimize:
        t0, c0 = time.perf_counter(), time.process_time()
        backend.optimize()  # build the HNSW and sparse indexes a server builds in the background
        print(
            f"index build (optimize): {time.perf_counter() - t0:.1f} s, {time.process_time() - c0:.0f} CPU-s "
            f"(all threads); {memory()}, {disk(tmp)}; {load()}",
            flush=True,
        )
        if hasattr(backend, "segments"):
            print(f"  {backend.segments()}")
        query_latency(backend, rng, args.queries, repos, "after the index build")
    t0 = time.perf_counter()
    ids = backend.branch_map("repo0")
    diff = time.perf_counter() - t0
    print(f"incremental diff of one repo ({len(ids)} points, ids + branches scroll): {diff:.2f} s")
    change = max(1, n // 1000)
    t0 = time.perf_counter()
    rows, texts, vectors = corpus.rows(0, change * args.repos, tag="v2")
    keep = [i for i, r in enumerate(rows) if corpus.repo_of(r[0]) == "repo0"]
    chunks, sparse_vectors = local_side(corpus, [rows[i] for i in keep], [texts[i] for i in keep])
    stale = [point_id("repo0", c.path, c.start_line, c.content_hash.removesuffix("v2")) for c in chunks]
    t1 = time.perf_counter()
    backend.upsert(chunks, list(vectors[keep]), sparse_vectors)
    backend.delete(stale)
    t2 = time.perf_counter()
    print(
        f"re-publish of a 0.1% change ({len(chunks)} new points + {len(stale)} deletes in repo0): "
        f"{t2 - t1:.2f} s (+ the diff above; building them {t1 - t0:.2f} s)"
    )
    print(f"peak: {memory()}, {disk(tmp)}; {load()}")
    backend.close()
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)  # a 1M store is ~9 GB with its WAL
    return 0


if __name__ == "__main__":
    sys.exit(main())
