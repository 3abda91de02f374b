"""Decoding of import statements into ImportBindings, one small function per language family.

Queries only find the statements; their shapes (aliases, lists, nested `use` trees) are easier to read
in Python than to enumerate as query patterns.
"""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from .records import ImportBinding


def text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


def _line(node: Node) -> int:
    return node.start_point[0] + 1


def _string_value(node: Node | None) -> str:
    """The content of a string literal without its quotes."""
    raw = text(node)
    return raw[1:-1] if len(raw) >= 2 and raw[0] in "\"'`" else raw


def python_imports(node: Node, path: str) -> list[ImportBinding]:
    line = _line(node)
    out: list[ImportBinding] = []
    if node.type == "import_statement":
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                module = text(child.child_by_field_name("name"))
                out.append(ImportBinding(text(child.child_by_field_name("alias")), module, None, path, line))
            else:
                module = text(child)
                out.append(ImportBinding(module, module, None, path, line))
        return out
    module = text(node.child_by_field_name("module_name"))
    if any(c.type == "wildcard_import" for c in node.children):
        return [ImportBinding("*", module, "*", path, line)]
    for child in node.children_by_field_name("name"):
        if child.type == "aliased_import":
            name = text(child.child_by_field_name("name"))
            out.append(ImportBinding(text(child.child_by_field_name("alias")), module, name, path, line))
        else:
            name = text(child)
            out.append(ImportBinding(name, module, name, path, line))
    return out


def _export_name(node: Node | None) -> str:
    raw = text(node)
    return _string_value(node) if raw[:1] in "\"'" else raw


def ecmascript_imports(node: Node, path: str) -> list[ImportBinding]:
    line = _line(node)
    out: list[ImportBinding] = []
    if node.type == "import_statement":
        module = _string_value(node.child_by_field_name("source"))
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        for part in clause.named_children if clause is not None else ():
            if part.type == "identifier":
                out.append(ImportBinding(text(part), module, "default", path, line))
            elif part.type == "namespace_import":
                ident = next((c for c in part.named_children if c.type == "identifier"), None)
                out.append(ImportBinding(text(ident), module, None, path, line))
            elif part.type == "named_imports":
                for spec in part.named_children:
                    if spec.type != "import_specifier":
                        continue
                    name = _export_name(spec.child_by_field_name("name"))
                    alias = spec.child_by_field_name("alias")
                    out.append(
                        ImportBinding(_export_name(alias) if alias else name, module, name, path, line)
                    )
        return out
    if node.type == "export_statement":
        source = node.child_by_field_name("source")
        module = _string_value(source) if source is not None else ""
        clause = next((c for c in node.named_children if c.type == "export_clause"), None)
        if clause is not None:
            for spec in clause.named_children:
                if spec.type != "export_specifier":
                    continue
                name = _export_name(spec.child_by_field_name("name"))
                alias = spec.child_by_field_name("alias")
                out.append(ImportBinding(_export_name(alias) if alias else name, module, name, path, line))
            return out
        if source is not None:
            ns = next((c for c in node.named_children if c.type == "namespace_export"), None)
            if ns is not None:
                ident = ns.named_children[-1] if ns.named_children else None
                return [ImportBinding(_export_name(ident), module, None, path, line)]
            return [ImportBinding("*", module, "*", path, line)]
        if any(c.type == "default" for c in node.children):
            target = node.child_by_field_name("declaration") or node.child_by_field_name("value")
            if target is not None:
                name_node = target if target.type == "identifier" else target.child_by_field_name("name")
                if name_node is not None and name_node.type in ("identifier", "type_identifier"):
                    return [ImportBinding("default", "", text(name_node), path, line)]
        return out
    if node.type == "variable_declarator":
        call = node.child_by_field_name("value")
        args = call.child_by_field_name("arguments") if call is not None else None
        module = _string_value(args.named_children[0]) if args is not None and args.named_children else ""
        target_node = node.child_by_field_name("name")
        if target_node is None:
            return out
        if target_node.type == "identifier":
            return [ImportBinding(text(target_node), module, None, path, line)]
        if target_node.type == "object_pattern":
            for prop in target_node.named_children:
                if prop.type == "shorthand_property_identifier_pattern":
                    out.append(ImportBinding(text(prop), module, text(prop), path, line))
                elif prop.type == "pair_pattern":
                    key, value = prop.child_by_field_name("key"), prop.child_by_field_name("value")
                    if value is not None and value.type == "identifier":
                        out.append(ImportBinding(text(value), module, text(key), path, line))
        return out
    if node.type == "assignment_expression":  # module.exports = name
        return [ImportBinding("default", "", text(node.child_by_field_name("right")), path, line)]
    return out


