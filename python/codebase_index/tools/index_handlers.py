"""Handlers of the tools that build, check and report on the index and the service: index, status,
health check, knowledge bases, metrics, logs and savings. Writers take the runtime's index lock without
waiting: a second index run is refused (IndexBusy), never queued behind the first.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from ..display import shown_path
from .protocol import IndexBusy, InvalidParams, NotIndexed
from .runtime import CallContext, Runtime
from .schema import (
    AddKnowledgeBaseParams,
    HealthCheckParams,
    IndexParams,
    ListKnowledgeBasesParams,
    LogsParams,
    MetricsParams,
    RemoveKnowledgeBaseParams,
    SavingsParams,
    StatusParams,
    ToolResult,
)

if TYPE_CHECKING:
    from ..indexer import IndexReport
    from ..knowledge import KnowledgeBase
    from ..service import Engine

log = logging.getLogger("codebase_index.tools")
T = TypeVar("T")


def handle_index(rt: Runtime, p: IndexParams, call: CallContext) -> ToolResult:
    from ..format import format_estimate, format_index_report

    if p.estimate_only:
        with rt.read_lock:
            estimate = msgspec.to_builtins(rt.reader().estimate(force=p.force))
        return ToolResult(format_estimate(estimate), estimate)
    if not rt.index_lock.acquire(blocking=False):
        raise IndexBusy("an index run is already in progress in this sidecar; try again when it finishes")
    try:
        engine = rt.writer()
        report = engine.index(force=p.force, progress=call.progress)
        rt.index_runs += 1
        skipped = engine.skipped_files() if p.verbose else []
        problem_rows = engine.problem_files() if p.verbose else []
    finally:
        rt.index_lock.release()
    if rt.watch_enabled:
        rt.start_watcher()
    log.info(
        "indexed %d files (%d changed, %d removed) in %.2fs",
        report.files,
        report.files_changed,
        report.files_removed,
        report.seconds,
    )
    rt.start_embedding(call.request_id)
    data = msgspec.to_builtins(report)
    if p.verbose:
        data["skippedFiles"] = [msgspec.to_builtins(s) for s in skipped]
        data["problemFiles"] = [msgspec.to_builtins(s) for s in problem_rows]
    return ToolResult(format_index_report(report, skipped, problems=problem_rows), data)


def handle_status(rt: Runtime, p: StatusParams, call: CallContext) -> ToolResult:
    from ..format import format_status

    with rt.read_lock:
        status = rt.reader().status()
    if status.embeddings is not None:  # the background job lives in the runtime, not in the engine
        status.embeddings.running = rt.embedding_running()
        if rt.last_embed_error and not status.embeddings.error:
            status.embeddings.error = rt.last_embed_error
    data = msgspec.to_builtins(status)
    data["indexRunning"] = rt.index_lock.locked()
    data["watcher"] = rt.watcher_status()
    from ..context.savings import summary_line

    report = rt.savings.report()
    data["savings"] = msgspec.to_builtins(report)
    text = format_status(status, running=rt.index_lock.locked())
    mine, every = summary_line(report.this_session), summary_line(report.all_sessions)
    text += f"\nsavings: this session {mine}; all sessions {every}"
    return ToolResult(text, data)


def handle_health_check(rt: Runtime, p: HealthCheckParams, call: CallContext) -> ToolResult:
    """Check and repair the index: damaged SQLite pages (the database is moved aside and rebuilt around
    its readable embeddings), files without chunks, chunks without a file, vectors out of step; then
    drop what no file refers to and verify the vector index."""
    from ..format import format_health

    if not (rt.index_dir / "codebase.db").exists():
        raise NotIndexed("there is no index to check yet; call index_codebase first")
    with rt.read_lock:
        read_only = rt.reader().store.read_only
    if read_only:
        return _health_check_only(rt, "repairs skipped: the index folder is read-only for this process")
    if not rt.index_lock.acquire(blocking=False):
        return _health_check_only(rt)
    held_reads = False

    def before_rebuild() -> None:
        # No search may read the damaged file while it is moved aside and rebuilt; the reader's
        # connection still points at it. Searches wait for the rebuild (the index is broken anyway).
        nonlocal held_reads
        rt.read_lock.acquire()
        held_reads = True
        if rt._reader is not None:
            rt._reader.close()

    try:
        rt.stop_embedding()
        writer = rt.writer()
        try:
            report = writer.repair(before_rebuild=before_rebuild, progress=call.progress)
        finally:
            if held_reads:
                rt.read_lock.release()
        if report.moved_aside:
            log.warning("index database damaged: moved aside to %s and rebuilt", report.moved_aside)
            rt.index_runs += 1
        gc_report = writer.gc()  # after the repair: it also drops vectors orphaned by it
        check = writer.verify_vectors()  # the ANN file against what is left
        branch = writer.branch()
        counts = writer.store.counts(branch)
    finally:
        rt.index_lock.release()
    rt.start_embedding()  # vectors the repair lost (or never had) are computed in the background
    data = {
        **msgspec.to_builtins(report),
        "quickCheck": report.pages,
        "purgedContents": gc_report.contents_removed,
        "gc": msgspec.to_builtins(gc_report),
        "vectors": None if check is None else {**msgspec.to_builtins(check), "ok": check.ok},
        "branch": branch,
        "files": counts["files"],
        "chunks": counts["chunks"],
        "vocabulary": counts["vocabulary"],
        "note": None,
    }
    return ToolResult(format_health(data), data)


def _health_check_only(
    rt: Runtime,
    note: str = "repairs skipped: an index run is in progress (call index_health_check again after it)",
) -> ToolResult:
    """While an index run holds the index (or it cannot be written): SQLite's page check only."""
    from ..format import format_health
    from ..repair import check_pages

    with rt.read_lock:
        engine = rt.reader()
        pages = check_pages(engine.store.conn)
        branch = engine.branch()
        counts = (
            engine.store.counts(branch) if pages == ["ok"] else {"files": 0, "chunks": 0, "vocabulary": 0}
        )
    data = {
        "ok": pages == ["ok"],
        "pages": pages,
        "quickCheck": pages,
        "problems": [] if pages == ["ok"] else [f"page check: {line}" for line in pages[:20]],
        "repaired": [],
        "purgedContents": None,
        "gc": None,
        "vectors": None,
        "branch": branch,
        **counts,
        "note": note,
    }
    return ToolResult(format_health(data), data)


