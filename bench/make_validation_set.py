"""Build a validation golden set from code the ranking was never tuned on (CPython's stdlib, npm's JS,
a TypeScript or Go project), so that ranking changes are judged on repositories and query styles the
benchmark does not contain.

The sources are copied to OUT/corpus (only .py/.js/.mjs/.cjs/.ts/.go files outside test folders) and
the golden set is written to OUT/golden.json; index and evaluate the corpus with
`codebase-index eval OUT/golden.json --root OUT/corpus`. Query styles, one target each (the
definition's file and lines):
  description - the first sentence of a definition's docstring / doc comment, REMOVED from the copied
                corpus (replaced by blank lines, so line numbers hold): a natural-language question
                whose words are not in the code it asks for
  identifier  - the definition's name as typed (`parse_headers`, `StreamReader`), unique in the corpus
  error       - the message of a raise / throw / errors.New / fmt.Errorf inside it, as a user pastes
                it (format verbs and template holes filled with sample values)
  snippet     - three consecutive non-trivial lines from a function body, as pasted code
Usage:
    python bench/make_validation_set.py OUT SRC [SRC ...] [--per-style 40] [--seed 0]

The sets the ranking was checked on (seed 0, 40 per style; npm has no doc comments, so no description):
    py: /usr/lib/python3.11/{email,http,json,logging,urllib,xml/etree} and argparse, configparser, csv,
        shutil, tarfile, zipfile, gzip, pathlib, subprocess, textwrap, difflib, smtplib, ftplib,
        calendar, fractions, statistics (.py)  -> 69 files, 3560 chunks, 160 queries
    js: /usr/lib/node_modules/npm/lib        -> 134 files, 1029 chunks, 120 queries
    ts: sindresorhus/got source/ + node_modules/effect/src/*.ts files 47-60 (ls order)
                                             -> 37 files, 1094 chunks, 152 queries
    go: urfave/cli (root package)            -> 42 files, 613 chunks, 132 queries
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tree_sitter import Node
from tree_sitter_language_pack import get_parser

LANGUAGES = {".py": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript"}
LANGUAGES |= {".ts": "typescript", ".go": "go"}
STYLES = ("description", "identifier", "error", "snippet")
_TEST = re.compile(r"(^|/)(tests?|__tests__|testing|spec|fixtures?|testdata|idlelib|turtledemo)(/|$)|test")
_DEFINITIONS = {
    "python": {"function_definition", "class_definition"},
    "javascript": {"function_declaration", "generator_function_declaration", "method_definition"}
    | {"class_declaration", "variable_declarator"},
    "typescript": {"function_declaration", "generator_function_declaration", "method_definition"}
    | {"class_declaration", "abstract_class_declaration", "variable_declarator", "interface_declaration"},
    "go": {"function_declaration", "method_declaration", "type_spec"},
}
_FUNCTIONS = {"function_definition", "function_declaration", "generator_function_declaration"}
_FUNCTIONS |= {"method_definition", "method_declaration", "variable_declarator"}


@dataclass
class Definition:
    path: str
    name: str
    kind: str
    start: int  # 1-based, inclusive
    end: int
    doc: tuple[int, int, str] | None = None  # (first line, last line, text), 1-based
    errors: list[str] = field(default_factory=list)
    body: list[str] = field(default_factory=list)


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _first_sentence(doc: str) -> str:
    text = " ".join(doc.strip().split("\n\n", 1)[0].split())
    match = re.match(r"(.+?[.!?])(\s|$)", text)
    return (match.group(1) if match else text).rstrip(".")


def _clean_comment(raw: str) -> str:
    lines = []
    for line in raw.splitlines():
        line = re.sub(r"^\s*(/\*\*?|\*/|\*|//+)", "", line).replace("*/", "").strip()
        if line.startswith("@"):  # JSDoc tags end the description
            break
        lines.append(line)
    return "\n".join(lines).strip()


def _doc(node: Node, language: str) -> tuple[int, int, str] | None:
    """The docstring (Python) or the doc comment right above the definition (JS/TS/Go)."""
    if language == "python":
        body = node.child_by_field_name("body")
        first = body.named_children[0] if body is not None and body.named_children else None
        if first is not None and first.type == "expression_statement" and first.named_children:
            first = first.named_children[0]
        if first is None or first.type != "string":
            return None
        raw = _text(first).strip("\"'rbuRBU")
        return first.start_point[0] + 1, first.end_point[0] + 1, raw
    anchor = node
    if node.type == "variable_declarator" and node.parent is not None:
        anchor = node.parent
    while anchor.parent is not None and anchor.parent.type in ("export_statement", "type_declaration"):
        anchor = anchor.parent
    comments: list[Node] = []
    prev = anchor.prev_sibling
    line = anchor.start_point[0]
    while prev is not None and prev.type == "comment" and prev.end_point[0] >= line - 1:
        comments.insert(0, prev)
        line = prev.start_point[0]
        if language != "go":
            break
        prev = prev.prev_sibling
    if not comments or (language != "go" and not _text(comments[0]).startswith("/**")):
        return None
    raw = _clean_comment("\n".join(_text(c) for c in comments))
    return comments[0].start_point[0] + 1, comments[-1].end_point[0] + 1, raw


def _fill(template: str) -> str:
    """Make a message look like what a user sees: format verbs and template holes get sample values."""
    text = re.sub(r"\$\{[^}]*\}", "value", template)
    text = re.sub(r"%[-+# 0-9.]*[vsdqTwxf]", "value", text)
    text = re.sub(r"\{[^{}]*\}", "value", text)
    return text.replace("\\n", " ").strip()


def _error_message(node: Node, language: str) -> str | None:
    """The literal message of an error raised/thrown/constructed at this node, if it is one."""
    if language == "python" and node.type == "raise_statement":
        call = next((c for c in node.named_children if c.type == "call"), None)
    elif language in ("javascript", "typescript") and node.type == "throw_statement":
        call = next((c for c in node.named_children if c.type == "new_expression"), None)
    elif language == "go" and node.type == "call_expression":
        fn = node.child_by_field_name("function")
        call = node if fn is not None and _text(fn) in ("errors.New", "fmt.Errorf") else None
    else:
        return None
    args = call.child_by_field_name("arguments") if call is not None else None
    first = args.named_children[0] if args is not None and args.named_children else None
    if first is None or first.type not in (
        "string",
        "template_string",
        "interpreted_string_literal",
        "raw_string_literal",
    ):
        return None
    raw = _text(first)
    raw = re.sub(r"^[rbfuRBFU]*('''|\"\"\"|'|\"|`)", "", raw)
    raw = re.sub(r"('''|\"\"\"|'|\"|`)$", "", raw)
    message = _fill(raw)
    return message if len(message.split()) >= 3 else None


def _name(node: Node) -> str:
    name = node.child_by_field_name("name")
    return _text(name) if name is not None else ""


def parse_file(path: Path, rel: str, language: str) -> list[Definition]:
    source = path.read_bytes()
    tree = get_parser(language).parse(source)  # type: ignore[arg-type]
    lines = source.decode("utf-8", "replace").splitlines()
    found: list[tuple[Node, Definition]] = []
    stack = [tree.root_node]
    kinds = _DEFINITIONS[language]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.children))
        if node.type not in kinds:
            continue
        if node.type == "variable_declarator":
            value = node.child_by_field_name("value")
            if value is None or value.type not in ("arrow_function", "function_expression", "function"):
                continue
        name = _name(node)
        if not name:
            continue
        d = Definition(rel, name, node.type, node.start_point[0] + 1, node.end_point[0] + 1)
        d.doc = _doc(node, language)
        if node.type in _FUNCTIONS and d.end - d.start >= 6:
            d.body = lines[d.start : d.end - 1]
        found.append((node, d))
    # Each error belongs to the innermost definition around it.
    errors: list[tuple[int, str]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        message = _error_message(node, language)
        if message:
            errors.append((node.start_point[0] + 1, message))
    for line, message in errors:
        inner = [d for _, d in found if d.start <= line <= d.end]
        if inner:
            min(inner, key=lambda d: d.end - d.start).errors.append(message)
    return [d for _, d in found]


def _snippet(body: list[str], rng: random.Random) -> str | None:
    """Three consecutive substantial lines (not comments, not lone braces), stripped."""
    good = [
        i
        for i in range(len(body) - 2)
        if all(
            len(body[j].strip()) >= 12 and not body[j].strip().startswith(("#", "//", "*", "/*", '"""'))
            for j in (i, i + 1, i + 2)
        )
    ]
    if not good:
        return None
    i = rng.choice(good)
    return "\n".join(body[j].strip() for j in (i, i + 1, i + 2))


