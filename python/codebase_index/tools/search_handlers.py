"""Handlers of the tools that answer from the index: search, peek, context packs, similar code, the call
graph and implementation lookup. Each validates what the params Struct cannot, reads under the runtime's
read lock and formats text for the model beside data for programs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ..vocabulary import TOOLS, Vocabulary
from .protocol import InvalidParams, NotIndexed, ToolError
from .runtime import CallContext, Runtime
from .schema import (
    CallGraphParams,
    ContextParams,
    EditContextParams,
    Hit,
    ImplementationLookupParams,
    PeekParams,
    RepoHit,
    SearchParams,
    SimilarParams,
    ToolResult,
)

if TYPE_CHECKING:
    from ..service import Engine

# With a time filter, search looks this many times deeper and keeps the results that pass it.
TIME_FILTER_DEPTH = 10


@contextlib.contextmanager
def _indexed_reader(rt: Runtime, call: CallContext) -> Iterator[Engine]:
    """The reader engine under the read lock, once the project has an index: one is built first if
    there is none (`first_index`); a note of what the answer reflects goes to `call.notes`."""
    from .first_index import ensure_indexed

    note = ensure_indexed(rt, call)
    if note:
        call.notes.append(note)
    with rt.read_lock:
        engine = rt.reader()
        if not engine.has_index():
            # Only a large first run in the background gets here: nothing to answer from yet.
            raise NotIndexed(
                f"{note}; nothing is indexed yet, ask again shortly (index_status shows progress)"
            )
        call.freshness = _freshness(rt, engine)
        yield engine


def _freshness(rt: Runtime, engine: Engine) -> Any:
    """What the answer reflects: the catalog's commit against HEAD now, and saves the watcher holds."""
    from ..freshness import HEAD_META, Freshness, head_commit

    branch = engine.branch()
    watcher = rt.watcher
    return Freshness(
        branch=branch,
        commit=engine.store.get_meta(HEAD_META + branch) or None,
        head=head_commit(rt.root),
        changed_files=watcher.pending_count() if watcher is not None else 0,
        reindexing=rt.index_lock.locked(),
    )


def _filters(file_type: str | None, directory: str | None, kind: str | None) -> Any:
    from ..search import Filters

    return Filters(file_type=file_type or None, directory=directory or None, kind=kind)


def _time_filter(
    rt: Runtime, changed_since: str | None, changed_before: str | None, words: Vocabulary = TOOLS
) -> Any:
    """The (path, start, end) predicate of `changedSince` / `changedBefore`, or None."""
    if not changed_since and not changed_before:
        return None
    from ..changes import GitError, time_filter

    try:
        return time_filter(rt.root, changed_since, changed_before)
    except GitError as exc:
        raise InvalidParams(f"invalid params: {words.changed}: {exc}") from exc


def _refuse_with_repos(allow: Any) -> None:
    if allow is not None:
        raise InvalidParams(
            "invalid params: `changedSince`/`changedBefore` read this repository's git history; "
            "they do not combine with `repos`"
        )


def _multirepo_search(
    rt: Runtime, query: str, repos: Sequence[str], top_k: int, filters: Any, mode: str | None = None
) -> Any:
    """One search over several repositories (or the shared backend), its failures as tool errors."""
    from .. import multirepo
    from ..backends.base import BackendError
    from ..repos import RegistryError

    try:
        return multirepo.search(
            rt.root, query, repos=repos, top_k=top_k, filters=filters, local=rt.repo_backend(), mode=mode
        )
    except RegistryError as exc:
        raise InvalidParams(f"invalid params: `repos`: {exc}") from exc
    except BackendError as exc:
        raise ToolError(f"shared backend: {exc}") from exc


def _run_search(
    rt: Runtime,
    call: CallContext,
    query: str,
    limit: int,
    filters: Any,
    mode: str | None,
    allow: Any = None,
    repos: Sequence[str] | None = None,
) -> Any:
    if not query.strip():
        raise InvalidParams("invalid params: `query` is empty")
    if repos or rt.backend_only():
        _refuse_with_repos(allow)
        return _search_repos(rt, query, limit, filters, mode, repos or ())
    depth = limit if allow is None else min(500, limit * TIME_FILTER_DEPTH)
    with _indexed_reader(rt, call) as engine:
        try:
            if mode is None:
                response = engine.search(query, top_k=depth, filters=filters)
            else:
                response = engine.search(query, top_k=depth, filters=filters, mode=mode)
        except ValueError as exc:
            raise InvalidParams(f"invalid params: `mode`: {exc}") from exc
    if allow is not None:
        response.results = [r for r in response.results if allow(r.path, r.start_line, r.end_line)][:limit]
    return response


