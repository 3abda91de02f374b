"""Issue 12's acceptance figures on a split of bench/make_training_set.py's sets, through the real engine.

Every query of the split's repositories runs through `evaluation.evaluate` (top 10): the static styles of
each golden.json over its corpus/ (bench/validate.py's `run_set`), and the change descriptions of
changes.json over their parent snapshots (the clone checked out at the entry's branch, changes-index/).
Printed:
  - per style: file MRR@10 and chunk MRR@10 (the figures of bench/ranker_hybrid.md and TRAINING_DATA.md)
  - "pasted errors: the raising function first": the share of error / error_pasted queries whose first
    result is the target's chunk (and whose first result is in the target's file)
  - "relation questions answered by a caller in the top 3": the share of relation queries with a
    caller's chunk (file) among the first 3 results
`--index-name` / `--changes-index` name the index folders read in each set (default index, changes-index):
one copy per embedding model, since an index keeps the built-in model that embedded it; the configuration
(CODEBASE_INDEX_CONFIG included) applies to both kinds of query.
`--save` writes every query's result (ranks, the first 5 results) for a diagnosis. Change descriptions
check out branches of the sets' shared changes/ clones: two runs take turns on a lock there, but
`train_ranker.py extract` does not take it, so do not run it beside this.

Usage:
    python bench/acceptance.py [--manifest ~/.cache/codebase-index-train/manifest.json] [--split validation]
        [--mode keyword ...] [--ranker rules|learned] [--no-changes] [--golden NAME] [--save RUN.json]
        [--index-name index] [--changes-index changes-index]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from codebase_index.config import load_config
from codebase_index.evaluation import QueryResult, evaluate, parse_golden, summarize
from codebase_index.service import Engine

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from validate import run_set  # noqa: E402

DEFAULT_MANIFEST = Path.home() / ".cache" / "codebase-index-train" / "manifest.json"
STYLES = (
    "identifier",
    "description",
    "error",
    "error_pasted",
    "snippet",
    "snippet_renamed",
    "relation",
    "change",
)


def change_results(
    base: Path, mode: str, ranker: str | None, index_name: str = "changes-index"
) -> list[QueryResult]:
    """The change descriptions of one set, each searched over its parent snapshot (index `index_name`)."""
    path = base / "changes.json"
    if not path.is_file():
        return []
    entries = json.loads(path.read_text())
    clone = base / "changes"
    config = load_config(clone)
    if ranker:
        config = msgspec.structs.replace(config, search=msgspec.structs.replace(config.search, ranker=ranker))
    out: list[QueryResult] = []
    strategies: dict[str, int] = {}
    with (clone / ".git" / "acceptance.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another run would check out other branches under us
        for entry, golden in zip(entries, parse_golden(entries, str(path)), strict=True):
            subprocess.run(["git", "-C", str(clone), "checkout", "-q", "-f", entry["branch"]], check=True)
            engine = Engine(clone, config, index_path=base / index_name)
            try:
                run = evaluate(engine, [golden], mode=mode, warmup=False)
            finally:
                engine.close()
            out += run.queries
            strategies[run.mode] = strategies.get(run.mode, 0) + 1  # what ran: hybrid, keyword-fallback, ...
    print(f"{base.name} changes ({mode}): strategies {strategies}", file=sys.stderr, flush=True)
    return out


def split_results(
    bases: Sequence[Path],
    mode: str,
    ranker: str | None,
    changes: bool = True,
    golden: str = "golden.json",
    index_name: str = "index",
    changes_index: str = "changes-index",
) -> list[QueryResult]:
    """Every query of the sets (`golden`, then changes.json unless not `changes`), labelled by repo."""
    out: list[QueryResult] = []
    for base in bases:
        run = run_set(base, [mode], index_name=index_name, ranker=ranker, golden_name=golden)[mode]
        got = run.queries + (change_results(base, mode, ranker, changes_index) if changes else [])
        for q in got:
            q.repo = q.repo or base.name
        print(f"{base.name}: {len(got)} queries", file=sys.stderr, flush=True)
        out += got
    return out


def share_within(results: Sequence[QueryResult], k: int, *, chunk_level: bool) -> tuple[int, int]:
    """(queries with a target among the first `k` results, queries): at chunk level (a result overlapping a
    target's lines) or file level (a result in a target's file).

    >>> r = [QueryResult("a", "x", [1], [2], 1, 0.0, []), QueryResult("b", "x", [], [], 1, 0.0, [])]
    >>> share_within(r, 1, chunk_level=True), share_within(r, 1, chunk_level=False)
    ((0, 2), (1, 2))
    """
    hits = sum(
        1 for r in results if (ranks := r.chunk_ranks if chunk_level else r.file_ranks) and ranks[0] <= k
    )
    return hits, len(results)


def _pct(hits: int, n: int) -> str:
    return f"{hits}/{n} = {100 * hits / n:.1f}%" if n else "-"


def report(results: Sequence[QueryResult], title: str) -> dict[str, Any]:
    """Print the per-style table and the two acceptance figures; return them as data."""
    by_style = {s: [r for r in results if r.category == s] for s in STYLES}
    print(f"## {title}\n")
    print("| style | n | file MRR@10 | chunk MRR@10 | file Hit@1 |")
    print("|---|---|---|---|---|")
    table: dict[str, Any] = {}
    for style, rs in [("ALL", list(results)), *by_style.items()]:
        if not rs:
            continue
        s = summarize(rs)
        table[style] = {"n": s.queries, "file_mrr10": s.mrr10, "chunk_mrr10": s.chunk_mrr10, "hit1": s.hit1}
        print(f"| {style} | {s.queries} | {s.mrr10:.3f} | {s.chunk_mrr10:.3f} | {s.hit1:.3f} |")
    figures: dict[str, Any] = {}
    print()
    for style in ("error", "error_pasted"):
        chunk = share_within(by_style[style], 1, chunk_level=True)
        file = share_within(by_style[style], 1, chunk_level=False)
        figures[f"{style} top1"] = {"chunk": chunk, "file": file}
        print(f"{style}: raising function first (chunk) {_pct(*chunk)}; its file first {_pct(*file)}")
    chunk = share_within(by_style["relation"], 3, chunk_level=True)
    file = share_within(by_style["relation"], 3, chunk_level=False)
    figures["relation top3"] = {"chunk": chunk, "file": file}
    print(
        f"relation: a caller in the top 3 (chunk) {_pct(*chunk)}; a caller's file in the top 3 {_pct(*file)}"
    )
    print()
    return {"styles": table, "figures": figures}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    parser.add_argument("--split", default="validation")
    parser.add_argument("--repo", action="append", help="only these repositories (owner/name)")
    parser.add_argument("--mode", action="append", help="keyword/semantic/hybrid (default: keyword)")
    parser.add_argument(
        "--ranker", choices=["auto", "rules", "learned"], help="search.ranker (default: the config's)"
    )
    parser.add_argument("--no-changes", action="store_true", help="skip the change descriptions")
    parser.add_argument("--golden", default="golden.json", help="golden file name in each set")
    parser.add_argument("--save", type=Path, help="write the figures and every query's result as JSON")
    parser.add_argument("--index-name", default="index", help="the index folder of each set's corpus")
    parser.add_argument(
        "--changes-index", default="changes-index", help="the index folder of each set's change snapshots"
    )
    args = parser.parse_args()
    manifest = json.loads(args.manifest.read_text())
    bases = [
        args.manifest.parent / Path(r["corpus"]).parent
        for r in manifest["repos"]
        if r["split"] == args.split and (not args.repo or r["repo"] in args.repo)
    ]
    saved: dict[str, Any] = {}
    for mode in args.mode or ["keyword"]:
        results = split_results(
            bases, mode, args.ranker, not args.no_changes, args.golden, args.index_name, args.changes_index
        )
        title = f"{args.split}, {mode}, ranker {args.ranker or 'default'}"
        saved[mode] = report(results, title) | {"queries": msgspec.to_builtins(results)}
    if args.save:
        args.save.write_text(json.dumps(saved, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
