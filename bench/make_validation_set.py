"""Build a validation golden set from Python code the ranking was never tuned on (e.g. CPython's stdlib).

Three query styles, one target each (the defining file, with the definition's lines):
  docstring  - the first sentence of a function's or class's docstring ("Return the list of ...")
  identifier - the definition's name as typed (`parse_headers`, `StreamReader`)
  error      - the message of a `raise SomeError("...")` inside it, as a user would paste it
The docstrings stay in the indexed text (their words are in the code), so docstring queries are easier
than real questions; they still separate rankers well. Usage:
    python bench/make_validation_set.py ROOT OUT.json [--per-style 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import ast
import json
import random
import re
from pathlib import Path


def _first_sentence(doc: str) -> str:
    text = " ".join(doc.strip().split("\n\n", 1)[0].split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return (match.group(1) if match else text).rstrip(".")


def collect(root: Path) -> dict[str, list[dict[str, object]]]:
    styles: dict[str, list[dict[str, object]]] = {"docstring": [], "identifier": [], "error": []}
    names: dict[str, int] = {}
    found: list[tuple[str, ast.AST, str]] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if "test" in rel.lower():
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names[node.name] = names.get(node.name, 0) + 1
                found.append((rel, node, node.name))
    for rel, node, name in found:
        assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        target = {"path": rel, "start_line": node.lineno, "end_line": node.end_lineno or node.lineno}
        doc = ast.get_docstring(node)
        if doc:
            sentence = _first_sentence(doc)
            if 4 <= len(sentence.split()) <= 20:
                styles["docstring"].append({"query": sentence, "relevant": [target], "category": "docstring"})
        if names[name] == 1 and len(name) >= 6 and not name.startswith("__"):
            styles["identifier"].append({"query": name, "relevant": [target], "category": "identifier"})
        for sub in ast.walk(node):
            if isinstance(sub, ast.Raise) and isinstance(sub.exc, ast.Call) and sub.exc.args:
                arg = sub.exc.args[0]
                if (
                    isinstance(arg, ast.Constant)
                    and isinstance(arg.value, str)
                    and len(arg.value.split()) >= 3
                ):
                    styles["error"].append({"query": arg.value, "relevant": [target], "category": "error"})
                    break
    return styles


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("root", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--per-style", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    golden: list[dict[str, object]] = []
    for items in collect(args.root).values():
        unique = list({str(i["query"]): i for i in items}.values())
        golden += rng.sample(unique, min(args.per_style, len(unique)))
    args.out.write_text(json.dumps(golden, indent=1))
    print(f"{len(golden)} queries -> {args.out}")


if __name__ == "__main__":
    main()
