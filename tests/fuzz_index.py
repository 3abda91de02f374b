"""Fuzz the indexing pipeline with large real trees: every file of the project's own `.venv` site-packages
and `node_modules` (every format there is: Python, JS/TS, JSON, YAML, Markdown, C headers, type stubs,
licences, shared libraries) goes through the real `Engine.index` (discovery, reading, chunking in worker
processes, tokenizing, code-graph extraction, SQLite) and keyword searches, hostile ones included.

One run per top-level folder of each tree (and one for the files directly in it), so a failure names its
package. An aborted run is an `Engine.index` or `search` that raised: the containment contract is 0 of
them, every file indexed or skipped with a reason. Discovery's always-skipped folder names (`dist`,
`build`, `vendor`, nested `node_modules`, ...) are lifted so their files are fuzzed too, and every file
name is included (`include: ["**/*"]`, which as a pattern of the user's own also brings generated files
back: they are chunked too, so "generated" does not appear in the counts).

    make fuzz                                  # site-packages + node_modules + a hostile tree, the full run
    .venv/bin/python tests/fuzz_index.py PATH  # any trees

`hostile_tree` generates what no package holds but a clone can (issue 27): file and folder names that are
not UTF-8, hold control characters or newlines, are 255 bytes long or nest past PATH_MAX, and ignore files
with lines git drops (`!`, a lone `\\`), bytes that are not UTF-8, very long lines, or that are too
large to read.
`tests/test_fuzz.py` runs a bounded sample of a few hundred files of mixed formats in `make test`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import sysconfig
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from codebase_index import patterns
from codebase_index.config import Config
from codebase_index.service import Engine
from codebase_index.tools.schema import MAX_QUERY_CHARS

EVERY_FILE = ("**/*",)
# Queries at the wire's limits and past what a tokenizer expects: each must answer, never raise.
HOSTILE_QUERIES = (
    "x" * MAX_QUERY_CHARS,
    " ".join(["implementations"] * (MAX_QUERY_CHARS // 16)),
    "a\0b error",
    "\ud800 error",
    '(("*:^- NEAR AND OR NOT',
    "\U0001f600" * (MAX_QUERY_CHARS // 2),
    "\u202e\u200bfoo",
    "_" * MAX_QUERY_CHARS,
    "a.b.c." * (MAX_QUERY_CHARS // 6),
)


@dataclass
class FuzzReport:
    runs: int = 0
    aborted: list[str] = field(default_factory=list)  # "<run>: <traceback tail>"
    files: int = 0
    chunks: int = 0
    seen: int = 0  # files (and skipped folders) discovery reported, indexed or not
    skipped: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)  # "path: detail" of reason "error"
    chunk_fallbacks: int = 0
    graph_errors: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {
            "runs": self.runs,
            "aborted_runs": len(self.aborted),
            "files_indexed": self.files,
            "chunks": self.chunks,
            "skipped": dict(sorted(self.skipped.items())),
            "errors": self.errors,
            "chunk_fallbacks": self.chunk_fallbacks,
            "graph_errors": self.graph_errors,
            "seconds": round(self.seconds, 1),
            "aborted": self.aborted,
        }


@contextmanager
def every_folder() -> Iterator[None]:
    """Lift the always-skipped folder names for the fuzz (hidden folders stay skipped)."""
    saved = patterns.ALWAYS_SKIP_DIRS
    patterns.ALWAYS_SKIP_DIRS = frozenset({".git"})
    try:
        yield
    finally:
        patterns.ALWAYS_SKIP_DIRS = saved


def runs_of(tree: Path, include: Sequence[str] = EVERY_FILE) -> list[tuple[str, Path, Config]]:
    """(name, root, config) per top-level folder, plus the loose files at the top (folders excluded)."""
    out: list[tuple[str, Path, Config]] = []
    loose = False
    for entry in sorted(tree.iterdir()):
        if entry.is_dir() and not entry.is_symlink() and not entry.name.startswith("."):
            out.append((f"{tree.name}/{entry.name}", entry, Config(include=tuple(include))))
        elif entry.is_file():
            loose = True
    if loose:
        out.append((f"{tree.name}/*", tree, Config(include=tuple(include), exclude=("*/",))))
    return out


def fuzz_run(name: str, root: Path, config: Config, work: Path, report: FuzzReport, workers: int) -> None:
    index = Path(tempfile.mkdtemp(prefix="index-", dir=work))
    report.runs += 1
    try:
        engine = Engine(root, config, index_path=index, workers=workers)
        try:
            result = engine.index()
            engine.search("error handling", mode="keyword")
            for query in HOSTILE_QUERIES:
                engine.search(query, mode="keyword")
            rows = engine.skipped_files()
        finally:
            engine.close()
    except Exception:
        report.aborted.append(f"{name}: {traceback.format_exc(limit=-3)}")
        return
    finally:
        shutil.rmtree(index, ignore_errors=True)
    report.files += result.files
    report.chunks += result.chunks
    report.skipped.update(result.skipped)
    report.seen += result.files + sum(result.skipped.values())
    report.chunk_fallbacks += getattr(result, "chunk_fallbacks", 0)
    report.graph_errors += result.graph_errors
    report.errors += [f"{name}/{r.path}: {r.detail}" for r in rows if r.reason == "error"]


def fuzz(
    trees: Sequence[Path], *, workers: int = 2, say: bool = False, include: Sequence[str] = EVERY_FILE
) -> FuzzReport:
    report = FuzzReport()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="codebase-index-fuzz-") as tmp, every_folder():
        for tree in trees:
            for name, root, config in runs_of(tree, include):
                before = report.files
                fuzz_run(name, root, config, Path(tmp), report, workers)
                if say:
                    print(f"{name}: {report.files - before} files", file=sys.stderr, flush=True)
    report.seconds = time.perf_counter() - started
    return report


def sample_tree(sources: Sequence[Path], dest: Path, count: int) -> int:
    """Copy `count` files of mixed formats from `sources` into `dest` (relative paths kept): round-robin
    over file extensions so rare formats are as likely as .py. Returns how many were copied."""
    by_ext: dict[str, list[Path]] = {}
    for source in sources:
        for folder, dirs, names in os.walk(source):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                path = Path(folder) / name
                if path.is_symlink() or not path.is_file() or path.stat().st_size > 262_144:
                    continue
                by_ext.setdefault(path.suffix.lower() or name, []).append(path)
    queues = [paths[:: max(1, len(paths) // count)] for _, paths in sorted(by_ext.items())]
    copied = 0
    while copied < count and any(queues):
        for queue in queues:
            if not queue or copied >= count:
                continue
            path = queue.pop(0)
            source = next(s for s in sources if path.is_relative_to(s))
            target = dest / source.name / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            copied += 1
    return copied


_ODD_BYTES = (
    [bytes([b]) for b in range(1, 32)]  # control characters, newline and escape among them
    + [b"\x7f", b"\x80", b"\xbf", b"\xc3", b"\xe2\x80", b"\xed\xa0\x80", b"\xfe", b"\xff"]  # not UTF-8
    + ["\u2028".encode(), "\u202e".encode(), "é".encode(), "\U0001f600".encode(), b"\\", b" ", b"."]
)
_IGNORE_LINES = (
    b"!",
    b"\\",
    b"!\\",
    b"[",
    b"[]",
    b"[!]",
    b"***",
    b"**/",
    b"/",
    b"\\ ",
    b"#!",
    b"*.py",
    b"!keep*.py",
    b"\xff\xfe\x00bad",
    b"\xc3(",
)


def _odd_name(rng: random.Random, limit: int = 255) -> bytes:
    """One file or folder name of 1..`limit` bytes mixing odd bytes into plain letters (never `/` or NUL,
    never `.` or `..`)."""
    parts = [
        rng.choice(_ODD_BYTES) if rng.random() < 0.3 else b"abcxyz"[rng.randrange(6) :] for _ in range(8)
    ]
    name = b"".join(parts) * rng.choice((1, 1, 1, 40))
    name = name[: rng.randint(1, limit)] + rng.choice((b"", b".py", b".md", b".json"))
    name = name[-limit:]
    return b"f" + name[1:] if name in (b".", b"..") or not name else name


def _write_at(dir_fd: int, name: bytes, data: bytes) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dir_fd)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def hostile_tree(dest: Path, *, seed: int = 27, files: int = 200) -> int:
    """Write `files` files with generated odd names (some in odd folders, some nested past PATH_MAX) and
    a hostile ignore file in every folder into `dest`; returns how many files were written. Made with
    folder descriptors, so paths longer than the OS accepts in one call are made too."""
    rng = random.Random(seed)
    dest.mkdir(parents=True, exist_ok=True)
    root_fd = os.open(dest, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    written = 0
    try:
        folders = [(root_fd, 0)]
        for i in range(files):
            dir_fd, depth = folders[rng.randrange(len(folders))]
            name = _odd_name(rng)
            try:
                if rng.random() < 0.1 and depth < 24:
                    os.mkdir(name, dir_fd=dir_fd)
                    sub = os.open(name, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0), dir_fd=dir_fd)
                    folders.append((sub, depth + 1))
                    lines = [rng.choice(_IGNORE_LINES) for _ in range(rng.randint(1, 6))]
                    if rng.random() < 0.2:
                        lines.append(b"*" + rng.choice(_ODD_BYTES) * 5000)  # a very long line
                    _write_at(sub, b".gitignore", b"\n".join(lines) + b"\n")
                    continue
                body = f"def generated_{i}():\n    return {i}\n".encode()
                _write_at(dir_fd, name, body)
                written += 1
            except FileExistsError:
                continue
        deep_fd, _ = folders[0]
        deep = os.dup(deep_fd)
        for _ in range(20):  # 20 x 250 bytes: past PATH_MAX (4096)
            os.mkdir(b"d" * 250, dir_fd=deep)
            nxt = os.open(b"d" * 250, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0), dir_fd=deep)
            os.close(deep)
            deep = nxt
        _write_at(deep, b"deep.py", b"def deepest():\n    return 0\n")
        os.close(deep)
        _write_at(root_fd, b".gitignore", b"!\n\\\n" + b"#" * (5 * 1_048_576))  # too large to read
        written += 1
        for fd, _ in folders[1:]:
            os.close(fd)
    finally:
        os.close(root_fd)
    return written


def default_trees(project: Path) -> list[Path]:
    site = Path(sysconfig.get_paths()["purelib"])
    return [p for p in (site, project / "node_modules") if p.is_dir()]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "trees", nargs="*", type=Path, help="default: this venv's site-packages and ./node_modules"
    )
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--include", action="append", help="include pattern (repeatable; default every file)")
    p.add_argument("--json", type=Path, help="also write the report here")
    args = p.parse_args(argv)
    trees = [t.resolve() for t in args.trees] or default_trees(Path.cwd())
    if not trees:
        print("nothing to fuzz: no site-packages or node_modules found", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="codebase-index-hostile-") as hostile:
        if not args.trees:
            hostile_tree(Path(hostile) / "hostile" / "names", files=2000)
            trees.append(Path(hostile) / "hostile")
        report = fuzz(trees, workers=args.workers, say=True, include=args.include or EVERY_FILE)
    data = report.as_dict()
    data["trees"] = [str(t) for t in trees]
    text = json.dumps(data, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 1 if report.aborted else 0


if __name__ == "__main__":
    sys.exit(main())
