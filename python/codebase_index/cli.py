"""`codebase-index` command line: index, search and status for a project root."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sqlite3
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

import msgspec

from .display import shown_path
from .format import (
    duration,
    format_dependencies,
    format_embeddings,
    format_graph_status,
    literal_line,
    problem_lines,
    secrets_line,
)

if TYPE_CHECKING:
    from .service import Engine

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2


class CliError(Exception):
    """A user-facing failure: printed as one line, exit status 1."""


def _root(args: argparse.Namespace) -> Path:
    raw = getattr(args, "path", None) or getattr(args, "root", None) or os.environ.get("CODEBASE_INDEX_ROOT")
    root = Path(raw) if raw else Path.cwd()
    if not root.exists():
        raise CliError(f"project root {root} does not exist")
    if not root.is_dir():
        raise CliError(f"project root {root} is not a directory")
    return root


class Progress:
    """A one-line progress bar on a terminal; on a pipe (logs, CI) a line when a phase starts, every
    `plain_every` seconds while it runs (embedding a big repository takes minutes), and when it ends. Both
    show the rate and the time left once a phase has run for a second. Phases may interleave (an index
    run chunks the next slice while it writes this one): each keeps its own start and pace."""

    def __init__(
        self,
        stream: TextIO,
        enabled: bool = True,
        *,
        plain_every: float = 15.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.enabled = enabled
        self.tty = stream.isatty()
        self.plain_every = plain_every
        self._clock = clock
        self._last_phase = ""
        self._last_draw = 0.0
        self._phase_start = 0.0
        self._start_done = 0
        self._phases: dict[str, tuple[float, int]] = {}  # phase -> (when it started, done then)

    def _pace(self, done: int, total: int, now: float) -> str:
        """`, 24.1/s, 3m05s left` once the phase has run a second and moved; '' before."""
        elapsed = now - self._phase_start
        moved = done - self._start_done
        if elapsed < 1.0 or moved <= 0:
            return ""
        rate = moved / elapsed
        if total and done < total:
            return f", {rate:.1f}/s, {duration((total - done) / rate)} left"
        return f", {rate:.1f}/s"

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = self._clock()
        first = phase not in self._phases
        if first:
            self._phases[phase] = (now, done)
        if phase != self._last_phase:
            self._phase_start, self._start_done = self._phases[phase]
            if self.tty:
                self._last_draw = 0.0  # the other phase's bar was drawn last: redraw this one now
        finished = bool(total) and done >= total
        if self.tty:
            if not finished and now - self._last_draw < 0.1 and phase == self._last_phase:
                return
            self._last_draw = now
            if total:
                width = 30
                filled = int(width * min(done, total) / total)
                bar = "#" * filled + "-" * (width - filled)
                self.stream.write(f"\r{phase:>9} [{bar}] {done}/{total}{self._pace(done, total, now)}   ")
            else:
                self.stream.write(f"\r{phase:>9} ...{' ' * 40}")
            if finished:
                self.stream.write("\n")
            self.stream.flush()
        elif first:
            self.stream.write(f"{phase}: started ({total} items)\n" if total else f"{phase}: started\n")
            self._last_draw = now
            self.stream.flush()
        elif finished:
            self.stream.write(f"{phase}: {done}/{total} in {duration(now - self._phase_start)}\n")
            self.stream.flush()
        elif now - self._last_draw >= self.plain_every:
            self.stream.write(f"{phase}: {done}/{total}{self._pace(done, total, now)}\n")
            self._last_draw = now
            self.stream.flush()
        self._last_phase = phase


def print_answer(args: argparse.Namespace, value: object, text: str) -> None:
    """A command's answer on stdout: `value` as JSON with --json, else `text`."""
    print(msgspec.json.encode(value).decode() if args.json else text)


def _engine(args: argparse.Namespace) -> Engine:
    from .service import Engine

    index_dir = getattr(args, "index_dir", None)
    return Engine(_root(args), index_path=Path(index_dir) if index_dir else None)


