"""How each face spells what a user can do next. The tool layer's messages (shared by the sidecar, MCP
and the CLI) name tools and parameters; a CLI user types commands and flags instead, so every message
that suggests a next step takes the face's `Vocabulary` (`CallContext.words`, or the renderer's argument)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Vocabulary:
    search: str
    implementation: str
    name_matches: str
    limit: str
    depth: str
    max_tokens: str
    changed: str
    """The time filters, together."""


TOOLS = Vocabulary(
    search="codebase_search",
    implementation="implementation_lookup",
    name_matches="includeNameMatches",
    limit="`limit`",
    depth="`depth`",
    max_tokens="maxTokens",
    changed="`changedSince`/`changedBefore`",
)
CLI = Vocabulary(
    search="`codebase-index search`",
    implementation="`codebase-index impl`",
    name_matches="--name-matches",
    limit="--limit",
    depth="--depth",
    max_tokens="--max-tokens",
    changed="--changed-since/--changed-before",
)
