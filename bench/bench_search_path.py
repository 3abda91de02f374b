"""Where a search's time goes: each stage of a keyword and a hybrid search, per query, in CPU time (the
searching thread's) and wall time, with the query vector cached, so that what a hybrid search costs beyond
its query embedding shows stage by stage; plus the query embedding alone. Issue 12's bars: keyword p50 no
worse than 1.4 ms, hybrid within 1 ms of its query embedding. Each query is parsed afresh (the parse cache
is cleared), as a new query would be; a query's stage times are summed over its calls.

Stages are timed by wrapping the engine's own functions (service/retrieval's retrievers, fusion, the rank
stage's parts, formatting), so the code measured is the code that ships. `post-embedding` is the part of
a hybrid search that needs the query vector: with a fresh query the searching thread computes the
embedding while the keyword, graph and exact-text retrievers run beside it (`retrieval.beside`), so this
part is what the search adds to the embedding. Fresh queries, thread
hand-overs included, come from `bench_quality.py --mode hybrid` ("beyond its embedding").

The machine is shared, so `--against OTHER/python` runs another checkout's code the same way, repository by
repository in alternating order (A/B interleaved), each in its own process. `--dump DIR` writes every
query's top 10 (path, lines, score) per mode and version: two versions' dumps must be identical when a
change is meant to be speed only. Query vectors are computed once and kept in `--vectors` (an .npz file),
so both versions fuse the very same vectors.

Usage (indexes built and embedded as bench_quality.py / validate.py leave them):
    python bench/bench_search_path.py [--all | --repo tokio ...] [--against /work/wt/base/python] [--dump DIR]
    python bench/bench_search_path.py --sets ~/.cache/codebase-index-train/manifest.json --split validation
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_paths import SHARED_BENCH

HERE = Path(__file__).resolve().parent
# ../shared/bench beside the main checkout (also found from a worktree under /work/wt/NAME).
DEFAULT_BENCH = SHARED_BENCH
# A few repositories of several languages and sizes: `make bench` runs these (about a minute).
QUICK_REPOS = ("requests", "tokio", "zod", "gson", "gin", "monolog")
MODES = ("keyword", "hybrid")
TOP = 10
EMBED_SAMPLE = 40  # queries per repository whose embedding is timed alone
CACHE = Path.home() / ".cache" / "codebase-index-search-path"


# -- the worker: one version of the code, one repository ---------------------------------------------------


class _Clock:
    """Per-query stage times: CPU (this thread) and wall, summed over a stage's calls; nested stages are
    timed on their own and also inside their parent."""

    def __init__(self) -> None:
        self.cpu: dict[str, float] = {}
        self.wall: dict[str, float] = {}
        self.ready: tuple[float, float] | None = None  # (CPU, wall) once the vector and retrievers are in

    def add(self, stage: str, cpu: float, wall: float) -> None:
        self.cpu[stage] = self.cpu.get(stage, 0.0) + cpu
        self.wall[stage] = self.wall.get(stage, 0.0) + wall


_CLOCK: list[_Clock] = []


def _timed(stage: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        c0, w0 = time.thread_time(), time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            if _CLOCK:
                _CLOCK[-1].add(stage, time.thread_time() - c0, time.perf_counter() - w0)

    return wrapper


class _MarkedFuture(Future):  # type: ignore[type-arg]
    """An older checkout's query-vector future, noting when the search has the vector: what follows is
    what the search adds to its embedding. (Now the searching thread embeds the query and runs the
    retrievers itself when the vector is cached, as here: `ready` is marked when they end.)"""

    def result(self, timeout: float | None = None) -> Any:
        found = super().result(timeout)
        if _CLOCK and _CLOCK[-1].ready is None:
            _CLOCK[-1].ready = (time.thread_time(), time.perf_counter())
        return found


def _instrument() -> None:
    """Wrap the search path's stages (module attributes, looked up at call time by their callers)."""
    from codebase_index import vectors
    from codebase_index.ranking import pipeline
    from codebase_index.service import retrieval

    for name, stage in (
        ("gather", "retrievers"),
        ("parse_query", "parse"),
        ("usable_vectors", "vector-snapshot"),
        ("keyword_candidates", "keyword"),
        ("relation_candidates", "graph"),
        ("literal_retrieve", "literal"),
        ("head_texts", "head-texts"),
        ("exact_docs", "exact-docs"),
        ("verbatim_spans", "spans"),
        ("head_quotes_query", "head-quotes"),
        ("fuse", "rank-stage"),
        ("respond", "format"),
    ):
        if hasattr(retrieval, name):  # an older checkout (--against) may lack a stage
            setattr(retrieval, name, _timed(stage, getattr(retrieval, name)))
    for name, stage in (("fuse", "rank-stage/fusion"), ("rank", "rank-stage/scorer")):
        setattr(pipeline, name, _timed(stage, getattr(pipeline, name)))
    if hasattr(pipeline, "rank_learned"):
        pipeline.rank_learned = _timed("rank-stage/scorer", pipeline.rank_learned)
    pipeline.guarantees = _timed("rank-stage/guarantees", pipeline.guarantees)
    vectors.VectorSnapshot.semantic_hits = _timed("vectors", vectors.VectorSnapshot.semantic_hits)  # type: ignore[method-assign]
    if hasattr(vectors.VectorSnapshot, "nearest"):  # hybrid's vector search (candidates + file-vote list)
        vectors.VectorSnapshot.nearest = _timed("vectors", vectors.VectorSnapshot.nearest)  # type: ignore[method-assign]

    if hasattr(retrieval, "gather"):
        timed_gather = retrieval.gather

        def gather_marked(*args: Any, **kwargs: Any) -> Any:
            found = timed_gather(*args, **kwargs)
            if found.vecs is not None and _CLOCK and _CLOCK[-1].ready is None:  # the vector is cached: in
                _CLOCK[-1].ready = (time.thread_time(), time.perf_counter())
            return found

        retrieval.gather = gather_marked
    else:
        _mark_vector_wait(retrieval)  # an older checkout: the embedding ran on its own thread


