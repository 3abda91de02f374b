"""Search never refuses: a search-type tool on a project (or branch) with no index yet builds it first,
reporting progress through the face's channel, then answers. The index pass embeds with the static
model in the same pass, so keyword and vectors are ready together.

A project too large to index while the caller waits is indexed in the background by a served face
(sidecar, MCP), and the answer says so in one line; one-shot callers (CLI, tests) just index.
`indexing.autoIndex: false` keeps the old explicit behaviour.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import TYPE_CHECKING

from .protocol import NotIndexed
from .runtime import CallContext, Runtime

if TYPE_CHECKING:
    from ..service import Engine

log = logging.getLogger("codebase_index.tools")

# Files a first index may take while the caller waits. Measured on the development machine (2 shared
# cores): this package's own 124 Python files (14 MB folder, 2,168 chunks) indexed and embedded with the
# static model in 1.6 s, ~80 files/s; 1,500 files is ~20 s, the most a first answer should wait for.
AUTO_INDEX_MAX_FILES = 1500

_background: weakref.WeakKeyDictionary[Runtime, threading.Thread] = weakref.WeakKeyDictionary()


def needs_index(engine: Engine) -> bool:
    """No index, or none for the branch checked out now (a switch the watcher has not caught up with)."""
    # Two meta lookups: this runs before every answer.
    return not engine.has_index() or not engine.store.has_catalog(engine.branch())


def ensure_indexed(rt: Runtime, call: CallContext) -> str | None:
    """Index what the answer needs; None when it is ready, else the one-line note of an answer that
    cannot wait (a large project now indexing in the background)."""
    with rt.read_lock:
        engine = rt.reader()
        if not needs_index(engine):
            return None
        auto = engine.config.indexing.auto_index
    if not auto:
        raise NotIndexed(
            "this project is not indexed yet and `indexing.autoIndex` is false; call index_codebase "
            "(CLI: `codebase-index index`)"
        )
    if rt.watch_enabled and not rt.index_lock.locked():
        files = _files_to_index(engine)
        if files > AUTO_INDEX_MAX_FILES:
            from ..git import project_marker

            if engine.config.indexing.require_project_marker and project_marker(rt.root) is None:
                raise NotIndexed(
                    f"not indexing {files} files on a search: {rt.root} has no project marker (.git, "
                    "package.json, pyproject.toml, ...); call index_codebase to index it anyway"
                )
            _index_in_background(rt)
            return (
                f"indexing {files} files in the background (over {AUTO_INDEX_MAX_FILES}, too many to wait "
                "for); answering from what is indexed so far"
            )
    running = _background.get(rt)
    if running is not None and running.is_alive():
        return "the first index run is still going in the background; answering from what is indexed so far"
    _index_now(rt, call)
    return None


def _files_to_index(engine: Engine) -> int:
    """How many files an index run would read: a directory walk, nothing is opened."""
    from ..indexer import file_rules

    return len(file_rules(engine.root, engine.config).walk().files)


def _index_now(rt: Runtime, call: CallContext) -> None:
    """Index under the index lock, waiting for a run already going (then only catching up if needed)."""
    with rt.index_lock:
        writer = rt.writer()
        if not needs_index(writer):
            return  # the run we waited for did it
        log.info("first search on an unindexed project: indexing %s", rt.root)
        report = writer.index(progress=call.progress)
        rt.index_runs += 1
    log.info("indexed %d files in %.2fs before answering", report.files, report.seconds)
    if rt.watch_enabled:
        rt.start_watcher()
    rt.start_embedding(call.request_id)  # models too slow to embed in the pass


def _index_in_background(rt: Runtime) -> None:
    def run() -> None:
        try:
            _index_now(rt, CallContext())
        except Exception:
            log.exception("background first index failed")

    thread = threading.Thread(target=run, name="first-index", daemon=True)
    _background[rt] = thread
    thread.start()
