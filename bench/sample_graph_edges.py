"""Sample resolved cross-file call edges from the benchmark corpora for a manual precision check.

Usage: python bench/sample_graph_edges.py [--per-repo N] [--seed S] [--root ~/.cache/bench-repos]

For each repository it extracts every supported file, resolves, keeps RESOLVED edges (confidence exact or
import; name-only candidates only with --with-name-edges) whose caller and callee are in different files,
and draws N of them with a fixed seed (sorted first, so the draw is reproducible).
Each sample prints the call-site line and the target's definition line so a reader can judge it.
Also prints per-repo timings and resolution stats. Reads the corpora only; writes nothing.
"""

from __future__ import annotations

import argparse
import random
import time
from pathlib import Path

from codebase_index.graph import Edge, extract_file, resolve_with_stats

SUFFIXES = {
    ".py": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
}
SKIP_DIRS = {"node_modules", ".git", "dist", "build", "vendor", "target", "site-packages"}
# Ten repositories, two per language family (Python, JS, TS, Go, Rust, Java), five edges each = 50.
REPOS = ["requests", "flask", "express", "axios", "zod", "trpc", "gin", "chi", "serde", "gson"]


def load(root: Path) -> dict[str, tuple[str, str]]:
    files: dict[str, tuple[str, str]] = {}
    for path in sorted(root.rglob("*")):
        language = SUFFIXES.get(path.suffix)
        if language is None or SKIP_DIRS.intersection(path.parts) or path.name.endswith((".min.js", ".d.ts")):
            continue
        try:
            files[path.relative_to(root).as_posix()] = (path.read_text(encoding="utf-8"), language)
        except (UnicodeDecodeError, OSError):
            continue
    return files


def line_of(files: dict[str, tuple[str, str]], path: str, line: int) -> str:
    lines = files[path][0].splitlines()
    return lines[line - 1].strip()[:150] if 0 < line <= len(lines) else "?"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=str(Path.home() / ".cache" / "bench-repos"))
    parser.add_argument("--per-repo", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--with-name-edges", action="store_true", help="also sample name-only candidates (not 'resolved')"
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    for name in REPOS:
        root = Path(args.root) / name
        if not root.exists():
            continue
        files = load(root)
        t0 = time.perf_counter()
        graphs = [extract_file(p, text, lang) for p, (text, lang) in files.items()]
        t1 = time.perf_counter()
        edges, stats = resolve_with_stats(graphs)
        t2 = time.perf_counter()
        cross = sorted(
            (
                e
                for e in edges
                if e.caller_path != e.callee_path and (args.with_name_edges or e.confidence != "name")
            ),
            key=lambda e: (e.caller_path, e.line, e.callee_path, e.callee),
        )
        print(f"\n## {name}: {len(files)} files, extract {t1 - t0:.2f}s, resolve {t2 - t1:.2f}s")
        print(f"   {stats}")
        print(f"   cross-file edges: {len(cross)}")
        sample: list[Edge] = rng.sample(cross, min(args.per_repo, len(cross)))
        for e in sample:
            print(f"- [{e.confidence}, n={e.candidates}] {e.caller} -> {e.callee}")
            print(f"    call {e.caller_path}:{e.line}: {line_of(files, e.caller_path, e.line)}")
            print(f"    def  {e.callee_path}:{e.callee_line}: {line_of(files, e.callee_path, e.callee_line)}")


if __name__ == "__main__":
    main()