def _mark_vector_wait(retrieval: Any) -> None:
    """Older checkouts (before `retrieval.beside`): the query vector's future, marked when it is in."""
    start = retrieval.start_query_vector

    def start_marked(engine: Any, text: str) -> Future:  # type: ignore[type-arg]
        inner = start(engine, text)
        out: Future = _MarkedFuture()  # type: ignore[type-arg]
        inner.add_done_callback(
            lambda f: out.set_exception(e) if (e := f.exception()) is not None else out.set_result(f.result())
        )
        return out

    retrieval.start_query_vector = start_marked


def _load_vectors(path: Path) -> dict[str, Any]:
    import numpy as np

    if not path.is_file():
        return {}
    with np.load(path, allow_pickle=False) as data:
        texts = [str(t) for t in data["texts"]]
        return dict(zip(texts, data["vectors"], strict=True))


def _save_vectors(path: Path, vectors: dict[str, Any]) -> None:
    import numpy as np

    texts = sorted(vectors)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp.npz")
    np.savez(tmp, texts=np.array(texts), vectors=np.stack([vectors[t] for t in texts]))
    os.replace(tmp, path)


def worker(spec: dict[str, Any], modes: list[str], vectors_path: Path, dump: Path | None, limit: int) -> dict:
    """Time every query of one repository in each mode; the result as JSON-ready lists."""
    import msgspec

    from codebase_index.config import load_config
    from codebase_index.ranking.query import parse_query
    from codebase_index.service import Engine

    _instrument()
    root, index, queries = Path(spec["root"]), Path(spec["index"]), spec["queries"][: limit or None]
    config = load_config(root)
    if spec.get("ranker"):
        config = msgspec.structs.replace(
            config, search=msgspec.structs.replace(config.search, ranker=spec["ranker"])
        )
    engine = Engine(root, config, index_path=index)
    out: dict[str, Any] = {"repo": spec["name"], "chunks": len(engine.snapshot().docs), "modes": {}}
    cached = _load_vectors(vectors_path)
    embed_cpu: list[float] = []
    embed_wall: list[float] = []
    provider = engine.embedding_provider() if "hybrid" in modes else None
    if provider is not None:
        provider.embed_query("warm up")
        fresh = False
        for n, query in enumerate(queries):
            if n >= EMBED_SAMPLE and query in cached:
                continue
            c0, w0 = time.thread_time(), time.perf_counter()
            vector = provider.embed_query(query)
            if n < EMBED_SAMPLE:
                embed_cpu.append(time.thread_time() - c0)  # the model's own threads are not counted
                embed_wall.append(time.perf_counter() - w0)
            if query not in cached:
                cached[query], fresh = vector, True
        if fresh:
            _save_vectors(vectors_path, cached)
        for query in queries:
            engine._query_vectors[(provider.model_id, query)] = cached[query]
    out["embedding"] = {"cpu": embed_cpu, "wall": embed_wall}
    for mode in modes:
        engine.search(queries[0], top_k=TOP, mode=mode)  # warm-up: caches built once per snapshot
        rows: list[dict[str, Any]] = []
        top: dict[str, list[list[Any]]] = {}
        for query in queries:
            parse_query.cache_clear()  # each query parsed as a new one, in every mode
            clock = _Clock()
            _CLOCK.append(clock)
            c0, w0 = time.thread_time(), time.perf_counter()
            response = engine.search(query, top_k=TOP, mode=mode)
            c1, w1 = time.thread_time(), time.perf_counter()
            _CLOCK.pop()
            clock.add("total", c1 - c0, w1 - w0)
            if clock.ready is not None:
                clock.add("post-embedding", c1 - clock.ready[0], w1 - clock.ready[1])
            rows.append({"strategy": response.strategy, "cpu": clock.cpu, "wall": clock.wall})
            top[query] = [[r.path, r.start_line, r.end_line, r.score] for r in response.results]
        out["modes"][mode] = rows
        if dump is not None:
            dump.mkdir(parents=True, exist_ok=True)
            (dump / f"{spec['name']}.{mode}.json").write_text(json.dumps(top, indent=0, sort_keys=True))
    engine.close()
    return out


