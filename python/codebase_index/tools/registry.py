"""The registry: every tool's name, JSON-RPC method, description for the model, params Struct and
handler, and `call()`, which validates raw params against the Struct, runs the handler on the shared
`Runtime` and records metrics. The transports only move bytes.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from .index_handlers import (
    handle_health_check,
    handle_index,
    handle_kb_add,
    handle_kb_list,
    handle_kb_remove,
    handle_logs,
    handle_metrics,
    handle_savings,
    handle_status,
)
from .protocol import ConfigProblem, IndexBusy, InvalidParams, MethodNotFound, ToolError
from .runtime import CallContext, Runtime
from .schema import (
    AddKnowledgeBaseParams,
    CallGraphParams,
    ContextParams,
    EditContextParams,
    HealthCheckParams,
    ImplementationLookupParams,
    IndexParams,
    ListKnowledgeBasesParams,
    LogsParams,
    MetricsParams,
    PeekParams,
    RemoveKnowledgeBaseParams,
    SavingsParams,
    SearchParams,
    SimilarParams,
    StatusParams,
    ToolResult,
    _Params,
)
from .search_handlers import (
    handle_call_graph,
    handle_context,
    handle_edit_context,
    handle_implementation_lookup,
    handle_peek,
    handle_search,
    handle_similar,
)


@dataclass(frozen=True)
class ToolSpec:
    name: str  # what the model sees
    method: str  # the JSON-RPC method
    title: str
    description: str
    params: type[_Params]
    handler: Callable[[Runtime, Any, CallContext], ToolResult]
    read_only: bool = True


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "codebase_search",
        "search",
        "Search code",
        "Search this project's code by meaning and keywords; returns the best matching functions, classes "
        "and sections with file path, line range and code. Use it before grep when you don't know where "
        "something lives, to find where a concept is implemented, or to find usages by name. Narrow with "
        "fileType, directory or chunkType; add contextLines to see surrounding lines. To read the answer "
        "rather than rank candidates, codebase_context costs fewer tokens; for exact strings use grep.",
        SearchParams,
        handle_search,
    ),
    ToolSpec(
        "codebase_context",
        "context",
        "Context pack",
        "The smallest set of code that answers a question, within maxTokens (default 1500, a hard cap): "
        "definitions in full when they fit, else signature + doc + matching lines, each with path:lines and "
        "why it is there; deduplicated, in reading order, with a line saying what was left out. Routed by "
        "the query: an identifier gets its definition and callers, 'who calls X' the call graph, a "
        "description hybrid search. Prefer it to codebase_search when you will read the code anyway.",
        ContextParams,
        handle_context,
    ),
    ToolSpec(
        "codebase_edit_context",
        "edit_context",
        "Context before an edit",
        "Before changing a function, method or class (name or path:line): its definition, its callers with "
        "the line of each call, what it calls, the tests that reach it and similar code that may need the "
        "same change, within maxTokens (default 1500, a hard cap). Use it before editing shared code.",
        EditContextParams,
        handle_edit_context,
    ),
    ToolSpec(
        "codebase_peek",
        "peek",
        "Find code locations",
        "Like codebase_search but returns only locations (path:lines, kind, symbol), no code: cheap for "
        "getting an overview of where something is (many places, few tokens); then read the lines you need.",
        PeekParams,
        handle_peek,
    ),
    ToolSpec(
        "find_similar",
        "similar",
        "Find similar code",
        "Find code similar in meaning to a snippet, or to the function/section at path + line (the example "
        "itself is left out): duplicates, other implementations of the same idea, places to change "
        "together. Needs embeddings (computed in the background after indexing).",
        SimilarParams,
        handle_similar,
    ),
    ToolSpec(
        "call_graph",
        "call_graph",
        "Call graph",
        "Who calls a function/method/class, or what it calls, across files (depth 1-3), with file:line of "
        "each call site. Calls are resolved through imports, the same file/package and known receiver types; "
        "calls matched only by name are counted and listed on request (includeNameMatches). Use it for 'who "
        "calls X', 'what does X call', and before changing a function's signature. direction=path gives the "
        "shortest call path from name to `to`; direction=impact what a git change (`diff`, default: "
        "uncommitted work) reaches: changed symbols, their callers, the tests that reach them.",
        CallGraphParams,
        handle_call_graph,
    ),
    ToolSpec(
        "implementation_lookup",
        "implementation_lookup",
        "Find the implementation",
        "Go to where something is really implemented: give an identifier (`parse_args`, `Session.send`) or "
        "describe the definition ('function that retries failed uploads'). Returns the definition's code, "
        "real code before tests, docs, examples and type stubs; falls back to search.",
        ImplementationLookupParams,
        handle_implementation_lookup,
    ),
    ToolSpec(
        "index_codebase",
        "index",
        "Index the codebase",
        "Build or update the search index (only changed files are re-read). Run it when search says the "
        "project is not indexed or results look stale; estimateOnly counts the work without doing it; "
        "force re-chunks everything.",
        IndexParams,
        handle_index,
        read_only=False,
    ),
    ToolSpec(
        "index_status",
        "status",
        "Index status",
        "Show what the index holds: branch, files, chunks, skipped files, size, when it was last updated.",
        StatusParams,
        handle_status,
    ),
    ToolSpec(
        "index_health_check",
        "health_check",
        "Check index health",
        "Check the index for damage and repair it: a corrupted database is moved aside (kept for "
        "inspection) and rebuilt from the files, keeping every embedding it can still read; files that "
        "lost their chunks are re-indexed; chunks and vectors no file refers to are dropped; the vector "
        "index is verified. Use it when search fails or says the index is damaged, or results point at "
        "code that no longer exists.",
        HealthCheckParams,
        handle_health_check,
        read_only=False,
    ),
    ToolSpec(
        "index_metrics",
        "metrics",
        "Index service metrics",
        "Call counts and latencies per tool since the service started, index size and cache state.",
        MetricsParams,
        handle_metrics,
    ),
    ToolSpec(
        "index_savings",
        "savings",
        "Token savings",
        "Tokens each tool returned vs the tokens of the whole files its answers point into (what reading "
        "those files would have cost), per tool, for this session and all sessions.",
        SavingsParams,
        handle_savings,
    ),
    ToolSpec(
        "index_logs",
        "logs",
        "Index service logs",
        "The most recent log records of the index service; use it to find out why indexing or search failed.",
        LogsParams,
        handle_logs,
    ),
    ToolSpec(
        "add_knowledge_base",
        "kb_add",
        "Add a knowledge base",
        "Index an extra folder outside the project (documentation, a sibling library) together with it; "
        "search results from it show as kb:<folder>/<path>. It is kept up to date like the project.",
        AddKnowledgeBaseParams,
        handle_kb_add,
        read_only=False,
    ),
    ToolSpec(
        "list_knowledge_bases",
        "kb_list",
        "List knowledge bases",
        "The extra folders indexed with this project, where each comes from and how many files it holds.",
        ListKnowledgeBasesParams,
        handle_kb_list,
    ),
    ToolSpec(
        "remove_knowledge_base",
        "kb_remove",
        "Remove a knowledge base",
        "Stop indexing an extra folder and drop its chunks from the index.",
        RemoveKnowledgeBaseParams,
        handle_kb_remove,
        read_only=False,
    ),
)

BY_METHOD: dict[str, ToolSpec] = {t.method: t for t in TOOLS}
BY_NAME: dict[str, ToolSpec] = {t.name: t for t in TOOLS}


def lookup(name_or_method: str) -> ToolSpec:
    spec = BY_METHOD.get(name_or_method) or BY_NAME.get(name_or_method)
    if spec is None:
        raise MethodNotFound(f"method not found: {name_or_method}")
    return spec


def decode_params(spec: ToolSpec, raw: Any) -> Any:
    """Validate raw wire params into the tool's Struct; the error message names the offending field."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidParams("invalid params: params must be an object with named fields")
    try:
        params = msgspec.convert(raw, spec.params)
    except msgspec.ValidationError as exc:
        raise InvalidParams(f"invalid params: {exc}") from exc
    for name, value in msgspec.structs.asdict(params).items():
        # No query, path or revision holds a NUL; git and SQLite would fail on one deep inside.
        items = value if isinstance(value, list) else [value]
        if any(isinstance(item, str) and "\0" in item for item in items):
            field = spec.params.__struct_encode_fields__[spec.params.__struct_fields__.index(name)]
            raise InvalidParams(f"invalid params: `{field}` contains a NUL character")
    return params