def _search_repos(
    rt: Runtime, query: str, limit: int, filters: Any, mode: str | None, repos: Sequence[str]
) -> Any:
    """Several repositories (local indexes from the registry), or the shared backend when this project
    has only `backend` configured; `repos` empty means this one."""
    if mode not in (None, "hybrid", "keyword"):
        raise InvalidParams("invalid params: `mode`: a multi-repository search is hybrid or keyword")
    with rt.read_lock:
        return _multirepo_search(rt, query, repos, limit, filters, mode)


def _hits(results: Sequence[Any], *, content: bool) -> list[Hit]:
    return [
        (RepoHit if r.repo else Hit)(
            path=r.path,
            start_line=r.start_line,
            end_line=r.end_line,
            kind=r.kind,
            symbol=r.symbol,
            language=r.language,
            score=r.score,
            id=r.id,
            content=r.content if content else None,
            **({"repo": r.repo} if r.repo else {}),
        )
        for r in results
    ]


def _with_note(result: ToolResult, note: str | None) -> ToolResult:
    """A degraded answer (keyword fallback, reranker skipped) says so first, in `text` and `data.note`."""
    if note:
        result.data["note"] = note
        result.text = f"note: {note}\n\n{result.text}"
    return result


def handle_search(rt: Runtime, p: SearchParams, call: CallContext) -> ToolResult:
    from ..format import format_peek, format_search

    defaults = rt.reader().config.search  # unset params fall back to the project's `search` config
    limit = p.limit if p.limit is not None else min(defaults.max_results, 50)
    min_score = p.min_score if p.min_score is not None else defaults.min_score
    context_lines = p.context_lines if p.context_lines is not None else defaults.context_lines
    allow = _time_filter(rt, p.changed_since, p.changed_before, call.words)
    filters = _filters(p.file_type, p.directory, p.chunk_type)
    response = _run_search(rt, call, p.query, limit, filters, p.mode, allow, p.repos)
    results = [r for r in response.results if r.score >= min_score]
    call.check_cancelled()
    if defaults.include_context:
        text = format_search(
            results,
            root=rt.root,
            context_lines=context_lines,
            query=p.query,
            lines_of=rt.reader().file_lines,
        )
    else:
        text = format_peek(results, query=p.query)
    data = {"query": p.query, "strategy": response.strategy, "results": _hits(results, content=False)}
    data["savings"] = rt.record_savings("codebase_search", text, [r.path for r in results])
    return _with_note(ToolResult(text, data), response.note)


def handle_peek(rt: Runtime, p: PeekParams, call: CallContext) -> ToolResult:
    from ..format import format_peek

    allow = _time_filter(rt, p.changed_since, p.changed_before, call.words)
    filters = _filters(p.file_type, p.directory, p.chunk_type)
    response = _run_search(rt, call, p.query, p.limit, filters, None, allow, p.repos)
    call.check_cancelled()
    data = {
        "query": p.query,
        "strategy": response.strategy,
        "results": _hits(response.results, content=False),
    }
    text = format_peek(response.results, query=p.query)
    data["savings"] = rt.record_savings("codebase_peek", text, [r.path for r in response.results])
    return _with_note(ToolResult(text, data), response.note)


def handle_context(rt: Runtime, p: ContextParams, call: CallContext) -> ToolResult:
    if not p.query.strip():
        raise InvalidParams("invalid params: `query` is empty")
    allow = _time_filter(rt, p.changed_since, p.changed_before, call.words)
    search, own = None, None
    if p.repos:
        _refuse_with_repos(allow)
        search, own = _repos_search(rt, p.repos)
    with _indexed_reader(rt, call) as engine:
        found = engine.context(
            p.query,
            max_tokens=p.max_tokens,
            filters=_filters(p.file_type, p.directory, None),
            allow=allow,
            search=search,
            own_repo=own,
        )
    call.check_cancelled()
    return _pack_result(rt, "codebase_context", found, call.words)


def handle_edit_context(rt: Runtime, p: EditContextParams, call: CallContext) -> ToolResult:
    if not p.target.strip():
        raise InvalidParams("invalid params: `target` is empty")
    with _indexed_reader(rt, call) as engine:
        found = engine.edit_context(p.target, max_tokens=p.max_tokens)
    call.check_cancelled()
    return _pack_result(rt, "codebase_edit_context", found, call.words)


def _pack_result(rt: Runtime, tool: str, found: Any, words: Vocabulary) -> ToolResult:
    """A context pack's answer: its text (its omitted line in the face's words), and its data with the
    savings of this answer."""
    from ..context.pack import omitted_line

    text = found.text
    hint = omitted_line(found.omitted.summary)
    if words.max_tokens != TOOLS.max_tokens and found.omitted.summary and text.endswith(hint):
        text = text.removesuffix(hint) + omitted_line(found.omitted.summary, words.max_tokens)
    data = context_data(found)
    data["savings"] = rt.record_savings(tool, text, found.files)
    return ToolResult(text, data)


