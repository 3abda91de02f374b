"""Record types of the code graph: what one file defines and references, and the resolved call edges.

They are frozen msgspec Structs so the store and the JSON-RPC/MCP layers can persist and ship them as-is.
"""

from __future__ import annotations

import msgspec

MODULE_CALLER = "<module>"
"""Caller name of an edge whose call site is at module level (outside any definition)."""

CLASS_KINDS: frozenset[str] = frozenset({"class", "interface", "struct", "enum", "trait", "impl", "type"})
"""Kinds that own methods: a receiver of one of these kinds is searched for `Type.method`."""


class Definition(msgspec.Struct, frozen=True):
    """A symbol defined in a file; `qualified` nests it under its class/receiver/impl ("Foo.bar")."""

    name: str
    qualified: str
    kind: str
    path: str
    start_line: int
    end_line: int
    # Base classes / superclass / implemented interfaces as written (last identifier of each); lets
    # `self.m()` find `m` on a parent class.
    bases: tuple[str, ...] = ()


class Reference(msgspec.Struct, frozen=True):
    """A call site (or import) inside a definition; `caller` is None at module level."""

    name: str
    receiver: str | None
    kind: str
    path: str
    line: int
    caller: str | None
    # Type of the receiver when the extractor can see it locally (self/this, a typed parameter,
    # `x = Foo()`); the resolver prefers it over guessing by method name.
    receiver_type: str | None = None


class ImportBinding(msgspec.Struct, frozen=True):
    """A local name and where it comes from.

    `imported` is None when the local name binds the module itself (`import x as y`, `import * as ns`),
    and "*" for star/glob imports (then `local` is "*"). `module` is "" for an export alias of the file
    itself (`export default foo` -> local "default", imported "foo").
    """

    local: str
    module: str
    imported: str | None
    path: str
    line: int


class FileGraph(msgspec.Struct, frozen=True):
    """Everything graph-related one file contributes; independent of every other file."""

    path: str
    language: str
    package: str | None
    definitions: list[Definition]
    references: list[Reference]
    imports: list[ImportBinding]


class Edge(msgspec.Struct, frozen=True):
    """A resolved call: call site -> one target definition (an ambiguous site yields one edge per target)."""

    caller: str
    caller_path: str
    line: int
    callee: str
    callee_path: str
    callee_line: int
    confidence: str
    candidates: int


class ResolveStats(msgspec.Struct):
    """Counts over the references `resolve` saw; unresolved calls produce no edge but are counted here."""

    references: int = 0
    imports: int = 0
    calls: int = 0
    exact: int = 0
    via_import: int = 0
    by_name: int = 0
    ambiguous: int = 0
    too_ambiguous: int = 0
    external: int = 0
    unresolved: int = 0
    edges: int = 0