def _change_knowledge_bases(rt: Runtime, change: Callable[[Engine], T]) -> T:
    """Add or remove a knowledge base under the index lock (refused while an index run holds it), then
    restart a running watcher so it follows the folders."""
    from ..knowledge import KnowledgeBaseError

    if not rt.index_lock.acquire(blocking=False):
        raise IndexBusy("an index run is in progress in this sidecar; try again when it finishes")
    try:
        result = change(rt.writer())
    except KnowledgeBaseError as exc:
        raise InvalidParams(f"invalid params: `path`: {exc}") from exc
    finally:
        rt.index_lock.release()
    if rt.watcher is not None:
        rt.stop_watcher()  # restart so it watches the new folder, or no longer the removed one
        rt.start_watcher()
    return result


def handle_kb_add(rt: Runtime, p: AddKnowledgeBaseParams, call: CallContext) -> ToolResult:
    def add(engine: Engine) -> tuple[KnowledgeBase, IndexReport]:
        found = engine.add_knowledge_base(p.path, agent=True)
        rt.index_runs += 1
        return found

    kb, report = _change_knowledge_bases(rt, add)
    rt.start_embedding()
    data = {**msgspec.to_builtins(kb), "files": report.files, "chunks": report.chunks}
    return ToolResult(
        f"knowledge base kb:{kb.label} ({shown_path(kb.path)}): {report.files} files, {report.chunks} chunks",
        data,
    )


def handle_kb_list(rt: Runtime, p: ListKnowledgeBasesParams, call: CallContext) -> ToolResult:
    with rt.read_lock:
        engine = rt.reader()
        kbs = engine.knowledge_bases()
        catalogs = engine.store.branches() if engine.has_index() else {}
        note = engine.knowledge_base_note()
    rows = [{**msgspec.to_builtins(kb), "files": catalogs.get(kb.catalog, 0)} for kb in kbs]
    text = "\n".join(
        f"kb:{r['label']}  {shown_path(r['path'])}  ({r['source']}, {r['files']} files)" for r in rows
    )
    text = text or "no knowledge bases (add one with add_knowledge_base)"
    return ToolResult(f"{text}\nnote: {note}" if note else text, {"knowledgeBases": rows})


def handle_kb_remove(rt: Runtime, p: RemoveKnowledgeBaseParams, call: CallContext) -> ToolResult:
    kb = _change_knowledge_bases(rt, lambda engine: engine.remove_knowledge_base(p.path))
    text = f"removed knowledge base kb:{kb.label} ({shown_path(kb.path)})"
    return ToolResult(text, msgspec.to_builtins(kb))


def handle_metrics(rt: Runtime, p: MetricsParams, call: CallContext) -> ToolResult:
    from ..format import format_metrics

    size = 0
    if rt.index_dir.is_dir():
        for entry in rt.index_dir.iterdir():
            with contextlib.suppress(OSError):
                if entry.is_file():
                    size += entry.stat().st_size
    cache: dict[str, Any] = {"engineLoaded": rt.engine_loaded(), "snapshotDocs": None}
    reader = rt._reader
    loaded = reader.loaded_snapshot() if reader is not None else None
    if loaded is not None:
        cache.update(snapshotBranch=loaded[0], snapshotGeneration=loaded[1], snapshotDocs=loaded[2])
    data = {
        "uptimeSeconds": round(time.time() - rt.metrics.started_at, 3),
        "methods": rt.metrics.snapshot(),
        "indexSizeBytes": size,
        "indexRuns": rt.index_runs,
        "indexRunning": rt.index_lock.locked(),
        "cache": cache,
        "savings": msgspec.to_builtins(rt.savings.report()),
    }
    return ToolResult(format_metrics(data), data)


def handle_logs(rt: Runtime, p: LogsParams, call: CallContext) -> ToolResult:
    from ..format import format_logs

    records = rt.logs.tail(p.limit, p.level)
    log_file = rt.index_dir / "sidecar.log"
    data = {"records": records, "logFile": str(log_file) if log_file.exists() else None}
    return ToolResult(format_logs(records), data)


def handle_savings(rt: Runtime, p: SavingsParams, call: CallContext) -> ToolResult:
    from ..context.savings import format_savings

    report = rt.savings.report()
    return ToolResult(format_savings(report), msgspec.to_builtins(report))
