"""Go modules of a repository: which folder holds which module path (`module example.com/x` in its
go.mod), so an import resolves to a package folder even when the module lives in a subfolder of the
repository (monorepos: `services/api/go.mod` declaring `github.com/acme/api`).

The resolver stays storage-free: it is handed the mapping; this module reads the go.mod files (only
those above the folders that hold Go files, each once).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..bounded_read import read_small
from .records import FileGraph

_MODULE = re.compile(r"^\s*module\s+\"?([^\s\"]+)\"?", re.MULTILINE)


def module_path(go_mod: str) -> str | None:
    """The module path a go.mod declares.

    >>> module_path('// comment\\nmodule github.com/acme/api\\n\\ngo 1.22\\n')
    'github.com/acme/api'
    """
    m = _MODULE.search(go_mod)
    return m.group(1) if m else None


def find_modules(root: Path, go_dirs: Iterable[str]) -> dict[str, str]:
    """{module folder (relative, '' for the root): module path} for the go.mod files at or above `go_dirs`
    inside `root`."""
    out: dict[str, str] = {}
    checked: set[str] = set()
    for directory in go_dirs:
        d = directory
        while True:
            if d not in checked:
                checked.add(d)
                text = read_small(root / d / "go.mod")
                found = module_path(text) if text is not None else None
                if found:
                    out[d] = found
            if not d:
                break
            d = posixpath.dirname(d)
    return out


def modules_for(root: Path, graphs: Sequence[FileGraph]) -> dict[str, str]:
    """The Go modules above the folders of these graphs' Go files."""
    dirs = {posixpath.dirname(g.path) for g in graphs if g.language == "go"}
    return find_modules(root, sorted(dirs)) if dirs else {}