def collect(files: list[tuple[Path, str, str]], rng: random.Random) -> dict[str, list[dict[str, object]]]:
    defs: list[Definition] = []
    for path, rel, language in files:
        try:
            defs += parse_file(path, rel, language)
        except (OSError, UnicodeDecodeError) as exc:
            print(f"skip {rel}: {exc}")
    names = Counter(d.name for d in defs)
    styles: dict[str, list[dict[str, object]]] = {s: [] for s in STYLES}
    for d in defs:
        target = {"path": d.path, "start_line": d.start, "end_line": d.end}

        def add(style: str, query: str, t: dict[str, object] = target, d: Definition = d) -> None:
            styles[style].append({"query": query, "relevant": [t], "category": style, "_def": d})

        if d.doc:
            sentence = _first_sentence(d.doc[2])
            if sentence.split(" ", 1)[0] == d.name:  # Go style "parseArgs splits ...": drop the name
                sentence = sentence.split(" ", 1)[-1]
            if 5 <= len(sentence.split()) <= 25 and not re.search(r"[{}();=]", sentence):
                add("description", sentence)
        if names[d.name] == 1 and len(d.name) >= 6 and not d.name.startswith("__"):
            add("identifier", d.name)
        if d.errors:
            add("error", d.errors[0])
        if d.body and (snip := _snippet(d.body, rng)):
            add("snippet", snip)
    return styles


