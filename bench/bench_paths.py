"""Where the shared benchmark data is: `../shared/bench` beside the main checkout (/work/main/bench ->
/work/shared/bench), also found from a worktree one level deeper (/work/wt/NAME/bench)."""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent
SHARED_BENCH = next(
    (p / "shared" / "bench" for p in _HERE.parents[1:3] if (p / "shared" / "bench").is_dir()),
    _HERE.parent.parent / "shared" / "bench",
)
