"""The protocol's constants and errors: version, server name, and the JSON-RPC error codes (documented in
plugin/PROTOCOL.md) with the `ToolError` each expected failure is raised as.
"""

from __future__ import annotations

import contextlib
import re
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


_SPACE = b" \t\r\n"
_NUMBER = re.compile(rb"-?\d+")


def recover_id(line: bytes) -> int | str | None:
    """The top-level `id` of a request line that did not decode (nested too deep, a lone surrogate,
    cut short), so that its error reaches the caller waiting on that id. One linear scan; None when
    no integer or plain string id sits at the top level."""
    depth, i, n = 0, 0, len(line)
    while i < n:
        c = line[i]
        if c == 0x22:  # a string: skip to its end, then see whether it is the top-level key "id"
            end = i + 1
            while end < n and line[end] != 0x22:
                end += 2 if line[end] == 0x5C else 1
            key = line[i + 1 : end]
            i = end + 1
            if depth == 1 and key == b"id":
                while i < n and line[i] in _SPACE:
                    i += 1
                if i < n and line[i] == 0x3A:  # ':'
                    return _id_value(line, i + 1)
            continue
        if c in b"{[":
            depth += 1
        elif c in b"}]":
            depth -= 1
        i += 1
    return None


def _id_value(line: bytes, i: int) -> int | str | None:
    while i < len(line) and line[i] in _SPACE:
        i += 1
    if (number := _NUMBER.match(line, i)) is not None:
        tail = line[number.end() : number.end() + 1]
        return int(number.group()) if tail not in (b".", b"e", b"E") else None
    if line[i : i + 1] == b'"':
        end = line.find(b'"', i + 1)
        raw = line[i + 1 : end] if end > 0 else b""
        if end > 0 and b"\\" not in raw:
            with contextlib.suppress(UnicodeDecodeError):
                return raw.decode()
    return None
