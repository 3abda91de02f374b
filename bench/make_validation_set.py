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
# The languages the training sets add (bench/make_training_set.py). The validation sets above keep the
# four original languages, so rebuilding them gives the same golden files.
MORE_LANGUAGES = {".rs": "rust", ".java": "java", ".kt": "kotlin", ".cs": "csharp", ".rb": "ruby"}
MORE_LANGUAGES |= {".php": "php", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp"}
MORE_LANGUAGES |= {".cxx": "cpp", ".hh": "cpp", ".tsx": "tsx", ".jsx": "javascript"}
STYLES = ("description", "identifier", "error", "snippet")
_TEST = re.compile(r"(^|/)(tests?|__tests__|testing|spec|fixtures?|testdata|idlelib|turtledemo)(/|$)|test")
_DEFINITIONS = {
    "python": {"function_definition", "class_definition"},
    "javascript": {"function_declaration", "generator_function_declaration", "method_definition"}
    | {"class_declaration", "variable_declarator"},
    "typescript": {"function_declaration", "generator_function_declaration", "method_definition"}
    | {"class_declaration", "abstract_class_declaration", "variable_declarator", "interface_declaration"},
    "go": {"function_declaration", "method_declaration", "type_spec"},
    "rust": {"function_item", "struct_item", "enum_item", "trait_item"},
    "java": {"method_declaration", "constructor_declaration", "class_declaration", "interface_declaration"}
    | {"enum_declaration", "record_declaration"},
    "kotlin": {"function_declaration", "class_declaration", "object_declaration"},
    "csharp": {"method_declaration", "constructor_declaration", "class_declaration", "interface_declaration"}
    | {"struct_declaration", "enum_declaration", "record_declaration"},
    "c": {"function_definition", "struct_specifier"},
    "cpp": {"function_definition", "class_specifier", "struct_specifier"},
    "ruby": {"method", "singleton_method", "class", "module"},
    "php": {"function_definition", "method_declaration", "class_declaration", "interface_declaration"}
    | {"trait_declaration", "enum_declaration"},
}
_DEFINITIONS["tsx"] = _DEFINITIONS["typescript"]
_FUNCTIONS = {"function_definition", "function_declaration", "generator_function_declaration"}
_FUNCTIONS |= {"method_definition", "method_declaration", "variable_declarator"}
_FUNCTIONS |= {"function_item", "constructor_declaration", "method", "singleton_method"}


@dataclass
class Definition:
    path: str
    name: str
    kind: str
    start: int  # 1-based, inclusive
    end: int
    doc: tuple[int, int, str] | None = None  # (first line, last line, text), 1-based
    errors: list[str] = field(default_factory=list)
    error_kinds: list[str] = field(default_factory=list)  # the exception type beside each message, or ""
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
    """The docstring (Python) or the doc comment right above the definition (JS/TS/Go and the rest)."""
    if language in _MORE_DOCS:
        return _doc_comment_above(node, language)
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
    if language in _MORE_DOCS:
        site = error_site(node, language)
        return site[1] if site else None
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


def error_kind(node: Node, language: str) -> str:
    """The exception type an error site raises (`ValueError`, `TypeError`), or "" (Go errors, C)."""
    if language in _MORE_DOCS:
        site = error_site(node, language)
        return site[0] if site else ""
    if language == "python":
        call = next((c for c in node.named_children if c.type == "call"), None)
        fn = call.child_by_field_name("function") if call is not None else None
    elif language in ("javascript", "typescript", "tsx"):
        call = next((c for c in node.named_children if c.type == "new_expression"), None)
        fn = call.child_by_field_name("constructor") if call is not None else None
    else:
        fn = None
    return _text(fn).rsplit(".", 1)[-1] if fn is not None else ""


def _name(node: Node) -> str:
    name = node.child_by_field_name("name")
    if name is not None:
        return _text(name)
    declarator = node.child_by_field_name("declarator")  # C/C++: int *f(...) -> f
    while declarator is not None and declarator.type not in _C_NAMES:
        inner = declarator.child_by_field_name("declarator")
        declarator = inner or next((c for c in declarator.named_children if c.type in _C_NAMES), None)
    if declarator is not None:
        return _text(declarator).split("::")[-1]
    if node.type in ("function_declaration", "class_declaration", "object_declaration"):  # Kotlin
        first = next((c for c in node.named_children if c.type in _KOTLIN_NAMES), None)
        return _text(first) if first is not None else ""
    return ""


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
        if node.type in ("struct_specifier", "class_specifier") and node.child_by_field_name("body") is None:
            continue  # `struct buf *b`: a use of the type, not its definition
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
    errors: list[tuple[int, str, str]] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        message = _error_message(node, language)
        if message:
            errors.append((node.start_point[0] + 1, message, error_kind(node, language)))
    for line, message, kind in errors:
        inner = [d for _, d in found if d.start <= line <= d.end]
        if inner:
            innermost = min(inner, key=lambda d: d.end - d.start)
            innermost.errors.append(message)
            innermost.error_kinds.append(kind)
    return [d for _, d in found]


# ------------------------------------------------------------------ the languages the training sets add

_MORE_DOCS = {"rust", "java", "kotlin", "csharp", "c", "cpp", "ruby", "php"}
_C_NAMES = {"identifier", "field_identifier", "qualified_identifier", "operator_name", "destructor_name"}
_KOTLIN_NAMES = {"simple_identifier", "type_identifier"}
_COMMENTS = {"comment", "line_comment", "block_comment", "multiline_comment"}
_SKIPPED_ABOVE = {"attribute_item", "inner_attribute_item", "attribute_list", "annotation", "decorator"}
_STRINGS = {"string_literal", "string", "raw_string_literal", "encapsed_string", "interpreted_string_literal"}
_STRINGS |= {"interpolated_string_expression", "verbatim_string_literal", "line_string_literal"}
_QUOTES = {'"', "'", "`", '"""', "'''", '$"', '@"'}
_STRING_PARTS = ("content", "fragment", "escape", "text")
_RUST_ERROR_MACROS = {"panic", "bail", "anyhow", "unreachable", "unimplemented", "todo", "format_err"}
_KOTLIN_ERROR_CALLS = {"error", "require", "check", "requireNotNull", "checkNotNull"}
_C_ERROR_CALL = re.compile(r"(^|_)(err|error|errorf|die|fatal|panic|abort|fail|failf|throw)$", re.I)
_QUOTE_RE = r"('''|\"\"\"|'|\"|`)"


def _doc_comment_above(node: Node, language: str) -> tuple[int, int, str] | None:
    """The comment block right above a definition (attributes between them skipped): `///` or `/** */`
    for Rust, Java, Kotlin, C#, PHP; any adjacent comment for C/C++; `#` lines for Ruby."""
    anchor = node
    while anchor.parent is not None and anchor.parent.type in ("template_declaration",):
        anchor = anchor.parent
    prev = anchor.prev_sibling
    line = anchor.start_point[0]
    while prev is not None and prev.type in _SKIPPED_ABOVE:
        line = prev.start_point[0]
        prev = prev.prev_sibling
    comments: list[Node] = []
    while prev is not None and prev.type in _COMMENTS and prev.end_point[0] >= line - 1:
        comments.insert(0, prev)
        line = prev.start_point[0]
        if _text(prev).startswith("/*"):
            break
        prev = prev.prev_sibling
    if not comments:
        return None
    head = _text(comments[0])
    if language in ("java", "kotlin", "php") and not head.startswith("/**"):
        return None
    if language in ("rust", "csharp") and not head.startswith(("///", "/**")):
        return None
    texts = [re.sub(r"^\s*#+", "", _text(c)) if language == "ruby" else _text(c) for c in comments]
    raw = "\n".join(texts)
    if language == "csharp":
        raw = re.sub(r"</?[a-zA-Z][^>]*>", " ", raw)
    raw = _clean_comment(raw.replace("/*!", "/*").replace("//!", "//"))
    return comments[0].start_point[0] + 1, comments[-1].end_point[0] + 1, raw


def _string_text(node: Node) -> str:
    """A string literal as its reader sees it: content kept, interpolations shown as `value`."""
    parts = [c for c in node.children if c.type not in _QUOTES and _text(c).strip("$@\"'`")]
    if not any(any(k in c.type for k in _STRING_PARTS) for c in parts):
        raw = re.sub(r"^[@$rbcLuU8]*#*" + _QUOTE_RE, "", _text(node))
        return _fill(re.sub(_QUOTE_RE + "#*$", "", raw))
    text = "".join(_text(c) if any(k in c.type for k in _STRING_PARTS) else "value" for c in parts)
    return _fill(re.sub(r"(value)+", "value", text))


def _first_string(node: Node, depth: int = 5) -> Node | None:
    """The first string literal under `node` (breadth first, a few levels deep)."""
    level = [node]
    for _ in range(depth):
        nxt: list[Node] = []
        for n in level:
            for c in n.named_children:
                if c.type in _STRINGS:
                    return c
                nxt.append(c)
        level = nxt
    return None


def _callee(node: Node) -> str:
    fn = node.child_by_field_name("function") or node.child_by_field_name("method")
    if fn is None and node.named_children:
        fn = node.named_children[0]
    return _text(fn).rsplit(".", 1)[-1].rsplit("::", 1)[-1] if fn is not None else ""


def _thrown_kind(node: Node) -> str:
    created = next((c for c in node.named_children if "creation" in c.type or "call" in c.type), None)
    if created is None:
        return ""
    typ = created.child_by_field_name("type") or next(
        (c for c in created.named_children if "identifier" in c.type or "name" in c.type), None
    )
    return _text(typ).rsplit("\\", 1)[-1].rsplit("::", 1)[-1].rsplit(".", 1)[-1] if typ is not None else ""


def error_site(node: Node, language: str) -> tuple[str, str] | None:
    """(error kind, message) when `node` raises/throws/panics with a literal message, for the languages
    the training sets add: `throw new X("...")`, `raise X, "..."`, `panic!("...")`, `die("...")`."""
    kind = ""
    holder: Node | None = None
    t = node.type
    if t in ("throw_statement", "throw_expression") or (
        t == "jump_expression" and _text(node).startswith("throw")
    ):
        holder, kind = node, _thrown_kind(node)
    elif language == "rust" and t == "macro_invocation":
        macro = node.child_by_field_name("macro")
        if macro is not None and _text(macro) in _RUST_ERROR_MACROS:
            holder, kind = node, _text(macro)
    elif language == "rust" and t == "call_expression" and _callee(node) == "expect":
        holder, kind = node.child_by_field_name("arguments"), "panic"
    elif language == "kotlin" and t == "call_expression" and _callee(node) in _KOTLIN_ERROR_CALLS:
        holder, kind = node, "IllegalStateException"
    elif language == "ruby" and t == "call" and _callee(node) in ("raise", "fail"):
        holder = node.child_by_field_name("arguments")
        consts = (
            [c for c in holder.named_children if c.type in ("constant", "scope_resolution")] if holder else []
        )
        kind = _text(consts[0]).rsplit("::", 1)[-1] if consts else "RuntimeError"
    elif language in ("c", "cpp") and t == "call_expression":
        name = _callee(node)
        args = node.child_by_field_name("arguments")
        to_stderr = name == "fprintf" and args is not None and _text(args).lstrip("( ").startswith("stderr")
        if _C_ERROR_CALL.search(name) or to_stderr:
            holder = args
    if holder is None:
        return None
    literal = _first_string(holder)
    if literal is None:
        return None
    message = _string_text(literal).strip()
    return (kind, message) if len(message.split()) >= 3 else None


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
