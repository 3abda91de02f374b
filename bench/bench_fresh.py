"""Freshness benchmark: no-change re-index (synthetic 10k-file repo and a CPython stdlib copy), save-to-
searchable latency through the watcher, and a branch switch between two stdlib branches differing in 5%
of files. Prints one JSON object (also written to bench/results/fresh.json). Figures only.

Usage: python bench/bench_fresh.py [--work DIR] [--saves N] [--skip-stdlib]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import msgspec

from codebase_index.service import Engine
from codebase_index.watcher import Watcher

GIT = ["git", "-c", "user.email=bench@local", "-c", "user.name=bench"]


def make_synthetic(root: Path, n: int = 10_000) -> None:
    rng = random.Random(1)
    (root / ".git").mkdir(parents=True, exist_ok=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    for i in range(n):
        folder = root / f"pkg{i // 500}" / f"mod{(i // 50) % 10}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"file_{i}.py").write_text(
            f"def func_{i}(x):\n    return x + {i}\n\nclass C{i}:\n    value = {rng.randint(0, 999)}\n"
        )


def age_folders(root: Path) -> None:
    """Make folder mtimes old, as in a checkout that has not just been written (the racy-mtime guard
    distrusts folders changed in the last 2 s, and everything here was just created)."""
    old = time.time_ns() - 60_000_000_000
    for dirpath, dirnames, _ in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        os.utime(dirpath, ns=(old, old))


def no_change(engine: Engine, runs: int = 15) -> dict[str, float]:
    engine.index()  # the walk that the stat-only re-scans start from
    engine.index()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        report = engine.index()
        times.append(time.perf_counter() - started)
        assert report.files_changed == 0 and report.files_removed == 0
    return {"median_ms": round(statistics.median(times) * 1000, 1), "min_ms": round(min(times) * 1000, 1)}


def copy_stdlib(dest: Path) -> None:
    src = Path(sysconfig.get_paths()["stdlib"])
    shutil.copytree(
        src, dest, ignore=shutil.ignore_patterns("site-packages", "__pycache__", "*.pyc"), symlinks=True
    )


def save_latency(engine: Engine, root: Path, saves: int) -> dict[str, object]:
    """Write a new function into an existing file, wait until a search finds it; p50/p95 over saves. Then
    how long the code graph lags: until its edges are resolved for the saved state (background refresh)."""
    from codebase_index.graph.store import GraphStore

    engine.graph_in_background = True  # as in the sidecar
    engine.snapshot()
    watcher = Watcher([root], reindex_paths=engine.index_paths, reindex_all=engine.index)
    watcher.start()
    files = sorted(p for p in root.rglob("*.py") if "test" not in p.parts and p.stat().st_size < 20_000)
    rng = random.Random(5)
    latencies = []
    graph_lags = []
    overlay_s = []
    try:
        for i in range(saves):
            target = rng.choice(files)
            token = f"freshtoken{i}x{rng.randrange(10**9)}"
            with target.open("a") as fh:
                fh.write(f"\n\ndef {token}():\n    return {i}\n")
            started = time.perf_counter()
            while time.perf_counter() - started < 30:
                hits = engine.search(token, mode="keyword", top_k=3).results
                if any(token in (h.content or "") for h in hits):
                    break
                time.sleep(0.005)
            latencies.append(time.perf_counter() - started)
            cache = engine._snapshots
            if cache is not None:
                overlay_s.append(cache.stats.last_seconds)
            while time.perf_counter() - started < 60:
                engine.graphs.wait_idle()
                if GraphStore(engine.store.conn).is_fresh(engine.branch()):
                    break
                time.sleep(0.01)
            graph_lags.append(time.perf_counter() - started)
    finally:
        watcher.stop()
    latencies.sort()
    graph_lags.sort()
    return {
        "saves": saves,
        "p50_s": round(latencies[len(latencies) // 2], 3),
        "p95_s": round(latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))], 3),
        "watcher_state": watcher.status.state,
        "snapshot_refresh_p50_s": round(statistics.median(overlay_s), 4) if overlay_s else None,
        "graph_fresh_after_save_p50_s": round(graph_lags[len(graph_lags) // 2], 3),
        "graph_fresh_after_save_max_s": round(graph_lags[-1], 3),
        "snapshot_stats": msgspec.to_builtins(engine._snapshots.stats) if engine._snapshots else None,
    }


def branch_switch(engine: Engine, root: Path) -> dict[str, object]:
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=root, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "base"], cwd=root, check=True)
    engine.index()
    tracked = subprocess.run(
        ["git", "ls-files", "*.py"], cwd=root, check=True, capture_output=True, text=True
    )
    py = [p for p in tracked.stdout.splitlines() if (root / p).stat().st_size < 200_000]
    rng = random.Random(9)
    indexed = len(engine.store.file_stats("main"))
    changed = rng.sample(py, max(1, indexed * 5 // 100))
    subprocess.run([*GIT, "checkout", "-q", "-b", "feature"], cwd=root, check=True)
    for rel in changed:
        with (root / rel).open("a") as fh:
            fh.write(f"\n\ndef feature_variant_{abs(hash(rel)) % 10**6}():\n    return {rng.random()}\n")
    subprocess.run([*GIT, "commit", "-q", "-am", "feature"], cwd=root, check=True)
    engine.graph_in_background = True  # as in the sidecar: edges follow in the background
    started = time.perf_counter()
    first = engine.index()  # the feature branch's catalog, built once
    engine.search("feature_variant", mode="keyword")
    first_visible = time.perf_counter() - started
    engine.graphs.wait_idle()
    first_graph = time.perf_counter() - started
    main_hashes = {
        r[0]
        for r in engine.store.conn.execute(
            "SELECT c.chunk_hash FROM files f JOIN chunks c ON c.content_key=f.content_key "
            "WHERE f.branch='main'"
        )
    }
    out: dict[str, object] = {
        "files_indexed": indexed,
        "files_changed_on_branch": len(changed),
        "load_during_first_switch": round(os.getloadavg()[0], 1),
    }
    timings = []
    for target in ("main", "feature", "main", "feature"):
        subprocess.run(["git", "checkout", "-q", target], cwd=root, check=True)
        started = time.perf_counter()
        report = engine.index()
        engine.search("feature_variant", mode="keyword")  # keyword snapshot rebuilt for the branch
        timings.append(round(time.perf_counter() - started, 3))
        assert report.branch == target
    feature_hashes = {
        r[0]
        for r in engine.store.conn.execute(
            "SELECT c.chunk_hash FROM files f JOIN chunks c ON c.content_key=f.content_key "
            "WHERE f.branch='feature'"
        )
    }
    out.update(
        first_switch_index_s=first.seconds,
        first_switch_keyword_visible_s=round(first_visible, 3),
        first_switch_graph_fresh_s=round(first_graph, 3),
        first_switch_chunks_added=first.chunks_added,
        switch_to_searchable_s=timings,
        chunks_needing_embedding_on_feature=len(feature_hashes - main_hashes),
        chunks_on_feature=len(feature_hashes),
    )
    return out


def pool_crossover(root: Path, sizes_mb: tuple[float, ...] = (0.5, 1, 2, 4, 8)) -> dict[str, object]:
    """In-process chunking vs a fresh 2-worker pool (spawn + warm-up included) for growing amounts of
    stdlib text: where processing.PARALLEL_THRESHOLD_BYTES comes from. The load average is part of the
    figure: on a busy machine the second worker buys little."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from codebase_index.processing import _batches_by_size, _chunk_many, process_file

    paths = sorted(p for p in root.rglob("*.py") if p.stat().st_size < 200_000)
    random.Random(3).shuffle(paths)
    items = [(str(p.relative_to(root)), p.read_text(errors="replace"), "python") for p in paths]
    process_file(*items[0])  # warm this process (grammar, query) as a running sidecar is
    rows = []
    for mb in sizes_mb:
        chosen: list[tuple[str, str, str]] = []
        size = 0
        for item in items[1:]:
            chosen.append(item)
            size += len(item[1])
            if size >= mb * 1e6:
                break
        started = time.perf_counter()
        for item in chosen:
            process_file(*item)
        serial = time.perf_counter() - started
        started = time.perf_counter()
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
            keys = [str(i) for i in range(len(chosen))]
            batches = _batches_by_size(chosen, keys, target_bytes=256 * 1024)
            for future in [pool.submit(_chunk_many, batch) for _, batch in batches]:
                future.result()
        pooled = time.perf_counter() - started
        rows.append(
            {
                "mb": mb,
                "files": len(chosen),
                "serial_s": round(serial, 2),
                "pool_s": round(pooled, 2),
                "load": round(os.getloadavg()[0], 1),
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr)
    return {"rows": rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", help="scratch folder (default: a temporary one)")
    parser.add_argument("--saves", type=int, default=20)
    parser.add_argument("--skip-stdlib", action="store_true")
    args = parser.parse_args()
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-fresh-"))
    results: dict[str, object] = {"python": sys.version.split()[0], "cpus": os.cpu_count()}

    synth = work / "synthetic"
    if not synth.exists():
        make_synthetic(synth)
    age_folders(synth)
    engine = Engine(synth, index_path=work / "synthetic-index")
    started = time.perf_counter()
    engine.index()
    results["synthetic_10k"] = {"first_index_s": round(time.perf_counter() - started, 2), **no_change(engine)}
    engine.close()
    print(json.dumps(results["synthetic_10k"]), file=sys.stderr)

    if not args.skip_stdlib:
        stdlib = work / "stdlib"
        if not stdlib.exists():
            copy_stdlib(stdlib)
        age_folders(stdlib)
        engine = Engine(stdlib, index_path=work / "stdlib-index")
        started = time.perf_counter()
        first = engine.index()
        results["stdlib_no_change"] = {
            "files": first.files,
            "first_index_s": round(time.perf_counter() - started, 2),
            **no_change(engine),
        }
        print(json.dumps(results["stdlib_no_change"]), file=sys.stderr)
        results["save_to_searchable"] = save_latency(engine, stdlib, args.saves)
        print(json.dumps(results["save_to_searchable"]), file=sys.stderr)
        results["branch_switch"] = branch_switch(engine, stdlib)
        engine.close()
        results["pool_crossover"] = pool_crossover(stdlib)

    print(json.dumps(results, indent=2))
    out = Path(__file__).parent / "results" / "fresh.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
