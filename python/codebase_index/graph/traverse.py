"""Small in-memory walks over a list of edges (the store answers the same questions with SQL)."""

from __future__ import annotations

from collections.abc import Iterable

from .records import Edge


def _matches(symbol: str, target: str) -> bool:
    """A qualified target matches exactly; a simple name matches any symbol ending in it."""
    return symbol == target or ("." not in target and symbol.rsplit(".", 1)[-1] == target)


def _walk(edges: Iterable[Edge], name_or_qualified: str, depth: int, upward: bool) -> list[Edge]:
    edge_list = list(edges)
    frontier = {name_or_qualified}
    seen: set[Edge] = set()
    out: list[Edge] = []
    for _ in range(max(depth, 0)):
        nxt: set[str] = set()
        for e in edge_list:
            here, there = (e.callee, e.caller) if upward else (e.caller, e.callee)
            if e not in seen and any(_matches(here, t) for t in frontier):
                seen.add(e)
                out.append(e)
                nxt.add(there)
        if not nxt:
            break
        frontier = nxt
    return out


def callers(edges: Iterable[Edge], name_or_qualified: str, depth: int = 1) -> list[Edge]:
    """Edges into the symbol, then into its callers, up to `depth` hops (breadth first)."""
    return _walk(edges, name_or_qualified, depth, upward=True)


def callees(edges: Iterable[Edge], name_or_qualified: str, depth: int = 1) -> list[Edge]:
    """Edges out of the symbol, then out of what it calls, up to `depth` hops (breadth first)."""
    return _walk(edges, name_or_qualified, depth, upward=False)
