"""`codebase-index search`, `peek` and `similar`: the index's answers on the command line, from this
project or across repositories (`--repo`, `--all-repos`, `--backend`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from .cli import EXIT_OK, CliError, Progress, _add_root_arguments, _engine, _root
from .display import shown_path
from .models import CHUNK_KINDS
from .search import Filters
from .tools.schema import MAX_QUERY_CHARS

if TYPE_CHECKING:
    from .service import Engine, SearchResponse


def cmd_search(args: argparse.Namespace) -> int:
    """Search; unset --top/--min-score/--context-lines come from the config's `search` section, as they
    do for the tools (peek keeps its own default of 20 locations)."""
    query = " ".join(args.query).strip()
    if not query:
        raise CliError("the search query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise CliError(
            f"the search query has {len(query)} characters; at most {MAX_QUERY_CHARS} (say it shorter)"
        )
    if args.top is not None and args.top < 1:
        raise CliError("--top must be at least 1")
    if getattr(args, "context_lines", None) is not None and args.context_lines < 0:
        raise CliError("--context-lines must be 0 or more")
    filters = Filters(file_type=args.file_type, directory=args.directory, kind=args.kind)
    if _multi_repo(args):
        if args.top is None:
            from .config import load_config

            args.top = load_config(_root(args)).search.max_results
        return _print_results(args, _search_repos(args, query, filters), query)
    engine = _engine(args)
    try:
        defaults = engine.config.search
        top = args.top if args.top is not None else defaults.max_results
        min_score = args.min_score if getattr(args, "min_score", None) is not None else defaults.min_score
        if getattr(args, "context_lines", None) is None:
            args.context_lines = defaults.context_lines
        _ensure_index(engine, quiet=args.json)
        response = engine.search(query, top_k=top, filters=filters, mode=args.mode)
        _print_freshness(engine)
    finally:
        engine.close()
    if min_score:
        response.results = [r for r in response.results if r.score >= min_score]
    return _print_results(args, response, query, root=engine.root, lines_of=engine.file_lines)


def _multi_repo(args: argparse.Namespace) -> bool:
    """Whether a search spans repositories or goes to the shared backend: asked for, or a backend is
    configured and this project has no local index (a read-only client of the team's collection)."""
    if args.repo or args.all_repos or args.backend:
        return True
    if getattr(args, "index_dir", None):
        return False
    from .config import index_dir, load_config

    root = _root(args)
    config = load_config(root)
    return config.backend is not None and not (index_dir(root, config) / "codebase.db").is_file()


def _search_repos(args: argparse.Namespace, query: str, filters: Filters) -> SearchResponse:
    from . import multirepo
    from .backends.base import BackendError
    from .repos import RegistryError

    if args.mode == "semantic":
        raise CliError(
            "--mode semantic applies to one repository; a multi-repository search is hybrid or keyword"
        )
    try:
        return multirepo.search(
            _root(args),
            query,
            repos=args.repo or (),
            all_repos=args.all_repos,
            use_backend=True if args.backend else None,
            top_k=args.top,
            filters=filters,
            mode=args.mode,
        )
    except (BackendError, RegistryError) as exc:
        raise CliError(str(exc)) from exc


def _print_results(
    args: argparse.Namespace,
    response: SearchResponse,
    query: str,
    *,
    root: Path | None = None,
    lines_of: Callable[[str], list[str] | None] | None = None,
) -> int:
    from .format import code_block

    if args.json:
        payload = msgspec.to_builtins(response)
        for result in payload["results"]:
            result.pop("content", None)
            if result.get("repo") is None:
                result.pop("repo", None)
        sys.stdout.write(msgspec.json.encode(payload).decode() + "\n")
        return EXIT_OK
    if response.note:
        print(f"note: {response.note}", file=sys.stderr)
    if not response.results:
        print(f"no results for {query!r}")
        return EXIT_OK
    context = getattr(args, "context_lines", 0) or 0
    for result in response.results:
        label = f"{result.kind} {result.symbol}".strip()
        where = f"[{shown_path(result.repo)}] " if result.repo else ""
        where += f"{shown_path(result.path)}:{result.start_line}-{result.end_line}  {shown_path(label)}"
        if getattr(args, "peek", False):
            print(where)
            continue
        print(f"{where}  ({result.score:.3f})")
        if context and root is not None:
            # Numbered lines of the file as it is now, `context` lines either side of the chunk.
            for line in code_block(result, root=root, context_lines=context, lines_of=lines_of):
                print(f"    {line}")
            continue
        lines = (result.content or "").splitlines()
        for line in lines[: args.lines]:
            print(f"    {line}")
        if len(lines) > args.lines:
            print(f"    ... ({len(lines) - args.lines} more lines)")
    return EXIT_OK


def _ensure_index(engine: Engine, *, quiet: bool) -> None:
    """A one-shot search catches up with the files first: with no index (or none for this branch) it
    builds one, progress on stderr; otherwise an incremental run that re-reads only what changed since
    (stat-first: ~0.1 s on 2,000 unchanged files), so the answer reflects a pull and uncommitted edits
    alike. Another process indexing it now (a sidecar) keeps it fresh: the answer does not wait for it.
    The pass embeds with the static model, so the answer is hybrid. `indexing.autoIndex: false` asks."""
    from .store import DiskFullError, IndexLockedError, ReadOnlyIndexError
    from .tools.first_index import needs_index

    missing = needs_index(engine)
    if not engine.config.indexing.auto_index:
        if missing:
            raise CliError(
                "this project is not indexed yet and `indexing.autoIndex` is false "
                "(run `codebase-index index`)"
            )
        return  # answered as the index is; the freshness line says whether HEAD moved since
    try:
        engine.index(progress=Progress(sys.stderr, enabled=missing and not quiet))
    except IndexLockedError:
        if missing:
            raise
    except (ReadOnlyIndexError, DiskFullError) as exc:  # answered from what the index holds, said once
        if missing:
            raise
        print(f"note: not refreshed: {exc}", file=sys.stderr)


def _print_freshness(engine: Engine) -> None:
    """The answer's freshness line, on stderr so stdout stays the results (and `--json` stays JSON)."""
    from .freshness import HEAD_META, Freshness, head_commit, line

    branch = engine.branch()
    found = Freshness(branch, engine.store.get_meta(HEAD_META + branch) or None, head_commit(engine.root))
    print(line(found), file=sys.stderr)


def cmd_peek(args: argparse.Namespace) -> int:
    args.peek = True
    return cmd_search(args)


def _location(text: str) -> tuple[str, int]:
    path, sep, line = text.rpartition(":")
    if not sep or not path or not line.isdigit() or int(line) < 1:
        raise CliError(f"--at wants PATH:LINE (line from 1), got {text!r}")
    return path, int(line)


def cmd_similar(args: argparse.Namespace) -> int:
    snippet = " ".join(args.snippet) if args.snippet else None
    if (snippet is None) == (args.at is None):
        raise CliError("give a code snippet or --at PATH:LINE (one of them)")
    if snippet == "-":
        snippet = sys.stdin.read()
    if args.top < 1:
        raise CliError("--top must be at least 1")
    at = _location(args.at) if args.at else None
    engine = _engine(args)
    try:
        _ensure_index(engine, quiet=args.json)
        filters = Filters(file_type=args.file_type, directory=args.directory, kind=args.kind)
        try:
            response = engine.similar(snippet=snippet, at=at, top_k=args.top, filters=filters)
        except ValueError as exc:
            raise CliError(str(exc)) from exc
    finally:
        engine.close()
    return _print_results(args, response, response.query)


def _add_repo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--repo",
        action="append",
        metavar="NAME",
        help="search this indexed repository (repeatable; see `repos list`)",
    )
    p.add_argument("--all-repos", action="store_true", help="search every indexed repository")
    p.add_argument(
        "--backend", action="store_true", help="answer from the configured shared backend (Qdrant)"
    )


