"""`codebase-index callers NAME`, `callees NAME` and `impl QUERY`: the code graph on the command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ..service import Engine

T = TypeVar("T")


def _engine(args: argparse.Namespace) -> Engine:
    """The project's engine, indexing first when there is no index yet (like `search`), with the code
    graph complete: contents an earlier `index --keyword-only` (or a killed run) left pending are
    extracted first, with a progress line on stderr."""
    from ..cli import Progress, _engine

    engine = _engine(args)
    progress = Progress(sys.stderr, enabled=not args.json)
    if not engine.has_index():
        engine.index(progress=progress)
    else:
        engine.finish_graph(progress)
    return engine


def _answer(args: argparse.Namespace, query: Callable[[Engine], T], render: Callable[[T], str]) -> T:
    """Run one graph query on the project's engine (closed after) and print the answer: JSON with
    --json, else its text."""
    from ..cli import print_answer

    engine = _engine(args)
    try:
        found = query(engine)
    finally:
        engine.close()
    print_answer(args, found, render(found))
    return found


def cmd_call_graph(args: argparse.Namespace) -> int:
    from ..cli import CliError
    from ..vocabulary import CLI
    from .text import format_call_graph

    name = " ".join(args.name).strip()
    if not name:
        raise CliError("the symbol name is empty")
    if not 1 <= args.depth <= 3:
        raise CliError("--depth must be 1, 2 or 3")
    graph = _answer(
        args,
        lambda engine: engine.call_graph(
            name,
            direction=args.direction,
            depth=args.depth,
            include_name_matches=args.name_matches,
            limit=args.limit,
        ),
        lambda graph: format_call_graph(graph, CLI),
    )
    return 0 if graph.roots else 1


def cmd_impl(args: argparse.Namespace) -> int:
    from ..cli import CliError
    from .text import format_implementation

    query = " ".join(args.query).strip()
    if not query:
        raise CliError("the query is empty")
    found = _answer(
        args, lambda engine: engine.implementation_lookup(query, limit=args.top), format_implementation
    )
    return 0 if found.results else 1


def cmd_path(args: argparse.Namespace) -> int:
    from .paths import format_path

    found = _answer(args, lambda engine: engine.call_path(args.source, args.target), format_path)
    return 0 if found.found else 1


def cmd_impact(args: argparse.Namespace) -> int:
    from ..changes import GitError
    from ..cli import CliError
    from .paths import Impact, format_impact

    if not 1 <= args.depth <= 3:
        raise CliError("--depth must be 1, 2 or 3")

    def impact(engine: Engine) -> Impact:
        engine.index()  # the changed lines are the working tree's: bring the index (and graph) to it
        try:
            return engine.impact(args.diff, depth=args.depth)
        except GitError as exc:
            raise CliError(str(exc)) from exc

    _answer(args, impact, format_impact)
    return 0


def add_graph_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ..cli import add_common_arguments as _common

    for direction, text in (("callers", "who calls NAME"), ("callees", "what NAME calls")):
        p = sub.add_parser(direction, help=f"code graph: {text} (resolved calls, file:line)")
        p.add_argument("name", nargs="+", help="a name, Class.method, Type::f, or a path#qualified symbol id")
        p.add_argument("--depth", type=int, default=1, help="hops to follow, 1-3 (default 1)")
        p.add_argument("--limit", type=int, default=100, help="most calls listed (default 100)")
        p.add_argument(
            "--name-matches", action="store_true", help="also list call sites matched by name only"
        )
        _common(p)
        p.set_defaults(func=cmd_call_graph, direction=direction)
    p = sub.add_parser("path", help="code graph: the shortest call path from SOURCE to TARGET")
    p.add_argument("source", help="the calling end: a name, Class.method, or path#qualified")
    p.add_argument("target", help="the called end")
    _common(p)
    p.set_defaults(func=cmd_path)
    p = sub.add_parser(
        "impact", help="code graph: what a git change reaches (changed symbols, callers, tests)"
    )
    p.add_argument(
        "diff", nargs="?", help="a git range (main..HEAD) or revision (default: uncommitted changes)"
    )
    p.add_argument("--depth", type=int, default=2, help="caller hops, 1-3 (default 2)")
    _common(p)
    p.set_defaults(func=cmd_impact)
    p = sub.add_parser("impl", help="where something is really implemented (definitions first)")
    p.add_argument("query", nargs="+", help="an identifier or a description of a definition")
    p.add_argument("--top", type=int, default=5, help="how many results (default 5)")
    _common(p)
    p.set_defaults(func=cmd_impl)


__all__ = ["add_graph_parsers"]