# -- the driver ----------------------------------------------------------------------------------------------


def bench_specs(bench: Path, index_root: Path, repos_root: Path, names: list[str] | None) -> list[dict]:
    """The semble-26 repositories (`../shared/bench`): checkout root, index folder, queries."""
    out = []
    for spec in json.loads((bench / "repos.json").read_text()):
        name = spec["name"]
        if names and name not in names:
            continue
        root = repos_root / name / spec.get("benchmark_root", "")
        if not root.is_dir() or not (index_root / name).is_dir():
            print(f"skip {name}: no checkout at {root} or no index", file=sys.stderr)
            continue
        tasks = json.loads((bench / "annotations" / f"{name}.json").read_text())
        queries = list(dict.fromkeys(t["query"] for t in tasks if t.get("repo", name) == name))
        out.append({"name": name, "root": str(root), "index": str(index_root / name), "queries": queries})
    return out


def manifest_specs(
    manifest: Path, split: str, index_root: Path | None, names: list[str] | None
) -> list[dict]:
    """The repositories of one split of a make_training_set.py manifest (golden.json beside each corpus);
    `index_root` / <owner+name> replaces each index folder (a copy to search)."""
    out = []
    for repo in json.loads(manifest.read_text())["repos"]:
        if repo["split"] != split:
            continue
        corpus = manifest.parent / repo["corpus"]
        name = corpus.parent.name
        if names and name not in names:
            continue
        index = index_root / name if index_root else manifest.parent / repo["index"]
        golden = json.loads((corpus.parent / "golden.json").read_text())
        queries = list(dict.fromkeys(q["query"] for q in golden))
        out.append({"name": name, "root": str(corpus), "index": str(index), "queries": queries})
    return out


def run_worker(python_path: str | None, spec: dict, args: argparse.Namespace) -> dict:
    """One worker process (its own interpreter: `python_path` first on PYTHONPATH selects the code)."""
    env = dict(os.environ)
    if python_path:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [python_path, env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory() as tmp:
        spec_file, out_file = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        spec_file.write_text(json.dumps({**spec, "ranker": args.ranker}))
        command = [sys.executable, __file__, "--worker", str(spec_file), "--out", str(out_file)]
        command += [
            "--modes",
            ",".join(args.modes),
            "--vectors",
            str(args.vectors),
            "--limit",
            str(args.limit),
        ]
        if args.dump:
            label = "b" if args.against and python_path == args.against else "a"
            command += ["--dump", str(args.dump / label)]
        subprocess.run(command, env=env, check=True)
        return json.loads(out_file.read_text())


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))] * 1000 if ordered else 0.0


def _stages(rows: list[dict]) -> Iterator[str]:
    seen: dict[str, None] = {}
    for row in rows:
        for key in [*row["cpu"], *row["wall"]]:
            seen.setdefault(key, None)
    order = ["total", "post-embedding"]
    yield from [s for s in order if s in seen]
    yield from sorted(s for s in seen if s not in order)


