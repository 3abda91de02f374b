"""Persistence of the code graph in the index database, next to the chunks.

Definitions, references and imports belong to a file CONTENT (`content_key`), like chunks: unchanged
content is never re-extracted and branches share it. Resolved call edges belong to a BRANCH and are
refreshed incrementally after each index run: only files whose references or imports mention a name
that the changed files define (or defined) are re-resolved; the rest of the branch keeps its edges.

The tables are created by the `_v1` script in `codebase_index.store_schema`; this module writes them and
reads what the refresh needs; the tool queries are in `graph/reads.py`.
"""

from __future__ import annotations

import posixpath
import sqlite3
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from sys import intern

import msgspec

from .extract import FileRows, python_module, rust_module
from .reads import DefinitionRow, EdgeRow, GraphReads
from .records import MODULE_CALLER, Definition, Edge, FileGraph, ImportBinding, Reference
from .resolve import resolve_with_stats

# Above this share of the branch's files affected by a change, resolving everything is cheaper than
# working out (and deleting) what changed.
FULL_RESOLVE_SHARE = 0.5
_CHUNK = 500

_RefRow = tuple[str, str | None, str, int, str | None, str | None]
_ImportRow = tuple[str, str, str | None, int]
_refs_decoder = msgspec.msgpack.Decoder(list[_RefRow])
_imports_decoder = msgspec.msgpack.Decoder(list[_ImportRow])
_encoder = msgspec.msgpack.Encoder()


class EdgeRefresh(msgspec.Struct):
    """What one edge refresh did (reported by the indexer and the graph benchmark)."""

    mode: str  # "full" | "incremental" | "none"
    files: int
    files_resolved: int
    edges: int
    edges_written: int
    seconds: float


def _package(language: str, path: str, stored: str | None) -> str | None:
    """Python and Rust packages follow from the path, which the per-content rows do not hold."""
    if language == "python":
        return python_module(path)
    if language == "rust":
        return "::".join(("crate", *rust_module(path)[1]))
    return stored


def _module_names(path: str) -> set[str]:
    """Names under which other files import the module at `path` (its stem; the folder for index files)."""
    stem = posixpath.basename(path).split(".", 1)[0]
    names = {stem}
    if stem in ("__init__", "index", "mod", "lib", "main"):
        names.add(posixpath.basename(posixpath.dirname(path)))
    return names


def _segments(text: str | None) -> Iterator[str]:
    if text:
        yield from text.replace("::", ".").split(".")


def _mentions(graph: FileGraph) -> set[str]:
    """Every name a file's resolution can depend on: call names, receiver/type segments, imports."""
    out: set[str] = set()
    for r in graph.references:
        out.add(r.name)
        out.update(_segments(r.receiver))
        out.update(_segments(r.receiver_type))
    for b in graph.imports:
        out.add(b.local)
        if b.imported:
            out.add(b.imported)
        out.update(_segments(b.module.replace("/", ".")))
    return out


def _provides(graph: FileGraph) -> set[str]:
    """Names a file makes visible to others: its definitions, its re-exports, its module name."""
    out = {d.name for d in graph.definitions}
    out.update(b.local for b in graph.imports)
    out.update(_module_names(graph.path))
    return out


def _definition_lines(graphs: Sequence[FileGraph]) -> dict[tuple[str, str], int]:
    """(path, qualified name) -> start line of every definition of the given files."""
    return {(g.path, d.qualified): d.start_line for g in graphs for d in g.definitions}


# Folder -> Go module path of the go.mod files above the given graphs' Go files (`graph.gomod`).
GoModules = Callable[[Sequence[FileGraph]], Mapping[str, str]]

# The graph_dirty path that asks for a full resolve of the branch (a forced run).
FULL_MARK = ""


class RefreshPlan(msgspec.Struct):
    """What `plan_refresh` read and resolved, for `apply_refresh` to write."""

    state: int | None  # graph_state.resolved_at when planned (None: never resolved)
    max_seq: int  # the newest graph_dirty row the plan covers
    only: set[str] | None  # files re-resolved (None: all)
    removed: list[str]
    edges: list[Edge]
    lines: dict[tuple[str, str], int]
    files: int
    seconds: float


