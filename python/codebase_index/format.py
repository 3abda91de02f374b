"""Result text for models: compact, bounded, and the same whichever face (RPC, MCP) asked.

Every token a tool returns costs the agent context, so results are one header line each
(`path:start-end  kind symbol  (score)`) plus at most `MAX_CODE_LINES` lines of code.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .display import shown_path
from .files import DEFAULT_MAX_FILE_SIZE, read_inside
from .models import SearchResult

MAX_CODE_LINES = 40
MAX_LINE_CHARS = 240
NO_RESULTS = (
    "no results for {query!r}; try different words, fewer filters, or index_codebase if files changed"
)


def header(result: SearchResult) -> str:
    """`src/a.py:10-24  function parse  (3.142)`."""
    label = f"{result.kind} {result.symbol}".strip()
    where = f"[{shown_path(result.repo)}] " if result.repo else ""  # multi-repository results name theirs
    path = shown_path(result.path)
    return f"{where}{path}:{result.start_line}-{result.end_line}  {shown_path(label)}  ({result.score:.3f})"


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def _bounded(lines: Sequence[str], limit: int = MAX_CODE_LINES) -> list[str]:
    shown = [_clip(line) for line in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"… ({len(lines) - limit} more lines)")
    return shown


LinesFn = Callable[[str], "list[str] | None"]


def _read_lines(root: Path, path: str) -> list[str] | None:
    """A file's lines through the one answer-time read (`files.read_inside`); None when it cannot be
    read so (swapped for a link, FIFO or device, gone, too large)."""
    text = read_inside(root, path, DEFAULT_MAX_FILE_SIZE)
    return text.splitlines() if isinstance(text, str) else None


def code_block(
    result: SearchResult, *, root: Path, context_lines: int = 0, lines_of: LinesFn | None = None
) -> list[str]:
    """The result's code; with `context_lines`, numbered lines from the file as it is now on disk, read
    by `lines_of` (the engine's `file_lines`: config-bounded, remembers files to re-index) when given."""
    if context_lines > 0 and result.repo is None:  # another repository's files are not under `root`
        lines = lines_of(result.path) if lines_of is not None else _read_lines(root, result.path)
        if lines is not None and result.start_line <= len(lines):
            first = max(1, result.start_line - context_lines)
            last = min(len(lines), result.end_line + context_lines)
            width = len(str(last))
            numbered = [f"{n:>{width}}  {lines[n - 1]}" for n in range(first, last + 1)]
            return _bounded(numbered, MAX_CODE_LINES + 2 * context_lines)
    return _bounded((result.content or result.preview).splitlines())


def format_search(
    results: Sequence[SearchResult],
    *,
    root: Path,
    context_lines: int = 0,
    query: str = "",
    lines_of: LinesFn | None = None,
) -> str:
    if not results:
        return NO_RESULTS.format(query=query)
    blocks = []
    for result in results:
        body = "\n".join(code_block(result, root=root, context_lines=context_lines, lines_of=lines_of))
        blocks.append(f"{header(result)}\n{body}" if body else header(result))
    return "\n\n".join(blocks)


def format_peek(results: Sequence[SearchResult], *, query: str = "") -> str:
    if not results:
        return NO_RESULTS.format(query=query)
    return "\n".join(header(r) for r in results)


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in sorted(counts.items())) or "none"


def format_index_report(
    report: Any, skipped: Sequence[Any] = (), limit: int = 50, problems: Sequence[Any] = ()
) -> str:
    text = (
        f"indexed {report.files} files ({report.files_changed} changed, {report.files_unchanged} unchanged, "
        f"{report.files_removed} removed), {report.chunks} chunks ({report.chunks_added} new) on branch "
        f"{report.branch} in {report.seconds:.2f}s; skipped: {_counts(report.skipped)}"
    )
    lines = [text, *problem_lines(report)]
    for row in list(skipped)[:limit]:
        lines.append(f"  skipped {row.reason:<11} {shown_path(row.path)}  {shown_path(row.detail)}".rstrip())
    if len(skipped) > limit:
        lines.append(f"  … ({len(skipped) - limit} more skipped files)")
    for row in list(problems)[:limit]:
        lines.append(f"  indexed with {row.reason} {shown_path(row.path)}  {shown_path(row.detail)}".rstrip())
    return "\n".join(lines)


