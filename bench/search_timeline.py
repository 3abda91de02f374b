"""Timestamps inside real hybrid searches: where "beyond its embedding" goes.

Each semble-26 query is searched with a fresh embedding (the query-vector cache cleared), and the moments
the search reaches its stages are noted by wrapping the engine's own functions (module attributes, looked
up at call time): the model entered and left (the provider's `embed_query`), the retrievers, the vector
search, the rank stage and its parts, formatting. Then the model alone on the same text. Prints each
mark's median (ms from the search's start) and the medians of the spans between them.

Usage: python bench/search_timeline.py [--repo tokio ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_paths import add_benchmark_arguments

MARKS: dict[str, float] = {}


def _mark(name: str) -> None:
    MARKS.setdefault(name, time.perf_counter())  # the first call of a stage


def _wrap(owner: Any, attribute: str, name: str) -> None:
    if not hasattr(owner, attribute):  # an older checkout lacks the stage
        return
    inner: Callable[..., Any] = getattr(owner, attribute)

    def marked(*args: Any, **kwargs: Any) -> Any:
        _mark(name + ">")
        try:
            return inner(*args, **kwargs)
        finally:
            _mark(name + "<")

    setattr(owner, attribute, marked)


def instrument() -> None:
    from codebase_index import vectors
    from codebase_index.ranking import pipeline
    from codebase_index.service import retrieval

    for attribute, name in (
        ("usable_vectors", "vector-snapshot"),
        ("gather", "retrievers"),
        ("parse_query", "parse"),
        ("prepare", "early-features"),
        ("rank_hits", "rank-stage"),
        ("respond", "format"),
    ):
        _wrap(retrieval, attribute, name)
    _wrap(vectors.VectorSnapshot, "nearest", "vector-search")
    for attribute, name in (("fuse", "fusion"), ("rank", "scorer"), ("guarantees", "guarantees")):
        _wrap(pipeline, attribute, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    add_benchmark_arguments(parser)
    parser.add_argument("--repo", action="append", help="only these repositories")
    args = parser.parse_args()
    from codebase_index.config import load_config
    from codebase_index.service import Engine

    instrument()
    rows: list[dict[str, float]] = []
    model: Callable[[str], Any] | None = None
    for spec in json.loads((args.bench / "repos.json").read_text()):
        name = spec["name"]
        if args.repo and name not in args.repo:
            continue
        root = args.repos_root / name / spec.get("benchmark_root", "")
        tasks = json.loads((args.bench / "annotations" / f"{name}.json").read_text())
        queries = [t["query"] for t in tasks if t.get("repo", name) == name]
        engine = Engine(root, load_config(root), index_path=args.index_root / name)
        engine.search(queries[0], mode="hybrid")  # warm-up: per-snapshot caches, the model
        provider = engine.embedding_provider()
        if provider is None:
            raise SystemExit(f"{name}: no embedding provider")
        if model is None:  # one provider per process: wrap it once
            model = provider.embed_query

            def embed_query(text: str, model: Callable[[str], Any] = model) -> Any:
                _mark("model>")
                try:
                    return model(text)
                finally:
                    _mark("model<")

            provider.embed_query = embed_query  # type: ignore[method-assign]
        for query in queries:
            engine._query_vectors.clear()
            MARKS.clear()
            t0 = time.perf_counter()
            engine.search(query, mode="hybrid")
            t1 = time.perf_counter()
            model(query)
            alone = time.perf_counter() - t1
            row = {k: (v - t0) * 1000 for k, v in MARKS.items()}
            row["end"], row["model alone"] = (t1 - t0) * 1000, alone * 1000
            rows.append(row)
        engine.close()

    def median_of(name: str) -> float:
        return statistics.median(r[name] for r in rows if name in r)

    def span(a: str, b: str) -> float:
        return statistics.median(r[b] - r[a] for r in rows if a in r and b in r)

    print(f"{len(rows)} hybrid searches; marks (median ms from the search's start):")
    for name in sorted({k for r in rows for k in r if k != "model alone"}, key=median_of):
        print(f"  {name:<18} {median_of(name):7.3f}")
    print("spans (median ms):")
    for label, a, b in (
        ("before the model", "vector-snapshot>", "model>"),
        ("the model in the search", "model>", "model<"),
        ("model end -> vector search", "model<", "vector-search>"),
        ("vector search", "vector-search>", "vector-search<"),
        ("rank stage", "rank-stage>", "rank-stage<"),
        ("  fusion", "fusion>", "fusion<"),
        ("  scorer", "scorer>", "scorer<"),
        ("formatting", "format>", "format<"),
        ("after the model", "model<", "end"),
    ):
        print(f"  {label:<28} {span(a, b):7.3f}")
    alone = statistics.median(r["model alone"] for r in rows)
    beyond = statistics.median(r["end"] - r["model alone"] for r in rows)
    print(f"  {'the model alone':<28} {alone:7.3f}")
    print(f"  {'beyond the model alone':<28} {beyond:7.3f}")


if __name__ == "__main__":
    main()