class EncodedGraph(msgspec.Struct, frozen=True):
    """A FileGraph in its stored, path-free form: cheap to send from a worker process and to insert."""

    language: str
    package: str | None
    refs: bytes
    imports: bytes
    definitions: list[tuple[str, str, str, int, int, str]]


def encode_graph(graph: FileGraph) -> EncodedGraph:
    """Drop the path (contents are shared by paths and branches) and pack references/imports as msgpack."""
    package = graph.package if graph.language not in ("python", "rust") else None
    refs = [(r.name, r.receiver, r.kind, r.line, r.caller, r.receiver_type) for r in graph.references]
    imports = [(b.local, b.module, b.imported, b.line) for b in graph.imports]
    defs = [
        (d.name, d.qualified, d.kind, d.start_line, d.end_line, ",".join(d.bases)) for d in graph.definitions
    ]
    return EncodedGraph(graph.language, package, _encoder.encode(refs), _encoder.encode(imports), defs)


def encode_rows(rows: FileRows) -> EncodedGraph:
    """`encode_graph` straight from the extractor's tuples (the indexing path: no records built)."""
    package = rows.package if rows.language not in ("python", "rust") else None
    imports = [(b.local, b.module, b.imported, b.line) for b in rows.imports]
    defs = [(n, q, k, s, e, ",".join(b)) for n, q, k, s, e, b in rows.definitions]
    return EncodedGraph(
        rows.language, package, _encoder.encode(rows.references), _encoder.encode(imports), defs
    )


