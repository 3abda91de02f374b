"""Per-file extraction: definitions, call sites and imports from one tree-sitter query per language.

One query pass (in C) finds every interesting node; the definitions, sorted, give an owner map (byte
offset -> innermost definition) that places each call site, import and variable by one bisection, without
walking the tree in Python. Indexing takes `extract_rows` (plain tuples, the stored form); `extract_file`
wraps the same rows into records.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import NamedTuple

from tree_sitter import Node, QueryCursor, Tree

from .imports import IMPORT_DECODERS, text
from .languages import (
    DEF,
    IMPORT,
    LOCAL,
    PACKAGE,
    REF,
    SCOPE,
    LanguageSpec,
    language_spec,
    parser_for,
    query_plan,
)
from .records import CLASS_KINDS, Definition, FileGraph, ImportBinding, Reference

_MAX_RECEIVER = 120
_TYPE_PREFIX = re.compile(r"^(?:[&*?\s]|'\w+\s|mut\s|dyn\s|impl\s|const\s)+")
_TYPE_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*")
_NOT_OWNERS = frozenset({"exports", "module", "window", "globalThis"})
_GO_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}
# Literal initialisers give builtin types: `d = {}` then `d.update()` is not a repo method.
_LITERAL_TYPES = {
    "dictionary": "dict",
    "dictionary_comprehension": "dict",
    "list": "list",
    "list_comprehension": "list",
    "set": "set",
    "set_comprehension": "set",
    "concatenated_string": "str",
    "string": "str",
    "array": "Array",
    "template_string": "String",
}
_HERITAGE = frozenset({"class_heritage", "superclass", "super_interfaces", "extends_interfaces"})


@dataclass(eq=False, slots=True)
class _Container:
    """A definition or a naming scope (Rust impl/mod) with its byte span, before qualification."""

    start: int
    end: int
    name: str
    kind: str
    is_def: bool
    node: Node
    owner: str | None = None
    bases: tuple[str, ...] = ()
    parent: _Container | None = None
    qualified: str = ""
    nearest_def: _Container | None = None
    nearest_class: _Container | None = None


@dataclass(eq=False, slots=True)
class _Point:
    """An import statement or a local-variable type, to be attached to its enclosing container."""

    start: int
    role: str
    node: Node
    name: str = ""
    local_type: str = ""
    bindings: list[ImportBinding] = field(default_factory=list)
    owner: _Container | None = None


def python_module(path: str) -> str:
    """Dotted module of a .py path ("pkg/sub/__init__.py" -> "pkg.sub"); suffix-matched by the resolver."""
    stem = path[: -len(".py")] if path.endswith(".py") else path.rsplit(".", 1)[0]
    parts = [p for p in stem.split("/") if p]
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def rust_module(path: str) -> tuple[str, tuple[str, ...]]:
    """(crate root dir, module segments) of a .rs path: "x/src/a/b.rs" -> ("x/src", ("a", "b"))."""
    parts = path.split("/")
    try:
        src = len(parts) - 1 - parts[::-1].index("src", 1)
    except ValueError:
        return "/".join(parts[:-1]), ()
    segs = parts[src + 1 :]
    segs[-1] = segs[-1].removesuffix(".rs")
    if segs[-1] == "mod" or (len(segs) == 1 and segs[0] in ("lib", "main")):
        segs.pop()
    return "/".join(parts[: src + 1]), tuple(segs)


def clean_type(raw: str) -> str | None:
    """The nominal type in an annotation: `&'a mut Foo<T>` -> Foo, `*pkg.Server` -> pkg.Server."""
    found = _TYPE_NAME.match(_TYPE_PREFIX.sub("", raw))
    if found is None or found.group(0) in ("var", "let", "const", "Self"):
        return None
    return found.group(0)


def _parent_type(node: Node) -> str:
    parent = node.parent
    return parent.type if parent is not None else ""


def _squash(raw: str) -> str:
    if "\n" in raw or "  " in raw:
        raw = " ".join(raw.split())
    return raw if len(raw) <= _MAX_RECEIVER else raw[:_MAX_RECEIVER]


def _last_identifier(node: Node) -> str:
    """`pkg.Base[T]` -> "Base": the name a base class is looked up by."""
    raw = text(node).split("<", 1)[0].split("[", 1)[0].split("(", 1)[0]
    return raw.replace("::", ".").rsplit(".", 1)[-1].strip()


def _bases(spec: LanguageSpec, node: Node, caps: dict[str, list[Node]]) -> tuple[str, ...]:
    names: list[str] = []
    if spec.name == "python":
        for arg_list in caps.get("bases", ()):
            names.extend(
                _last_identifier(c) for c in arg_list.named_children if c.type in ("identifier", "attribute")
            )
        return tuple(names)
    stack = [c for c in node.named_children if c.type in _HERITAGE]
    while stack:
        cur = stack.pop()
        if cur.type in ("identifier", "type_identifier", "member_expression", "scoped_type_identifier"):
            names.append(_last_identifier(cur))
        elif cur.type == "generic_type":
            names.append(_last_identifier(cur.named_children[0]) if cur.named_children else "")
        elif cur.type not in ("type_arguments", "arguments", "call_expression"):
            stack.extend(reversed(cur.named_children))
    return tuple(n for n in names if n)


def _nest(containers: list[_Container]) -> tuple[list[int], list[_Container | None]]:
    """Set each container's parent and return an owner map: the innermost container at a byte offset is
    `owners[bisect_right(bounds, offset) - 1]` (None before the first). Spans nest, so a stack suffices;
    a container starting at an offset owns it."""
    bounds: list[int] = []
    owners: list[_Container | None] = []
    stack: list[_Container] = []
    for c in containers:  # sorted by (start, -end)
        while stack and stack[-1].end <= c.start:
            done = stack.pop()
            bounds.append(done.end)
            owners.append(stack[-1] if stack else None)
        c.parent = stack[-1] if stack else None
        stack.append(c)
        bounds.append(c.start)
        owners.append(c)
    while stack:
        done = stack.pop()
        bounds.append(done.end)
        owners.append(stack[-1] if stack else None)
    return bounds, owners


def _qualify(spec: LanguageSpec, containers: list[_Container]) -> None:
    for c in containers:  # parents come before children: the list is in source order
        parent = c.parent
        if c.owner and c.owner not in _NOT_OWNERS:
            c.qualified = f"{c.owner}.{c.name}"
        elif parent is not None:
            c.qualified = f"{parent.qualified}.{c.name}"
        else:
            c.qualified = c.name
        classish = parent is not None and (parent.kind in CLASS_KINDS or not parent.is_def)
        if c.kind == "function" and (classish and parent is not None and parent.kind != "module"):
            c.kind = "method"
        c.nearest_def = c if c.is_def else (parent.nearest_def if parent else None)
        if c.kind in CLASS_KINDS and c.kind != "type":
            c.nearest_class = c
        else:
            c.nearest_class = parent.nearest_class if parent else None


def _enclosing_chain(owner: _Container | None) -> list[_Container | None]:
    chain: list[_Container | None] = []
    cur = owner
    while cur is not None:
        chain.append(cur)
        cur = cur.parent
    chain.append(None)
    return chain


def _package(spec: LanguageSpec, path: str, caps_package: str | None) -> str | None:
    if spec.name == "python":
        return python_module(path)
    if spec.name == "rust":
        _, segs = rust_module(path)
        return "::".join(("crate", *segs))
    return caps_package


class FileRows(NamedTuple):
    """One file's graph as plain tuples: what the store keeps and workers send back (no path: contents
    are shared by paths and branches). `extract_file` wraps it into records."""

    language: str
    package: str | None
    # (name, qualified, kind, start_line, end_line, bases)
    definitions: list[tuple[str, str, str, int, int, tuple[str, ...]]]
    # (name, receiver, kind, line, caller, receiver_type); imports are references of kind "import"
    references: list[tuple[str, str | None, str, int, str | None, str | None]]
    imports: list[ImportBinding]


def extract_file(path: str, text_: str, language: str, tree: Tree | None = None) -> FileGraph:
    """Definitions, references and imports of one file; pass `tree` to reuse the chunker's parse.

    Unsupported languages give an empty graph rather than an error so callers can feed every file.
    """
    rows = extract_rows(path, text_, language, tree)
    if rows is None:
        return FileGraph(path, language, None, [], [], [])
    return FileGraph(
        path,
        rows.language,
        rows.package,
        [Definition(n, q, k, path, s, e, b) for n, q, k, s, e, b in rows.definitions],
        [Reference(n, r, k, path, ln, c, t) for n, r, k, ln, c, t in rows.references],
        rows.imports,
    )


def extract_rows(path: str, text_: str, language: str, tree: Tree | None = None) -> FileRows | None:
    """The work of `extract_file` without building records (None: unsupported language).

    The hot path of indexing: one query pass in C, then per match only what the match itself gives
    (call sites carry no node of their own: the receiver or the name locates them).
    """
    spec = language_spec(language)
    if spec is None:
        return None
    if tree is None:
        tree = parser_for(spec.name).parse(text_.encode("utf-8"))
    query, roles = query_plan(spec.name)
    containers: list[_Container] = []
    # Call sites in match order: (start byte, kind, name, receiver, constructed type, line); an import
    # statement holds its place with kind "import" (its bindings are in `points`).
    calls: list[tuple[int, str, str, str | None, str, int]] = []
    points: list[_Point] = []  # imports and variable types
    package: str | None = None
    seen: set[tuple[int, int, str]] = set()
    rust = spec.name == "rust"
    python = spec.name == "python"

    for pattern, caps in QueryCursor(query).matches(tree.root_node):
        role, kind, anchor = roles[pattern]
        if role == REF:
            name_node = caps["name"][0]
            name = name_node.text.decode("utf-8", "replace")  # type: ignore[union-attr]
            recv_nodes = caps.get("receiver")
            if recv_nodes:
                recv = recv_nodes[0]
                raw = recv.text.decode("utf-8", "replace")  # type: ignore[union-attr]
                receiver: str | None = _squash(raw)
                start = recv.start_byte
                # Only a call or a `new` expression gives its type away, and both end in `)` or `}`.
                constructed = (_constructed_type(recv) or "") if raw[-1:] in (")", "}") else ""
                if rust and _parent_type(recv) == "scoped_identifier":
                    kind = "constructor" if name == "new" else "call"  # `Foo::new()`, `path::f()`: static
                elif python and name[:1].isupper():
                    kind = "constructor"
            else:
                receiver, constructed = None, ""
                start = name_node.start_byte
                if python and name[:1].isupper():
                    kind = "constructor"
                elif rust and "macro.args" in caps:
                    if not _macro_call_args(caps["macro.args"][0]):
                        continue
                    receiver, kind = _macro_receiver(name_node, name)
            # The name's line, not the call's: chained calls span lines (`a\n  .b()`).
            calls.append((start, kind, name, receiver, constructed, name_node.start_point[0] + 1))
        elif role in (DEF, SCOPE):
            node = caps[anchor][0]
            name = text(caps["name"][0])
            key3 = (node.start_byte, node.end_byte, name)
            if key3 in seen:
                continue
            seen.add(key3)
            body = caps.get("type_body")
            if body:
                kind = _GO_TYPE_KINDS.get(body[0].type, "type")
            owner_nodes = caps.get("owner")
            bases = _bases(spec, node, caps) if kind in ("class", "interface") else ()
            containers.append(
                _Container(
                    key3[0],
                    key3[1],
                    name,
                    kind,
                    role == DEF,
                    node,
                    owner=text(owner_nodes[0]) if owner_nodes else None,
                    bases=bases,
                )
            )
        elif role == IMPORT:
            node = caps[anchor][0]
            bindings = IMPORT_DECODERS[spec.name](node, path)
            if bindings:
                points.append(_Point(node.start_byte, "import", node, bindings=bindings))
                calls.append((node.start_byte, "import", "", None, "", 0))
        elif role == LOCAL:
            node = caps[anchor][0]
            literal = caps.get("local.literal")
            if literal:
                local_type: str | None = _LITERAL_TYPES.get(literal[0].type, literal[0].type)
            else:
                local_type = clean_type(text(caps["local.type"][0]))
            if local_type:
                var = text(caps["local.name"][0])
                points.append(_Point(node.start_byte, kind, node, name=var, local_type=local_type))
        elif role == PACKAGE:
            package = text(caps[anchor][0])

    containers.sort(key=lambda c: (c.start, -c.end))
    bounds, owners = _nest(containers)
    _qualify(spec, containers)
    for p in points:
        i = bisect_right(bounds, p.start) - 1
        p.owner = owners[i] if i >= 0 else None

    # Variable types, keyed by the scope that declares them (None: module level).
    local_types: dict[tuple[int, str], str] = {}
    field_types: dict[tuple[int, str], str] = {}
    imports: list[ImportBinding] = []
    import_points: list[_Point] = []
    for p in points:
        if p.role == "import":
            import_points.append(p)
            continue
        scope = p.owner.nearest_def if p.owner is not None else None
        var = p.name
        head, _, attr = var.partition(".")
        if p.role == "field" or (attr and head in spec.self_names):
            cls = p.owner.nearest_class if p.owner is not None else None
            if cls is not None:
                field_types[(id(cls), attr or var)] = p.local_type
        elif not attr:
            local_types[(id(scope), var)] = p.local_type

    definitions = [
        (c.name, c.qualified, c.kind, c.node.start_point[0] + 1, c.node.end_point[0] + 1, c.bases)
        for c in containers
        if c.is_def
    ]
    references: list[tuple[str, str | None, str, int, str | None, str | None]] = []
    next_import = iter(import_points)
    self_names = spec.self_names
    typed = bool(local_types or field_types or spec.implicit_this)
    for start, kind, name, receiver, constructed, line in calls:
        i = bisect_right(bounds, start) - 1
        owner = owners[i] if i >= 0 else None
        caller_c = owner.nearest_def if owner is not None else None
        caller = caller_c.qualified if caller_c is not None else None
        if kind == "import":
            p = next(next_import)
            if rust:
                p.bindings = _rust_rebase(p.bindings, owner)
            imports.extend(p.bindings)
            references.extend(
                (b.imported or b.local, b.module or None, "import", b.line, caller, None) for b in p.bindings
            )
            continue
        receiver_type = None
        if receiver is not None:
            if constructed:
                receiver_type = constructed
            elif receiver in self_names:
                cls = owner.nearest_class if owner is not None else None
                receiver_type = cls.qualified if cls is not None else None
            elif typed:
                receiver_type = _receiver_type(spec, receiver, owner, local_types, field_types)
        references.append((name, receiver, kind, line, caller, receiver_type))
    return FileRows(spec.name, _package(spec, path, package), definitions, references, imports)


def _macro_call_args(args: Node) -> bool:
    """A macro token tree after an identifier is call arguments when it is parenthesised (`f(x)`), not
    `v[i]` or a block."""
    first = args.child(0)
    return first is not None and first.type == "("


def _macro_receiver(name_node: Node, name: str) -> tuple[str | None, str]:
    """(receiver, kind) of a call written inside a macro's tokens: `s.area()` -> ("s", method_call),
    `Foo::new()` -> ("Foo", constructor), `a::b::f()` -> ("a::b", call), `area()` -> (None, call)."""
    prev = name_node.prev_sibling
    if prev is None or prev.type not in (".", "::"):
        return None, "call"
    parts: list[str] = []
    sep = prev.type
    node: Node | None = prev
    while node is not None and node.type == sep:
        owner = node.prev_sibling
        if owner is None or owner.type not in ("identifier", "self", "super", "crate"):
            break
        parts.insert(0, text(owner))
        node = owner.prev_sibling
        if sep == ".":
            break  # `a.b.c()`: only the nearest receiver is a name the extractor can type
    if not parts:
        return None, "call"
    if sep == ".":
        return parts[0], "method_call"
    return "::".join(parts), "constructor" if name == "new" else "call"


def _constructed_type(receiver: Node) -> str | None:
    """`new Foo().m()`, `Foo().m()` (Python, capitalised): the receiver is a fresh Foo."""
    kind = receiver.type
    if kind in ("new_expression", "object_creation_expression"):
        ctor = receiver.child_by_field_name("constructor") or receiver.child_by_field_name("type")
        return clean_type(text(ctor)) if ctor is not None else None
    if kind == "call":
        func = receiver.child_by_field_name("function")
        if func is not None and func.type in ("identifier", "attribute"):
            name = text(func)
            if name.rsplit(".", 1)[-1][:1].isupper():
                return name
    return None


def _receiver_type(
    spec: LanguageSpec,
    receiver: str,
    owner: _Container | None,
    local_types: dict[tuple[int, str], str],
    field_types: dict[tuple[int, str], str],
) -> str | None:
    """The type of a call's receiver from the variables seen in its scopes (self/this handled before)."""
    cls = owner.nearest_class if owner is not None else None
    head, _, attr = receiver.partition(".")
    if attr and "." not in attr and head in spec.self_names:
        return field_types.get((id(cls), attr)) if cls is not None else None
    if not receiver.isidentifier():
        return None
    for scope in _enclosing_chain(owner.nearest_def if owner is not None else None):
        found = local_types.get((id(scope), receiver))
        if found is not None:
            return found
    if spec.implicit_this and cls is not None:
        return field_types.get((id(cls), receiver))
    return None


def _rust_rebase(bindings: list[ImportBinding], owner: _Container | None) -> list[ImportBinding]:
    """Rewrite `super::`/`self::` of a `use` inside inline `mod` blocks to paths from the file's module.

    `mod tests { use super::*; }` means "this file", which the resolver (working per file) can follow.
    """
    mods: list[str] = []
    cur = owner
    while cur is not None:
        if cur.kind == "module" and not cur.is_def:
            mods.append(cur.name)
        cur = cur.parent
    if not mods:
        return bindings
    mods.reverse()
    out = []
    for b in bindings:
        segs = b.module.split("::") if b.module else []
        ups = 0
        while ups < len(segs) and segs[ups] == "super":
            ups += 1
        if segs and segs[0] == "self":
            module = "::".join(["self", *mods, *segs[1:]])
        elif ups == 0:
            module = b.module
        elif ups <= len(mods):
            module = "::".join(["self", *mods[: len(mods) - ups], *segs[ups:]])
        else:
            module = "::".join(["super"] * (ups - len(mods)) + segs[ups:])
        out.append(ImportBinding(b.local, module, b.imported, b.path, b.line))
    return out