def cmd_index(args: argparse.Namespace) -> int:
    engine = _engine(args)
    embed_line = ""
    try:
        report = engine.index(
            force=args.force,
            progress=Progress(sys.stderr),
            graph=not args.keyword_only,
            embed=not args.keyword_only,
        )
        if report.embedded:
            provider = engine.embedding_provider()  # built by the pass: no load here
            model = provider.model_id if provider is not None else "the embedded model"
            embed_line = f"embedded {report.embedded} chunks with {model} in the index pass"
            started = time.perf_counter()
            if engine.sync_ann_index() is not None:
                embed_line += f"; ANN index of the vectors built in {time.perf_counter() - started:.1f}s"
        elif not args.keyword_only:
            embed_line = _wait_for_embeddings(engine, quiet=args.json)
    finally:
        engine.close()
    if args.json:
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
        return EXIT_OK
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(report.skipped.items())) or "none"
    print(
        f"indexed {report.files} files ({report.files_changed} changed, {report.files_unchanged} unchanged, "
        f"{report.files_removed} removed), {report.chunks} chunks ({report.chunks_added} new) "
        f"on branch {report.branch} in {report.seconds:.2f}s; skipped: {skipped}"
    )
    for line in problem_lines(report):
        print(line)
    if engine.config_notice:
        print(f"note: {engine.config_notice}")
    if embed_line:
        print(embed_line)
    if args.verbose:
        for row in engine.skipped_files():
            print(f"  skipped {row.reason:<11} {shown_path(row.path)}  {shown_path(row.detail)}".rstrip())
        for row in engine.problem_files():
            print(f"  indexed with {row.reason} {shown_path(row.path)}  {shown_path(row.detail)}".rstrip())
    return EXIT_OK


def _wait_for_embeddings(engine: Engine, *, quiet: bool) -> str:
    """Embed every pending chunk with a progress bar; Ctrl-C keeps every committed batch."""
    progress = Progress(sys.stderr, enabled=not quiet)
    report = engine.embed(progress=lambda done, total: progress("embed", done, total))
    if report is None:
        return f"embeddings: none ({engine.embedding_error()})"
    if report.error:
        return f"embeddings: {report.error}"
    rate = report.embedded / report.seconds if report.seconds > 0 else 0.0
    line = f"embedded {report.embedded} chunks with {report.model} in {report.seconds:.1f}s ({rate:.1f}/s)"
    if report.failed:
        line += f"; {report.failed} failed (retried on the next run; see `codebase-index status`)"
    return line


def cmd_status(args: argparse.Namespace) -> int:
    engine = _engine(args)
    try:
        status = engine.status()
    finally:
        engine.close()
    if args.json:
        sys.stdout.write(msgspec.json.encode(status).decode() + "\n")
        return EXIT_OK
    if status.config_notice:
        print(f"note: {status.config_notice}")
    if not status.indexed:
        print(f"{status.root}: not indexed yet (run `codebase-index index`)")
        return EXIT_OK
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status.last_indexed_at or 0))
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(status.skipped.items())) or "none"
    print(f"root:        {status.root}")
    print(f"index:       {status.index_dir} ({status.size_bytes / 1_048_576:.1f} MiB)")
    print(f"branch:      {status.branch}")
    print(f"files:       {status.files}")
    print(f"chunks:      {status.chunks}")
    print(f"vocabulary:  {status.vocabulary} terms")
    print(f"skipped:     {skipped}")
    for row in status.errors:
        print(f"  {row.reason} {shown_path(row.path)}: {shown_path(row.detail)}")
    secrets = secrets_line(status)
    if secrets:
        print(f"secrets:     {secrets}")
    print(f"indexed at:  {when}")
    emb = status.embeddings
    if emb is not None:
        print(f"embeddings:  {format_embeddings(emb)}")
    if status.graph is not None:
        print(f"code graph:  {format_graph_status(status.graph)}")
    if status.literal_index:
        print(f"literal:     {literal_line(status.literal_index)}")
    print(f"savings:     {savings_line(Path(status.index_dir))}")
    for line in format_dependencies(status.dependencies):
        print(f"dependency:  {line}")
    return EXIT_OK


def savings_line(index_dir: Path) -> str:
    """One line of token savings over all sessions (`codebase-index savings` has the table)."""
    from .context.savings import SAVINGS_FILE, ledger_report, read_ledger, summary_line

    return summary_line(ledger_report(read_ledger(index_dir / SAVINGS_FILE), "").all_sessions)


def cmd_repair(args: argparse.Namespace) -> int:
    """Check the index and repair it (or rebuild it around its readable embeddings), then embed what
    was lost, like `index` does."""
    from .repair import format_repair

    engine = _engine(args)
    embed_line = ""
    try:
        if not (engine.index_dir / "codebase.db").exists():
            raise CliError("there is no index to repair yet (run `codebase-index index`)")
        report = engine.repair(progress=Progress(sys.stderr, enabled=not args.json))
        if not args.keyword_only:
            embed_line = _wait_for_embeddings(engine, quiet=args.json)
    finally:
        engine.close()
    print_answer(args, report, format_repair(report) + (f"\n{embed_line}" if embed_line else ""))
    return EXIT_OK if report.ok else EXIT_ERROR


