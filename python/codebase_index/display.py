"""How a path (or any name a repository chose) is written into text output.

A file name may hold a newline or another control character; printed as is, `evil\\nsrc/auth.py:1-9`
reads as two result lines and forges an answer. Every text face (tool text, CLI output, graph and
context renderings, status listings) writes paths through `shown_path`; JSON `data` keeps the real path.
Imports nothing, so every stage can use it.
"""

from __future__ import annotations

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(code: int) -> str:
    char = chr(code)
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# C0, DEL and C1 controls; the line and paragraph separators (line breaks to some readers); the
# bidirectional overrides and isolates, which reorder how the rest of a line reads.
_ESCAPED = [*range(0x20), *range(0x7F, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_TABLE = {code: _escape(code) for code in _ESCAPED}


def shown_path(path: str) -> str:
    """`path` with every control character escaped (`\\n`, `\\x1b`, `\\u2028`), else unchanged.

    >>> shown_path("src/a.py")
    'src/a.py'
    >>> print(shown_path("evil\\nsrc/auth.py\\x1b[2J"))
    evil\\nsrc/auth.py\\x1b[2J
    """
    return path.translate(_TABLE)