def _repos_search(rt: Runtime, repos: Sequence[str]) -> tuple[Any, str | None]:
    """The multi-repository search step of a context pack, and this repository's registry name."""
    from ..repos import RegistryError, resolve

    try:
        own = resolve(["."], current=rt.root)[0].name
    except RegistryError:
        own = None

    def search(query: str, top_k: int, filters: Any) -> Any:
        return _multirepo_search(rt, query, repos, top_k, filters)

    return search, own


def context_data(found: Any) -> dict[str, Any]:
    """A pack as the wire and `--json` give it: {query, maxTokens, tokens, items, omitted, ...}."""
    data = dict(msgspec.to_builtins(found))
    data.pop("text", None)
    return data


def handle_similar(rt: Runtime, p: SimilarParams, call: CallContext) -> ToolResult:
    from ..format import format_search

    if (p.snippet is None) == (p.path is None):
        raise InvalidParams("invalid params: give either `snippet` or `path` (with `line`)")
    if p.path is not None and p.line is None:
        raise InvalidParams("invalid params: `path` needs `line` (a line inside the example chunk)")
    at = (p.path, p.line) if p.path is not None and p.line is not None else None
    filters = _filters(p.file_type, p.directory, p.chunk_type)
    with _indexed_reader(rt, call) as engine:
        try:
            response = engine.similar(snippet=p.snippet, at=at, top_k=p.limit, filters=filters)
        except ValueError as exc:
            raise InvalidParams(f"invalid params: {exc}") from exc
    call.check_cancelled()
    text = format_search(response.results, root=rt.root, context_lines=0, query=response.query)
    data: dict[str, Any] = {
        "query": response.query,
        "strategy": response.strategy,
        "results": _hits(response.results, content=False),
    }
    data["savings"] = rt.record_savings("find_similar", text, [r.path for r in response.results])
    return ToolResult(text, data)


def handle_call_graph(rt: Runtime, p: CallGraphParams, call: CallContext) -> ToolResult:
    from ..graph.text import format_call_graph

    if p.direction == "impact":
        return _graph_impact(rt, p, call)
    if (p.name is None) == (p.symbol_id is None):
        raise InvalidParams("invalid params: give exactly one of `name` or `symbolId`")
    if p.symbol_id is not None and "#" not in p.symbol_id:
        raise InvalidParams(
            "invalid params: `symbolId` is `path#Qualified.name`, as call_graph results give it"
        )
    target = (p.symbol_id or p.name or "").strip()
    if not target:
        raise InvalidParams("invalid params: `name` is empty")
    if p.direction == "path":
        return _graph_path(rt, target, p, call)
    with _indexed_reader(rt, call) as engine:
        graph = engine.call_graph(
            target,
            direction=p.direction,
            depth=p.depth,
            include_name_matches=p.include_name_matches,
            limit=p.limit,
        )
    call.check_cancelled()
    text = format_call_graph(graph)
    data = msgspec.to_builtins(graph)
    paths = (
        [r.path for r in graph.roots]
        + [e.caller_path for e in graph.edges]
        + [e.callee_path for e in graph.edges]
    )
    data["savings"] = rt.record_savings("call_graph", text, [p for p in paths if p])
    return ToolResult(text, data)


def _graph_path(rt: Runtime, source: str, p: CallGraphParams, call: CallContext) -> ToolResult:
    from ..graph.paths import format_path

    if not p.to or not p.to.strip():
        raise InvalidParams("invalid params: direction `path` needs `to` (the symbol to reach)")
    with _indexed_reader(rt, call) as engine:
        found = engine.call_path(source, p.to.strip())
    call.check_cancelled()
    return ToolResult(format_path(found), msgspec.to_builtins(found))


def _graph_impact(rt: Runtime, p: CallGraphParams, call: CallContext) -> ToolResult:
    from ..changes import GitError
    from ..graph.paths import format_impact

    if p.name is not None or p.symbol_id is not None:
        raise InvalidParams("invalid params: direction `impact` takes `diff`, not `name` or `symbolId`")
    with _indexed_reader(rt, call) as engine:
        try:
            found = engine.impact(p.diff, depth=p.depth)
        except GitError as exc:
            raise InvalidParams(f"invalid params: `diff`: {exc}") from exc
    call.check_cancelled()
    return ToolResult(format_impact(found), msgspec.to_builtins(found))


def handle_implementation_lookup(rt: Runtime, p: ImplementationLookupParams, call: CallContext) -> ToolResult:
    from ..graph.text import format_implementation

    if not p.query.strip():
        raise InvalidParams("invalid params: `query` is empty")
    with _indexed_reader(rt, call) as engine:
        found = engine.implementation_lookup(p.query, limit=p.limit)
    call.check_cancelled()
    text = format_implementation(found)
    data = msgspec.to_builtins(found)
    data["savings"] = rt.record_savings("implementation_lookup", text, [r.path for r in found.results])
    return ToolResult(text, data)
