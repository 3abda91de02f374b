"""Which repository files an import names, per language: the module half of call resolution (no I/O).

Python dotted and relative imports, JS/TS relative specifiers (with the extensions and `index` files a
bundler tries), Go import paths (through go.mod module paths, else by folder suffix), Java packages and
Rust `crate`/`self`/`super` paths including inline `mod`s. `graph.resolve` builds on these indexes to
find the definitions a call site reaches.
"""

from __future__ import annotations

import posixpath
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .extract import python_module, rust_module
from .records import Definition, FileGraph

_JS_EXTS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".d.ts")


@dataclass(frozen=True)
class ModuleTarget:
    """A module as a resolution target: a file, plus a qualified prefix for Rust inline `mod`s."""

    path: str
    prefix: str = ""


class ModuleIndex:
    """Per-language indexes of the files' modules and packages, with memoised import lookups."""

    def __init__(self, files: Sequence[FileGraph], go_modules: Mapping[str, str] | None = None) -> None:
        self.files = {f.path: f for f in files}
        # Go module path -> its folder, longest path first (a nested module wins over its parent).
        self.go_modules = sorted(((p, d) for d, p in (go_modules or {}).items()), key=lambda x: -len(x[0]))
        # path -> qualified name -> definitions (a Rust path into an inline `mod` must name one).
        self.by_qual: dict[str, dict[str, list[Definition]]] = {}
        self.py_modules: dict[str, list[str]] = defaultdict(list)
        self.go_dirs: dict[str, list[str]] = defaultdict(list)
        self.go_dir_suffix: dict[str, list[str]] = defaultdict(list)
        self.packages: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.rust_crates: dict[str, str] = {}
        self._module_memo: dict[tuple[str, str, str], list[ModuleTarget]] = {}
        for f in files:
            quals: dict[str, list[Definition]] = defaultdict(list)
            for d in f.definitions:
                quals[d.qualified].append(d)
            self.by_qual[f.path] = quals
            self._index_module(f)

    def _index_module(self, f: FileGraph) -> None:
        directory = posixpath.dirname(f.path)
        if f.language == "python":
            parts = python_module(f.path).split(".")
            for i in range(len(parts)):
                if parts[i]:
                    self.py_modules[".".join(parts[i:])].append(f.path)
        elif f.language == "go":
            if directory not in self.go_dirs:
                segs = directory.split("/") if directory else []
                for i in range(len(segs)):
                    self.go_dir_suffix["/".join(segs[i:])].append(directory)
            self.go_dirs[directory].append(f.path)
            self.packages[(f"go:{directory}", f.package or "")].append(f.path)
        elif f.language == "java" and f.package:
            self.packages[("java", f.package)].append(f.path)
        elif f.language == "rust":
            root, _ = rust_module(f.path)
            if root.endswith("src"):
                crate_dir = posixpath.basename(posixpath.dirname(root))
                if crate_dir:
                    self.rust_crates.setdefault(crate_dir.replace("-", "_"), root)

    # ---- module resolution, per language -------------------------------------------------------

    def modules(self, from_path: str, module: str) -> list[ModuleTarget]:
        f = self.files[from_path]
        key = (f.language, from_path if module.startswith((".", "self", "super")) else "", module)
        cached = self._module_memo.get(key)
        if cached is None:
            if f.language == "python":
                cached = [ModuleTarget(p) for p in self._python_modules(from_path, module)]
            elif f.language in ("javascript", "typescript", "tsx"):
                cached = [ModuleTarget(p) for p in self._js_modules(from_path, module)]
            elif f.language == "go":
                cached = [ModuleTarget(p) for p in self._go_modules(module)]
            elif f.language == "java":
                cached = [ModuleTarget(p) for p in self.packages.get(("java", module), [])]
            elif f.language == "rust":
                cached = self._rust_modules(from_path, module)
            else:
                cached = []
            self._module_memo[key] = cached
        return cached

    def _python_modules(self, from_path: str, module: str) -> list[str]:
        if not module.startswith("."):
            found = self.py_modules.get(module, [])
            if len(found) <= 1:
                return found

            # Several source roots define it: prefer the one nearest the importing file.
            def closeness(p: str) -> tuple[int, int]:
                common = posixpath.commonpath([p, from_path]) if "/" in p and "/" in from_path else ""
                return (-len(common.split("/")) if common else 0, p.count("/"))

            best = min(closeness(p) for p in found)
            return [p for p in found if closeness(p) == best]
        dots = len(module) - len(module.lstrip("."))
        parts = from_path.split("/")[:-1]
        if dots - 1 > len(parts):
            return []
        parts = parts[: len(parts) - (dots - 1)]
        rest = module[dots:]
        if rest:
            parts += rest.split(".")
        base = "/".join(parts)
        for cand in (f"{base}.py" if base else "", f"{base}/__init__.py" if base else "__init__.py"):
            if cand and cand in self.files:
                return [cand]
        return []

    def _js_modules(self, from_path: str, spec: str) -> list[str]:
        if not spec.startswith("."):
            return []
        base = posixpath.normpath(posixpath.join(posixpath.dirname(from_path), spec))
        if base.startswith(".."):
            return []
        stems = [base]
        stem, ext = posixpath.splitext(base)
        if ext in (".js", ".jsx", ".mjs", ".cjs"):
            stems.append(stem)  # TS ESM imports name the compiled .js file
        for s in stems:
            for cand in (s, *(s + e for e in _JS_EXTS), *(f"{s}/index{e}" for e in _JS_EXTS)):
                if cand in self.files:
                    return [cand]
        return []

    def _go_modules(self, import_path: str) -> list[str]:
        for module, folder in self.go_modules:  # go.mod says where the module's packages live
            if import_path == module or import_path.startswith(module + "/"):
                rel = import_path[len(module) :].strip("/")
                package = posixpath.join(folder, rel) if folder and rel else folder or rel
                if package in self.go_dirs:
                    return list(self.go_dirs[package])
        segs = [s for s in import_path.split("/") if s]
        if len(segs) > 1 and segs[-1][:1] == "v" and segs[-1][1:].isdigit():
            segs.pop()
        if not segs:
            return []
        has_domain = "." in segs[0]
        for i in range(len(segs)):
            if i > 0 and not has_domain:
                break  # the standard library: only an exact directory match counts
            dirs = self.go_dir_suffix.get("/".join(segs[i:]), [])
            if i > 0:
                dirs = [d for d in dirs if d.count("/") + 1 == len(segs) - i]
                if len(segs) - i == 1 and not dirs:
                    continue
            if dirs:
                return [p for d in dirs for p in self.go_dirs[d]]
        if has_domain and "" in self.go_dirs:
            root = self.go_dirs[""]
            last = segs[-1].replace("-", "_")
            if any(self.files[p].package in (last, segs[-1]) for p in root):
                return list(root)
        return []

    def _rust_modules(self, from_path: str, module: str) -> list[ModuleTarget]:
        root, current = rust_module(from_path)
        segs = [s for s in module.split("::") if s]
        base: tuple[str, ...]
        if not segs:
            base = current
        elif segs[0] == "crate":
            base, segs = (), segs[1:]
        elif segs[0] == "self":
            base, segs = current, segs[1:]
        elif segs[0] == "super":
            base = current
            while segs and segs[0] == "super":
                base, segs = base[:-1], segs[1:]
        elif segs[0] in self.rust_crates:
            root, base, segs = self.rust_crates[segs[0]], (), segs[1:]
        else:
            base = current  # `mod foo;` then `use foo::x`
        full = (*base, *segs)
        for k in range(len(full), -1, -1):
            mod_file = self._rust_file(root, full[:k])
            if mod_file is not None:
                rest = full[k:]
                if rest and not self.by_qual[mod_file].get(".".join(rest)):
                    return []
                return [ModuleTarget(mod_file, "".join(f"{s}." for s in rest))]
        return []

    def _rust_file(self, root: str, segs: tuple[str, ...]) -> str | None:
        prefix = f"{root}/" if root else ""
        if not segs:
            cands: tuple[str, ...] = (f"{prefix}lib.rs", f"{prefix}main.rs")
        else:
            joined = "/".join(segs)
            cands = (f"{prefix}{joined}.rs", f"{prefix}{joined}/mod.rs")
        return next((c for c in cands if c in self.files), None)

    def submodule(self, module: ModuleTarget, name: str) -> list[ModuleTarget]:
        """`pkg.sub` where `pkg` is a package: the file of `sub` (Python packages, Rust modules)."""
        f = self.files[module.path]
        if f.language == "python" and module.path.endswith("__init__.py"):
            d = posixpath.dirname(module.path)
            prefix = f"{d}/" if d else ""
            for cand in (f"{prefix}{name}.py", f"{prefix}{name}/__init__.py"):
                if cand in self.files:
                    return [ModuleTarget(cand)]
        elif f.language == "rust" and not module.prefix:
            return self._rust_modules(module.path, f"self::{name}")
        return []