def _go_local(import_path: str) -> str:
    parts = [p for p in import_path.split("/") if p]
    if len(parts) > 1 and parts[-1][:1] == "v" and parts[-1][1:].isdigit():
        parts.pop()
    if not parts:
        return import_path
    last = parts[-1].removeprefix("go-")
    head, dot, version = last.rpartition(".")
    if dot and version[:1] == "v" and version[1:].isdigit():  # gopkg.in/yaml.v3 -> yaml
        last = head
    return last.replace("-", "_").replace(".", "_")


def go_imports(node: Node, path: str) -> list[ImportBinding]:
    out: list[ImportBinding] = []
    specs = [c for c in node.named_children if c.type == "import_spec"]
    for group in (c for c in node.named_children if c.type == "import_spec_list"):
        specs.extend(c for c in group.named_children if c.type == "import_spec")
    for spec in specs:
        module = _string_value(spec.child_by_field_name("path"))
        alias_node = spec.child_by_field_name("name")
        alias = text(alias_node) if alias_node is not None else ""
        if alias == "_":
            continue
        if alias == ".":
            out.append(ImportBinding("*", module, "*", path, _line(spec)))
        else:
            out.append(ImportBinding(alias or _go_local(module), module, None, path, _line(spec)))
    return out


def java_imports(node: Node, path: str) -> list[ImportBinding]:
    target = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
    full = text(target)
    line = _line(node)
    if any(c.type == "asterisk" for c in node.named_children):
        return [ImportBinding("*", full, "*", path, line)]
    module, _, name = full.rpartition(".")
    return [ImportBinding(name, module, name, path, line)]


def _rust_use(node: Node, prefix: list[str], path: str, line: int, out: list[ImportBinding]) -> None:
    kind = node.type
    if kind in ("scoped_identifier", "identifier", "crate", "self", "super"):
        segs = prefix + text(node).split("::")
        if segs[-1] == "self" and len(segs) > 1:
            segs.pop()
        out.append(ImportBinding(segs[-1], "::".join(segs[:-1]), segs[-1], path, line))
    elif kind == "use_as_clause":
        segs = prefix + text(node.child_by_field_name("path")).split("::")
        if segs[-1] == "self" and len(segs) > 1:
            segs.pop()
        alias = text(node.child_by_field_name("alias"))
        if alias != "_":
            out.append(ImportBinding(alias, "::".join(segs[:-1]), segs[-1], path, line))
    elif kind == "use_list":
        for child in node.named_children:
            _rust_use(child, prefix, path, line, out)
    elif kind == "scoped_use_list":
        base = node.child_by_field_name("path")
        new_prefix = prefix + (text(base).split("::") if base is not None else [])
        inner = node.child_by_field_name("list")
        if inner is not None:
            _rust_use(inner, new_prefix, path, line, out)
    elif kind == "use_wildcard":
        base = node.named_children[0] if node.named_children else None
        segs = prefix + (text(base).split("::") if base is not None else [])
        out.append(ImportBinding("*", "::".join(segs), "*", path, line))


def rust_imports(node: Node, path: str) -> list[ImportBinding]:
    out: list[ImportBinding] = []
    argument = node.child_by_field_name("argument")
    if argument is not None:
        _rust_use(argument, [], path, _line(node), out)
    return out


IMPORT_DECODERS: dict[str, Callable[[Node, str], list[ImportBinding]]] = {
    "python": python_imports,
    "javascript": ecmascript_imports,
    "typescript": ecmascript_imports,
    "tsx": ecmascript_imports,
    "go": go_imports,
    "rust": rust_imports,
    "java": java_imports,
}
