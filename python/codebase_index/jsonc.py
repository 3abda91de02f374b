"""JSONC (comments, trailing commas) and the configuration error, on the standard library alone: the npm
launcher runs `install --dry-run` and `uninstall` (agents.py) with any Python before the engine exists."""

from __future__ import annotations

import re

__all__ = ["ConfigError", "strip_jsonc"]


class ConfigError(Exception):
    """A configuration file is malformed or holds an invalid value; the message names file and key."""


_JSONC_TOKENS = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*(?:.*?\*/|.*\Z)', re.S)
_TRAILING_COMMA = re.compile(r'"(?:\\.|[^"\\])*"|,(\s*[}\]])', re.S)


def strip_jsonc(text: str) -> str:
    """Turn JSONC into JSON: comments become spaces (line numbers in errors stay right), trailing commas
    are dropped; string contents are never touched.

    >>> strip_jsonc('{"a": "//x", /* c */ "b": [1,], // end\\n}')
    '{"a": "//x",         "b": [1 ]        \\n}'
    """

    def blank(m: re.Match[str]) -> str:
        token = m.group(0)
        if token.startswith('"'):
            return token
        if token.startswith("/*") and not token.endswith("*/"):
            line = text.count("\n", 0, m.start()) + 1
            raise ConfigError(f"line {line}: unterminated /* comment")
        return re.sub(r"[^\n]", " ", token)

    without_comments = _JSONC_TOKENS.sub(blank, text)
    return _TRAILING_COMMA.sub(
        lambda m: " " + m.group(1) if m.group(1) is not None else m.group(0), without_comments
    )