class GraphStore(GraphReads):
    """Reads and writes the graph tables over an open index connection (the caller owns transactions).

    The queries the graph tools run come from `GraphReads` (graph/reads.py); this class fills the tables."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    # -- per-content records ------------------------------------------------------------------------

    def add_content(self, key: str, graph: FileGraph | EncodedGraph, *, replace: bool = False) -> None:
        """Store what one content defines and references; a no-op when stored, unless `replace`."""
        if self.conn.execute("SELECT 1 FROM graph_contents WHERE content_key=?", (key,)).fetchone():
            if not replace:
                return
            self.delete_contents([key])
        enc = graph if isinstance(graph, EncodedGraph) else encode_graph(graph)
        self.conn.execute(
            "INSERT INTO graph_contents (content_key, language, package, refs, imports) VALUES (?,?,?,?,?)",
            (key, enc.language, enc.package, enc.refs, enc.imports),
        )
        self.conn.executemany(
            """INSERT INTO graph_defs (content_key, ordinal, name, qualified, kind, start_line, end_line,
                                      bases) VALUES (?,?,?,?,?,?,?,?)""",
            [(key, i, *row) for i, row in enumerate(enc.definitions)],
        )

    def delete_contents(self, keys: Sequence[str]) -> None:
        for start in range(0, len(keys), _CHUNK):
            part = list(keys[start : start + _CHUNK])
            marks = ",".join("?" * len(part))
            self.conn.execute(f"DELETE FROM graph_defs WHERE content_key IN ({marks})", part)
            self.conn.execute(f"DELETE FROM graph_contents WHERE content_key IN ({marks})", part)

    def load_branch(self, branch: str, paths: Collection[str] | None = None) -> list[FileGraph]:
        """The FileGraphs of every file on `branch` (or of `paths` only) with a stored graph.

        Paths, names, kinds, receivers and callers repeat across a project's definitions and call sites:
        each is kept as one string object (they were most of a full resolve's memory)."""
        defs: dict[str, list[Definition]] = {}
        for path, name, qualified, kind, start, end, bases in self.conn.execute(
            """SELECT f.path, d.name, d.qualified, d.kind, d.start_line, d.end_line, d.bases
               FROM files f JOIN graph_defs d ON d.content_key = f.content_key
               WHERE f.branch = ? ORDER BY f.path, d.ordinal""",
            (branch,),
        ):
            if paths is None or path in paths:
                path = intern(path)
                defs.setdefault(path, []).append(
                    Definition(
                        intern(name),
                        qualified,
                        intern(kind),
                        path,
                        start,
                        end,
                        tuple(bases.split(",")) if bases else (),
                    )
                )
        out: list[FileGraph] = []
        for path, language, package, refs_blob, imports_blob in self.conn.execute(
            """SELECT f.path, g.language, g.package, g.refs, g.imports
               FROM files f JOIN graph_contents g ON g.content_key = f.content_key
               WHERE f.branch = ? ORDER BY f.path""",
            (branch,),
        ):
            if paths is not None and path not in paths:
                continue
            path = intern(path)
            refs = [
                Reference(
                    intern(n),
                    rc if rc is None else intern(rc),
                    intern(k),
                    path,
                    ln,
                    c if c is None else intern(c),
                    rt if rt is None else intern(rt),
                )
                for n, rc, k, ln, c, rt in _refs_decoder.decode(refs_blob)
            ]
            imports = [
                ImportBinding(intern(lo), intern(m), im if im is None else intern(im), path, ln)
                for lo, m, im, ln in _imports_decoder.decode(imports_blob)
            ]
            out.append(
                FileGraph(
                    path, language, _package(language, path, package), defs.get(path, []), refs, imports
                )
            )
        return out

    def branch_keys(self, branch: str, paths: Sequence[str]) -> dict[str, str]:
        """path -> content key of these paths on `branch` (absent paths are left out)."""
        out: dict[str, str] = {}
        for start in range(0, len(paths), _CHUNK):
            part = list(paths[start : start + _CHUNK])
            marks = ",".join("?" * len(part))
            out.update(
                self.conn.execute(
                    f"SELECT path, content_key FROM files WHERE branch=? AND path IN ({marks})",
                    (branch, *part),
                ).fetchall()
            )
        return out

    def content_provides(self, keys: Collection[str]) -> set[str]:
        """Definition names of stored contents (the previous versions of changed or removed files)."""
        out: set[str] = set()
        key_list = list(keys)
        for start in range(0, len(key_list), _CHUNK):
            part = key_list[start : start + _CHUNK]
            marks = ",".join("?" * len(part))
            out.update(
                r[0]
                for r in self.conn.execute(
                    f"SELECT name FROM graph_defs WHERE content_key IN ({marks})", part
                )
            )
            for (blob,) in self.conn.execute(
                f"SELECT imports FROM graph_contents WHERE content_key IN ({marks})", part
            ):
                out.update(row[0] for row in _imports_decoder.decode(blob))
        return out

    # -- pending extraction (index runs mark, graph.extractor extracts) ----------------------------------

    def mark_pending(self, keys: Sequence[tuple[str, str]]) -> None:
        """(content key, language) pairs to extract later; written in the transaction of their chunks."""
        self.conn.executemany(
            """INSERT INTO graph_pending (content_key, language, unavailable) VALUES (?, ?, 0)
               ON CONFLICT (content_key) DO UPDATE SET unavailable = 0""",
            list(keys),
        )

    def clear_pending(self, keys: Sequence[str]) -> None:
        """Contents whose graph an index run extracted itself (a forced run over pending contents)."""
        self.conn.executemany("DELETE FROM graph_pending WHERE content_key=?", [(k,) for k in keys])

    def pending_files(self, catalog: str) -> dict[str, tuple[str, list[str]]]:
        """content key -> (language, paths on `catalog` holding it) for every pending content there."""
        out: dict[str, tuple[str, list[str]]] = {}
        for key, language, path in self.conn.execute(
            """SELECT p.content_key, p.language, f.path FROM graph_pending p
               JOIN files f ON f.content_key = p.content_key WHERE f.branch = ? ORDER BY f.path""",
            (catalog,),
        ):
            out.setdefault(key, (language, []))[1].append(path)
        return out

    def finish_pending(
        self, done: Sequence[tuple[str, EncodedGraph | None]], unavailable: Sequence[str]
    ) -> int:
        """Store extracted graphs (None: the content has no graph, e.g. minified) and drop their marks;
        flag `unavailable` ones. Every branch holding a new graph gets its paths marked for re-resolving.
        Returns how many contents left the pending set."""
        finished: list[str] = []
        for key, graph in done:
            if not self.conn.execute("SELECT 1 FROM graph_pending WHERE content_key=?", (key,)).fetchone():
                continue  # purged meanwhile (its files changed), or finished by another process
            if graph is not None:
                self.add_content(key, graph, replace=True)
            else:
                self.delete_contents([key])
            finished.append(key)
        self.conn.executemany("DELETE FROM graph_pending WHERE content_key=?", [(k,) for k in finished])
        self.conn.executemany(
            "UPDATE graph_pending SET unavailable = 1 WHERE content_key=?", [(k,) for k in unavailable]
        )
        by_branch: dict[str, list[str]] = {}
        for start in range(0, len(finished), _CHUNK):
            part = finished[start : start + _CHUNK]
            marks = ",".join("?" * len(part))
            for branch, path in self.conn.execute(
                f"SELECT branch, path FROM files WHERE content_key IN ({marks})", part
            ):
                by_branch.setdefault(branch, []).append(path)
        if by_branch:
            seq = self.next_seq()
            for branch, paths in by_branch.items():
                self.mark_dirty(branch, seq, changed=paths)
        return len(finished)

    def next_seq(self) -> int:
        """A graph_dirty sequence number above every one handed out before (index runs and extraction)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key='graph_seq'").fetchone()
        gen = self.conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()
        seq = max(int(row[0]) if row else 0, int(gen[0]) if gen else 0) + 1
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('graph_seq', ?)", (str(seq),))
        return seq

    def has_pending(self, branch: str) -> bool:
        """Whether any file of `branch` waits for extraction (cheap: graph queries ask it every time)."""
        row = self.conn.execute(
            # CROSS JOIN: start from the (usually empty) pending table, never from every file of the branch.
            """SELECT 1 FROM graph_pending p CROSS JOIN files f ON f.content_key = p.content_key
               WHERE f.branch = ? LIMIT 1""",
            (branch,),
        ).fetchone()
        return row is not None

    def extraction_counts(self, branch: str) -> dict[str, int]:
        """Files of `branch` in graph languages: extracted, pending, and pending ones found unavailable;
        `elsewhere`: pending contents no file of this branch holds (other branches, knowledge bases)."""
        from .languages import ALIASES, SPECS  # the graph languages

        langs = sorted({*SPECS, *ALIASES})
        marks = ",".join("?" * len(langs))
        files, pending, unavailable = self.conn.execute(
            f"""SELECT COUNT(*), COUNT(p.content_key), COALESCE(SUM(p.unavailable), 0)
                FROM files f LEFT JOIN graph_pending p ON p.content_key = f.content_key
                WHERE f.branch = ? AND f.language IN ({marks})""",
            (branch, *langs),
        ).fetchone()
        elsewhere = self.conn.execute(
            """SELECT COUNT(*) FROM graph_pending p WHERE NOT EXISTS
               (SELECT 1 FROM files f WHERE f.content_key = p.content_key AND f.branch = ?)""",
            (branch,),
        ).fetchone()[0]
        return {
            "files": int(files),
            "extracted": int(files) - int(pending),
            "pending": int(pending),
            "unavailable": int(unavailable),
            "elsewhere": int(elsewhere),
        }

    # -- per-branch edges ---------------------------------------------------------------------------

    def edges_state(self, branch: str) -> int | None:
        row = self.conn.execute("SELECT resolved_at FROM graph_state WHERE branch=?", (branch,)).fetchone()
        return None if row is None else int(row[0])

    # -- deferred refresh: index runs mark, a later refresh resolves --------------------------------------

    def mark_dirty(
        self,
        branch: str,
        seq: int,
        *,
        changed: Collection[str] = (),
        removed: Collection[str] = (),
        old_names: Collection[str] = (),
        full: bool = False,
    ) -> None:
        """Record, inside an index run's transaction, what the next edge refresh must re-resolve.

        `seq` must grow from one run to the next (the store generation): a refresh consumes only the rows
        it read, so a run that lands while it resolves stays pending. `full` asks for a whole resolve."""
        paths = [FULL_MARK] if full else sorted({*changed, *removed})
        names = "\n".join(sorted(old_names)) if not full else ""
        self.conn.executemany(
            """INSERT INTO graph_dirty (branch, path, names, seq) VALUES (?, ?, ?, ?)
               ON CONFLICT (branch, path) DO UPDATE SET
                 names = graph_dirty.names || char(10) || excluded.names, seq = excluded.seq""",
            [(branch, p, names, seq) for p in paths],
        )

    def is_fresh(self, branch: str) -> bool:
        """Edges resolved for exactly the branch's current files: no pending marks, a resolve done."""
        if self.edges_state(branch) is None:
            return False
        return (
            self.conn.execute("SELECT 1 FROM graph_dirty WHERE branch=? LIMIT 1", (branch,)).fetchone()
            is None
        )

    def plan_refresh(self, branch: str, go_modules: GoModules | None = None) -> RefreshPlan | None:
        """The read half of a refresh (run it in one read transaction; no lock needed): which files to
        re-resolve and their new edges. None when the branch's edges are fresh."""
        started = time.perf_counter()
        state = self.edges_state(branch)
        rows = self.conn.execute(
            "SELECT path, names, seq FROM graph_dirty WHERE branch=?", (branch,)
        ).fetchall()
        if state is not None and not rows:
            return None
        full = state is None or any(path == FULL_MARK for path, _, _ in rows)
        present = {r[0] for r in rows if r[0] != FULL_MARK}
        names = {n for _, text, _ in rows for n in text.split("\n") if n}
        graphs = self.load_branch(branch)
        on_branch = {g.path for g in graphs} | set(self.branch_keys(branch, sorted(present)))
        changed = present & on_branch
        removed = present - on_branch
        only = None if full else self._affected(graphs, changed, removed, names)
        if only is not None and len(only) > FULL_RESOLVE_SHARE * max(len(graphs), 1):
            only = None
        modules = go_modules(graphs) if go_modules is not None else None
        edges, _ = resolve_with_stats(graphs, only=only, go_modules=modules)
        return RefreshPlan(
            state,
            max((seq for _, _, seq in rows), default=0),
            only,
            sorted(removed),
            edges,
            _definition_lines(graphs),
            len(graphs),
            time.perf_counter() - started,
        )

    def apply_refresh(self, branch: str, plan: RefreshPlan) -> EdgeRefresh | None:
        """The write half (under the writer lock, inside a transaction). None, writing nothing, when a
        concurrent resolve already moved the branch's edges past the state the plan was made from."""
        started = time.perf_counter()
        if self.edges_state(branch) != plan.state:
            return None
        self._drop_edges(branch, None if plan.only is None else plan.only | set(plan.removed))
        written = self._insert(branch, plan.lines, plan.edges)
        self.conn.execute("DELETE FROM graph_dirty WHERE branch=? AND seq <= ?", (branch, plan.max_seq))
        self._mark_resolved(branch, plan.state)
        return EdgeRefresh(
            "full" if plan.only is None else "incremental",
            plan.files,
            plan.files if plan.only is None else len(plan.only),
            self._count(branch),
            written,
            round(plan.seconds + time.perf_counter() - started, 3),
        )

    def _affected(
        self, graphs: Sequence[FileGraph], changed: set[str], removed: set[str], old_names: set[str]
    ) -> set[str]:
        """Files whose call sites may resolve differently after these changes."""
        names = set(old_names)
        for p in removed:
            names.update(_module_names(p))
        for g in graphs:
            if g.path in changed:
                names.update(_provides(g))
        return {g.path for g in graphs if g.path in changed or not names.isdisjoint(_mentions(g))}

    def refresh_edges(
        self,
        branch: str,
        *,
        changed: Collection[str] = (),
        removed: Collection[str] = (),
        old_names: Collection[str] = (),
        full: bool = False,
        go_modules: GoModules | None = None,
    ) -> EdgeRefresh:
        """Bring the branch's edges up to date after `changed`/`removed` paths, in one go (inside a
        transaction, under the writer lock). The indexer defers this (`mark_dirty` + `plan_refresh` /
        `apply_refresh`); this is the direct form for tools and tests.

        `old_names` are what the previous contents of those paths provided (definitions, re-exports),
        so callers of a deleted or renamed symbol are re-resolved too. Without stored edges for the
        branch, or with `full`, everything is resolved.
        """
        started = time.perf_counter()
        if not full and self.edges_state(branch) is None:
            full = True
        if not full and not changed and not removed:
            return EdgeRefresh("none", 0, 0, self._count(branch), 0, 0.0)
        graphs = self.load_branch(branch)
        only: set[str] | None = None
        if not full:
            only = self._affected(graphs, set(changed), set(removed), set(old_names))
            if len(only) > FULL_RESOLVE_SHARE * max(len(graphs), 1):
                full, only = True, None
        modules = go_modules(graphs) if go_modules is not None else None
        edges, _ = resolve_with_stats(graphs, only=only, go_modules=modules)
        self._drop_edges(branch, None if full else (only or set()) | set(removed))
        written = self._insert(branch, _definition_lines(graphs), edges)
        self._mark_resolved(branch, self.edges_state(branch))
        return EdgeRefresh(
            "full" if full else "incremental",
            len(graphs),
            len(graphs) if only is None else len(only),
            self._count(branch),
            written,
            round(time.perf_counter() - started, 3),
        )

    def _drop_edges(self, branch: str, callers: Collection[str] | None) -> None:
        """Delete the branch's edges and name-only call sites: all of them (None), or those made by the
        files in `callers` (they are about to be re-resolved, or are gone)."""
        if callers is None:
            self.conn.execute("DELETE FROM graph_edges WHERE branch=?", (branch,))
            self.conn.execute("DELETE FROM graph_name_sites WHERE branch=?", (branch,))
            return
        stale = sorted(callers)
        for start in range(0, len(stale), _CHUNK):
            part = stale[start : start + _CHUNK]
            marks = ",".join("?" * len(part))
            for table in ("graph_edges", "graph_name_sites"):
                self.conn.execute(
                    f"DELETE FROM {table} WHERE branch=? AND caller_path IN ({marks})", (branch, *part)
                )

    def _mark_resolved(self, branch: str, previous: int | None) -> None:
        # A resolve counter, not a clock: two resolves within one second must still differ.
        resolved = max(int(time.time()), (previous or 0) + 1)
        self.conn.execute(
            "INSERT OR REPLACE INTO graph_state (branch, resolved_at) VALUES (?, ?)", (branch, resolved)
        )

    def _insert(self, branch: str, lines: dict[tuple[str, str], int], edges: Sequence[Edge]) -> int:
        """Resolved edges one row each; name-only matches one row per call site (candidates by query).
        `lines`: (path, qualified) -> start line of every definition of the branch. Rows are generated as
        SQLite takes them: a large project's edges are not copied into a second list."""
        sites: dict[tuple[str, str, int, str], tuple[bool, int]] = {}
        resolved = 0
        for e in edges:
            if e.confidence == "name":
                name = e.callee.rsplit(".", 1)[-1]
                sites[(e.caller_path, e.caller, e.line, name)] = ("." in e.callee, e.candidates)
            else:
                resolved += 1
        self.conn.executemany(
            """INSERT INTO graph_name_sites (branch, caller, caller_path, caller_line, line, name, member,
                                             candidates) VALUES (?,?,?,?,?,?,?,?)""",
            (
                (branch, caller, path, lines.get((path, caller), 0), line, name, int(member), n)
                for (path, caller, line, name), (member, n) in sites.items()
            ),
        )
        self.conn.executemany(
            """INSERT INTO graph_edges (branch, caller, caller_path, caller_line, line, callee, callee_name,
                                        callee_path, callee_line, confidence, candidates)
               VALUES (?,?,?,?,?,?,?,?,?,?,?)""",
            (
                (
                    branch,
                    e.caller,
                    e.caller_path,
                    lines.get((e.caller_path, e.caller), 0),
                    e.line,
                    e.callee,
                    e.callee.rsplit(".", 1)[-1],
                    e.callee_path,
                    e.callee_line,
                    e.confidence,
                    e.candidates,
                )
                for e in edges
                if e.confidence != "name"
            ),
        )
        return resolved + len(sites)

    def _count(self, branch: str) -> int:
        return int(
            self.conn.execute("SELECT COUNT(*) FROM graph_edges WHERE branch=?", (branch,)).fetchone()[0]
        )

    def delete_branch(self, branch: str) -> None:
        self.conn.execute("DELETE FROM graph_edges WHERE branch=?", (branch,))
        self.conn.execute("DELETE FROM graph_name_sites WHERE branch=?", (branch,))
        self.conn.execute("DELETE FROM graph_state WHERE branch=?", (branch,))
        self.conn.execute("DELETE FROM graph_dirty WHERE branch=?", (branch,))


__all__ = ["MODULE_CALLER", "DefinitionRow", "EdgeRefresh", "EdgeRow", "GraphStore"]