def problem_lines(report: Any) -> list[str]:
    """What an index run contained instead of failing: files it could not index, chunker fallbacks and
    code-graph failures (the log has each one's traceback)."""
    out: list[str] = []
    errors = report.skipped.get("error", 0)
    if errors:
        out.append(
            f"{errors} files not indexed because of an error (retried next run; index --verbose lists them)"
        )
    fallbacks = getattr(report, "chunk_fallbacks", 0)
    if fallbacks:
        out.append(f"{fallbacks} files indexed as line windows after their chunker failed (see the log)")
    if getattr(report, "graph_errors", 0):
        out.append(
            f"{report.graph_errors} files indexed without a code graph after extraction failed (see the log)"
        )
    return out


def format_estimate(estimate: Mapping[str, Any]) -> str:
    costs = ", ".join(
        f"{name} ${cost:.4f}" if cost is not None else f"{name} n/a"
        for name, cost in estimate["costUsd"].items()
    )
    return (
        f"an index run would read {estimate['filesToIndex']} of {estimate['files']} files "
        f"({estimate['bytes'] / 1_048_576:.1f} MiB in all) and drop {estimate['filesToRemove']}; "
        f"~{estimate['chunks']} chunks, ~{estimate['tokens']} tokens; to embed: ~{estimate['chunksToEmbed']} "
        f"chunks, ~{estimate['tokensToEmbed']} tokens; embedding cost: {costs}; "
        f"skipped: {_counts(estimate['skipped'])}"
    )


def _when(timestamp: float | None) -> str:
    if not timestamp:
        return "never"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def format_status(status: Any, *, running: bool = False) -> str:
    if not status.indexed:
        suffix = " (an index run is in progress)" if running else "; call index_codebase"
        return f"{shown_path(str(status.root))}: not indexed yet{suffix}"
    lines = [
        f"branch {status.branch}: {status.files} files, {status.chunks} chunks, {status.vocabulary} terms",
        f"index {shown_path(str(status.index_dir))} ({status.size_bytes / 1_048_576:.1f} MiB), "
        f"updated {_when(status.last_indexed_at)}",
        f"skipped: {_counts(status.skipped)}",
    ]
    for row in getattr(status, "errors", ()):
        lines.append(f"  {row.reason} {shown_path(row.path)}: {shown_path(row.detail)}")
    secrets = secrets_line(status)
    if secrets:
        lines.append(f"secrets skipped: {secrets}")
    if status.embeddings is not None:
        lines.append("embeddings: " + format_embeddings(status.embeddings))
    if getattr(status, "graph", None) is not None:
        lines.append("code graph: " + format_graph_status(status.graph))
    if getattr(status, "literal_index", None):
        lines.append("literal: " + literal_line(status.literal_index))
    lines.extend(format_dependencies(getattr(status, "dependencies", ())))
    if running:
        lines.append("an index run is in progress")
    return "\n".join(lines)


def secrets_line(status: Any) -> str | None:
    """`a.pem, credentials.json (never indexed; ...)`, or None when no file was skipped as a secret."""
    names = [shown_path(name) for name in getattr(status, "secrets", ())]
    if not names:
        return None
    total = status.skipped.get("secret", len(names))
    more = f" and {total - len(names)} more" if total > len(names) else ""
    return f"{', '.join(names)}{more} (never indexed; the includeSecrets setting brings one back)"


def literal_line(reason: str) -> str:
    """The status line of an exact-literal index that does not answer (`IndexStatus.literal_index`)."""
    return f"no exact-literal index: {reason}; exact text is looked for among the best keyword matches only"


def format_graph_status(g: Any) -> str:
    """`1204 of 1210 files extracted, 6 pending (2 unavailable: changed on disk), building`."""
    text = f"{g.extracted} of {g.files} files extracted"
    if g.pending:
        text += f", {g.pending} pending"
        if g.unavailable:
            text += f" ({g.unavailable} unavailable: changed on disk since indexed)"
    if g.elsewhere:
        text += f"; {g.elsewhere} contents pending on other branches"
    if g.errors:
        text += f"; {g.errors} failed (stored without a graph, see the log)"
    if g.building:
        text += ", building"
    return text


