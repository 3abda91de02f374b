"""Gathering a context pack's evidence from the engine's search and code graph, then packing it.

Evidence is collected best first for the route `route.route` picks, from Engine-level APIs only
(`search`, `definitions`, `call_graph`, `file_lines`), then handed to `pack.pack`. Definitions and call
sites are read from the files as they are on disk; search results use the lines of the file too when it
is a project file, else the stored chunk text.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from ..search import Filters
from .pack import Evidence, Omitted, PackItem, matching_lines, pack, query_terms
from .route import Routing, route
from .tokens import counter

if TYPE_CHECKING:
    from ..graph.query import CallGraph
    from ..models import SearchResult
    from ..service import Engine, SearchResponse

DEFAULT_MAX_TOKENS = 1500
MIN_TOKENS = 128
MAX_TOKENS = 8000
SEARCH_POOL = 30  # search results offered to the packer (most do not fit; they feed the summary)
DEFINITIONS = 3
CALL_SITES = 12
# Lines of a callee shown from its first line when only the call edge (not the definition's end) is known.
CALLEE_LINES = 8

Allow = Callable[[str, int, int], bool]
# The search step, when not the engine's own: (query, top_k, filters) -> a response whose results may come
# from other repositories (`repo` set; see `multirepo.search`).
SearchFn = Callable[[str, int, Filters], "SearchResponse"]


class ContextPack(msgspec.Struct):
    """What `codebase_context` returns: the pack's text for the model plus the same items for programs."""

    query: str
    maxTokens: int  # the wire name, as the JSON spells it
    tokens: int
    route: str
    style: str
    strategy: str
    items: list[PackItem]
    omitted: Omitted
    tokenizer: str
    text: str
    notice: str | None = None
    files: list[str] = msgspec.field(default_factory=list)  # distinct files the items point into


class _Gather:
    """Evidence being collected for one request, with the file lines it has read."""

    def __init__(
        self,
        engine: Engine,
        query: str,
        filters: Filters,
        allow: Allow | None,
        search: SearchFn | None = None,
        own_repo: str | None = None,
    ) -> None:
        self.engine = engine
        self.filters = filters
        self.allow = allow
        self.search_fn = search
        self.own_repo = own_repo
        self.terms = query_terms(query)
        self.items: list[Evidence] = []
        self._files: dict[str, list[str] | None] = {}

    def lines(self, path: str) -> list[str] | None:
        if path not in self._files:
            self._files[path] = self.engine.file_lines(path)
        return self._files[path]

    def passes(self, path: str, start: int, end: int) -> bool:
        f = self.filters
        if f.file_type and not path.lower().endswith("." + f.file_type.lstrip(".").lower()):
            return False
        if f.directory and not path.startswith(f.directory.strip("/") + "/"):
            return False
        return self.allow is None or self.allow(path, start, end)

    def add(
        self,
        path: str,
        start: int,
        end: int,
        symbol: str,
        kind: str,
        reason: str,
        *,
        focus: Sequence[int] = (),
        fallback_text: str | None = None,
        score: float = 0.0,
        repo: str | None = None,
    ) -> None:
        if not self.passes(path, start, end):
            return
        # Another repository's chunk: its stored text (its files are not under this root), and its path
        # labelled as multi-repository search results are ("[repo] path").
        file_lines = self.lines(path) if repo is None else None
        if repo is not None:
            path = f"[{repo}] {path}"
        if file_lines is not None and start <= len(file_lines):
            end = min(end, len(file_lines))
            lines = tuple(file_lines[start - 1 : end])
        elif fallback_text is not None:
            lines = tuple(fallback_text.splitlines())
            end = start + len(lines) - 1
        else:
            return
        if not lines:
            return
        wanted = matching_lines(lines, start, self.terms) | frozenset(focus)
        self.items.append(Evidence(path, start, end, symbol, kind, reason, lines, wanted, score))

    def definitions(self, name: str, reason: str, limit: int = DEFINITIONS) -> int:
        found = self.engine.definitions(name, limit=limit)
        for d in found:
            self.add(d.path, d.start_line, d.end_line, d.qualified, d.kind, reason)
        return len(found)

    def search(self, query: str, top_k: int = SEARCH_POOL) -> tuple[str, str | None]:
        if self.search_fn is not None:
            response = self.search_fn(query, top_k, self.filters)
        else:
            response = self.engine.search(query, top_k=top_k, filters=self.filters)
        for r in response.results:
            self.add_result(r, "matched")
        return response.strategy, response.note

    def add_result(self, r: SearchResult, reason: str) -> None:
        self.add(
            r.path,
            r.start_line,
            r.end_line,
            r.symbol,
            r.kind,
            reason,
            fallback_text=r.content,
            score=r.score,
            repo=r.repo if r.repo and r.repo != self.own_repo else None,
        )

    def call_sites(self, graph: CallGraph, target: str, limit: int = CALL_SITES) -> None:
        """The callers' lines from their first line to just after the call (focus: both), or the callees'
        first lines, each labelled with the relation."""
        for site in graph.edges[:limit]:
            if graph.direction == "callers":
                start = site.caller_line or site.line
                self.add(
                    site.caller_path,
                    start,
                    site.line + 1,
                    site.caller,
                    "",
                    f"calls {target}",
                    focus=(start, site.line),
                )
            else:
                self.add(
                    site.callee_path,
                    site.callee_line,
                    site.callee_line + CALLEE_LINES - 1,
                    site.callee,
                    "",
                    f"called by {target}",
                    focus=(site.callee_line,),
                )


