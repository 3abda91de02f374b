"""Resolution of call sites to definitions across files, from the per-file graphs alone (no I/O).

Order of evidence, strongest first: the enclosing scopes and the file itself ("exact"), the receiver's
class when the extractor saw its type ("exact" in the same file, else how the class was found), the
file's imports followed through re-exports ("import"), the same Go/Java package ("exact"), and finally
the bare name across the repository ("name"; every candidate is kept, `candidates` says how many).
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

from .extract import rust_module
from .languages import LanguageSpec, language_spec
from .modules import ModuleIndex, ModuleTarget
from .records import CLASS_KINDS, MODULE_CALLER, Definition, Edge, FileGraph, ImportBinding, ResolveStats

_ECMA = frozenset({"javascript", "typescript", "tsx"})
_RANK = {"exact": 0, "import": 1, "name": 2}
DEFAULT_MAX_CANDIDATES = 10
_MAX_BASES_DEPTH = 5


_Target = Definition | ModuleTarget
_Found = tuple[list[_Target], str | None]  # (targets, confidence | "external" | None)


def _dedupe(items: Iterable[_Target]) -> list[_Target]:
    seen: set[object] = set()
    out: list[_Target] = []
    for item in items:
        key = (item.path, item.qualified, item.start_line) if isinstance(item, Definition) else item
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


class _Resolver(ModuleIndex):
    """Indexes over all files plus memoised lookups; built once per `resolve` call. Which file an import
    names comes from `ModuleIndex` (graph/modules.py); this class finds the definitions a name reaches."""

    def __init__(self, files: Sequence[FileGraph], go_modules: Mapping[str, str] | None = None) -> None:
        super().__init__(files, go_modules)
        self.by_name: dict[str, list[Definition]] = defaultdict(list)
        self.by_member: dict[str, list[Definition]] = defaultdict(list)
        self.bindings: dict[str, dict[str, list[ImportBinding]]] = {}
        self.stars: dict[str, list[ImportBinding]] = {}
        self._memo: dict[tuple[str, str, str], _Found] = {}
        self._busy: set[tuple[str, str, str]] = set()
        self._member_memo: dict[str, list[Definition]] = {}
        for f in files:
            for d in f.definitions:
                self.by_name[d.name].append(d)
                tail = d.qualified.rsplit(".", 2)
                if len(tail) >= 2:
                    self.by_member[f"{tail[-2]}.{tail[-1]}"].append(d)
            binds: dict[str, list[ImportBinding]] = defaultdict(list)
            stars: list[ImportBinding] = []
            for b in f.imports:
                (stars if b.local == "*" else binds[b.local]).append(b)
            self.bindings[f.path] = binds
            self.stars[f.path] = stars

    # ---- name lookup ---------------------------------------------------------------------------

    def lookup(self, path: str, name: str, prefix: str = "") -> _Found:
        """`name` as seen from the top level of `path` (or inside a Rust inline module `prefix`)."""
        key = (path, name, prefix)
        found = self._memo.get(key)
        if found is not None:
            return found
        if key in self._busy:
            return [], None  # an import cycle: nothing new down this path
        self._busy.add(key)
        try:
            found = self._lookup(path, name, prefix)
        finally:
            self._busy.discard(key)
        self._memo[key] = found
        return found

    def _lookup(self, path: str, name: str, prefix: str) -> _Found:
        local = self.by_qual[path].get(prefix + name)
        if local:
            return list(local), "exact"
        if prefix:
            return [], None
        bound = self.bindings[path].get(name)
        if bound:
            targets = _dedupe(t for b in bound for t in self.follow(b))
            return (targets, "import") if targets else ([], "external")
        f = self.files[path]
        if f.language == "go":
            same = self.packages.get((f"go:{posixpath.dirname(path)}", f.package or ""), [])
            defs = [d for p in same if p != path for d in self.by_qual[p].get(name, [])]
            if defs:
                return list(defs), "exact"
        elif f.language == "java" and f.package:
            defs = [
                d for p in self.packages.get(("java", f.package), []) for d in self.by_qual[p].get(name, [])
            ]
            if defs:
                return list(defs), "exact"
        starred: list[_Target] = []
        for b in self.stars[path]:
            for m in self.modules(path, b.module):
                starred.extend(self.lookup(m.path, name, m.prefix)[0])
            if f.language == "java" and not starred:  # import static pkg.Cls.*
                starred.extend(self._java_static(b.module, name))
        if starred:
            return _dedupe(starred), "import"
        return [], None

    def follow(self, b: ImportBinding) -> list[_Target]:
        """What an import binding denotes inside the repo (empty: it points outside)."""
        f = self.files[b.path]
        if b.module == "" and b.imported:  # an export alias of this very file
            return [t for t in self.lookup(b.path, b.imported)[0] if not _same(t, b)]
        if f.language == "java":
            out: list[_Target] = []
            for m in self.modules(b.path, b.module):
                out.extend(self.lookup(m.path, b.imported or b.local, "")[0])
            return _dedupe(out) or self._java_static(b.module, b.imported or b.local)
        mods = self.modules(b.path, b.module)
        if b.imported is None:
            return list(mods)
        out = []
        for m in mods:
            found = self.lookup(m.path, b.imported, m.prefix)[0]
            if not found and b.imported == "default":
                found = self.lookup(m.path, b.local, m.prefix)[0]
            out.extend(found or self.submodule(m, b.imported))
        if not out and f.language == "python" and not mods:
            joined = f"{b.module}.{b.imported}" if not b.module.endswith(".") else b.module + b.imported
            out.extend(self.modules(b.path, joined))
        if not out and f.language == "rust":
            out.extend(self.modules(b.path, f"{b.module}::{b.imported}" if b.module else b.imported))
        return _dedupe(out)

    def _java_static(self, class_path: str, member: str) -> list[_Target]:
        package, _, cls = class_path.rpartition(".")
        out: list[_Target] = []
        for p in self.packages.get(("java", package), []):
            out.extend(self.by_qual[p].get(f"{cls}.{member}", []))
        return out

    def members(self, target: _Target, name: str, depth: int = 0) -> list[Definition]:
        """`target.name`: a module's top-level symbol or a class's method (searching its bases)."""
        if isinstance(target, ModuleTarget):
            in_module = self.lookup(target.path, name, target.prefix)[0]
            found_in = [t for t in in_module if isinstance(t, Definition)]
            if not found_in and depth == 0 and self.files[target.path].language in _ECMA:
                for value in self.values([target]):  # `module.exports = Client`; `mod.staticMethod()`
                    found_in.extend(self.members(value, name, depth + 1))
            return found_in
        found = list(self.by_qual[target.path].get(f"{target.qualified}.{name}", []))
        if found:
            return found
        f = self.files[target.path]
        if f.language == "go":
            same = self.packages.get((f"go:{posixpath.dirname(target.path)}", f.package or ""), [])
            found = [d for p in same for d in self.by_qual[p].get(f"{target.name}.{name}", [])]
        elif f.language == "rust":
            root = rust_module(target.path)[0]
            found = [
                d for d in self.by_member.get(f"{target.name}.{name}", []) if rust_module(d.path)[0] == root
            ]
        if found or depth >= _MAX_BASES_DEPTH:
            return found
        for base in target.bases:
            for cls in self.lookup(target.path, base)[0]:
                if isinstance(cls, Definition) and cls.kind in CLASS_KINDS and cls is not target:
                    found.extend(self.members(cls, name, depth + 1))
        return found

    def values(self, targets: list[_Target]) -> list[_Target]:
        """Targets as values: a required/imported JS module stands for its default export."""
        out: list[_Target] = []
        for t in targets:
            if isinstance(t, ModuleTarget):
                if self.files[t.path].language in _ECMA:
                    out.extend(d for d in self.lookup(t.path, "default")[0] if isinstance(d, Definition))
            else:
                out.append(t)
        return out

    def type_targets(self, f: FileGraph, spec: LanguageSpec, type_name: str) -> _Found:
        """The class-like definitions a type name denotes in file `f`."""
        segs = type_name.replace("::", ".").split(".")
        if len(segs) > 1 and not self.by_qual[f.path].get(type_name):
            targets, conf = self.resolve_path(f, spec, segs)
        else:
            targets, conf = self.lookup(f.path, type_name)
            if not targets and conf != "external":
                targets, conf = list(self.by_name.get(type_name, [])), "name"
        classes = [t for t in self.values(targets) if isinstance(t, Definition) and t.kind in CLASS_KINDS]
        if classes:
            return list(classes), conf
        return [], "external" if not targets else None

    def resolve_path(self, f: FileGraph, spec: LanguageSpec, segs: list[str]) -> _Found:
        """A dotted/`::` receiver such as `pkg.sub`, `crate::a::B` or `Foo`, left to right."""
        targets: list[_Target] = []
        conf: str | None = None
        start = 1
        if f.language == "rust" and (segs[0] in ("crate", "self", "super") or segs[0] in self.rust_crates):
            for k in range(len(segs), 0, -1):
                mods = self.modules(f.path, "::".join(segs[:k]))
                if mods:
                    targets, conf, start = list(mods), "import", k
                    break
            if not targets:
                return [], "external" if segs[0] not in ("crate", "self", "super") else None
        elif f.language == "python":
            for k in range(len(segs), 0, -1):  # `import a.b` binds "a.b"
                if ".".join(segs[:k]) in self.bindings[f.path]:
                    targets, conf = self.lookup(f.path, ".".join(segs[:k]))
                    start = k
                    break
            else:
                targets, conf = self.lookup(f.path, segs[0])
        else:
            targets, conf = self.lookup(f.path, segs[0])
            if not targets and conf is None and f.language == "rust":  # `mod util;` then `util::log()`
                targets = list(self.modules(f.path, f"self::{segs[0]}"))
                conf = "import" if targets else None
        if not targets:
            return [], conf
        for seg in segs[start:]:
            nxt: list[_Target] = []
            for t in targets:
                nxt.extend(self.members(t, seg))
                if isinstance(t, ModuleTarget):
                    nxt.extend(self.submodule(t, seg))
            targets = _dedupe(nxt)
            if not targets:
                return [], None
        return targets, conf

    # ---- one reference -------------------------------------------------------------------------

    def resolve_call(
        self,
        f: FileGraph,
        spec: LanguageSpec,
        name: str,
        receiver: str | None,
        receiver_type: str | None,
        caller: str | None,
        kind: str = "method_call",
    ) -> _Found:
        if receiver is None:
            return self._bare(f, spec, name, caller)
        return self._member(f, spec, name, receiver, receiver_type, caller, kind != "method_call")

    def _enclosing_class(self, f: FileGraph, caller: str | None) -> Definition | None:
        parts = caller.split(".") if caller else []
        quals = self.by_qual[f.path]
        for i in range(len(parts), 0, -1):
            for d in quals.get(".".join(parts[:i]), []):
                if d.kind in CLASS_KINDS:
                    return d
        return None

    def _bare(self, f: FileGraph, spec: LanguageSpec, name: str, caller: str | None) -> _Found:
        quals = self.by_qual[f.path]
        parts = caller.split(".") if caller else []
        for i in range(len(parts), 0, -1):
            scope = ".".join(parts[:i])
            scope_defs = quals.get(scope, [])
            is_class = any(d.kind in CLASS_KINDS for d in scope_defs)
            if is_class and spec.implicit_this:
                found = self.members(scope_defs[0], name)
                if found:
                    return list(found), "exact"
            elif not is_class and quals.get(f"{scope}.{name}"):
                return list(quals[f"{scope}.{name}"]), "exact"
        targets, conf = self.lookup(f.path, name)
        if targets:
            defs = self.values(targets)
            return (defs, conf) if defs else ([], None)
        if conf == "external" or name in spec.builtins:
            return [], "external"
        if spec.bare_calls_need_binding:
            return [], None
        cands = [d for d in self.by_name.get(name, []) if d.kind != "method" and d.qualified == d.name]
        return (list(cands), "name") if cands else ([], None)

    def _member(
        self,
        f: FileGraph,
        spec: LanguageSpec,
        name: str,
        receiver: str,
        receiver_type: str | None,
        caller: str | None,
        static: bool = False,
    ) -> _Found:
        """`receiver.name(...)`; `static` marks an explicit path (`Foo::f()`, `new ns.Foo()`)."""
        if receiver in spec.super_names:
            cls = self._enclosing_class(f, caller)
            found: list[Definition] = []
            for base in cls.bases if cls is not None else ():
                for t in self.lookup(f.path, base)[0]:
                    if isinstance(t, Definition):
                        found.extend(self.members(t, name))
            return (list(found), "exact") if found else ([], "external")
        if receiver_type is not None:
            classes, conf = self.type_targets(f, spec, receiver_type)
            if classes:
                via_class = _dedupe(
                    m for c in classes if isinstance(c, Definition) for m in self.members(c, name)
                )
                if via_class:
                    return via_class, conf if receiver not in spec.self_names else "exact"
            elif conf == "external":
                return [], "external"
        segs = receiver.split(spec.path_sep)
        if spec.path_sep != "." and len(segs) == 1:
            segs = receiver.split(".")
        if all(s.isidentifier() for s in segs) and segs[0] not in spec.self_names:
            targets, conf = self.resolve_path(f, spec, segs)
            if targets:
                members = _dedupe(m for t in targets for m in self.members(t, name))
                return (members, conf) if members else ([], None)
            if conf == "external" or segs[0] in spec.builtins:
                return [], "external"
            if len(segs) == 1 and segs[0][:1].isupper() and not self.by_name.get(segs[0]):
                return [], "external"  # a type the repo does not define: `String::from`, `Math.max`
        if static:
            return [], "external"  # an explicit path the repo does not define
        cands = self._members_named(name)
        return (list(cands), "name") if cands else ([], None)

    def _members_named(self, name: str) -> list[Definition]:
        """Every definition `obj.name()` can reach by name alone (memoised: hot in large repos)."""
        found = self._member_memo.get(name)
        if found is None:
            found = self._member_memo[name] = [d for d in self.by_name.get(name, []) if self._is_member(d)]
        return found

    def _is_member(self, d: Definition) -> bool:
        """Can `obj.name()` reach d? Methods, and in JS/TS functions stored on objects."""
        if d.kind == "method":
            return True
        return d.kind == "function" and "." in d.qualified and self.files[d.path].language in _ECMA


def _same(t: _Target, b: ImportBinding) -> bool:
    return isinstance(t, ModuleTarget) and t.path == b.path


def resolve_with_stats(
    files: Sequence[FileGraph],
    max_candidates: int | None = DEFAULT_MAX_CANDIDATES,
    *,
    only: Collection[str] | None = None,
    go_modules: Mapping[str, str] | None = None,
) -> tuple[list[Edge], ResolveStats]:
    """Edges for every call site that reaches the repo's own code, plus counts of what did not.

    A call site matched only by name to more than `max_candidates` definitions (`x.get()` against
    every `get` method of a large repo) yields no edges and is counted in `stats.too_ambiguous`;
    None keeps them all. Exact and import-resolved sites are never capped. `only` limits the call
    sites to those in these paths (every file still serves as a target): incremental re-resolution.
    `go_modules` maps a folder to the Go module path its go.mod declares (`graph.gomod`), so imports of
    a module kept in a subfolder of the repository resolve.
    """
    r = _Resolver(files, go_modules)
    counts = dict.fromkeys(("references", "imports", "external", "unresolved", "too_ambiguous"), 0)
    counts.update(dict.fromkeys(_RANK, 0))
    ambiguous = 0
    edges: list[Edge] = []
    for f in files:
        if only is not None and f.path not in only:
            continue
        spec = language_spec(f.language)
        if spec is None:
            continue
        path = f.path
        # One file repeats call sites (`self.assertEqual` hundreds of times): resolve each shape once. The
        # caller matters only where the scope is searched (bare calls, `super`).
        memo: dict[tuple[str, str | None, str | None, bool, str | None], tuple[list[Definition], str]] = {}
        seen: set[tuple[str, int, str, str, int]] = set()
        counts["references"] += len(f.references)
        for ref in f.references:
            if ref.kind == "import":
                counts["imports"] += 1
                continue
            receiver = ref.receiver
            scoped = receiver is None or receiver in spec.super_names
            key = (
                ref.name,
                receiver,
                ref.receiver_type,
                ref.kind == "method_call",
                ref.caller if scoped else None,
            )
            found = memo.get(key)
            if found is None:
                targets, conf = r.resolve_call(
                    f, spec, ref.name, receiver, ref.receiver_type, ref.caller, ref.kind
                )
                defs = [t for t in targets if isinstance(t, Definition)]
                if not defs or conf not in _RANK:
                    outcome = "external" if conf == "external" else "unresolved"
                elif conf == "name" and max_candidates is not None and len(defs) > max_candidates:
                    outcome = "too_ambiguous"
                else:
                    outcome = conf
                found = memo[key] = (defs, outcome)
            defs, outcome = found
            counts[outcome] += 1
            if outcome not in _RANK:
                continue
            n = len(defs)
            if n > 1:
                ambiguous += 1
            caller = ref.caller or MODULE_CALLER
            line = ref.line
            for d in defs:
                edge_key = (caller, line, d.qualified, d.path, d.start_line)
                if edge_key in seen:
                    continue
                seen.add(edge_key)
                edges.append(Edge(caller, path, line, d.qualified, d.path, d.start_line, outcome, n))
    stats = ResolveStats(
        references=counts["references"],
        imports=counts["imports"],
        calls=counts["references"] - counts["imports"],
        exact=counts["exact"],
        via_import=counts["import"],
        by_name=counts["name"],
        ambiguous=ambiguous,
        too_ambiguous=counts["too_ambiguous"],
        external=counts["external"],
        unresolved=counts["unresolved"],
        edges=len(edges),
    )
    return edges, stats


def resolve(files: Sequence[FileGraph], max_candidates: int | None = DEFAULT_MAX_CANDIDATES) -> list[Edge]:
    """Call edges across `files`; ambiguous call sites keep one edge per candidate."""
    return resolve_with_stats(files, max_candidates)[0]