def cmd_kb(args: argparse.Namespace) -> int:
    from .knowledge import KnowledgeBaseError

    if args.action in ("add", "remove") and not args.folder:
        raise CliError(f"`kb {args.action}` needs a folder")
    engine = _engine(args)
    try:
        if args.action == "add":
            kb, report = engine.add_knowledge_base(args.folder)
            payload: object = {**msgspec.to_builtins(kb), "files": report.files, "chunks": report.chunks}
            folder = shown_path(kb.path)
            text = f"added kb:{kb.label} ({folder}): {report.files} files, {report.chunks} chunks"
        elif args.action == "remove":
            kb = engine.remove_knowledge_base(args.folder)
            payload = msgspec.to_builtins(kb)
            text = f"removed kb:{kb.label} ({shown_path(kb.path)})"
        else:
            kbs = engine.knowledge_bases()
            catalogs = engine.store.branches() if engine.has_index() else {}
            rows = [{**msgspec.to_builtins(kb), "files": catalogs.get(kb.catalog, 0)} for kb in kbs]
            payload = rows
            text = "\n".join(
                f"kb:{r['label']}  {shown_path(r['path'])}  ({r['source']}, {r['files']} files)" for r in rows
            )
            text = text or "no knowledge bases"
            note = engine.knowledge_base_note()
            if note:
                text += f"\nnote: {note}"
    except KnowledgeBaseError as exc:
        raise CliError(str(exc)) from exc
    finally:
        engine.close()
    print_answer(args, payload, text)
    return EXIT_OK


def cmd_trust(args: argparse.Namespace) -> int:
    """Trust the project's configuration file as it is now (its settings that send code off the machine,
    read outside the project or name a program are then used); `untrust` forgets it."""
    from . import trust
    from .config import default_global_dir, trust_preview

    root = _root(args)
    where = f"{root.resolve()}/.opencode/codebase-index.json"
    if args.command == "untrust":
        forgotten = trust.untrust(root, default_global_dir())
        text = f"{where} is no longer trusted" if forgotten else f"{where} was not trusted"
        print_answer(args, {"file": where, "trusted": False, "changed": forgotten}, text)
        return EXIT_OK
    data, needs = trust_preview(root)
    try:
        digest = trust.trust(root, default_global_dir(), data)
    except trust.TrustError as exc:
        raise CliError(str(exc)) from exc
    uses = ", ".join(needs) if needs else "none (it has only settings that are used untrusted)"
    text = (
        f"trusted {where} (sha256 {digest[:16]}); settings of it that needed trust: {uses}. "
        "Any change to the file revokes this; `codebase-index untrust` forgets it"
    )
    print_answer(args, {"file": where, "trusted": True, "sha256": digest, "settings": list(needs)}, text)
    return EXIT_OK


def cmd_repos(args: argparse.Namespace) -> int:
    from . import multirepo
    from .backends.base import BackendError
    from .repos import list_repos

    if args.backend:
        from .config import load_config

        try:
            backend = multirepo.connect_backend(load_config(_root(args)), args.backend_url)
            try:
                published = backend.repos()
            finally:
                backend.close()
        except BackendError as exc:
            raise CliError(str(exc)) from exc
        if args.json:
            sys.stdout.write(msgspec.json.encode(published).decode() + "\n")
            return EXIT_OK
        print(f"{backend.collection} at {backend.location}:")
        for r in published:
            print(f"  {r.name:<24} {r.branch:<16} {r.chunks} chunks  {r.model or 'no vectors'}")
        if not published:
            print("  (nothing published yet: `codebase-index publish`)")
        return EXIT_OK
    entries = list_repos()
    if args.json:
        sys.stdout.write(msgspec.json.encode(entries).decode() + "\n")
        return EXIT_OK
    if not entries:
        print("no indexed repositories yet (run `codebase-index index` in each one)")
    for e in entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(e.indexed_at))
        print(f"{e.name:<24} {e.root}  (branch {e.branch}, indexed {when})")
    return EXIT_OK


def cmd_publish(args: argparse.Namespace) -> int:
    from . import multirepo
    from .backends.base import BackendError
    from .backends.publish import publish

    engine = _engine(args)
    try:
        backend = multirepo.connect_backend(engine.config, args.to, args.collection)
        try:
            report = publish(
                engine,
                backend,
                args.name or engine.root.name,
                progress=Progress(sys.stderr, enabled=not args.json),
            )
        finally:
            backend.close()
    except BackendError as exc:
        raise CliError(str(exc)) from exc
    finally:
        engine.close()
    if args.json:
        sys.stdout.write(msgspec.json.encode(report).decode() + "\n")
        return EXIT_OK
    print(
        f"published {report.repo}@{report.branch} to {report.collection} at {report.target}: "
        f"{report.chunks} chunks, {report.sent} sent, {report.linked} already there (branch added), "
        f"{report.unchanged} unchanged, {report.deleted} deleted, {report.unlinked} unlinked"
        + (f", {report.without_vector} without a vector" if report.without_vector else "")
        + f" in {report.seconds:.2f}s"
    )
    return EXIT_OK


