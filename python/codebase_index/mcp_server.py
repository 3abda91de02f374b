"""`codebase-index mcp`: the same tools as the sidecar, served over MCP (stdio) for any MCP client.

Built on the SDK's low-level `Server` so tool schemas come straight from `tools` (the high-level server
would derive its own from Python signatures and let the two faces drift). Named `mcp_server` so that
`import mcp` here means the SDK. Like the sidecar, it keeps the project alive through `ServeCore`: the
engine warms up in the background at start, pending embeddings resume, and the watcher re-indexes saves
and branch switches.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

from . import __version__, tools
from .tools import CallContext, Runtime, ToolError
from .tools.protocol import recover_id
from .tools.serve_core import ServeCore

log = logging.getLogger("codebase_index.mcp")

INSTRUCTIONS = (
    "Local code search for this project. Use codebase_search to find code by meaning or name before "
    "grepping; codebase_peek for locations only. A search on an unindexed project indexes it first; "
    "answers end with the branch and commit they reflect, or lead with a `stale:` line."
)

PROMPTS: dict[str, tuple[str, str | None, str]] = {
    # name: (description, argument or None, template)
    "search": (
        "Search the codebase for code matching a description",
        "query",
        "Use the codebase_search tool to find code related to: {arg}\n"
        "Show the most relevant results with their file paths and line ranges, and explain briefly how "
        "they relate to the request.",
    ),
    "find": (
        "Find where something is defined or implemented (locations only)",
        "query",
        "Use the codebase_peek tool to list where this is defined or implemented: {arg}\n"
        "Then read the most promising locations and answer with file:line references.",
    ),
    "index": (
        "Build or update the code search index",
        None,
        "Call the index_codebase tool to update the search index, then report what changed.",
    ),
    "status": (
        "Show the state of the code search index",
        None,
        "Call the index_status tool and summarise the state of the search index in two or three lines.",
    ),
}


def build_server(runtime: Runtime) -> Any:
    """The MCP server object for one project (tools and prompts bound to `runtime`)."""
    import anyio
    import anyio.from_thread
    import anyio.to_thread
    from mcp import types
    from mcp.server.lowlevel import Server

    tool_list = [
        types.Tool(
            name=d["name"],
            title=spec.title,
            description=d["description"],
            input_schema=d["inputSchema"],
            annotations=types.ToolAnnotations(read_only_hint=spec.read_only, open_world_hint=False),
        )
        for spec, d in zip(tools.TOOLS, tools.tool_definitions(), strict=True)
    ]

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tool_list)

    async def call_tool(ctx: Any, params: Any) -> Any:
        name = params.name
        if name not in tools.BY_NAME:
            return _error_result(types, f"unknown tool {name!r}; available: {', '.join(tools.BY_NAME)}")
        cancelled = threading.Event()
        token = _progress_token(ctx.meta)
        progress = _progress_sender(ctx, token, anyio) if token is not None else None

        def run() -> tools.ToolResult:
            return tools.call(runtime, name, params.arguments or {}, CallContext(progress, cancelled.is_set))

        try:
            result = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            cancelled.set()  # the worker thread stops at its next progress check
            raise
        except ToolError as exc:
            return _error_result(types, exc.message)
        except Exception as exc:
            log.exception("tool %s failed", name)
            return _error_result(types, f"internal error in {name}: {type(exc).__name__}: {exc}")
        return types.CallToolResult(content=[types.TextContent(text=result.text)])

    async def list_prompts(ctx: Any, params: Any) -> Any:
        prompts = [
            types.Prompt(
                name=name,
                description=description,
                arguments=[types.PromptArgument(name=arg, description="what to look for", required=True)]
                if arg
                else None,
            )
            for name, (description, arg, _) in PROMPTS.items()
        ]
        return types.ListPromptsResult(prompts=prompts)

    async def get_prompt(ctx: Any, params: Any) -> Any:
        from mcp.shared.exceptions import MCPError

        entry = PROMPTS.get(params.name)
        if entry is None:
            raise MCPError(code=tools.INVALID_PARAMS, message=f"unknown prompt {params.name!r}")
        description, arg, template = entry
        value = (params.arguments or {}).get(arg, "") if arg else ""
        if arg and not value.strip():
            raise MCPError(
                code=tools.INVALID_PARAMS, message=f"prompt {params.name!r} needs the argument {arg!r}"
            )
        message = types.PromptMessage(role="user", content=types.TextContent(text=template.format(arg=value)))
        return types.GetPromptResult(description=description, messages=[message])

    return Server(
        tools.SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )


def _progress_token(meta: Any) -> str | int | None:
    """The client's progress token, if it asked for progress (`_meta` is a dict in SDK 2.x)."""
    if meta is None:
        return None
    if isinstance(meta, dict):
        token = meta.get("progress_token", meta.get("progressToken"))
    else:
        token = getattr(meta, "progress_token", None)
    return token if isinstance(token, (str, int)) else None


