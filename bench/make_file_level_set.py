"""Build a FILE-level validation set (what a module is for, answered by the whole file) from Python sources
the ranking was never tuned on, for changes that target architecture-style questions (file cards, file
votes), which the per-definition validation sets (make_validation_set.py) barely exercise.

Each query is the first sentence of a module docstring (4+ words); the docstring is REMOVED from the
copied corpus (blank lines, so line numbers hold), so the words of the question are not in the file; the
target is the file (no line span). Test folders are skipped.
Usage:
    python bench/make_file_level_set.py OUT SRC [SRC ...]
    codebase-index index --root OUT/corpus --index-dir OUT/index   (waits for the embeddings too)
    python bench/validate.py --val OUT/..   (or file_vector_experiment.py --val-only --val-root OUT/..)
The set measured in bench/file_vector_experiment.md: /usr/lib/python3.11/{asyncio, concurrent, email,
http, importlib, json, logging, multiprocessing, urllib, xml, xmlrpc, sqlite3, wsgiref, dbm, html,
collections} -> 177 files, 94 queries (6,327 chunks).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

_TEST = re.compile(r"(^|/)(tests?|__tests__|testing|idlelib|turtledemo)(/|$)|test")


def first_sentence(doc: str) -> str:
    """The docstring's first sentence on one line (up to '. ' or a blank line)."""
    para = " ".join(doc.strip().split("\n\n", 1)[0].split())
    cut = re.search(r"(?<=[.!?])\s", para)
    return (para[: cut.start()] if cut else para).rstrip(".")


def strip_module_doc(source: str) -> tuple[str, str] | None:
    """(source with the module docstring blanked, the docstring) or None when there is none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    doc = ast.get_docstring(tree, clean=True)
    if not doc or not tree.body:
        return None
    node = tree.body[0]
    assert node.end_lineno is not None
    lines = source.splitlines(keepends=True)
    for i in range(node.lineno - 1, node.end_lineno):
        lines[i] = "\n"
    return "".join(lines), doc


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("sources", type=Path, nargs="+")
    parser.add_argument("--min-words", type=int, default=4)
    args = parser.parse_args()
    corpus = args.out / "corpus"
    golden: list[dict[str, object]] = []
    files = 0
    for src in args.sources:
        base = src.parent
        for path in sorted(src.rglob("*.py")):
            rel = path.relative_to(base).as_posix()
            if _TEST.search(rel):
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            stripped = strip_module_doc(text)
            if stripped is not None:
                sentence = first_sentence(stripped[1])
                if len(sentence.split()) >= args.min_words:
                    text = stripped[0]
                    golden.append({"query": sentence, "relevant": [rel], "category": "module"})
            target = corpus / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            files += 1
    (args.out / "golden.json").write_text(json.dumps(golden, indent=1))
    print(f"{files} files, {len(golden)} queries -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
