"""Which language a path is, and per-language tables that tell the tree walker what a definition is.

The walker in `code.py` is generic; everything language-specific lives here as data: a map from
node type to a *resolver* (a small function in `resolvers.py` that says "this node is a function
named X" or "not a definition"), the node types it descends into without making a chunk (namespaces,
`#ifdef`, error nodes), wrapper types that hold a definition (`export`, decorators, templates), and
comment prefixes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from codebase_index.chunking.resolvers import (
    Resolver,
    c_function,
    c_typedef,
    elixir_call,
    fixed,
    go_method,
    go_type,
    haskell_instance,
    js_field,
    js_variable,
    keyword_class,
    lua_assignment,
    lua_function,
    proto_service,
    rust_impl,
    simple,
    zig_decl,
    zig_test,
)

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
            "service": proto_service,
            "rpc": simple("function"),
        },
    ),
}
