"""The wire types of every tool: one params Struct per tool (camelCase on the wire, unknown fields refused)
and the results. The single source of each face's schema: the JSON-RPC sidecar and MCP validate against
them, `faces` renders the plugin's TypeScript, the README's table and PROTOCOL.md's from them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from ..models import ChunkKind

# -- params: the single source of every face's schema -------------------------------------------------

SearchMode = Literal["keyword", "semantic", "hybrid"]
LogLevel = Literal["debug", "info", "warning", "error"]

# A query longer than this is refused (-32602), not truncated: a cut query silently searches for
# something else, and a refusal tells the agent to say it shorter. Far above any real question.
MAX_QUERY_CHARS = 4000

_Query = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description=f"What to look for: words, identifiers, a phrase (at most {MAX_QUERY_CHARS} characters).",
    ),
]
_FileType = Annotated[str, msgspec.Meta(description="Only files with this extension, e.g. 'py' or '.ts'.")]
_Directory = Annotated[
    str, msgspec.Meta(description="Only files under this directory, relative to the root.")
]
_ChunkType = Annotated[ChunkKind, msgspec.Meta(description="Only chunks of this kind.")]
_Repos = Annotated[
    list[Annotated[str, msgspec.Meta(min_length=1)]],
    msgspec.Meta(
        min_length=1,
        max_length=50,
        description="Search these indexed repositories together, one ranking, each result labelled with its "
        "repository: names from `codebase-index repos list`, '.' for this one, '*' for all.",
    ),
]


class _Params(msgspec.Struct, rename="camel", forbid_unknown_fields=True, kw_only=True):
    pass


_MaxTokens = Annotated[
    int,
    msgspec.Meta(
        ge=128,
        le=8000,
        description="Hard cap on the answer's tokens, counted with a real tokenizer (default 1500).",
    ),
]
_ChangedSince = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        description="Only code changed after this commit or date (`HEAD~5`, `v2.1`, `2026-11-01`).",
    ),
]
_ChangedBefore = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        description="Only code unchanged since this commit or date (git blame: older code only).",
    ),
]


class SearchParams(_Params):
    """Search the indexed code and return the best matching chunks with their code."""

    query: _Query
    limit: (
        Annotated[
            int,
            msgspec.Meta(ge=1, le=50, description="How many results (default: config search.maxResults)."),
        ]
        | None
    ) = None
    file_type: _FileType | None = None
    directory: _Directory | None = None
    chunk_type: _ChunkType | None = None
    min_score: Annotated[float, msgspec.Meta(description="Drop results scoring below this.")] | None = None
    context_lines: (
        Annotated[int, msgspec.Meta(ge=0, le=50, description="Extra file lines shown around each result.")]
        | None
    ) = None
    mode: (
        Annotated[SearchMode, msgspec.Meta(description="Retrieval strategy (default: the best available).")]
        | None
    ) = None
    changed_since: _ChangedSince | None = None
    changed_before: _ChangedBefore | None = None
    repos: _Repos | None = None


class PeekParams(_Params):
    """Like search, but locations only: cheap to scan, then read the files you need."""

    query: _Query
    limit: Annotated[int, msgspec.Meta(ge=1, le=100, description="How many locations (default 20).")] = 20
    file_type: _FileType | None = None
    directory: _Directory | None = None
    chunk_type: _ChunkType | None = None
    changed_since: _ChangedSince | None = None
    changed_before: _ChangedBefore | None = None
    repos: _Repos | None = None


class SimilarParams(_Params):
    """Find code similar in meaning to a snippet or to the chunk at path:line."""

    snippet: (
        Annotated[str, msgspec.Meta(min_length=1, description="A code snippet to find look-alikes of.")]
        | None
    ) = None
    path: (
        Annotated[str, msgspec.Meta(description="Instead of a snippet: a file, relative to the root.")] | None
    ) = None
    line: (
        Annotated[
            int, msgspec.Meta(ge=1, le=10_000_000, description="With path: a line inside the example chunk.")
        ]
        | None
    ) = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=50, description="How many results (default 10).")] = 10
    file_type: _FileType | None = None
    directory: _Directory | None = None
    chunk_type: _ChunkType | None = None


class IndexParams(_Params):
    """Build or update the index."""

    force: Annotated[bool, msgspec.Meta(description="Re-chunk every file instead of only changed ones.")] = (
        False
    )
    estimate_only: Annotated[bool, msgspec.Meta(description="Only count what an index run would do.")] = False
    verbose: Annotated[bool, msgspec.Meta(description="List skipped files with their reasons.")] = False


class StatusParams(_Params):
    """No parameters."""


_KbPath = Annotated[
    str,
    msgspec.Meta(
        min_length=1, description="The folder: absolute, or relative to the project root (or its label)."
    ),
]


class AddKnowledgeBaseParams(_Params):
    """Index an extra folder (docs, a sibling library) with the project."""

    path: _KbPath


class ListKnowledgeBasesParams(_Params):
    """No parameters."""


class RemoveKnowledgeBaseParams(_Params):
    """Stop indexing an extra folder and drop its chunks."""

    path: _KbPath


class HealthCheckParams(_Params):
    """No parameters."""


class MetricsParams(_Params):
    """No parameters."""


class LogsParams(_Params):
    """Recent log records of the index service."""

    limit: Annotated[int, msgspec.Meta(ge=1, le=1000, description="How many records (default 50).")] = 50
    level: Annotated[LogLevel, msgspec.Meta(description="Only records at this level or above.")] | None = None


GraphDirection = Literal["callers", "callees", "path", "impact"]


class CallGraphParams(_Params):
    """Who calls a function, method or class across files, or what it calls. Give `name` or `symbolId`."""

    name: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1, description="Function, method or class: `parse`, `Session.send`, `Foo::new`."
            ),
        ]
        | None
    ) = None
    symbol_id: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1, description="One exact symbol from an earlier result: `path#Qualified.name`."
            ),
        ]
        | None
    ) = None
    direction: Annotated[
        GraphDirection,
        msgspec.Meta(
            description="callers: who calls it (default); callees: what it calls; path: the shortest call "
            "path to `to`; impact: what a git change reaches (changed symbols, callers, tests; no name)."
        ),
    ] = "callers"
    to: (
        Annotated[str, msgspec.Meta(min_length=1, description="With direction path: the symbol to reach.")]
        | None
    ) = None
    diff: (
        Annotated[
            str,
            msgspec.Meta(
                min_length=1,
                description="With direction impact: a git range (`main..HEAD`) or revision; default: "
                "uncommitted changes vs HEAD.",
            ),
        ]
        | None
    ) = None
    depth: Annotated[int, msgspec.Meta(ge=1, le=3, description="Hops to follow (default 1).")] = 1
    include_name_matches: Annotated[
        bool, msgspec.Meta(description="Also list call sites matched by name only (receiver type unknown).")
    ] = False
    limit: Annotated[int, msgspec.Meta(ge=1, le=500, description="Most calls returned (default 100).")] = 100


class ImplementationLookupParams(_Params):
    """Where something is really implemented: an identifier or a description of a definition."""

    query: _Query
    limit: Annotated[int, msgspec.Meta(ge=1, le=20, description="How many definitions (default 5).")] = 5


class ContextParams(_Params):
    """The smallest set of code that answers a question, within a token budget."""

    query: _Query
    max_tokens: _MaxTokens = 1500
    file_type: _FileType | None = None
    directory: _Directory | None = None
    changed_since: _ChangedSince | None = None
    changed_before: _ChangedBefore | None = None
    repos: _Repos | None = None


class EditContextParams(_Params):
    """What to read before changing a symbol: definition, callers, callees, tests, similar code."""

    target: Annotated[
        str,
        msgspec.Meta(
            min_length=1,
            description="The symbol to change (`parse`, `Session.send`, `path#Qualified.name`) or path:line.",
        ),
    ]
    max_tokens: _MaxTokens = 1500


class SavingsParams(_Params):
    """No parameters."""


# -- results ------------------------------------------------------------------------------------------


class ToolResult(msgspec.Struct):
    """What every tool returns: `text` for the model, `data` for programs."""

    text: str
    data: Any


class Hit(msgspec.Struct, rename="camel"):
    path: str
    start_line: int
    end_line: int
    kind: str
    symbol: str
    language: str
    score: float
    id: int
    content: str | None = None


class RepoHit(Hit, rename="camel"):
    """A multi-repository result: a hit and the repository it is from."""

    repo: str = ""


class IndexSummary(msgspec.Struct, rename="camel"):
    """The index state as `initialize` reports it, read without loading the engine."""

    root: str
    index_dir: str
    branch: str
    indexed: bool
    files: int
    chunks: int
    last_indexed_at: float | None
    error: str | None = None
