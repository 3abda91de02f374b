"""The engine's code-graph reads: callers and callees, call paths, the impact of a change, definitions and
implementation lookup, each answered from one consistent graph state (see `graph_read`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from ..graph.extractor import INLINE_MAX_FILES
from ..graph.query import CallGraph, ImplementationLookup, incomplete_notice
from ..graph.store import DefinitionRow, GraphStore
from ..models import SearchResult
from ..processing import graph_enabled

if TYPE_CHECKING:
    from ..graph.paths import CallPath, Impact
    from .engine import Engine

T = TypeVar("T")


def call_graph(
    engine: Engine,
    target: str,
    *,
    direction: str = "callers",
    depth: int = 1,
    include_name_matches: bool = False,
    limit: int = 100,
) -> CallGraph:
    """Callers or callees of a symbol (name, `Class.method` or `path#qualified` id) on this branch."""
    from ..graph.query import call_graph  # validates direction and depth

    branch = engine.branch()
    found, notice = graph_read(
        engine,
        branch,
        lambda graphs: call_graph(
            graphs,
            branch,
            target,
            direction="callers" if direction == "callers" else "callees",
            depth=depth,
            include_name_matches=include_name_matches,
            limit=limit,
        ),
    )
    found.incomplete = notice
    return found


def graph_read(engine: Engine, branch: str, query: Callable[[GraphStore], T]) -> tuple[T, str | None]:
    """Graph answers come from one state whose edges match its files (refreshed first if a save
    left them behind); with the graph disabled, from whatever is stored. While contents wait for
    extraction, from what is there, with the notice that says how incomplete it is."""
    if not graph_enabled():
        return query(GraphStore(engine.store.conn)), None
    if not GraphStore(engine.store.conn).has_pending(branch):
        return engine.graphs.read(branch, query), None
    counts = GraphStore(engine.store.conn).extraction_counts(branch)
    # A few saved files: extracting them here costs milliseconds and makes the answer complete.
    few = 0 < counts["pending"] - counts["unavailable"] <= INLINE_MAX_FILES
    if few and engine.graphs.extract(workers=0, wait=False) is not None:
        counts = GraphStore(engine.store.conn).extraction_counts(branch)
    if not counts["pending"]:
        return engine.graphs.read(branch, query), None
    # Extraction still running (or never finished: a killed run): answer from what is there, say so.
    if counts["pending"] > counts["unavailable"]:
        engine.graphs.schedule(engine.branch)
    return engine.graphs.read_as_is(branch, query), incomplete_notice(counts)


def call_path(engine: Engine, source: str, target: str) -> CallPath:
    """The shortest chain of resolved calls between two symbols (see `graph.paths.call_path`)."""
    from ..graph.paths import call_path

    branch = engine.branch()
    found, notice = graph_read(engine, branch, lambda graphs: call_path(graphs, branch, source, target))
    found.incomplete = notice
    return found


def impact(engine: Engine, diff: str | None = None, *, depth: int = 2) -> Impact:
    """What a change reaches: `diff` is a git range (`main..HEAD`, `HEAD~3..HEAD`), one revision
    (its diff to the working tree) or None (uncommitted changes vs HEAD). Line numbers are matched
    against the index, which is the working tree: index first when files changed since."""
    from ..changes import changed_lines
    from ..graph.paths import impact

    spec = (diff or "HEAD").strip()
    since, dots, until = spec.partition("..")
    changes = changed_lines(engine.root, since or "HEAD", until.lstrip(".") or None if dots else None)
    branch = engine.branch()
    found, notice = graph_read(
        engine,
        branch,
        lambda graphs: impact(
            graphs, branch, changes.lines, range_=diff or "", base=changes.base, depth=depth
        ),
    )
    found.incomplete = notice
    return found


def implementation_lookup(engine: Engine, query: str, *, limit: int = 5) -> ImplementationLookup:
    """Where something is really implemented: definitions first, then search (not tests/docs/stubs)."""
    from ..graph.query import implementation_lookup

    def search(q: str, top_k: int) -> list[SearchResult]:
        return engine.search(q, top_k=top_k).results

    def read(path: str, start: int, end: int) -> str | None:
        """Lines start..end of a project file as it is on disk now (None when gone or unreadable)."""
        lines = engine.file_lines(path)
        return None if lines is None else "\n".join(lines[start - 1 : end])

    branch = engine.branch()
    found, notice = graph_read(
        engine,
        branch,
        lambda graphs: implementation_lookup(graphs, branch, query, search=search, read=read, limit=limit),
    )
    found.incomplete = notice
    return found


def definitions(engine: Engine, name: str, *, limit: int = 5) -> list[DefinitionRow]:
    """Definitions named `name` (a name, `Class.method`, `path#qualified`), implementation first."""
    from ..graph.query import caller_counts, rank_definitions

    branch = engine.branch()

    def query(graphs: GraphStore) -> list[DefinitionRow]:
        defs = graphs.definitions(branch, name.strip())
        return rank_definitions(defs, name, caller_counts(graphs, branch, defs[:50]))[:limit]

    found, _ = graph_read(engine, branch, query)
    return found


def definitions_in(engine: Engine, path: str) -> list[DefinitionRow]:
    """Every definition of one file on this branch, in line order."""
    branch = engine.branch()
    found, _ = graph_read(engine, branch, lambda graphs: graphs.definitions_in(branch, path))
    return found
