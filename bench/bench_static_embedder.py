"""The static code embedding model vs int8 MiniLM, in one run, interleaved (the machine is shared: read the
ratios, each measured round by round).

1. Throughput on the same real chunks: distinct chunk texts of five semble-26 repositories (default
   fastapi, zod, gin, tokio, gson: five languages), read from each repository's index (the SQLite store
   under --index-root) or, without one, cut from the checkout by the indexer's chunker (without checkouts:
   chunks of the Python stdlib, so `make bench` runs anywhere). The text embedded is
   `embedder.embedding_text(path, symbol, kind, text, header=...)`, exactly what the index embeds. Documents
   per CPU-second (time.process_time, the whole process) and per wall second, both models alternated every
   round; one thread where the API allows (MiniLM's ONNX session and worker pool, the tokenizers' pool).
   The static model is fast enough that one pass over the texts is short: each round repeats it until
   --static-min-s of wall time has passed.
2. Query embedding: wall p50 / p95 and calling-thread CPU p50 over 500 real queries (the semble-26
   annotations' queries, ../shared/bench/annotations/*.json), the two models alternated per query.
3. The CPU's SIMD flags (`grep -o 'avx512[a-z_]*\\|avx2' /proc/cpuinfo | sort -u`): int8 MiniLM speed
   depends on them (VNNI), the static model's much less.

Prints a markdown table (date, commit, CPU, load) to paste into bench/static_embedder.md; --json keeps the
raw figures. The static model loads from python/codebase_index/embeddings/code-static/ (or --static-folder);
while there is none it is skipped with the reason and MiniLM alone is measured.

Usage: python bench/bench_static_embedder.py [--repo NAME ...] [--per-repo 400] [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_paths import add_benchmark_arguments

HERE = Path(__file__).resolve().parent
DEFAULT_REPOS = ("fastapi", "zod", "gin", "tokio", "gson")
STATIC, MINILM = "static", "minilm-int8"


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def repo_root(args: argparse.Namespace, spec: dict[str, Any]) -> Path:
    checkout = args.repos_root / spec["name"]
    return checkout / spec["benchmark_root"] if spec.get("benchmark_root") else checkout


def chunks_from_index(db: Path) -> list[tuple[str, str, str, str]]:
    """(path, symbol, kind, text) of each distinct chunk text of the index's branches, in path order."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = conn.execute(
            """SELECT f.path, c.symbol, c.kind, c.text, c.chunk_hash FROM files f
               JOIN chunks c ON c.content_key = f.content_key ORDER BY f.path, c.ordinal"""
        ).fetchall()
    finally:
        conn.close()
    seen: set[str] = set()
    out: list[tuple[str, str, str, str]] = []
    for path, symbol, kind, text, chunk_hash in rows:
        if chunk_hash not in seen:
            seen.add(chunk_hash)
            out.append((path, symbol, kind, text))
    return out


def chunks_from_checkout(root: Path) -> list[tuple[str, str, str, str]]:
    """The same, cut from the checkout by the indexer's file rules and chunker (no index needed)."""
    from codebase_index.chunking import chunk_text, language_for_path
    from codebase_index.files import discover, read_text

    seen: set[str] = set()
    out: list[tuple[str, str, str, str]] = []
    for found in sorted(discover(root).files, key=lambda f: f.path):
        text = read_text(found.abs_path, found.path)
        if not isinstance(text, str):
            continue
        for span in chunk_text(found.path, text, language_for_path(found.path, text=text)):
            if span.text.strip() and span.text not in seen:
                seen.add(span.text)
                out.append((found.path, span.symbol, span.kind, span.text))
    return out


def chunks_from_stdlib(count: int) -> list[tuple[str, str, str, str]]:
    """A fallback where the semble checkouts are absent: `count` distinct chunks of the Python stdlib's
    top-level modules, in name order."""
    from codebase_index.chunking import chunk_text

    seen: set[str] = set()
    out: list[tuple[str, str, str, str]] = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        for span in chunk_text(path.name, text, "python"):
            if span.text.strip() and span.text not in seen:
                seen.add(span.text)
                out.append((path.name, span.symbol, span.kind, span.text))
        if len(out) >= count:
            return out[:count]
    return out


