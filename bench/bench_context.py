"""Evidence per token: codebase_context vs codebase_search top-10 vs grep-and-read, on the semble-26
annotations (or a validation set in the same format).

For every query and every budget (500, 1,000, 1,500, 2,000 tokens, counted by `context.tokens`):
- context: `Engine.context(query, max_tokens=B)`; a target counts when an item of the pack matches it.
- search: the `codebase_search` text of the top 10 (header + code per result, as the tool renders it),
  cut at B tokens; a result counts when its header line lies within the cut (generous to search).
- grep-and-read: files ranked by case-insensitive matches of the query's words (semble's ripgrep-tokens
  baseline, in Python), read whole in that order; a file counts when it was read entirely within B.
Recall@B = targets found / targets (relevant + secondary, semble's matching). Tokens to the first
relevant hit: tokens read up to the end of the first piece (pack item, search result, whole file) that
matches a target, over the queries where one does (hit rate beside it); context at 2,000 tokens.

Usage: python bench/bench_context.py [--repo NAME ...] [--annotations DIR --repos-root DIR]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

from codebase_index.context.tokens import counter
from codebase_index.format import format_search
from codebase_index.service import Engine

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_paths import SHARED_BENCH

HERE = Path(__file__).resolve().parent
# ../shared/bench beside the checkout (a worktree under /work/wt/NAME looks two levels up).
DEFAULT_BENCH = SHARED_BENCH
BUDGETS = (500, 1000, 1500, 2000)
FIRST_HIT_BUDGET = 2000
_WORD = re.compile(r"[A-Za-z0-9_]+")


def grep_order(query: str, texts: dict[str, str]) -> list[str]:
    """Files by case-insensitive fixed-string matches of the query's words (>= 2 chars), most first."""
    words = sorted({w.lower() for w in _WORD.findall(query) if len(w) >= 2})
    if not words:
        return []
    pattern = re.compile("|".join(re.escape(w) for w in words), re.IGNORECASE)
    counts = [(path, len(pattern.findall(text))) for path, text in texts.items()]
    return [p for p, n in sorted(counts, key=lambda x: (-x[1], x[0])) if n > 0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    parser.add_argument("--annotations", type=Path, help="folder of NAME.json (default: <bench>/annotations)")
    parser.add_argument("--repos-root", type=Path, default=Path.home() / ".cache" / "bench-repos")
    parser.add_argument(
        "--index-root", type=Path, default=Path.home() / ".cache" / "codebase-index-context-bench"
    )
    parser.add_argument("--repo", action="append")
    parser.add_argument(
        "--val", type=Path, action="append", help="a validation set folder (corpus/, index/, golden.json)"
    )
    parser.add_argument("--out", type=Path, default=HERE / "results" / "context-results.json")
    args = parser.parse_args()
    sys.path.insert(0, str(args.bench))
    from score import Matcher, Result, load_specs, load_tasks  # type: ignore[import-not-found]

    specs = load_specs(args.bench / "repos.json")
    count = counter().count
    rows: list[dict[str, object]] = []
    runs: list[
        tuple[str, Path, Path, Path, str | None, list]
    ] = []  # name, root, index, checkout, broot, tasks
    if args.val:
        import shutil
        import tempfile

        from score import Task, _parse_target  # type: ignore[import-not-found]

        scratch = Path(tempfile.mkdtemp(prefix="bench-context-val-"))
        for folder in args.val:
            golden = json.loads((folder / "golden.json").read_text())
            val_tasks = [
                Task(
                    repo=folder.name,
                    language=folder.name,
                    query=g["query"],
                    relevant=tuple(_parse_target(t) for t in g.get("relevant", [])),
                    secondary=tuple(_parse_target(t) for t in g.get("secondary", [])),
                    category=g.get("category", ""),
                )
                for g in golden
            ]
            index = scratch / folder.name
            shutil.copytree(folder / "index", index)  # the set's index is shared: work on a copy
            runs.append((folder.name, folder / "corpus", index, folder / "corpus", None, val_tasks))
    else:
        tasks = load_tasks(args.annotations or args.bench / "annotations", specs)
        for name, spec in specs.items():
            if args.repo and name not in args.repo:
                continue
            checkout = args.repos_root / name
            root = checkout / spec["benchmark_root"] if spec.get("benchmark_root") else checkout
            repo_tasks = [t for t in tasks if t.repo == name]
            if not repo_tasks or not root.is_dir():
                print(f"skip {name}: no checkout or no queries", file=sys.stderr)
                continue
            runs.append(
                (name, root, args.index_root / name, checkout, spec.get("benchmark_root"), repo_tasks)
            )
    for name, root, index_dir, checkout, benchmark_root, repo_tasks in runs:
        engine = Engine(root, index_path=index_dir)
        t0 = time.perf_counter()
        engine.index()
        index_s = time.perf_counter() - t0
        paths = [
            p
            for (p,) in engine.store.conn.execute("SELECT path FROM files WHERE branch=?", (engine.branch(),))
        ]
        texts = {p: "\n".join(engine.file_lines(p) or []) for p in paths}
        file_tokens: dict[str, int] = {}
        matcher = Matcher("abs", benchmark_root, checkout)

        def found(
            path: str, start: int | None, end: int | None, targets: tuple, m: Matcher = matcher
        ) -> set[int]:
            r = Result(path, start, end)
            return {i for i, t in enumerate(targets) if m.matches(r, t)}

        for task in repo_tasks:
            targets = task.all_relevant
            row: dict[str, object] = {"repo": name, "query": task.query, "category": task.category}
            # -- context
            for budget in BUDGETS:
                t1 = time.perf_counter()
                pack = engine.context(task.query, max_tokens=budget)
                ms = (time.perf_counter() - t1) * 1000
                assert pack.tokens <= budget and count(pack.text) <= budget, (task.query, budget)
                hit: set[int] = set()
                for item in pack.items:
                    hit |= found(item.path, item.start_line, item.end_line, targets)
                row[f"context_{budget}"] = len(hit) / len(targets)
                row[f"context_ms_{budget}"] = ms
                if budget == FIRST_HIT_BUDGET:
                    row["context_route"] = pack.route
                    blocks = pack.text.split("\n\n")
                    first = None
                    for item in pack.items:
                        if found(item.path, item.start_line, item.end_line, targets):
                            head = f"{item.path}:{item.start_line}-{item.end_line}"
                            idx = next(i for i, b in enumerate(blocks) if b.startswith(head))
                            first = count("\n\n".join(blocks[: idx + 1]))
                            break
                    row["context_first"] = first
            # -- search top 10, rendered as the tool renders it
            response = engine.search(task.query, top_k=10)
            spent = 0
            ends: list[tuple[int, int, set[int]]] = []  # (tokens at header end, at block end, targets)
            for i, r in enumerate(response.results):
                block = format_search([r], root=root)
                head = block.split("\n", 1)[0]
                sep = 2 if i else 0
                ends.append(
                    (
                        spent + sep + count(head),
                        spent + sep + count(block),
                        found(r.path, r.start_line, r.end_line, targets),
                    )
                )
                spent += sep + count(block)
            for budget in BUDGETS:
                hit = set().union(*(h for head_end, _, h in ends if head_end <= budget)) if ends else set()
                row[f"search_{budget}"] = len(hit) / len(targets)
            row["search_first"] = next((end for _, end, h in ends if h), None)
            row["search_tokens"] = spent
            # -- grep and read whole files
            spent = 0
            reads: list[tuple[int, set[int]]] = []
            for path in grep_order(task.query, texts):
                if path not in file_tokens:
                    file_tokens[path] = count(texts[path])
                spent += file_tokens[path]
                reads.append((spent, found(path, None, None, targets)))
                if spent > 200_000:
                    break
            for budget in BUDGETS:
                hit = set().union(*(h for end, h in reads if end <= budget)) if reads else set()
                row[f"grep_{budget}"] = len(hit) / len(targets)
            row["grep_first"] = next((end for end, h in reads if h), None)
            rows.append(row)
        engine.close()
        print(f"{name:<12} queries={len(repo_tasks)} index={index_s:.1f}s", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1))
    report(rows)
    return 0


