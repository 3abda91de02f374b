"""Questions answered from the stored graph: who calls X, what X calls, where X is really implemented.

`call_graph` walks resolved edges (confidence exact/import) breadth first; call sites matched by name only
are counted always and listed on request, labelled `name`, never traversed (they are guesses). The
ranking of definitions for `implementation_lookup` is a pure function of paths, kinds and caller counts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

import msgspec

from .records import MODULE_CALLER
from .store import DefinitionRow, EdgeRow, GraphStore

if TYPE_CHECKING:
    from ..models import SearchResult

Direction = Literal["callers", "callees"]
MAX_DEPTH = 3
MAX_ROOTS = 20

_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*")
# Path parts and file names that mark code which is not the implementation an agent is after.
_NON_IMPL_DIRS = frozenset(
    {
        "test",
        "tests",
        "testing",
        "__tests__",
        "spec",
        "specs",
        "example",
        "examples",
        "docs",
        "doc",
        "samples",
        "sample",
        "demo",
        "demos",
        "fixtures",
        "testdata",
        "mocks",
        "__mocks__",
        "stubs",
        "benchmarks",
        "bench",
    }
)
_NON_IMPL_FILE = re.compile(
    r"(^test_.*\.py$|_test\.(py|go)$|\.(test|spec)\.[cm]?[jt]sx?$|Tests?\.java$|\.pyi$|\.d\.[cm]?ts$|^conftest\.py$)"
)
_KIND_RANK = {
    "function": 0,
    "method": 0,
    "class": 0,
    "struct": 0,
    "enum": 1,
    "trait": 1,
    "interface": 2,
    "type": 2,
    "impl": 3,
}


class CallSite(msgspec.Struct, rename="camel"):
    """One call: the calling symbol and line, the called definition, how it was resolved, at which hop."""

    caller: str
    caller_path: str
    caller_line: int
    line: int
    callee: str
    callee_path: str
    callee_line: int
    confidence: str
    candidates: int
    depth: int


class GraphSymbol(msgspec.Struct, rename="camel"):
    symbol_id: str
    name: str
    kind: str
    path: str
    start_line: int
    end_line: int


class CallGraph(msgspec.Struct, rename="camel"):
    """`edges`: resolved calls, breadth first. `name_matches`: sites matched by name only (listed when asked
    for; `name_match_count` always says how many there are)."""

    query: str
    direction: str
    depth: int
    roots: list[GraphSymbol]
    edges: list[CallSite]
    name_matches: list[CallSite]
    name_match_count: int
    truncated: bool
    # Set while the code graph is being built: "code graph is being built: N of M files extracted".
    incomplete: str | None = None


class ImplementationHit(msgspec.Struct, rename="camel"):
    path: str
    start_line: int
    end_line: int
    kind: str
    symbol: str
    language: str
    source: str  # "definition" (from the graph) or "search" (ranked chunk)
    callers: int
    symbol_id: str | None = None
    score: float | None = None
    content: str | None = None


def is_identifier(query: str) -> bool:
    """`parse_args`, `Session.send`, `Foo::new`, `path/to/x.py#Foo.bar` look up definitions directly."""
    q = query.strip()
    if "#" in q:
        return bool(_IDENTIFIER.fullmatch(q.rpartition("#")[2]))
    return bool(_IDENTIFIER.fullmatch(q))


def is_non_implementation(path: str) -> bool:
    """Tests, docs, examples, fixtures, benchmarks and type stubs: not where the real code lives."""
    parts = path.lower().split("/")
    if any(p in _NON_IMPL_DIRS for p in parts[:-1]):
        return True
    return bool(_NON_IMPL_FILE.search(path.rsplit("/", 1)[-1]))


def rank_definitions(
    defs: Sequence[DefinitionRow], query: str, callers: dict[str, int]
) -> list[DefinitionRow]:
    """Implementation first: real code before tests/stubs, exact qualified match, functions and classes
    before aliases/impls, more callers, shallower paths; ties by path for a stable order."""
    wanted = query.strip().replace("::", ".").rpartition("#")[2]

    def key(d: DefinitionRow) -> tuple[int, int, int, int, int, str, int]:
        return (
            int(is_non_implementation(d.path)),
            0 if d.qualified == wanted else 1,
            _KIND_RANK.get(d.kind, 2),
            -callers.get(d.symbol_id, 0),
            d.path.count("/"),
            d.path,
            d.start_line,
        )

    return sorted(defs, key=key)


def _symbol(d: DefinitionRow) -> GraphSymbol:
    return GraphSymbol(d.symbol_id, d.qualified, d.kind, d.path, d.start_line, d.end_line)


def _site(e: EdgeRow, depth: int) -> CallSite:
    return CallSite(
        e.caller,
        e.caller_path,
        e.caller_line,
        e.line,
        e.callee,
        e.callee_path,
        e.callee_line,
        e.confidence,
        e.candidates,
        depth,
    )


def call_graph(
    store: GraphStore,
    branch: str,
    target: str,
    *,
    direction: Direction = "callers",
    depth: int = 1,
    include_name_matches: bool = False,
    limit: int = 100,
) -> CallGraph:
    """Callers or callees of the definitions `target` names (a name, `Class.method`, or a symbol id)."""
    if direction not in ("callers", "callees"):
        raise ValueError(f"direction must be 'callers' or 'callees', not {direction!r}")
    if not 1 <= depth <= MAX_DEPTH:
        raise ValueError(f"depth must be 1..{MAX_DEPTH}, not {depth}")
    roots = store.definitions(branch, target.strip())
    roots = rank_definitions(roots, target, {})[:MAX_ROOTS]
    upward = direction == "callers"
    edges: list[CallSite] = []
    truncated = False
    frontier = [(d.path, d.qualified) for d in roots]
    seen = set(frontier)
    for hop in range(1, depth + 1):
        nxt: list[tuple[str, str]] = []
        for path, qualified in frontier:
            found = (
                store.edges_into(branch, path, qualified)
                if upward
                else store.edges_out_of(branch, path, qualified)
            )
            for e in found:
                if len(edges) >= limit:
                    truncated = True
                    break
                edges.append(_site(e, hop))
                there = (e.caller_path, e.caller) if upward else (e.callee_path, e.callee)
                if there[1] != MODULE_CALLER and there not in seen:
                    seen.add(there)
                    nxt.append(there)
        frontier = nxt
        if not frontier or truncated:
            break
    named: dict[tuple[str, int, str], CallSite] = {}
    for d in roots:
        if upward:
            for e in store.name_sites_into(branch, d.name, "." in d.qualified):
                named.setdefault(
                    (e.caller_path, e.line, d.symbol_id),
                    CallSite(
                        e.caller,
                        e.caller_path,
                        e.caller_line,
                        e.line,
                        d.qualified,
                        d.path,
                        d.start_line,
                        "name",
                        e.candidates,
                        1,
                    ),
                )
        else:
            for e, _member in store.name_sites_out_of(branch, d.path, d.qualified):
                named.setdefault((e.caller_path, e.line, e.callee), _site(e, 1))
    name_sites = sorted(named.values(), key=lambda s: (s.caller_path, s.line, s.callee_path, s.callee))
    return CallGraph(
        query=target,
        direction=direction,
        depth=depth,
        roots=[_symbol(d) for d in roots],
        edges=edges,
        name_matches=name_sites[:limit] if include_name_matches else [],
        name_match_count=len(name_sites),
        truncated=truncated,
    )


def caller_counts(store: GraphStore, branch: str, defs: Sequence[DefinitionRow]) -> dict[str, int]:
    """Resolved callers per definition (symbol id -> count): how central a candidate is."""
    out: dict[str, int] = {}
    for d in defs:
        row = store.conn.execute(
            "SELECT COUNT(*) FROM graph_edges WHERE branch=? AND callee_path=? AND callee=?",
            (branch, d.path, d.qualified),
        ).fetchone()
        out[d.symbol_id] = int(row[0])
    return out


class ImplementationLookup(msgspec.Struct, rename="camel"):
    """`strategy`: "definition" (the graph knew the name) or "search" (ranked search results)."""

    query: str
    strategy: str
    results: list[ImplementationHit]
    notice: str | None = None
    # Set while the code graph is being built (definitions may be missing); see CallGraph.incomplete.
    incomplete: str | None = None


def incomplete_notice(counts: dict[str, int]) -> str | None:
    """What a graph answer says while contents of the branch wait for extraction (None: complete).
    `counts` as `GraphStore.extraction_counts` gives them."""
    pending, unavailable = counts["pending"], counts["unavailable"]
    if not pending:
        return None
    done, total = counts["extracted"], counts["files"]
    if pending > unavailable:
        return f"code graph is being built: {done} of {total} files extracted"
    return (
        f"code graph is incomplete: {done} of {total} files extracted; {unavailable} changed on disk "
        "since they were indexed (re-index to include them)"
    )


_DEFINITION_KINDS = frozenset(_KIND_RANK) | {"module"}


def implementation_lookup(
    store: GraphStore,
    branch: str,
    query: str,
    *,
    search: Callable[[str, int], Sequence[SearchResult]],
    read: Callable[[str, int, int], str | None],
    limit: int = 5,
    max_lines: int = 80,
) -> ImplementationLookup:
    """Definition first: an identifier goes to its definitions ranked implementation-first; anything else
    (or an identifier the graph does not know) goes to `search`, keeping definition chunks outside tests,
    docs, examples and stubs first. `read(path, start, end)` gives a definition's source lines."""
    q = query.strip()
    if not q:
        raise ValueError("query is empty")
    if is_identifier(q):
        defs = store.definitions(branch, q)
        if defs:
            ranked = rank_definitions(defs, q, caller_counts(store, branch, defs))[:limit]
            counts = caller_counts(store, branch, ranked)
            hits = []
            for d in ranked:
                end = min(d.end_line, d.start_line + max_lines - 1)
                hits.append(
                    ImplementationHit(
                        path=d.path,
                        start_line=d.start_line,
                        end_line=d.end_line,
                        kind=d.kind,
                        symbol=d.qualified,
                        language=d.language,
                        source="definition",
                        callers=counts.get(d.symbol_id, 0),
                        symbol_id=d.symbol_id,
                        content=read(d.path, d.start_line, end),
                    )
                )
            return ImplementationLookup(q, "definition", hits)
    results = list(search(q, max(limit * 6, 30)))

    def rank(r: SearchResult) -> tuple[int, int]:
        return (int(is_non_implementation(r.path)), 0 if r.kind in _DEFINITION_KINDS else 1)

    ordered = sorted(results, key=rank)  # stable: search order within each class
    hits = [
        ImplementationHit(
            path=r.path,
            start_line=r.start_line,
            end_line=r.end_line,
            kind=r.kind,
            symbol=r.symbol,
            language=r.language,
            source="search",
            callers=0,
            score=r.score,
            content=r.content,
        )
        for r in ordered[:limit]
    ]
    notice = None
    if is_identifier(q):
        notice = f"no definition named {q!r} in the code graph; these are search results"
    return ImplementationLookup(q, "search", hits, notice)