def _error_result(types: Any, message: str) -> Any:
    """Tool failures go back as results with isError, so the model can read them and adjust."""
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _progress_sender(ctx: Any, token: str | int, anyio: Any) -> tools.ProgressFn:
    """Forward index progress from the worker thread to the client, at most ten times a second."""
    last = {"at": 0.0}

    def send(phase: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done != total and now - last["at"] < 0.1:
            return
        last["at"] = now
        try:
            anyio.from_thread.run(
                lambda: ctx.session.send_progress_notification(
                    token, float(done), float(total) if total else None, message=phase
                )
            )
        except Exception as exc:  # progress is best effort; the call itself goes on
            log.debug("progress notification failed: %s", exc)

    return send


async def _serve(runtime: Runtime) -> None:
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage
    from mcp.types import ErrorData, JSONRPCError

    server = build_server(runtime)
    ready = anyio.Event()
    writers: list[Any] = []

    async def answer(req_id: int | str | None, code: int, message: str) -> None:
        await ready.wait()
        error = JSONRPCError(jsonrpc="2.0", id=req_id, error=ErrorData(code=code, message=message))
        await writers[0].send(SessionMessage(error))

    with _claimed_stdin() as lines:
        checked = anyio.wrap_file(lines)
        async with stdio_server(stdin=_CheckedLines(checked, answer)) as (read_stream, write_stream):  # type: ignore[arg-type]
            writers.append(write_stream)
            ready.set()
            await server.run(read_stream, write_stream, server.create_initialization_options())


@contextlib.contextmanager
def _claimed_stdin() -> Iterator[TextIO]:
    """The protocol's stdin on a private descriptor, fd 0 on the null device while serving (what the SDK
    does for its own stdin: children and handlers read EOF, never the wire)."""
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    with open(private, encoding="utf-8", errors="replace") as lines:
        yield lines


class _CheckedLines:
    """Stdin lines for the SDK, minus those it would drop unanswered: a line that does not decode
    (nested too deep, a lone surrogate, cut short) is answered here under its id, and serving goes on."""

    def __init__(self, source: Any, answer: Callable[[int | str | None, int, str], Awaitable[None]]) -> None:
        self.source = source
        self.answer = answer

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        import msgspec

        async for line in self.source:
            raw = line.encode("utf-8", "surrogatepass")
            try:
                msgspec.json.decode(raw)
            except msgspec.DecodeError as exc:
                if line.strip():
                    await self.answer(recover_id(raw), tools.PARSE_ERROR, f"parse error: {exc}")
                continue
            except RecursionError:
                await self.answer(recover_id(raw), tools.INVALID_REQUEST, "invalid request: nested too deep")
                continue
            yield line


def cmd_mcp(args: argparse.Namespace) -> int:
    import anyio

    from .rpc import configure_logging, resolve_log_level

    root = Path(args.project or os.environ.get("CODEBASE_INDEX_ROOT") or Path.cwd())
    if not root.is_dir():
        print(f"codebase-index mcp: error: project root {root} is not a directory", file=sys.stderr)
        return 1
    if args.config:
        from .config import EXTRA_CONFIG_ENV

        config = Path(args.config).expanduser().resolve()
        if not config.is_file():
            print(f"codebase-index mcp: error: config file {args.config} not found", file=sys.stderr)
            return 1
        # Every engine this process builds reads it (load_config), layered over the project's file.
        os.environ[EXTRA_CONFIG_ENV] = str(config)
    buffer = tools.LogBuffer()
    runtime = Runtime(root, index_dir=Path(args.index_dir) if args.index_dir else None, logs=buffer)
    configure_logging(runtime.index_dir, resolve_log_level(runtime.root, args.log_level), buffer)
    log.info("MCP server %s serving %s (index %s)", __version__, runtime.root, runtime.index_dir)
    core = ServeCore(runtime)
    core.start()
    try:
        anyio.run(_serve, runtime)
    finally:
        core.close()
        runtime.close()
    return 0


def add_mcp_parser(sub: Any) -> None:
    """Register `mcp` on the CLI's sub-command parser."""
    p = sub.add_parser("mcp", help="serve the search tools over MCP on stdin/stdout")
    p.add_argument("--project", help="project root (default: $CODEBASE_INDEX_ROOT or .)")
    p.add_argument("--index-dir", help="where the index lives (default: from config, <root>/.codebase-index)")
    p.add_argument(
        "--config",
        help="a codebase-index.json (JSONC) layered over the global and project files; its keys win",
    )
    p.add_argument(
        "--log-level",
        choices=["debug", "info", "warning", "error"],
        help="default: from the config's `debug` section (info)",
    )
    p.set_defaults(func=cmd_mcp)