def report(label: str, runs: list[dict], modes: list[str]) -> None:
    """p50 / p95 per stage (CPU and wall, ms) over all queries of all repositories; a stage a query did
    not run counts 0 for it."""
    print(f"\n== {label}: {len(runs)} repos, {sum(len(r['modes'][modes[0]]) for r in runs)} queries")
    embed = [r["embedding"] for r in runs if r["embedding"]["wall"]]
    if embed:
        cpu = [v for e in embed for v in e["cpu"]]
        wall = [v for e in embed for v in e["wall"]]
        print(
            f"query embedding alone: wall p50 {_pct(wall, 0.5):.2f} p95 {_pct(wall, 0.95):.2f} ms "
            f"(this thread's CPU p50 {_pct(cpu, 0.5):.2f} ms)"
        )
    for mode in modes:
        rows = [row for r in runs for row in r["modes"][mode]]
        strategies = sorted({row["strategy"] for row in rows})
        print(f"-- {mode} ({', '.join(strategies)})")
        print(f"   {'stage':<24}{'cpu p50':>9}{'cpu p95':>9}{'wall p50':>10}{'wall p95':>10}")
        for stage in _stages(rows):
            cpu = [row["cpu"].get(stage, 0.0) for row in rows]
            wall = [row["wall"].get(stage, 0.0) for row in rows]
            cells = [f"{_pct(cpu, 0.5):>9.3f}", f"{_pct(cpu, 0.95):>9.3f}"]
            cells += [f"{_pct(wall, 0.5):>10.3f}", f"{_pct(wall, 0.95):>10.3f}"]
            print(f"   {stage:<24}{''.join(cells)}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--bench", type=Path, default=DEFAULT_BENCH, help="folder with repos.json, annotations/"
    )
    parser.add_argument("--repos-root", type=Path, default=Path.home() / ".cache" / "bench-repos")
    parser.add_argument("--index-root", type=Path, default=None, help="index folders (default: the bench's)")
    parser.add_argument("--sets", type=Path, help="a make_training_set.py manifest instead of the benchmark")
    parser.add_argument("--split", default="validation")
    parser.add_argument("--repo", action="append", help="only these repositories (default: a quick six)")
    parser.add_argument("--all", action="store_true", help="every repository (default: a quick six)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--limit", type=int, default=0, help="at most this many queries per repository")
    parser.add_argument("--against", help="another checkout's python/ folder, run interleaved (A/B)")
    parser.add_argument("--rounds", type=int, default=1, help="repeat the A/B alternation")
    parser.add_argument(
        "--ranker", choices=["auto", "rules", "learned"], help="search.ranker (default: the config's)"
    )
    parser.add_argument("--dump", type=Path, help="write each query's top 10 per mode under DIR/a, DIR/b")
    parser.add_argument("--vectors", type=Path, default=None, help="query vector cache (.npz)")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.modes = args.modes.split(",") if isinstance(args.modes, str) else args.modes
    if args.worker:
        spec = json.loads(args.worker.read_text())
        result = worker(spec, args.modes, args.vectors, args.dump, args.limit)
        args.out.write_text(json.dumps(result))
        return 0
    if args.sets:
        names = args.repo
        specs = manifest_specs(args.sets, args.split, args.index_root, names)
        default_vectors = CACHE / f"query-vectors-{args.sets.parent.name}-{args.split}.npz"
    else:
        names = None if args.all else (args.repo or list(QUICK_REPOS))
        index_root = args.index_root or Path.home() / ".cache" / "codebase-index-bench"
        specs = bench_specs(args.bench, index_root, args.repos_root, names)
        default_vectors = CACHE / "query-vectors-semble.npz"
    if not specs:
        print("no indexed repositories found: nothing timed (see --index-root, --sets)", file=sys.stderr)
        return 0
    args.vectors = args.vectors or default_vectors
    versions: list[str | None] = [None] if not args.against else [None, args.against]
    runs: dict[str | None, list[dict]] = {v: [] for v in versions}
    turn = 0
    for _ in range(args.rounds):
        for spec in specs:
            order = versions if turn % 2 == 0 else versions[::-1]
            turn += 1
            for version in order:
                runs[version].append(run_worker(version, spec, args))
            print(f"{spec['name']}: {len(spec['queries'])} queries", file=sys.stderr)
    load = os.getloadavg()
    print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    for version in versions:
        report("this checkout" if version is None else version, runs[version], args.modes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