def engine_error(exc: Exception) -> ToolError | None:
    """The engine's expected failures as protocol errors (anything else is an internal error)."""
    from ..config import ConfigError
    from ..store import DiskFullError, IndexLockedError, ReadOnlyIndexError, StoreError

    if isinstance(exc, IndexLockedError):
        return IndexBusy(str(exc))
    if isinstance(exc, ReadOnlyIndexError | DiskFullError):
        return ConfigProblem(str(exc))  # it says what still works: searches
    if isinstance(exc, sqlite3.DatabaseError):
        from ..repair import index_error

        message = index_error(exc)
        return ConfigProblem(message) if message is not None else None
    if isinstance(exc, StoreError):
        return ConfigProblem(f"the index cannot be used: {exc}")
    if isinstance(exc, ConfigError):
        return ConfigProblem(f"the project configuration is invalid: {exc}")
    return None


def _add_freshness(result: ToolResult, ctx: CallContext, *, budgeted: bool) -> None:
    """Every answer read from the index says how fresh it is: a stale one leads with it, a current one
    ends with it (a context pack's text is its token budget: there `data.freshness` alone says it);
    `data.freshness` carries the fields."""
    from .. import freshness

    f = ctx.freshness
    if isinstance(result.data, dict):
        result.data["freshness"] = msgspec.to_builtins(f)
    if f.stale:
        ctx.notes.insert(0, freshness.line(f))
    elif not budgeted:
        result.text = f"{result.text.rstrip()}\n{freshness.line(f)}"


def call(rt: Runtime, name_or_method: str, raw_params: Any, ctx: CallContext | None = None) -> ToolResult:
    """Validate, run and time one tool call. Raises ToolError subclasses for expected failures."""
    spec = lookup(name_or_method)
    ctx = ctx or CallContext()
    started = time.perf_counter()
    ok = False
    try:
        params = decode_params(spec, raw_params)
        ctx.check_cancelled()
        result = spec.handler(rt, params, ctx)
        ok = True
        if ctx.freshness is not None:
            _add_freshness(result, ctx, budgeted=spec.handler in (handle_context, handle_edit_context))
        if ctx.notes:
            result.text = "".join(f"note: {n}\n" for n in ctx.notes) + "\n" + result.text
            if isinstance(result.data, dict):
                result.data["notes"] = list(ctx.notes)
        if rt.config_notice:
            result.text = f"note: {rt.config_notice}\n{result.text}"
        return result
    except ToolError:
        raise
    except Exception as exc:
        mapped = engine_error(exc)
        if mapped is None:
            raise
        raise mapped from exc
    finally:
        rt.metrics.record(spec.method, time.perf_counter() - started, ok)
        rt.reindex_changed()  # files the answer found swapped or gone since they were indexed
