"""`codebase-index context QUERY...`, `edit-context TARGET` and `savings`: evidence packs on the command
line, through the same tool handlers as the sidecar and MCP (so the JSON is the same and savings count)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def _runtime(args: argparse.Namespace) -> Any:
    from ..cli import _root
    from ..tools import Runtime

    index_dir = getattr(args, "index_dir", None)
    return Runtime(_root(args), index_dir=Path(index_dir) if index_dir else None)


# The tool parameters these commands set, as their flags: a message about a parameter names the flag.
FLAGS = {
    "maxTokens": "--max-tokens",
    "fileType": "--file-type",
    "directory": "--directory",
    "changedSince": "--changed-since",
    "changedBefore": "--changed-before",
}


def _call(args: argparse.Namespace, method: str, params: dict[str, Any], *, index_first: bool = True) -> int:
    from ..cli import CliError, Progress
    from ..context.assemble import MAX_TOKENS, MIN_TOKENS
    from ..tools import CallContext, ToolError, call
    from ..vocabulary import CLI

    budget = params.get("maxTokens")
    if budget is not None and not MIN_TOKENS <= budget <= MAX_TOKENS:
        raise CliError(f"--max-tokens must be {MIN_TOKENS}..{MAX_TOKENS}, not {budget}")
    rt = _runtime(args)
    try:
        if index_first and not rt.reader().has_index():
            rt.writer().index(progress=Progress(sys.stderr, enabled=not args.json))
        try:
            result = call(rt, method, params, CallContext(words=CLI))
        except ToolError as exc:
            message = exc.message
            for key, flag in FLAGS.items():  # the validator's `$.maxTokens` is the CLI's --max-tokens
                message = message.replace(f"`$.{key}`", flag)
            raise CliError(message) from exc
    finally:
        rt.close()
    if args.json:
        sys.stdout.write(json.dumps(_plain(result.data)) + "\n")
    else:
        print(result.text)
    return 0


def _plain(data: Any) -> Any:
    import msgspec

    return msgspec.to_builtins(data)


def cmd_context(args: argparse.Namespace) -> int:
    from ..cli import CliError

    query = " ".join(args.query).strip()
    if not query:
        raise CliError("the query is empty")
    params: dict[str, Any] = {"query": query, "maxTokens": args.max_tokens}
    for key, value in (
        ("fileType", args.file_type),
        ("directory", args.directory),
        ("changedSince", args.changed_since),
        ("changedBefore", args.changed_before),
    ):
        if value:
            params[key] = value
    return _call(args, "context", params)


def cmd_edit_context(args: argparse.Namespace) -> int:
    from ..cli import CliError

    target = " ".join(args.target).strip()
    if not target:
        raise CliError("the target is empty")
    return _call(args, "edit_context", {"target": target, "maxTokens": args.max_tokens})


def cmd_savings(args: argparse.Namespace) -> int:
    return _call(args, "savings", {}, index_first=False)


def _time_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--changed-since", metavar="REV|DATE", help="only code changed after a commit or date")
    p.add_argument("--changed-before", metavar="REV|DATE", help="only code unchanged since a commit or date")


def add_context_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from ..cli import add_common_arguments as _common

    p = sub.add_parser("context", help="the code that answers a question, within a token budget")
    p.add_argument("query", nargs="+", help="an identifier, a question, a description")
    p.add_argument("--max-tokens", type=int, default=1500, help="hard token cap, 128-8000 (default 1500)")
    p.add_argument("--file-type", help="only files with this extension (py, ts, ...)")
    p.add_argument("--directory", help="only files under this directory (relative to the root)")
    _time_arguments(p)
    _common(p)
    p.set_defaults(func=cmd_context)

    p = sub.add_parser("edit-context", help="what to read before changing a symbol (or PATH:LINE)")
    p.add_argument("target", nargs="+", help="a name, Class.method, path#qualified, or PATH:LINE")
    p.add_argument("--max-tokens", type=int, default=1500, help="hard token cap, 128-8000 (default 1500)")
    _common(p)
    p.set_defaults(func=cmd_edit_context)

    p = sub.add_parser("savings", help="tokens returned vs whole files, per tool and session")
    _common(p)
    p.set_defaults(func=cmd_savings)


__all__ = ["add_context_parsers"]
