"""The agent-facing tools, defined once and served three ways (JSON-RPC sidecar, MCP, generated TypeScript).

Each tool is a msgspec params Struct (camelCase on the wire, unknown fields refused) plus a `ToolSpec`
(name, RPC method, description for the model, handler). `call()` validates raw params against the Struct,
runs the handler on a shared `Runtime` and records metrics; the transports only move bytes.

protocol         version, server name, JSON-RPC error codes and the `ToolError`s they are raised as
schema           one params Struct per tool, and the result types
runtime          `CallContext` (progress, cancellation) and `Runtime` (engines, locks, background jobs)
search_handlers  search, peek, context packs, similar code, call graph, implementation lookup
index_handlers   index, status, health check, knowledge bases, metrics, logs, savings
registry         `TOOLS`, `call()`
faces            JSON Schemas, the plugin's TypeScript, the README's and PROTOCOL.md's tables

This package must stay cheap to import: the sidecar answers `initialize` from it before numpy, tree-sitter
or the engine are loaded (they are imported inside the handlers that need them).

`python -m codebase_index.tools --emit json|ts|markdown` prints the JSON Schemas, writes the TypeScript
face, or prints the README's tool table.
"""

from .faces import input_schema, render_markdown, render_protocol_methods, render_ts, tool_definitions
from .protocol import (
    CONFIG_ERROR,
    INDEX_BUSY,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    NOT_INDEXED,
    PARSE_ERROR,
    PROTOCOL_VERSION,
    REQUEST_CANCELLED,
    SERVER_NAME,
    SIDECAR_LOCKED,
    Cancelled,
    ConfigProblem,
    IndexBusy,
    InvalidParams,
    MethodNotFound,
    NotIndexed,
    ToolError,
)
from .registry import BY_METHOD, BY_NAME, TOOLS, ToolSpec, call, decode_params, engine_error, lookup
from .runtime import CallContext, LogBuffer, ProgressFn, Runtime
from .schema import ToolResult

__all__ = [
    "BY_METHOD",
    "BY_NAME",
    "CONFIG_ERROR",
    "INDEX_BUSY",
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "NOT_INDEXED",
    "PARSE_ERROR",
    "PROTOCOL_VERSION",
    "REQUEST_CANCELLED",
    "SERVER_NAME",
    "SIDECAR_LOCKED",
    "TOOLS",
    "CallContext",
    "Cancelled",
    "ConfigProblem",
    "IndexBusy",
    "InvalidParams",
    "LogBuffer",
    "MethodNotFound",
    "NotIndexed",
    "ProgressFn",
    "Runtime",
    "ToolError",
    "ToolResult",
    "ToolSpec",
    "call",
    "decode_params",
    "engine_error",
    "input_schema",
    "lookup",
    "render_markdown",
    "render_protocol_methods",
    "render_ts",
    "tool_definitions",
]