def corpus(args: argparse.Namespace, header: bool) -> tuple[list[str], list[str]]:
    """The texts to embed (a seeded sample of --per-repo distinct chunks per repository) and where each
    repository's chunks came from."""
    from codebase_index.embedder import embedding_text

    listed = args.bench / "repos.json"
    specs = {s["name"]: s for s in json.loads(listed.read_text())} if listed.is_file() else {}
    texts: list[str] = []
    sources: list[str] = []
    for name in args.repo or DEFAULT_REPOS:
        db = args.index_root / name / "codebase.db"
        if db.is_file():
            chunks, source = chunks_from_index(db), f"{name}: index {db.parent}"
        else:
            root = repo_root(args, specs.get(name, {"name": name}))
            if not root.is_dir():
                print(f"skip {name}: no index at {db} and no checkout at {root}", file=sys.stderr)
                continue
            chunks, source = chunks_from_checkout(root), f"{name}: chunked from {root}"
        if args.per_repo and len(chunks) > args.per_repo:
            chunks = random.Random(f"{args.seed}:{name}").sample(chunks, args.per_repo)
        texts += [embedding_text(path, sym, kind, text, header=header) for path, sym, kind, text in chunks]
        sources.append(f"{source} ({len(chunks)} chunks)")
    if not texts:
        count = (args.per_repo or 400) * len(args.repo or DEFAULT_REPOS)
        chunks = chunks_from_stdlib(count)
        print(f"no semble-26 chunks (../shared/bench/README.md): {len(chunks)} stdlib", file=sys.stderr)
        texts = [embedding_text(path, sym, kind, text, header=header) for path, sym, kind, text in chunks]
        sources.append(f"Python stdlib fallback ({len(chunks)} chunks)")
    return texts, sources


def queries(args: argparse.Namespace, count: int, texts: list[str]) -> list[str]:
    """The first `count` distinct annotation queries, files in name order (without the annotations: each
    text's first line, a stand-in)."""
    out: dict[str, None] = {}
    for path in sorted((args.bench / "annotations").glob("*.json")):
        for task in json.loads(path.read_text()):
            out[task["query"]] = None
    if not out:
        print(f"no annotations under {args.bench}: first lines of the texts as queries", file=sys.stderr)
        out = {t.strip().splitlines()[0][:80]: None for t in texts if t.strip()}
    return list(out)[:count]


def load_providers(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, float], dict[str, str]]:
    """Both providers (static only when its folder loads), their load seconds, and why one was skipped."""
    from codebase_index.embeddings import EmbeddingError, create_embedded_provider

    providers: dict[str, Any] = {}
    load_s: dict[str, float] = {}
    skipped: dict[str, str] = {}
    t0 = time.perf_counter()
    try:
        from codebase_index.embeddings.static import MODEL_FOLDER, StaticEmbedder

        folder = args.static_folder or MODEL_FOLDER
        if not (folder / "model.json").is_file():
            raise EmbeddingError(f"no static model at {folder} (model.json missing): not committed yet?")
        providers[STATIC] = StaticEmbedder(folder)
        providers[STATIC].embed_query("warm up")
        load_s[STATIC] = time.perf_counter() - t0
    except (EmbeddingError, ImportError, OSError, KeyError) as exc:
        skipped[STATIC] = f"{type(exc).__name__}: {exc}"
        print(f"static model skipped: {skipped[STATIC]}", file=sys.stderr)
    t0 = time.perf_counter()
    try:
        providers[MINILM] = create_embedded_provider(None, backend="onnx", threads=args.threads)
        providers[MINILM].embed_query("warm up")  # loads (or first builds) the cached int8 graph
        load_s[MINILM] = time.perf_counter() - t0
    except EmbeddingError as exc:
        skipped[MINILM] = f"{type(exc).__name__}: {exc}"
        print(f"int8 MiniLM skipped: {skipped[MINILM]}", file=sys.stderr)
    return providers, load_s, skipped