def _blank_docs(text: str, docs: list[tuple[int, int]], language: str) -> str:
    """Remove the chosen doc comments / docstrings, keeping every other line where it was."""
    lines = text.split("\n")
    for start, end in docs:
        indent = re.match(r"\s*", lines[start - 1]).group(0)  # type: ignore[union-attr]
        for i in range(start - 1, end):
            lines[i] = ""
        if language == "python":
            lines[start - 1] = indent + "..."  # the body must keep a statement
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="output folder (corpus/ and golden.json are written there)")
    parser.add_argument("sources", type=Path, nargs="+", help="folders or files to copy and query")
    parser.add_argument("--per-style", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    corpus = args.out / "corpus"
    if corpus.exists():
        shutil.rmtree(corpus)
    files: list[tuple[Path, str, str]] = []
    for src in args.sources:
        src = src.resolve()
        paths = [src] if src.is_file() else sorted(src.rglob("*"))
        for path in paths:
            rel = (Path(src.name) / path.relative_to(src)).as_posix() if src.is_dir() else src.name
            language = LANGUAGES.get(path.suffix)
            if (
                language is None
                or not path.is_file()
                or _TEST.search(rel.lower())
                or path.name.endswith(".d.ts")
            ):
                continue
            files.append((path, rel, language))
    styles = collect(files, rng)
    golden: list[dict[str, object]] = []
    blanked: dict[str, list[tuple[int, int]]] = {}
    for style, items in styles.items():
        unique = list({str(i["query"]): i for i in items}.values())
        for item in rng.sample(unique, min(args.per_style, len(unique))):
            d = item.pop("_def")
            assert isinstance(d, Definition)
            if style == "description" and d.doc is not None:
                blanked.setdefault(d.path, []).append((d.doc[0], d.doc[1]))
            golden.append(item)
    for path, rel, language in files:
        dest = corpus / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text(encoding="utf-8", errors="replace")
        dest.write_text(_blank_docs(text, blanked.get(rel, []), language), encoding="utf-8")
    (args.out / "golden.json").write_text(json.dumps(golden, indent=1))
    counts = Counter(str(g["category"]) for g in golden)
    print(f"{len(files)} files, {len(golden)} queries {dict(counts)} -> {args.out}")


if __name__ == "__main__":
    main()