def build_context(
    engine: Engine,
    query: str,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    filters: Filters | None = None,
    allow: Allow | None = None,
    search: SearchFn | None = None,
    own_repo: str | None = None,
) -> ContextPack:
    """The evidence pack for `query` within `max_tokens` (see the module docstrings of this package).
    `search` replaces the engine's search step (multi-repository packs; definitions and call sites stay
    this repository's), `own_repo` names this repository among its results."""
    q = query.strip()
    if not q:
        raise ValueError("query is empty")
    if not MIN_TOKENS <= max_tokens <= MAX_TOKENS:
        raise ValueError(f"maxTokens must be {MIN_TOKENS}..{MAX_TOKENS}, not {max_tokens}")
    routing = route(q)
    gather = _Gather(engine, q, filters or Filters(), allow, search, own_repo)
    strategy, notice = _collect(gather, routing, q)
    tokens = counter()
    packed = pack(gather.items, max_tokens, tokens.count, tokenizer=tokens.name)
    files = list(dict.fromkeys(item.path for item in packed.items))
    return ContextPack(
        query=q,
        maxTokens=max_tokens,
        tokens=packed.tokens,
        route=routing.route,
        style=routing.style,
        strategy=strategy,
        items=packed.items,
        omitted=packed.omitted,
        tokenizer=packed.tokenizer,
        text=packed.text,
        notice=notice,
        files=files,
    )


def _collect(gather: _Gather, routing: Routing, query: str) -> tuple[str, str | None]:
    """Fill `gather` for the route; returns (strategy, notice)."""
    engine = gather.engine
    if routing.route == "graph":
        graph = engine.call_graph(routing.target, direction=routing.direction, depth=1, limit=CALL_SITES * 2)
        if graph.roots:
            for root in graph.roots[:DEFINITIONS]:
                gather.add(root.path, root.start_line, root.end_line, root.name, root.kind, "defines target")
            gather.call_sites(graph, routing.target)
            strategy, _ = gather.search(query, top_k=SEARCH_POOL // 2)
            return f"graph+{strategy}", graph.incomplete
        strategy, _ = gather.search(query)
        return strategy, f"no definition named {routing.target!r} in the code graph; search results"
    if routing.route == "definition":
        if gather.definitions(routing.target, f"defines {routing.target}"):
            graph = engine.call_graph(routing.target, direction="callers", depth=1, limit=CALL_SITES)
            gather.call_sites(graph, routing.target, limit=CALL_SITES // 2)
            strategy, _ = gather.search(query, top_k=SEARCH_POOL // 2)
            return f"definition+{strategy}", graph.incomplete
        return gather.search(query)
    # A description (or pasted code/error) that names identifiers: their definitions lead when they exist.
    for ident in routing.parsed.identifiers[:2]:
        gather.definitions(ident, f"defines {ident}", limit=1)
    return gather.search(query)