def _add_filter_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file-type", help="only files with this extension (py, ts, ...)")
    p.add_argument("--directory", help="only files under this directory (relative to the root)")
    p.add_argument("--kind", choices=CHUNK_KINDS, help="only chunks of this kind")


def add_search_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("search", help="search the index")
    p.add_argument("query", nargs="+", help="what to look for")
    _add_root_arguments(p)
    p.add_argument("--top", type=int, default=None, help="number of results (default: search.maxResults, 20)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument(
        "--mode",
        choices=["keyword", "semantic", "hybrid"],
        default=None,
        help="retrieval mode (default hybrid; keyword results until embeddings exist)",
    )
    _add_filter_arguments(p)
    p.add_argument("--lines", type=int, default=6, help="code lines shown per result (default 6)")
    p.add_argument(
        "--min-score",
        type=float,
        default=None,
        help="drop results below this score (default: config search.minScore)",
    )
    p.add_argument(
        "--context-lines",
        type=int,
        default=None,
        help="show each result's file lines, numbered, N either side (default: search.contextLines)",
    )
    _add_repo_arguments(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("peek", help="search, printing locations only")
    p.add_argument("query", nargs="+", help="what to look for")
    _add_root_arguments(p)
    p.add_argument("--top", type=int, default=20, help="number of locations (default 20)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--mode", choices=["keyword", "semantic", "hybrid"], default=None, help="retrieval mode")
    _add_filter_arguments(p)
    _add_repo_arguments(p)
    p.set_defaults(func=cmd_peek, lines=0, min_score=0.0, context_lines=0)

    p = sub.add_parser("similar", help="code similar in meaning to a snippet or to the chunk at PATH:LINE")
    p.add_argument("snippet", nargs="*", help="a code snippet ('-' reads it from stdin)")
    p.add_argument("--at", metavar="PATH:LINE", help="the chunk covering this line is the example")
    _add_root_arguments(p)
    p.add_argument("--top", type=int, default=10, help="number of results (default 10)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _add_filter_arguments(p)
    p.add_argument("--lines", type=int, default=6, help="code lines shown per result (default 6)")
    p.set_defaults(func=cmd_similar)
