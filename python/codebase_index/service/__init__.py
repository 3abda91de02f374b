"""The service layer: `Engine` wires the stages (discover -> chunk -> tokenize -> store -> retrieve -> rank
-> format) for the CLI, the JSON-RPC sidecar and the MCP server.

engine       `Engine`: state, lifecycle, indexing, knowledge bases, upkeep; the public face of the rest
retrieval    search and similar: retrievers -> ranking -> external reranker -> results
embedding    the vector side: provider, embedding job, query vectors (breaker), vector snapshots
graph_reads  call graph, call paths, impact, definitions, implementation lookup
status       `IndexStatus`: what the index holds
"""

from ..indexer import IndexReport
from .engine import Engine
from .retrieval import SearchResponse
from .status import IndexStatus

__all__ = ["Engine", "IndexReport", "IndexStatus", "SearchResponse"]
