"""Definition resolvers: small functions that say "this node is a function named X" or "not a definition".

`languages.SPECS` maps each grammar's node types to one of these; the walker in `code.py` calls them.
They are kept apart from the tables so the per-language data reads as data and the tree-reading logic
(declarator chains, receivers, Elixir `def` calls, Zig containers) is tested and changed in one place.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

from tree_sitter import Node


class Def(NamedTuple):
    """What a resolver found: `body` is set for containers whose members get their own chunks."""

    kind: str
    name: str
    body: Node | None = None
    scope: str | None = None  # name members are qualified with, when it differs from `name`
    name_row: int = -1  # row of the signature line (the name), -1 -> the node's first row


Resolver = Callable[[Node, bytes], "Def | None"]

_NAME_TYPES = frozenset(
    {
        "identifier",
        "type_identifier",
        "simple_identifier",
        "constant",
        "name",
        "word",
        "property_identifier",
        "field_identifier",
        "IDENTIFIER",
        "message_name",
        "enum_name",
        "service_name",
        "rpc_name",
        "fragment_name",
        "object_reference",
        "namespace_identifier",
    }
)
_GENERIC_ARGS = re.compile(r"<[^<>]*(?:<[^<>]*>[^<>]*)*>|\[[^\[\]]*\]")
_SPACES = re.compile(r"\s+")


def node_text(node: Node, src: bytes) -> str:
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_LAST_WORD = re.compile(r"[\w.$~]+(?=[^\w.$~]*$)")


def _clean(name: str) -> str:
    """Drop generic arguments and collapse whitespace: `Foo<T>` -> `Foo`, `Shape::area` -> `Shape.area`.

    Macro-heavy C++ can make the grammar take a whole preamble for a declarator; such a "name" is
    cut down to its last word so symbols stay short.
    """
    if "/" in name:
        name = _COMMENTS.sub(" ", name)
    name = _GENERIC_ARGS.sub("", name)
    name = _SPACES.sub(" ", name.replace("::", ".")).strip()
    if len(name) > 80 or name.count(" ") > 3:
        last = _LAST_WORD.search(name)
        name = last.group(0) if last else name[:80]
    return name


def _name_node(node: Node) -> Node | None:
    found = node.child_by_field_name("name")
    if found is not None:
        return found
    for child in node.named_children:
        if child.type in _NAME_TYPES:
            return child
    return None


def _body(node: Node, body_types: frozenset[str]) -> Node | None:
    """The member list of a container: the `body` field, else the first child of a body type."""
    found = node.child_by_field_name("body")
    if found is not None and (not body_types or found.type in body_types):
        return found
    for child in node.named_children:
        if child.type in body_types:
            return child
    return None


def simple(
    kind: str,
    *,
    container: bool = False,
    require_body: bool = False,
    body_types: frozenset[str] = frozenset(),
    default_name: str = "",
) -> Resolver:
    """Resolver for the common case: a `name` field (or name-like child), optionally a body."""

    def resolve(node: Node, src: bytes) -> Def | None:
        body = _body(node, body_types) if container or require_body else None
        if require_body and body is None:
            return None
        name_node = _name_node(node)
        name = _clean(node_text(name_node, src)) if name_node is not None else default_name
        row = name_node.start_point[0] if name_node is not None else -1
        return Def(kind, name, body if container else None, None, row)

    return resolve


def fixed(kind: str, name: str) -> Resolver:
    """Resolver for nameless definitions (constructors `init`, `deinit`)."""

    def resolve(node: Node, src: bytes) -> Def | None:
        return Def(kind, name)

    return resolve


# --- C family --------------------------------------------------------------------------------

_DECLARATOR_LEAVES = frozenset(
    {
        "identifier",
        "field_identifier",
        "qualified_identifier",
        "destructor_name",
        "operator_name",
        "type_identifier",
        "template_function",
        "operator_cast",
    }
)


def _declarator_name(node: Node | None, src: bytes) -> tuple[str, int]:
    """Follow `declarator` fields (pointers, function declarators, ...) down to the declared name."""
    depth = 0
    while node is not None and depth < 8:
        if node.type in _DECLARATOR_LEAVES:
            return _clean(node_text(node, src)), node.start_point[0]
        inner = node.child_by_field_name("declarator")
        if inner is None:
            for child in node.named_children:
                if child.type in _DECLARATOR_LEAVES or child.type.endswith("declarator"):
                    inner = child
                    break
        node = inner
        depth += 1
    return "", -1


def c_function(node: Node, src: bytes) -> Def | None:
    if node.child_by_field_name("body") is None:
        return None  # `= default`, `= 0`, K&R oddities: leave to the surrounding block
    name, row = _declarator_name(node.child_by_field_name("declarator"), src)
    return Def("function", name, None, None, row)


def c_typedef(node: Node, src: bytes) -> Def | None:
    name, row = _declarator_name(node.child_by_field_name("declarator"), src)
    inner = node.child_by_field_name("type")
    kind = "type"
    if inner is not None and inner.child_by_field_name("body") is not None:
        kind = {"enum_specifier": "enum"}.get(inner.type, "struct")
    return Def(kind, name, None, None, row)


# --- JavaScript / TypeScript -----------------------------------------------------------------

_JS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})


def js_variable(node: Node, src: bytes) -> Def | None:
    """`const handler = () => ...` is a function named `handler`; other declarations are not defs."""
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    if len(declarators) != 1:
        return None
    value = declarators[0].child_by_field_name("value")
    name = declarators[0].child_by_field_name("name")
    if value is None or name is None or value.type not in _JS_FUNCTION_VALUES:
        return None
    return Def("function", node_text(name, src), None, None, name.start_point[0])


def js_field(node: Node, src: bytes) -> Def | None:
    """Class fields holding arrow functions (`onClick = () => {}`) are methods."""
    value = node.child_by_field_name("value")
    name = node.child_by_field_name("property") or node.child_by_field_name("name")
    if value is None or name is None or value.type not in _JS_FUNCTION_VALUES:
        return None
    return Def("function", node_text(name, src), None, None, name.start_point[0])


# --- Go ----------------------------------------------------------------------------------------


def go_method(node: Node, src: bytes) -> Def | None:
    """`func (s *Server) Start()` -> `Server.Start` (receiver type without pointer or type args)."""
    name_node = node.child_by_field_name("name")
    name = node_text(name_node, src) if name_node is not None else ""
    receiver = node.child_by_field_name("receiver")
    recv = ""
    if receiver is not None:
        for param in receiver.named_children:
            typ = param.child_by_field_name("type")
            if typ is not None:
                recv = _clean(node_text(typ, src)).lstrip("*").strip()
                break
    row = name_node.start_point[0] if name_node is not None else -1
    return Def("method", f"{recv}.{name}" if recv else name, None, None, row)


_GO_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}


def go_type(node: Node, src: bytes) -> Def | None:
    specs = [c for c in node.named_children if c.type in ("type_spec", "type_alias")]
    if not specs:
        return None
    names = []
    for spec in specs:
        name = spec.child_by_field_name("name")
        if name is not None:
            names.append(node_text(name, src))
    kind = "type"
    if len(specs) == 1:
        typ = specs[0].child_by_field_name("type")
        kind = _GO_TYPE_KINDS.get(typ.type if typ is not None else "", "type")
    return Def(kind, ", ".join(names), None, None, specs[0].start_point[0])


# --- Rust --------------------------------------------------------------------------------------


def rust_impl(node: Node, src: bytes) -> Def | None:
    """`impl Foo` -> impl `Foo`; `impl fmt::Display for Foo` -> impl `fmt.Display for Foo`.

    Methods inside are qualified with the type alone (`Foo.fmt`), whichever trait they implement.
    """
    typ = node.child_by_field_name("type")
    body = node.child_by_field_name("body")
    type_name = _clean(node_text(typ, src)) if typ is not None else ""
    trait = node.child_by_field_name("trait")
    name = f"{_clean(node_text(trait, src))} for {type_name}" if trait is not None else type_name
    return Def("impl", name, body, type_name, node.start_point[0])


# --- Kotlin / Swift ----------------------------------------------------------------------------


def _keyword_kind(node: Node, table: Mapping[str, str], default: str) -> str:
    for child in node.children:
        if not child.is_named and child.type in table:
            return table[child.type]
        if child.type == "modifiers" and b"enum" in (child.text or b""):
            return table.get("enum", default)
    return default


def keyword_class(table: Mapping[str, str], body_types: frozenset[str]) -> Resolver:
    """Classes whose kind is a keyword token (`interface`, `struct`, `extension`, `enum class`)."""

    def resolve(node: Node, src: bytes) -> Def | None:
        kind = _keyword_kind(node, table, "class")
        name_node = _name_node(node)
        name = _clean(node_text(name_node, src)) if name_node is not None else ""
        row = name_node.start_point[0] if name_node is not None else -1
        return Def(kind, name, _body(node, body_types), None, row)

    return resolve


# --- Lua ---------------------------------------------------------------------------------------


def lua_function(node: Node, src: bytes) -> Def | None:
    name = node.child_by_field_name("name")
    if name is None:
        return None
    kind = "method" if name.type == "method_index_expression" else "function"
    return Def(kind, node_text(name, src).replace(":", "."), None, None, name.start_point[0])


def lua_assignment(node: Node, src: bytes) -> Def | None:
    """`M.handler = function(x) ... end` is a function named `M.handler`."""
    variables = node.named_children[0] if node.named_children else None
    values = node.named_children[1] if len(node.named_children) > 1 else None
    if variables is None or values is None or len(values.named_children) != 1:
        return None
    if values.named_children[0].type != "function_definition" or len(variables.named_children) != 1:
        return None
    return Def("function", node_text(variables.named_children[0], src), None, None, node.start_point[0])


# --- Elixir ------------------------------------------------------------------------------------

_ELIXIR_DEFS = {
    "def": "function",
    "defp": "function",
    "defmacro": "function",
    "defmacrop": "function",
    "defguard": "function",
    "defguardp": "function",
    "defdelegate": "function",
    "defn": "function",
    "defnp": "function",
}
_ELIXIR_MODULES = {"defmodule": "module", "defprotocol": "interface", "defimpl": "impl"}


def elixir_call(node: Node, src: bytes) -> Def | None:
    target = node.child_by_field_name("target")
    if target is None or target.type != "identifier":
        return None
    keyword = node_text(target, src)
    args = next((c for c in node.named_children if c.type == "arguments"), None)
    first = args.named_children[0] if args is not None and args.named_children else None
    if keyword in _ELIXIR_MODULES:
        body = next((c for c in node.named_children if c.type == "do_block"), None)
        name = node_text(first, src) if first is not None else ""
        return Def(_ELIXIR_MODULES[keyword], name, body, None, node.start_point[0])
    if keyword == "defstruct":
        return None
    if keyword not in _ELIXIR_DEFS or first is None:
        return None
    head = first
    while head.type == "binary_operator":  # `def f(x) when x > 0`
        left = head.child_by_field_name("left")
        if left is None:
            break
        head = left
    if head.type == "call":
        inner = head.child_by_field_name("target")
        head = inner if inner is not None else head
    return Def(_ELIXIR_DEFS[keyword], node_text(head, src), None, None, node.start_point[0])


# --- Haskell -----------------------------------------------------------------------------------


def haskell_instance(node: Node, src: bytes) -> Def | None:
    name = node.child_by_field_name("name")
    patterns = node.child_by_field_name("patterns")
    parts = [node_text(n, src) for n in (name, patterns) if n is not None]
    return Def("impl", _clean(" ".join(parts)), None, None, node.start_point[0])


# --- Zig ---------------------------------------------------------------------------------------

_ZIG_CONTAINERS = {"struct": "struct", "enum": "enum", "union": "struct", "opaque": "struct"}


def _zig_container(node: Node) -> Node | None:
    for _ in range(4):
        found = None
        for child in node.named_children:
            if child.type == "ContainerDecl":
                return child
            if child.type in ("ErrorUnionExpr", "SuffixExpr"):
                found = child
        if found is None:
            return None
        node = found
    return None


def zig_decl(node: Node, src: bytes) -> Def | None:
    for child in node.named_children:
        if child.type == "FnProto":
            if not any(c.type == "Block" for c in node.named_children):
                return None  # extern declaration
            name = child.child_by_field_name("function")
            if name is None:
                return None
            return Def("function", node_text(name, src), None, None, name.start_point[0])
        if child.type == "VarDecl":
            container = _zig_container(child)
            name = child.child_by_field_name("variable_type_function")
            if container is None or name is None:
                return None
            decl_type = next((c for c in container.named_children if c.type == "ContainerDeclType"), None)
            keyword = node_text(decl_type, src).split("(")[0].strip() if decl_type is not None else "struct"
            kind = _ZIG_CONTAINERS.get(keyword, "struct")
            return Def(kind, node_text(name, src), container, None, name.start_point[0])
    return None


def zig_test(node: Node, src: bytes) -> Def | None:
    label = next((c for c in node.named_children if c.type != "Block"), None)
    return Def("function", "test " + (node_text(label, src) if label is not None else ""))


def proto_service(node: Node, src: bytes) -> Def | None:
    """A proto service lists its rpcs as direct children: the service node is its own body."""
    name_node = _name_node(node)
    name = node_text(name_node, src) if name_node is not None else ""
    return Def("interface", name, node, None, node.start_point[0])
