"""Which evidence a context question needs first, from the query's style.

The style comes from the ranking's query profile (`rerank.profile_query`: one identifier, pasted code or
error, or words); this module adds only what the profile does not name, relation questions ("who calls
X", "what does X call", "callers of X"), and picks the route:

- identifier -> `definition`: the definition in full, then its callers, then search;
- relation question -> `graph`: the named symbol's callers or callees with their call lines;
- anything else -> `search`: hybrid search (keyword when no embeddings), definitions it names first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ..rerank import profile_query

Route = Literal["definition", "graph", "search"]

_NAME = r"`?([A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*)(?:\(\))?`?"
_CALLERS = (
    re.compile(rf"\b(?:who|what|which\s+\w+)\s+(?:calls|uses|invokes)\s+{_NAME}", re.IGNORECASE),
    re.compile(rf"\b(?:callers|usages|uses|call\s+sites)\s+of\s+{_NAME}", re.IGNORECASE),
    re.compile(rf"\bwhere\s+(?:is|are)\s+{_NAME}\s+(?:called|used|invoked)\b", re.IGNORECASE),
    re.compile(rf"{_NAME}\s+(?:is\s+)?called\s+(?:by|from)\b", re.IGNORECASE),
)
_CALLEES = (
    re.compile(rf"\bwhat\s+(?:does|do)\s+{_NAME}\s+call\b", re.IGNORECASE),
    re.compile(rf"\b(?:callees|dependencies)\s+of\s+{_NAME}", re.IGNORECASE),
    re.compile(rf"\bwhat\s+is\s+called\s+by\s+{_NAME}", re.IGNORECASE),
)


@dataclass(frozen=True)
class Routing:
    route: Route
    style: str  # identifier, relation, code, error, description
    target: str = ""  # the symbol a definition or graph route is about
    direction: str = "callers"


def relation(query: str) -> tuple[str, str] | None:
    """(direction, symbol) of a relation question, or None.

    >>> relation("who calls parse_args?")
    ('callers', 'parse_args')
    >>> relation("what does Session.send call")
    ('callees', 'Session.send')
    >>> relation("where is retry used") is None
    False
    >>> relation("how are routes registered") is None
    True
    """
    for direction, patterns in (("callees", _CALLEES), ("callers", _CALLERS)):
        for pattern in patterns:
            m = pattern.search(query)
            if m:
                return direction, m.group(1)
    return None


def route(query: str) -> Routing:
    """The route for a context query.

    >>> route("parse_args").route, route("who calls parse_args").route, route("retry uploads").route
    ('definition', 'graph', 'search')
    """
    q = query.strip()
    rel = relation(q)
    if rel is not None:
        return Routing("graph", "relation", rel[1], rel[0])
    profile = profile_query(q)
    if profile.symbol_query and profile.identifiers:
        return Routing("definition", "identifier", profile.identifiers[0])
    style = "code" if profile.code_like else "error" if profile.error_like else "description"
    return Routing("search", style)