def duration(seconds: float) -> str:
    """`45s`, `3m05s`, `2h10m`: short enough for a progress line."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def format_embeddings(emb: Any) -> str:
    """One line of embedding progress (an `EmbeddingStatus`): done/total, state, rate and time left, and
    what failed; says plainly when search is keyword-only."""
    if emb.model is None:
        return f"none, keyword search only ({emb.error or 'no embedding provider'})"
    if getattr(emb, "rebuild_needed", None):
        return f"rebuild needed: run index --force ({emb.rebuild_needed}); search is keyword-only until then"
    # Rounded down: 2049 of 2050 is 99%, never 100% while a chunk waits.
    pct = 100 * emb.embedded // emb.total if emb.total else 100
    line = f"{emb.embedded}/{emb.total} chunks ({pct}%) with {emb.model}"
    backend = getattr(emb, "backend", None)
    if backend:
        line += f" ({backend})"
    if emb.endpoint:
        line += f" on {emb.endpoint}"
    pending = emb.total - emb.embedded - emb.failures
    if emb.running and pending > 0:  # a pass still open over a finished index is not "embedding now"
        line += ", embedding now"
        if emb.rate and pending > 0:
            line += f" at {emb.rate:.1f} chunks/s, ~{duration(pending / emb.rate)} left"
    elif pending > 0:
        line += f", {pending} waiting (hybrid search uses the vectors there are)"
    if emb.failures:
        line += f"; {emb.failures} failed, retried on the next run: {emb.last_failure}"
    if emb.error:
        line += f"; error: {emb.error}"
    for note in (getattr(emb, "backend_note", None), getattr(emb, "model_note", None)):
        if note:
            line += f"; note: {note}"
    return line


def format_health(data: Mapping[str, Any]) -> str:
    """The health check's answer: what was found and repaired (or that all is well), the counts, the
    vectors' line, and any note."""
    problems = data.get("problems") or []
    repaired = data.get("repaired") or []
    if data.get("movedAside"):
        state = (
            f"the database was damaged ({'; '.join(problems) or 'unreadable'}) and has been rebuilt from "
            f"the files; the damaged copy is kept at {data['movedAside']}; {data.get('vectorsKept', 0)} "
            f"embeddings carried over, {data.get('vectorsLost', 0)} unreadable (re-embedded later)"
        )
    elif problems:
        state = "found: " + "; ".join(problems)
        if repaired:
            state += "\nrepaired: " + "; ".join(repaired)
    else:
        state = "integrity ok"
    purged = data.get("purgedContents")
    counts = f"{data['files']} files, {data['chunks']} chunks on branch {data['branch']}"
    text = f"{state}\n{counts}" + (f"; purged {purged} unreferenced contents" if purged else "")
    if data.get("note"):
        text += f"\n{data['note']}"
    vectors = data.get("vectors")
    if vectors:
        text += "\n" + format_vector_check(vectors)
    return text


def format_vector_check(check: Mapping[str, Any]) -> str:
    """One line on the vectors: how many, whether the ANN file agreed with SQLite, and what was fixed."""
    ann = check["ann"]
    if ann == "not needed":
        where = "exact search, no ANN index needed"
    else:
        where = f"ANN index {ann} ({check['annSize']} vectors, {check['sampled']} sampled)"
    line = f"vectors: {check['stored']} of {check['model']}; {where}"
    if check["problems"]:
        line += "; fixed: " + "; ".join(check["problems"])
    return line


def format_metrics(data: Mapping[str, Any]) -> str:
    lines = [
        f"up {data['uptimeSeconds']:.0f}s, index {data['indexSizeBytes'] / 1_048_576:.1f} MiB, "
        f"{data['indexRuns']} index runs{' (one running)' if data['indexRunning'] else ''}, "
        f"engine {'loaded' if data['cache']['engineLoaded'] else 'not loaded'}"
    ]
    for method, m in data["methods"].items():
        lines.append(
            f"  {method}: {m['count']} calls, {m['errors']} errors, "
            f"p50 {m['p50Ms']:.1f} ms, p95 {m['p95Ms']:.1f} ms"
        )
    return "\n".join(lines)


def format_logs(records: Sequence[Any]) -> str:
    if not records:
        return "no log records"
    return "\n".join(
        f"{time.strftime('%H:%M:%S', time.localtime(r.time))} {r.level:<7} {shown_path(r.message)}"
        for r in records
    )


def format_dependencies(dependencies: Sequence[Any]) -> list[str]:
    """One line per search-time dependency with a recorded failure (`resilience.describe`)."""
    from .resilience import describe

    return [describe(d) for d in dependencies]
