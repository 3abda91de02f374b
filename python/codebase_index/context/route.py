"""Which evidence a context question needs first, from the query's style.

The style and the relation come from the ranking's query parser (`ranking.query.parse_query`, parsed
once; nothing here re-reads the text for them). The route:

- identifier -> `definition`: the definition in full, then its callers, then search;
- relation question ("who calls X", "what does X call", "where is X used") -> `graph`: the named symbol
  and its callers or callees with their call lines;
- anything else (description, phrase, snippet, error, path) -> `search`: hybrid search (keyword when
  there are no embeddings), with the definitions of identifiers it names first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..ranking.query import ParsedQuery, parse_query

Route = Literal["definition", "graph", "search"]


@dataclass(frozen=True)
class Routing:
    route: Route
    style: str  # the parser's style: identifier, relation, snippet, error, description, phrase, path
    parsed: ParsedQuery
    target: str = ""  # the symbol a definition or graph route is about
    direction: str = "callers"


def route(query: str) -> Routing:
    """The route for a context query.

    >>> route("parse_args").route, route("who calls parse_args").route, route("retry uploads").route
    ('definition', 'graph', 'search')
    >>> r = route("what does Session.send call"); (r.direction, r.target)
    ('callees', 'Session.send')
    """
    parsed = parse_query(query.strip())
    rel = parsed.relation
    if rel is not None:
        # "where is X used": its callers are the uses the graph knows.
        return Routing(
            "graph", parsed.style, parsed, rel.name, "callees" if rel.kind == "callees" else "callers"
        )
    if parsed.style == "identifier" and parsed.identifiers:
        return Routing("definition", parsed.style, parsed, parsed.identifiers[0])
    return Routing("search", parsed.style, parsed)
