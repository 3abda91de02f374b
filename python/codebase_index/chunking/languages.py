"""Which language a path is, and per-language tables that tell the tree walker what a definition is.

The walker in `code.py` is generic; everything language-specific lives here as data: a map from
node type to a *resolver* (a small function that says "this node is a function named X" or "not a
definition"), the node types it descends into without making a chunk (namespaces, `#ifdef`, error
nodes), wrapper types that hold a definition (`export`, decorators, templates), and comment prefixes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from tree_sitter import Node

# --------------------------------------------------------------------------------------------
# Path -> language


_EXTENSIONS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".pyw": "python",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".cs": "csharp",
    ".rb": "ruby",
    ".rake": "ruby",
    ".gemspec": "ruby",
    ".php": "php",
    ".inc": "php",
    ".phtml": "php",
    ".swift": "swift",
    ".scala": "scala",
    ".sc": "scala",
    ".c": "c",
    ".h": "c",
    ".cc": "cpp",
    ".cpp": "cpp",
    ".cxx": "cpp",
    ".c++": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".h++": "cpp",
    ".ipp": "cpp",
    ".inl": "cpp",
    ".tpp": "cpp",
    ".cu": "cpp",
    ".cuh": "cpp",
    ".sh": "bash",
    ".bash": "bash",
    ".zsh": "bash",
    ".json": "json",
    ".jsonc": "json",
    ".json5": "json",
    ".yml": "yaml",
    ".yaml": "yaml",
    ".toml": "toml",
    ".lua": "lua",
    ".ex": "elixir",
    ".exs": "elixir",
    ".hs": "haskell",
    ".zig": "zig",
    ".md": "markdown",
    ".mdx": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".vue": "vue",
    ".svelte": "svelte",
    ".astro": "astro",
    ".sql": "sql",
    ".graphql": "graphql",
    ".gql": "graphql",
    ".proto": "proto",
    ".txt": "text",
    ".text": "text",
    ".rst": "text",
    ".adoc": "text",
    # Chunked as line windows: worth searching, no definition structure we exploit.
    ".css": "css",
    ".scss": "scss",
    ".less": "css",
    ".xml": "xml",
    ".ini": "ini",
    ".cfg": "ini",
    ".cmake": "cmake",
    ".dart": "dart",
    ".pl": "perl",
    ".pm": "perl",
    ".r": "r",
    ".gradle": "groovy",
    ".groovy": "groovy",
    ".tf": "terraform",
}

_FILENAMES: dict[str, str] = {
    "dockerfile": "dockerfile",
    "makefile": "make",
    "gnumakefile": "make",
    "cmakelists.txt": "cmake",
    "rakefile": "ruby",
    "gemfile": "ruby",
    "podfile": "ruby",
    "vagrantfile": "ruby",
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".zshrc": "bash",
    ".profile": "bash",
    "pipfile": "toml",
    "cargo.lock": "toml",
    "readme": "text",
    "license": "text",
    "copying": "text",
    "authors": "text",
    "changelog": "text",
}

# Tokens that only occur in C++ headers; a `.h` containing one is parsed with the C++ grammar.
_CPP_HEADER_HINT = re.compile(
    rb"^\s*(?:namespace\s+\w+|template\s*<|class\s+\w+[^;]*\{|(?:public|private|protected)\s*:)|std::",
    re.MULTILINE,
)


def language_for_path(path: str, *, text: str | None = None) -> str | None:
    """Language name for a relative path, or None when we have no chunker for it.

    `.h` is C unless `text` is given and looks like C++ (namespaces, templates, classes); the C++
    grammar mostly parses C too, but C code that uses `new` or `class` as identifiers would not.
    """
    name = path.replace("\\", "/").rsplit("/", 1)[-1].lower()
    lang = _FILENAMES.get(name)
    if lang is not None:
        return lang
    if name.startswith("dockerfile") or name.endswith(".dockerfile"):
        return "dockerfile"
    dot = name.rfind(".")
    if dot < 0:
        return None
    lang = _EXTENSIONS.get(name[dot:])
    if lang == "c" and name.endswith(".h") and text is not None and is_cpp_header(text):
        return "cpp"
    return lang


def is_cpp_header(text: str) -> bool:
    """True when a `.h` file uses C++-only constructs."""
    return _CPP_HEADER_HINT.search(text[:200_000].encode("utf-8", "surrogatepass")) is not None


# --------------------------------------------------------------------------------------------
# Definition resolvers


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


def _service_body(node: Node, src: bytes) -> Def | None:
    """A proto service lists its rpcs as direct children: the service node is its own body."""
    name_node = _name_node(node)
    name = node_text(name_node, src) if name_node is not None else ""
    return Def("interface", name, node, None, node.start_point[0])


# --------------------------------------------------------------------------------------------
# Per-language specs


@dataclass(frozen=True)
class CodeSpec:
    """How to find definitions in one tree-sitter grammar (see the module docstring)."""

    grammar: str
    defs: Mapping[str, Resolver]
    # Node types descended into without a chunk of their own (namespaces, #ifdef, error nodes).
    transparent: frozenset[str] = frozenset()
    # Node types that hold a definition (export, decorators, templates): unwrapped, range kept.
    wrappers: frozenset[str] = frozenset()
    # Line prefixes of comments/attributes that attach to the definition right below them.
    attach: tuple[str, ...] = ("//", "/*", "*")
    # Node types whose declared names label the leftover `block` chunk they fall into.
    consts: frozenset[str] = frozenset()
    # Haskell equations / Elixir clauses: adjacent definitions of one name are one chunk.
    merge_same_name: bool = False


_C_TRANSPARENT = frozenset(
    {
        "preproc_if",
        "preproc_ifdef",
        "preproc_else",
        "preproc_elif",
        "preproc_elifdef",
        "linkage_specification",
        "declaration_list",
    }
)

_C_DEFS: dict[str, Resolver] = {
    "function_definition": c_function,
    "struct_specifier": simple("struct", require_body=True),
    "union_specifier": simple("struct", require_body=True),
    "enum_specifier": simple("enum", require_body=True),
    "type_definition": c_typedef,
}

_CPP_DEFS: dict[str, Resolver] = {
    **_C_DEFS,
    "class_specifier": simple("class", container=True, require_body=True),
    "struct_specifier": simple("struct", container=True, require_body=True),
    "union_specifier": simple("struct", container=True, require_body=True),
    "alias_declaration": simple("type"),
    "concept_definition": simple("type"),
}

_JS_DEFS: dict[str, Resolver] = {
    "function_declaration": simple("function"),
    "generator_function_declaration": simple("function"),
    "class_declaration": simple("class", container=True),
    "class": simple("class", container=True),
    "method_definition": simple("function"),
    "lexical_declaration": js_variable,
    "variable_declaration": js_variable,
    "field_definition": js_field,
}

_TS_DEFS: dict[str, Resolver] = {
    **_JS_DEFS,
    "abstract_class_declaration": simple("class", container=True),
    "interface_declaration": simple("interface"),
    "type_alias_declaration": simple("type"),
    "enum_declaration": simple("enum"),
    "internal_module": simple("module", container=True),
    "module": simple("module", container=True, require_body=True),
    "public_field_definition": js_field,
}

_JS_WRAPPERS = frozenset({"export_statement", "expression_statement", "ambient_declaration"})
_JS_CONSTS = frozenset({"lexical_declaration", "variable_declaration"})
_JS_ATTACH = ("//", "/*", "*", "@")

_KOTLIN_BODIES = frozenset({"class_body", "enum_class_body"})
_SWIFT_BODIES = frozenset({"class_body", "enum_class_body", "protocol_body"})

SPECS: dict[str, CodeSpec] = {
    "python": CodeSpec(
        grammar="python",
        defs={
            "function_definition": simple("function"),
            "class_definition": simple("class", container=True),
        },
        # Definitions under module-level `if`/`try` (platform switches, import fallbacks) count too.
        transparent=frozenset(
            {
                "if_statement",
                "elif_clause",
                "else_clause",
                "try_statement",
                "except_clause",
                "finally_clause",
                "block",
            }
        ),
        wrappers=frozenset({"decorated_definition"}),
        attach=("#", "@"),
        consts=frozenset({"expression_statement", "assignment"}),
    ),
    "javascript": CodeSpec(
        grammar="javascript", defs=_JS_DEFS, wrappers=_JS_WRAPPERS, attach=_JS_ATTACH, consts=_JS_CONSTS
    ),
    "typescript": CodeSpec(
        grammar="typescript", defs=_TS_DEFS, wrappers=_JS_WRAPPERS, attach=_JS_ATTACH, consts=_JS_CONSTS
    ),
    "tsx": CodeSpec(
        grammar="tsx", defs=_TS_DEFS, wrappers=_JS_WRAPPERS, attach=_JS_ATTACH, consts=_JS_CONSTS
    ),
    "go": CodeSpec(
        grammar="go",
        defs={
            "function_declaration": simple("function"),
            "method_declaration": go_method,
            "type_declaration": go_type,
        },
        consts=frozenset({"const_declaration", "var_declaration"}),
    ),
    "rust": CodeSpec(
        grammar="rust",
        defs={
            "function_item": simple("function"),
            "struct_item": simple("struct"),
            "union_item": simple("struct"),
            "enum_item": simple("enum"),
            "type_item": simple("type"),
            "trait_item": simple("trait", container=True),
            "impl_item": rust_impl,
            "mod_item": simple("module", container=True, require_body=True),
            "macro_definition": simple("function"),
        },
        attach=("//", "/*", "*", "#["),
        consts=frozenset({"const_item", "static_item"}),
    ),
    "java": CodeSpec(
        grammar="java",
        defs={
            "class_declaration": simple("class", container=True),
            "record_declaration": simple("class", container=True),
            "interface_declaration": simple("interface", container=True),
            "annotation_type_declaration": simple("interface"),
            "enum_declaration": simple("enum", container=True),
            "method_declaration": simple("function", require_body=True),
            "constructor_declaration": simple("function"),
            "compact_constructor_declaration": simple("function"),
        },
        transparent=frozenset({"enum_body_declarations"}),
        attach=("//", "/*", "*", "@"),
    ),
    "kotlin": CodeSpec(
        grammar="kotlin",
        defs={
            "class_declaration": keyword_class(
                {"interface": "interface", "enum": "enum", "class": "class"}, _KOTLIN_BODIES
            ),
            "object_declaration": simple("class", container=True, body_types=_KOTLIN_BODIES),
            "companion_object": simple(
                "class", container=True, body_types=_KOTLIN_BODIES, default_name="Companion"
            ),
            "function_declaration": simple(
                "function", require_body=True, body_types=frozenset({"function_body"})
            ),
            "secondary_constructor": fixed("function", "constructor"),
            "type_alias": simple("type"),
        },
        attach=("//", "/*", "*", "@"),
        consts=frozenset({"property_declaration"}),
    ),
    "csharp": CodeSpec(
        grammar="csharp",
        defs={
            "class_declaration": simple("class", container=True),
            "record_declaration": simple("class", container=True),
            "struct_declaration": simple("struct", container=True),
            "record_struct_declaration": simple("struct", container=True),
            "interface_declaration": simple("interface", container=True),
            "enum_declaration": simple("enum"),
            "delegate_declaration": simple("type"),
            "method_declaration": simple("function", require_body=True),
            "constructor_declaration": simple("function", require_body=True),
            "destructor_declaration": simple("function", require_body=True),
            "operator_declaration": simple("function", require_body=True),
            "local_function_statement": simple("function", require_body=True),
        },
        transparent=frozenset({"namespace_declaration", "declaration_list"}),
        attach=("//", "/*", "*", "["),
    ),
    "ruby": CodeSpec(
        grammar="ruby",
        defs={
            "class": simple("class", container=True),
            "module": simple("module", container=True),
            "method": simple("function"),
            "singleton_method": simple("function"),
        },
        transparent=frozenset({"singleton_class"}),
        attach=("#",),
        consts=frozenset({"assignment"}),
    ),
    "php": CodeSpec(
        grammar="php",
        defs={
            "class_declaration": simple("class", container=True),
            "interface_declaration": simple("interface", container=True),
            "trait_declaration": simple("trait", container=True),
            "enum_declaration": simple("enum", container=True),
            "method_declaration": simple("function", require_body=True),
            "function_definition": simple("function"),
        },
        transparent=frozenset({"namespace_definition"}),
        attach=("//", "/*", "*", "#"),
        consts=frozenset({"const_declaration"}),
    ),
    "swift": CodeSpec(
        grammar="swift",
        defs={
            "class_declaration": keyword_class(
                {
                    "struct": "struct",
                    "enum": "enum",
                    "extension": "impl",
                    "class": "class",
                    "actor": "class",
                },
                _SWIFT_BODIES,
            ),
            "protocol_declaration": simple("interface", container=True, body_types=_SWIFT_BODIES),
            "function_declaration": simple("function", require_body=True),
            "init_declaration": fixed("function", "init"),
            "deinit_declaration": fixed("function", "deinit"),
            "typealias_declaration": simple("type"),
        },
        attach=("//", "/*", "*", "@"),
        consts=frozenset({"property_declaration"}),
    ),
    "scala": CodeSpec(
        grammar="scala",
        defs={
            "class_definition": simple("class", container=True),
            "object_definition": simple("class", container=True),
            "trait_definition": simple("trait", container=True),
            "enum_definition": simple("enum", container=True),
            "function_definition": simple("function"),
            "type_definition": simple("type"),
        },
        transparent=frozenset({"package_clause"}),
        attach=("//", "/*", "*", "@"),
        consts=frozenset({"val_definition", "var_definition"}),
    ),
    "c": CodeSpec(
        grammar="c",
        defs=_C_DEFS,
        transparent=_C_TRANSPARENT,
        consts=frozenset({"declaration", "preproc_def", "preproc_function_def"}),
    ),
    "cpp": CodeSpec(
        grammar="cpp",
        defs=_CPP_DEFS,
        transparent=_C_TRANSPARENT | {"namespace_definition"},
        wrappers=frozenset({"template_declaration"}),
        consts=frozenset({"declaration", "preproc_def", "preproc_function_def"}),
    ),
    "bash": CodeSpec(
        grammar="bash",
        defs={"function_definition": simple("function")},
        attach=("#",),
        consts=frozenset({"variable_assignment", "declaration_command"}),
    ),
    "lua": CodeSpec(
        grammar="lua",
        defs={"function_declaration": lua_function, "assignment_statement": lua_assignment},
        attach=("--",),
        consts=frozenset({"variable_declaration"}),
    ),
    "elixir": CodeSpec(
        grammar="elixir",
        defs={"call": elixir_call},
        attach=("#", "@"),
        merge_same_name=True,
    ),
    "haskell": CodeSpec(
        grammar="haskell",
        defs={
            "function": simple("function"),
            "bind": simple("function"),
            "signature": simple("function"),
            "data_type": simple("type"),
            "newtype": simple("type"),
            "type_synomym": simple("type"),
            "type_family": simple("type"),
            "class": simple("interface"),
            "instance": haskell_instance,
        },
        transparent=frozenset({"declarations"}),
        attach=("--", "{-"),
        merge_same_name=True,
    ),
    "zig": CodeSpec(
        grammar="zig",
        defs={"Decl": zig_decl, "TestDecl": zig_test},
        attach=("//",),
        consts=frozenset({"Decl"}),
    ),
    "sql": CodeSpec(
        grammar="sql",
        defs={
            "create_table": simple("type"),
            "create_view": simple("type"),
            "create_materialized_view": simple("type"),
            "create_type": simple("type"),
            "create_function": simple("function"),
            "create_procedure": simple("function"),
            "create_trigger": simple("function"),
        },
        wrappers=frozenset({"statement"}),
        attach=("--", "/*", "*"),
    ),
    "graphql": CodeSpec(
        grammar="graphql",
        defs={
            "object_type_definition": simple("type"),
            "interface_type_definition": simple("interface"),
            "enum_type_definition": simple("enum"),
            "input_object_type_definition": simple("type"),
            "union_type_definition": simple("type"),
            "scalar_type_definition": simple("type"),
            "object_type_extension": simple("type"),
            "operation_definition": simple("function"),
            "fragment_definition": simple("function"),
            "directive_definition": simple("function"),
        },
        transparent=frozenset({"document"}),
        wrappers=frozenset(
            {
                "definition",
                "type_system_definition",
                "type_definition",
                "executable_definition",
                "type_system_extension",
                "type_extension",
            }
        ),
        attach=("#",),
    ),
    "proto": CodeSpec(
        grammar="proto",
        defs={
            "message": simple("struct", container=True, body_types=frozenset({"message_body"})),
            "enum": simple("enum"),
            "service": _service_body,
            "rpc": simple("function"),
        },
    ),
}