def throughput(
    providers: dict[str, Any], texts: list[str], rounds: int, static_min_s: float
) -> dict[str, Any]:
    names = list(providers)
    out: dict[str, Any] = {n: {"docs_per_s": [], "docs_per_cpu_s": [], "passes": []} for n in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            provider, passes = providers[name], 0
            load = os.getloadavg()[0]
            c0, w0 = time.process_time(), time.perf_counter()
            while True:
                vectors = provider.embed_documents(texts)
                passes += 1
                if name != STATIC or time.perf_counter() - w0 >= static_min_s:
                    break
            cpu, wall = time.process_time() - c0, time.perf_counter() - w0
            assert vectors.shape == (len(texts), provider.dimensions), vectors.shape
            docs = len(texts) * passes
            out[name]["docs_per_s"].append(docs / wall)
            out[name]["docs_per_cpu_s"].append(docs / cpu)
            out[name]["passes"].append(passes)
            print(
                f"  round {r + 1} {name:<12} {docs / wall:9.1f} docs/s  {docs / cpu:9.1f} per CPU-s  "
                f"cores {cpu / wall:.2f}  passes {passes}  load {load:.2f}",
                file=sys.stderr,
                flush=True,
            )
    for name in names:
        for key in ("docs_per_s", "docs_per_cpu_s"):
            out[name][key + "_median"] = statistics.median(out[name][key])
    if STATIC in providers and MINILM in providers:
        for key in ("docs_per_s", "docs_per_cpu_s"):
            ratios = [s / m for s, m in zip(out[STATIC][key], out[MINILM][key], strict=True)]
            per_round = [round(x, 1) for x in ratios]
            out[f"ratio_{key}"] = {"per_round": per_round, "median": statistics.median(ratios)}
    return out


def query_latency(providers: dict[str, Any], qs: list[str]) -> dict[str, Any]:
    """Wall and calling-thread CPU milliseconds per query, the models alternated per query; no cache."""
    names = list(providers)
    wall: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    for i, query in enumerate(qs):
        for name in names if i % 2 == 0 else names[::-1]:
            t0, c0 = time.perf_counter(), time.thread_time()
            providers[name].embed_query(query)
            wall[name].append((time.perf_counter() - t0) * 1000)
            cpu[name].append((time.thread_time() - c0) * 1000)
    return {
        n: {
            "p50_ms": p(wall[n], 0.5),
            "p95_ms": p(wall[n], 0.95),
            "cpu_p50_ms": p(cpu[n], 0.5),
            "n": len(wall[n]),
        }
        for n in names
    }


def cpu_flags() -> str:
    done = subprocess.run(
        "grep -o 'avx512[a-z_]*\\|avx2' /proc/cpuinfo | sort -u",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
    )
    return " ".join(done.stdout.split()) or "(none of avx2 / avx512*)"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def commit() -> str:
    def git(*cmd: str) -> str:
        done = subprocess.run(["git", *cmd], cwd=HERE, capture_output=True, text=True, check=False)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + (" (working tree modified)" if git("status", "--porcelain", "--untracked-files=no") else "")


def markdown(result: dict[str, Any]) -> str:
    tp, ql = result["throughput"], result["query"]
    lines = [
        f"date {result['date']}, commit {result['commit']}, CPU {result['cpu']} ({result['cores']} cores), "
        f"flags: {result['cpu_flags']}",
        f"{result['documents']} documents ({', '.join(result['sources'])}); header {result['header']}; "
        f"threads {result['threads']}; {result['rounds']} rounds; {ql and next(iter(ql.values()))['n']} "
        f"queries; load average {result['load_before']} before, {result['load_after']} after",
        "",
        "| model | model id | dims | load s | docs / CPU-s | docs / s (wall) | query p50 ms | query p95 ms "
        "| query CPU p50 ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, info in result["models"].items():
        t, q = tp[name], ql[name]
        lines.append(
            f"| {name} | {info['model_id']} | {info['dimensions']} | {info['load_s']:.2f} "
            f"| {t['docs_per_cpu_s_median']:,.0f} | {t['docs_per_s_median']:,.0f} | {q['p50_ms']:.3f} "
            f"| {q['p95_ms']:.3f} | {q['cpu_p50_ms']:.3f} |"
        )
    if "ratio_docs_per_cpu_s" in tp:
        cpu_r, wall_r = tp["ratio_docs_per_cpu_s"], tp["ratio_docs_per_s"]
        q_r = ql[MINILM]["p50_ms"] / ql[STATIC]["p50_ms"]
        lines.append(
            f"| static / MiniLM | | | | {cpu_r['median']:.1f}x (rounds {cpu_r['per_round']}) "
            f"| {wall_r['median']:.1f}x (rounds {wall_r['per_round']}) | {q_r:.1f}x faster | | |"
        )
    for name, why in result["skipped"].items():
        lines.append(f"\n{name} not measured: {why}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_benchmark_arguments(parser)
    parser.add_argument("--repo", action="append", help=f"repositories (repeatable; default {DEFAULT_REPOS})")
    parser.add_argument("--per-repo", type=int, default=400, help="chunks sampled per repository (0: all)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=500)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--static-min-s", type=float, default=2.0, help="static passes per round: >= this")
    parser.add_argument("--static-folder", type=Path, help="the static model folder (default: the package's)")
    parser.add_argument(
        "--header",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="embed the 'path: kind symbol' header (default: embedder.EMBED_HEADER, what the index does)",
    )
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args()
    if args.threads == 1:  # the tokenizers' Rust pool: one thread (read when a batch is encoded)
        os.environ["TOKENIZERS_PARALLELISM"] = "false"
        os.environ["RAYON_NUM_THREADS"] = "1"

    from codebase_index import embedder

    header = embedder.EMBED_HEADER if args.header is None else args.header
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    texts, sources = corpus(args, header)
    qs = queries(args, args.queries, texts)
    providers, load_s, skipped = load_providers(args)
    if not providers:
        print("no model could be loaded", file=sys.stderr)
        return 1
    print(f"{len(texts)} documents, {len(qs)} queries, models {list(providers)}", file=sys.stderr)
    tp = throughput(providers, texts, args.rounds, args.static_min_s)
    ql = query_latency(providers, qs)
    result = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "commit": commit(),
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "cpu_flags": cpu_flags(),
        "documents": len(texts),
        "sources": sources,
        "header": header,
        "threads": args.threads,
        "rounds": args.rounds,
        "load_before": load_before,
        "load_after": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
        "models": {
            n: {"model_id": prov.model_id, "dimensions": prov.dimensions, "load_s": load_s[n]}
            for n, prov in providers.items()
        },
        "skipped": skipped,
        "throughput": tp,
        "query": ql,
    }
    print(f"CPU flags: {result['cpu_flags']}")
    print(markdown(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
