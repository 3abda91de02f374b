"""The protocol's constants and errors: version, server name, and the JSON-RPC error codes (documented in
plugin/PROTOCOL.md) with the `ToolError` each expected failure is raised as.
"""

from __future__ import annotations

from typing import Any

PROTOCOL_VERSION = 1
SERVER_NAME = "codebase-index"

# -- errors (codes are the JSON-RPC ones; documented in plugin/PROTOCOL.md) --------------------------

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
REQUEST_CANCELLED = -32800
INDEX_BUSY = -32001
SIDECAR_LOCKED = -32002
NOT_INDEXED = -32003
CONFIG_ERROR = -32004


class ToolError(Exception):
    """A failure the caller should see as-is: a JSON-RPC error code plus a one-line message."""

    code = INTERNAL_ERROR

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data


class InvalidParams(ToolError):
    code = INVALID_PARAMS


class MethodNotFound(ToolError):
    code = METHOD_NOT_FOUND


class IndexBusy(ToolError):
    code = INDEX_BUSY


class NotIndexed(ToolError):
    code = NOT_INDEXED


class ConfigProblem(ToolError):
    code = CONFIG_ERROR


class Cancelled(ToolError):
    code = REQUEST_CANCELLED