def _add_root_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", help="project root")
    p.add_argument("--index-dir", help="where the index lives (default: <root>/.codebase-index)")


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """--root, --index-dir and --json: what every sub-command reading one project's index takes."""
    _add_root_arguments(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="codebase-index", description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    # Not required: a bare `codebase-index` prints the whole help (every command), not only an error.
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("index", help="index (or update the index of) a project")
    p.add_argument("path", nargs="?", help="project root (default: --root, $CODEBASE_INDEX_ROOT, or .)")
    _add_root_arguments(p)
    p.add_argument("--force", action="store_true", help="re-chunk every file")
    p.add_argument("--verbose", action="store_true", help="list every skipped file with its reason")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--keyword-only",
        action="store_true",
        help="do not wait for embeddings or the code graph (the sidecar computes both; otherwise the next "
        "callers/callees/impl command extracts the graph first)",
    )
    p.set_defaults(func=cmd_index)

    from .search_cli import add_search_parsers

    add_search_parsers(sub)

    p = sub.add_parser("status", help="show what the index holds")
    p.add_argument("path", nargs="?", help="project root")
    add_common_arguments(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser(
        "repair",
        help="check the index for damage and repair it (a damaged database is moved aside and rebuilt "
        "from the files, keeping the embeddings it can still read)",
    )
    p.add_argument("path", nargs="?", help="project root")
    _add_root_arguments(p)
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--keyword-only", action="store_true", help="do not wait for lost embeddings to be redone")
    p.set_defaults(func=cmd_repair)

    from .evaluation import add_eval_parser

    p = sub.add_parser("kb", help="knowledge bases: extra folders indexed with the project")
    p.add_argument("action", choices=["add", "list", "remove"])
    p.add_argument("folder", nargs="?", help="the folder (add/remove): absolute or relative to the root")
    add_common_arguments(p)
    p.set_defaults(func=cmd_kb)

    for name, what in (
        (
            "trust",
            "trust this project's .opencode/codebase-index.json as it is now (remote providers, API "
            "keys from the environment, outside folders and programs it names are then used)",
        ),
        ("untrust", "stop trusting this project's .opencode/codebase-index.json"),
    ):
        p = sub.add_parser(name, help=what)
        p.add_argument("path", nargs="?", help="project root (default: --root, $CODEBASE_INDEX_ROOT, or .)")
        p.add_argument("--root", help="project root")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.set_defaults(func=cmd_trust, command=name)

    p = sub.add_parser("repos", help="repositories indexed on this machine (or published to the backend)")
    p.add_argument("action", choices=["list"])
    _add_root_arguments(p)
    p.add_argument("--backend", action="store_true", help="list what the configured shared backend holds")
    p.add_argument("--backend-url", help="instead of the configured backend: qdrant://HOST:PORT[/collection]")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_repos)

    p = sub.add_parser("publish", help="send this index to a shared Qdrant collection (incremental)")
    p.add_argument("path", nargs="?", help="project root")
    _add_root_arguments(p)
    p.add_argument(
        "--to",
        metavar="URL",
        help="qdrant://HOST:PORT[/collection] or qdrant+local://PATH[#collection] (default: config backend)",
    )
    p.add_argument("--collection", help="collection name (overrides the URL and the config)")
    p.add_argument("--name", help="repository name in the collection (default: the root folder's name)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_publish)

    from .agents import add_parsers as add_agent_parsers
    from .context.cli import add_context_parsers
    from .graph.cli import add_graph_parsers
    from .mcp_server import add_mcp_parser
    from .rpc import add_serve_parser

    add_context_parsers(sub)
    add_graph_parsers(sub)
    add_serve_parser(sub)
    add_mcp_parser(sub)
    add_agent_parsers(sub)
    add_eval_parser(sub)
    return parser


def _stdout_closed() -> int:
    """The reader went away (`search ... | head -1`): what it read is what it wanted; exit quietly, with
    stdout pointed at /dev/null so the interpreter's final flush cannot complain either."""
    with contextlib.suppress(OSError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    # A degraded search's reason reaches the user as its `note:` line; without a handler Python would
    # print the engine's warning about it too. The sidecar's and MCP's handlers still receive it.
    logging.getLogger("codebase_index.search").addHandler(logging.NullHandler())
    from .config import ConfigError
    from .store import StoreError

    try:
        code: int = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except BrokenPipeError:
        return _stdout_closed()
    except (CliError, ConfigError, StoreError, FileNotFoundError) as exc:
        print(f"codebase-index: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except sqlite3.DatabaseError as exc:
        from .repair import index_error

        message = index_error(exc)
        if message is None:
            raise
        print(f"codebase-index: error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("codebase-index: interrupted; the index keeps its last completed state", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