def report(rows: list[dict[str, object]]) -> None:
    if not rows:
        print("no queries run")
        return
    repos = sorted({str(r["repo"]) for r in rows})

    def repo_mean(key: str) -> float:
        per = [statistics.mean(float(r[key]) for r in rows if r["repo"] == repo) for repo in repos]  # type: ignore[arg-type]
        return statistics.mean(per)

    print(f"{len(rows)} queries, {len(repos)} repos (recall: mean of repo means)")
    print(f"{'recall@budget':<16}" + "".join(f"{b:>8}" for b in BUDGETS))
    for tool in ("context", "search", "grep"):
        print(f"{tool:<16}" + "".join(f"{repo_mean(f'{tool}_{b}'):>8.3f}" for b in BUDGETS))
    print("tokens to first relevant hit (median / mean over hits, hit rate):")
    for tool in ("context", "search", "grep"):
        firsts = [int(r[f"{tool}_first"]) for r in rows if r[f"{tool}_first"] is not None]  # type: ignore[call-overload]
        if firsts:
            print(
                f"  {tool:<10} median {statistics.median(firsts):>8.0f}  mean {statistics.mean(firsts):>8.0f}"
                f"  hits {len(firsts)}/{len(rows)}"
            )
    ms = sorted(float(r["context_ms_1500"]) for r in rows)  # type: ignore[arg-type]
    p50, p95 = ms[len(ms) // 2], ms[int(len(ms) * 0.95)]
    print(f"context latency at 1,500 tokens: p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    routes: dict[str, int] = {}
    for r in rows:
        routes[str(r["context_route"])] = routes.get(str(r["context_route"]), 0) + 1
    print("routes:", ", ".join(f"{k} {v}" for k, v in sorted(routes.items())))


if __name__ == "__main__":
    sys.exit(main())
