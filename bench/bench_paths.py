"""Where the shared benchmark data is: `../shared/bench` beside the main checkout (/work/main/bench ->
/work/shared/bench), also found from a worktree one level deeper (/work/wt/NAME/bench)."""

from __future__ import annotations

import argparse
from pathlib import Path

_HERE = Path(__file__).resolve().parent
SHARED_BENCH = next(
    (p / "shared" / "bench" for p in _HERE.parents[1:3] if (p / "shared" / "bench").is_dir()),
    _HERE.parent.parent / "shared" / "bench",
)
REPOS_ROOT = Path.home() / ".cache" / "bench-repos"  # the pinned semble-26 checkouts
INDEX_ROOT = Path.home() / ".cache" / "codebase-index-bench"  # their indexes (bench_quality.py builds them)


def add_benchmark_arguments(parser: argparse.ArgumentParser) -> None:
    """--bench, --repos-root and --index-root: where the semble-26 annotations, checkouts and indexes are."""
    parser.add_argument(
        "--bench", type=Path, default=SHARED_BENCH, help="folder with repos.json, annotations/"
    )
    parser.add_argument("--repos-root", type=Path, default=REPOS_ROOT)
    parser.add_argument("--index-root", type=Path, default=INDEX_ROOT)
