"""The indexing pipeline: discover -> read -> chunk + tokenize (worker processes) -> store.

Stat-first change detection: a file whose size, mtime and inode are unchanged is not read; a changed file
whose content hash is already stored (another branch, another path, a touched file) is re-pointed, not
re-chunked. Writes go in batches of files, each one transaction.
"""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import os
import stat
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import msgspec
from tree_sitter import Tree

from . import files as discovery
from . import isolate, patterns, problems
from .bm25 import tokenize
from .chunking import chunk_text, language_for_path
from .config import Config
from .graph import language_spec
from .graph.extract import extract_rows
from .graph.store import EdgeRefresh, EncodedGraph, GraphStore, encode_rows
from .models import DiscoveredFile, SkippedFile
from .store import ChunkRecord, FileRow, SkippedRow, Store

ProgressFn = Callable[[str, int, int], None]
log = logging.getLogger(__name__)

# Below this much text to chunk, worker processes cost more than they save. Measured on 2 cores
# (bench_fresh.py pool_crossover, stdlib files): starting 2 spawned workers and warming their grammars
# costs ~0.6 s while one process chunks ~3 MB/s, so the pool can win only above ~4 MB on an idle machine
# (under load 3.4 serial still won at 8 MB: 2.7 s vs 3.8 s). A file count was a poor proxy: the first
# switch to a branch with 98 changed stdlib files (1.4 MB) took 1.2-1.5 s in the pool, 0.6 s serially.
PARALLEL_THRESHOLD_BYTES = 4_000_000
WRITE_BATCH_FILES = 200
# Bump when chunking or tokenization output changes: indexes made by another version re-chunk on the next run.
# 2: generated files skipped, non-UTF-8 text decoded, one-line data files chunked (embeddings are kept:
# they are keyed by chunk text).
PIPELINE_VERSION = "2"
# A writer that is briefly busy (another run finishing, a schema set-up) is waited for this long.
LOCK_WAIT_S = 3.0


class IndexReport(msgspec.Struct):
    branch: str
    files: int
    files_changed: int
    files_unchanged: int
    files_removed: int
    chunks: int
    chunks_added: int
    skipped: dict[str, int]
    seconds: float
    # Files whose code-graph extraction failed (their chunks are indexed; see the log), in the run or
    # in the extraction pass index() waited for.
    graph_errors: int = 0
    # Files whose chunker raised and that were indexed as line windows instead (see the log).
    chunk_fallbacks: int = 0
    # What the code-graph edge refresh of this run did (None: nothing was written).
    graph: EdgeRefresh | None = None
    # Files per knowledge base (by label) after this run; filled by the engine.
    knowledge_bases: dict[str, int] = msgspec.field(default_factory=dict)


GRAPH_ENV = "CODEBASE_INDEX_NO_GRAPH"
# Files no chunker knows (a type the user added with include/additionalInclude) are cut into line windows.
TEXT_LANGUAGE = "text"


def graph_enabled() -> bool:
    """The code graph is on unless CODEBASE_INDEX_NO_GRAPH=1 (benchmarks measure the index without it)."""
    return os.environ.get(GRAPH_ENV, "") not in ("1", "true", "yes")


def graph_language(language: str) -> bool:
    return language_spec(language) is not None and graph_enabled()


def content_key(language: str, text: str) -> str:
    """Identity of a file's content as the chunker sees it.

    The language is part of it: the same text under another extension chunks differently.
    """
    return hashlib.blake2b(f"{language}\0{text}".encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def chunk_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def chunk_and_tokenize(path: str, text: str, language: str) -> list[ChunkRecord]:
    """The CPU-heavy per-file work, run in worker processes for big batches."""
    return process_file(path, text, language).records


ERROR_DETAIL_CHARS = 300


def one_line(exc: BaseException) -> str:
    """An exception as the one line status and `index --verbose` show: `Type: first line of message`."""
    return isolate.one_line(exc, ERROR_DETAIL_CHARS)


class ProcessedFile(msgspec.Struct):
    """One file's chunks, plus its code graph when extracted in the run (`graph_error`: why it failed).

    `error` set: the file could not be chunked or tokenized at all (no records; the run skips it under
    reason "error" and retries it next time). `fallback` set: its chunker raised and the file was cut
    into line windows instead (indexed; the run logs it)."""

    records: list[ChunkRecord]
    graph: EncodedGraph | None = None
    graph_error: str = ""
    error: str = ""
    fallback: str = ""


def process_file(path: str, text: str, language: str, extract_graph: bool = False) -> ProcessedFile:
    """Chunk and tokenize one file; with `extract_graph`, also extract its code graph from the chunker's
    own parse (files the chunker does not parse, minified code cut into windows, get no graph).

    Never raises: whatever one file does to the chunker, tokenizer or graph extractor is contained here
    (in the worker process when there is one) and reported in the result."""
    trees: list[Tree] = []
    on_tree = trees.append if extract_graph and graph_language(language) else None
    fallback: list[str] = []
    try:
        spans = chunk_text(
            path, text, language, on_tree=on_tree, on_error=lambda e: fallback.append(one_line(e))
        )
        records = [
            ChunkRecord(span, chunk_hash(span.text), dict(Counter(tokenize(span.text)))) for span in spans
        ]
    except Exception as exc:  # even line windows or the tokenizer failed: the file is skipped, not the run
        return ProcessedFile([], error=one_line(exc))
    done = ProcessedFile(records, fallback=fallback[0] if fallback else "")
    if not trees:
        return done
    try:
        rows = extract_rows(path, text, language, trees[0])
        done.graph = None if rows is None else encode_rows(rows)
    except Exception as exc:  # a grammar surprise must not lose the file's chunks; counted and logged
        done.graph_error = one_line(exc)
    return done


def _chunk_many(items: list[tuple[str, str, str]], extract_graph: bool = False) -> list[ProcessedFile]:
    return [process_file(path, text, language, extract_graph) for path, text, language in items]


def _process_item(item: tuple[str, str, str, bool]) -> ProcessedFile:
    return process_file(*item)


def _chunk_alone(
    items: Sequence[tuple[str, str, str]], extract_graph: bool, cause: str
) -> list[ProcessedFile]:
    """The files of a batch whose worker failed (died: killed, out of memory, a crash in native code),
    each in a worker of its own, so a file that kills its worker again is the only one lost: it comes
    back as an error, the others as usual."""
    log.warning("a chunking worker failed (%s); redoing its %d files one by one", cause, len(items))
    return isolate.run_isolated(
        _process_item,
        [(path, text, language, extract_graph) for path, text, language in items],
        lambda item, why: ProcessedFile([], error=f"worker process failed on this file ({why})"),
    )


class _Pending(msgspec.Struct):
    row: FileRow
    text: str | None  # None: content already stored, only the file row changes


Stat = tuple[int, int, int]  # size, mtime_ns, inode

# A folder whose mtime is this close to the scan that recorded it may change again within the same
# timestamp tick without its mtime moving; such a scan is not trusted for the stat-only shortcut.
RACY_NS = 2_000_000_000


class _ScanCache(msgspec.Struct):
    """What the last full walk saw, so an unchanged tree is re-checked with one stat per file.

    Correctness rests on folder mtimes: creating, deleting or renaming an entry changes its folder's
    mtime, so if no listed folder changed, the set of entries is the same and only file stats can
    differ. Ignore files (and .git/info/exclude) are stat-checked too because editing one changes no
    folder. Anything unexpected sends the caller back to the full walk.
    """

    rules_key: tuple[object, ...]
    dirs: list[tuple[str, int, int]]  # abs path, mtime_ns, inode
    guards: list[tuple[str, Stat | None]]  # abs path of an ignore file, its stat (None: absent)
    files: list[DiscoveredFile]
    skipped: list[SkippedFile]
    rechecks: list[tuple[str, Stat | None]]  # stat-dependent skips (too-large, unreadable)


def _lstat(path: str) -> Stat | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ino)


class Indexer:
    """Brings one catalog (a branch, or a knowledge base) in the store up to date with the files under
    `root`. Keep one instance per root: it remembers the last walk and skip decisions so that a re-index
    with nothing changed costs one stat per file and no writes."""

    def __init__(self, root: Path, config: Config, store: Store, *, workers: int) -> None:
        self.root = root
        self.config = config
        self.store = store
        self.workers = workers
        self._scan: _ScanCache | None = None
        # path -> (stat, skip): files that discovery passes but reading rejects (binary, generated).
        self._read_skips: dict[str, tuple[Stat, SkippedRow]] = {}
        self._read_skips_key: tuple[object, ...] | None = None
        # (branch, generation) -> what the store holds, valid while nobody writes.
        self._rows_cache: tuple[str, int, dict[str, tuple[int, int, int, str, str]]] | None = None
        self._stored_cache: tuple[str, int, frozenset[SkippedRow], dict[str, int]] | None = None
        self._rules: discovery.FileRules | None = None
        # (branch, generation) at which the last run left every scanned file equal to its stored row.
        self._synced: tuple[str, int] | None = None
        self._rescan_clean = False  # the last discover() was a rescan that found every stat unchanged
        # What the last write did to the code graph (edge refresh figures, extraction failures).
        self.last_graph: EdgeRefresh | None = None
        # Extract the code graph in the run, from the chunker's parse, instead of marking contents for
        # graph.extractor: for callers that wait for the graph anyway (CLI index), it saves a re-parse.
        self.extract_graph = False
        self._graph_errors = 0
        self._fallbacks = 0

    # -- discovery --------------------------------------------------------------------------------------

    def _rules_key(self) -> tuple[object, ...]:
        cfg = self.config
        return (cfg.include, cfg.additional_include, cfg.exclude, cfg.indexing.max_file_size)

    def _new_rules(self) -> discovery.FileRules:
        cfg = self.config
        return discovery.FileRules(
            self.root,
            include=cfg.include or None,
            additional_include=cfg.additional_include,
            exclude=cfg.exclude,
            max_file_size=cfg.indexing.max_file_size,
        )

    def discover(self) -> discovery.DiscoveryResult:
        """The files to index: a stat-only re-check of the last walk when that is provably enough."""
        self._rescan_clean = False
        cached = self._rescan()
        if cached is not None:
            return cached
        rules = self._new_rules()
        self._rules = rules
        visited: list[str] = []
        scan_started = time.time_ns()
        found = rules.walk(visited)
        self._scan = self._record(rules, visited, found, scan_started)
        return found

    def _record(
        self, rules: discovery.FileRules, visited: list[str], found: discovery.DiscoveryResult, started: int
    ) -> _ScanCache | None:
        dirs: list[tuple[str, int, int]] = []
        guards: list[tuple[str, Stat | None]] = []
        root = rules.root
        for rel in visited:
            abs_dir = os.path.join(root, rel) if rel else root
            try:
                st = os.lstat(abs_dir)
            except OSError:
                return None
            if st.st_mtime_ns >= started - RACY_NS:
                return None  # changed too recently to trust its mtime next time
            dirs.append((abs_dir, st.st_mtime_ns, st.st_ino))
            for name in patterns.IGNORE_FILE_NAMES:
                guard = os.path.join(abs_dir, name)
                guards.append((guard, _lstat(guard)))
        for exclude_file in patterns.git_exclude_files(root):
            guards.append((exclude_file, _lstat(exclude_file)))
        rechecks = [
            (s.path, _lstat(os.path.join(root, s.path)))
            for s in found.skipped
            if s.reason in ("too-large", "unreadable")
        ]
        return _ScanCache(self._rules_key(), dirs, guards, list(found.files), list(found.skipped), rechecks)

    def _rescan(self) -> discovery.DiscoveryResult | None:
        scan = self._scan
        if scan is None or scan.rules_key != self._rules_key():
            return None
        lstat = os.lstat
        for abs_dir, mtime_ns, inode in scan.dirs:
            try:
                st = lstat(abs_dir)
            except OSError:
                return None
            if st.st_mtime_ns != mtime_ns or st.st_ino != inode:
                return None
        for path, old in scan.guards:
            if _lstat(path) != old:
                return None
        for rel, old in scan.rechecks:
            if _lstat(os.path.join(self.root, rel)) != old:
                return None
        max_size = self.config.indexing.max_file_size
        files: list[DiscoveredFile] = []
        append = files.append
        is_reg = stat.S_ISREG
        clean = True
        for entry in scan.files:
            try:
                st = lstat(entry.abs_path)
            except OSError:
                return None
            if st.st_mtime_ns == entry.mtime_ns and st.st_size == entry.size and st.st_ino == entry.inode:
                append(entry)
            elif st.st_size > max_size or not is_reg(st.st_mode):
                return None  # now a skip: let the walk say why
            else:
                clean = False
                append(DiscoveredFile(entry.path, entry.abs_path, st.st_size, st.st_mtime_ns, st.st_ino))
        scan.files = files
        self._rescan_clean = clean
        return discovery.DiscoveryResult(files=files, skipped=scan.skipped)

    def _stored_rows(self, branch: str, generation: int) -> dict[str, tuple[int, int, int, str, str]]:
        cached = self._rows_cache
        if cached is not None and cached[0] == branch and cached[1] == generation:
            return cached[2]
        rows = self.store.file_stats(branch)
        self._rows_cache = (branch, generation, rows)
        return rows

    def _stored_state(self, branch: str, generation: int) -> tuple[frozenset[SkippedRow], dict[str, int]]:
        cached = self._stored_cache
        if cached is not None and cached[0] == branch and cached[1] == generation:
            return cached[2], cached[3]
        skipped = frozenset(self.store.skipped(branch))
        counts = self.store.counts(branch)
        self._stored_cache = (branch, generation, skipped, counts)
        return skipped, counts

    # -- full runs --------------------------------------------------------------------------------------

    def run(self, branch: str, *, force: bool = False, progress: ProgressFn | None = None) -> IndexReport:
        started = time.perf_counter()
        store = self.store
        report = progress or (lambda phase, done, total: None)
        self.last_graph = None
        self._graph_errors = 0
        self._fallbacks = 0
        with store.write_lock(timeout=LOCK_WAIT_S):
            report("discover", 0, 0)
            store.ensure_literal_index(locked=True)  # an index made before it existed gets it once
            if store.get_meta("pipeline_version") != PIPELINE_VERSION:
                # Chunks made by another chunker/tokenizer version would silently differ from fresh ones.
                force = True
            if force or self._read_skips_key != self._rules_key():
                # Skip decisions depend on the include patterns too (generated files a user brings back).
                self._read_skips.clear()
                self._read_skips_key = self._rules_key()
            if force:
                self._scan = None
            found = self.discover()
            generation = store.generation()
            if not force and self._rescan_clean and self._synced == (branch, generation):
                # Same folders, same stats, and the store has not moved since it matched them.
                _, counts = self._stored_state(branch, generation)
                skipped = [SkippedRow(s.path, s.reason, s.detail) for s in found.skipped]
                skipped += [skip for _, skip in self._read_skips.values()]
                return self._report(branch, counts, 0, len(found.files), 0, 0, skipped, started)
            existing = self._stored_rows(branch, generation)
            skipped = [SkippedRow(s.path, s.reason, s.detail) for s in found.skipped]

            pending: list[_Pending] = []
            dropped: list[str] = []
            unchanged = 0
            read_skips = self._read_skips
            # A new branch (first run after a checkout): files whose stat still matches the branch this
            # indexer last synced were not rewritten by the checkout, so their content key is known
            # without reading them (the same stat-first trust as within one branch).
            donor = (
                store.file_stats(self._synced[0])
                if not existing and not force and self._synced is not None and self._synced[0] != branch
                else {}
            )
            for entry in found.files:
                old = existing.get(entry.path)
                stat_now = (entry.size, entry.mtime_ns, entry.inode)
                if not force and old is not None and old[:3] == stat_now:
                    unchanged += 1
                    continue
                known = donor.get(entry.path)
                if known is not None and known[:3] == stat_now:
                    pending.append(_Pending(FileRow(entry.path, *stat_now, known[3], known[4]), None))
                    continue
                known_skip = read_skips.get(entry.path)
                if known_skip is not None and known_skip[0] == stat_now and not force:
                    skipped.append(known_skip[1])
                    continue
                item = self._prepare(entry, old, force)
                if isinstance(item, SkippedRow):
                    if item.reason != "error":  # errors are retried by the next run
                        read_skips[entry.path] = (stat_now, item)
                    skipped.append(item)
                    if old is not None:
                        dropped.append(entry.path)  # indexed before, skipped now (binary, generated)
                elif item is not None:
                    pending.append(item)
            removed = (
                sorted((set(existing) - {f.path for f in found.files}) | set(dropped))
                if len(existing) > unchanged
                else []
            )

            stored_skipped, counts = self._stored_state(branch, generation)
            if (
                not pending
                and not removed
                and not force
                and frozenset(skipped) == stored_skipped
                and store.has_catalog(branch)
            ):
                self._synced = None if _has_errors(skipped) else (branch, generation)
                return self._report(branch, counts, 0, unchanged, 0, 0, skipped, started)

            to_chunk = self._to_chunk(pending, force)

            def finish() -> None:
                store.delete_files(branch, removed)
                store.purge_unreferenced_contents()
                store.replace_skipped(branch, skipped)
                store.mark_catalog(branch)
                store.set_meta("pipeline_version", PIPELINE_VERSION)
                store.bump_generation()

            chunks_added = self._write(
                store, branch, pending, removed, skipped, to_chunk, finish, force, report
            )
            counts = store.counts(branch)
            # A run with errors is never "in sync": the next one must retry those files.
            self._synced = None if _has_errors(skipped) else (branch, store.generation())
        files_changed = sum(1 for p in pending if p.text is not None)
        return self._report(
            branch,
            counts,
            files_changed,
            unchanged + len(pending) - files_changed,
            len(removed),
            chunks_added,
            skipped,
            started,
        )

    def _prepare(
        self, entry: DiscoveredFile, old: tuple[int, int, int, str, str] | None, force: bool
    ) -> _Pending | SkippedRow | None:
        """Read one changed file: the row to write, or why it is skipped (an exception while reading is
        reason "error": logged, never cached, so the next run tries again)."""
        try:
            return self._read(entry, old, force)
        except Exception as exc:
            log.warning("reading %s failed: %s", entry.path, exc, exc_info=True)
            return SkippedRow(entry.path, "error", f"while reading: {one_line(exc)}")

    def _read(
        self, entry: DiscoveredFile, old: tuple[int, int, int, str, str] | None, force: bool
    ) -> _Pending | SkippedRow | None:
        language = language_for_path(entry.path) or TEXT_LANGUAGE
        text = discovery.read_text(entry.abs_path, entry.path)
        if not isinstance(text, str):
            return SkippedRow(entry.path, text.reason, text.detail)
        rules = self._rules or self._new_rules()
        self._rules = rules
        made = rules.generated(entry.path, text)
        if made is not None:
            return SkippedRow(entry.path, "generated", made)
        key = content_key(language, text)
        row = FileRow(entry.path, entry.size, entry.mtime_ns, entry.inode, key, language)
        if old is not None and old[3] == key and not force:
            return _Pending(row, None)  # touched but not changed
        return _Pending(row, text)

    def _to_chunk(self, pending: list[_Pending], force: bool) -> dict[str, _Pending]:
        known = (
            set()
            if force
            else self.store.known_contents({p.row.content_key for p in pending if p.text is not None})
        )
        to_chunk: dict[str, _Pending] = {}
        for item in pending:
            if item.text is not None and item.row.content_key not in known:
                to_chunk.setdefault(item.row.content_key, item)
        return to_chunk

    def _report(
        self,
        branch: str,
        counts: dict[str, int],
        changed: int,
        unchanged: int,
        removed: int,
        chunks_added: int,
        skipped: list[SkippedRow],
        started: float,
    ) -> IndexReport:
        return IndexReport(
            branch=branch,
            files=counts["files"],
            files_changed=changed,
            files_unchanged=unchanged,
            files_removed=removed,
            chunks=counts["chunks"],
            chunks_added=chunks_added,
            skipped=dict(Counter(s.reason for s in skipped)),
            seconds=round(time.perf_counter() - started, 3),
            graph_errors=self._graph_errors,
            graph=self.last_graph,
            chunk_fallbacks=self._fallbacks,
        )

    # -- path-level runs (the watcher) --------------------------------------------------------------------

    def run_paths(
        self, branch: str, paths: Iterable[str], *, progress: ProgressFn | None = None
    ) -> IndexReport:
        """Re-index just `paths` (relative to the root; files or deleted folders) on `branch`.

        Falls back to a full run when the branch has no complete catalog yet (a path-level update of a
        new branch would leave it holding only those files) or an ignore file changed (it can change
        what every other path means). Changed files are always read and hashed, never trusted by stat:
        a save within the same timestamp tick as the last index keeps size and mtime.
        """
        started = time.perf_counter()
        store = self.store
        report = progress or (lambda phase, done, total: None)
        self.last_graph = None
        self._graph_errors = 0
        self._fallbacks = 0
        wanted = sorted({p.replace(os.sep, "/").strip("/") for p in paths} - {""})
        if any(p.rpartition("/")[2] in patterns.IGNORE_FILE_NAMES for p in wanted) or any(
            os.path.isdir(os.path.join(self.root, p)) for p in wanted
        ):
            # An ignore file changes what other paths mean; a folder that appeared (mkdir, a move
            # into the tree) holds files no event named: both need the full walk.
            self._rules = None
            return self.run(branch, progress=progress)
        with store.write_lock(timeout=LOCK_WAIT_S):
            if not store.has_catalog(branch):
                full = True
            else:
                full = False
                rules = self._rules or self._new_rules()
                self._rules = rules
                pending: list[_Pending] = []
                skipped: list[SkippedRow] = []
                removed: list[str] = []
                touched: set[str] = set()
                before: dict[str, tuple[int, int, int, str, str]] = {}
                for rel in wanted:
                    olds = store.file_stats_under(branch, rel)
                    before.update(olds)
                    found = rules.check(rel)
                    touched.add(rel)
                    if found is None or isinstance(found, SkippedFile):
                        removed.extend(olds)  # deleted file or folder, or now skipped
                        touched.update(olds)
                        if isinstance(found, SkippedFile):
                            skipped.append(SkippedRow(found.path, found.reason, found.detail))
                        continue
                    item = self._prepare(found, olds.get(rel), force=False)
                    if isinstance(item, SkippedRow):
                        skipped.append(item)
                        if rel in olds:
                            removed.append(rel)
                    elif item is not None:
                        old = olds.get(rel)
                        if (
                            old is not None
                            and item.text is None
                            and old[:3]
                            == (
                                item.row.size,
                                item.row.mtime_ns,
                                item.row.inode,
                            )
                        ):
                            continue  # nothing at all changed
                        pending.append(item)
                old_keys = {before[r][3] for r in removed}
                old_keys |= {
                    before[p.row.path][3]
                    for p in pending
                    if p.row.path in before and before[p.row.path][3] != p.row.content_key
                }
                to_chunk = self._to_chunk(pending, False)

                def finish() -> None:
                    store.delete_files(branch, removed)
                    store.purge_contents_if_unreferenced(old_keys)
                    store.update_skipped(branch, touched, skipped)
                    store.bump_generation()

                if pending or removed or skipped or _has_skips(store, branch, touched):
                    chunks_added = self._write(
                        store, branch, pending, removed, skipped, to_chunk, finish, False, report
                    )
                else:
                    chunks_added = 0
                counts = store.counts(branch)
        if full:
            return self.run(branch, progress=progress)
        files_changed = sum(1 for p in pending if p.text is not None)
        return self._report(
            branch,
            counts,
            files_changed,
            len(pending) - files_changed,
            len(removed),
            chunks_added,
            skipped,
            started,
        )

    # -- writing ------------------------------------------------------------------------------------------

    def _write(
        self,
        store: Store,
        branch: str,
        pending: list[_Pending],
        removed: list[str],
        skipped: list[SkippedRow],
        to_chunk: dict[str, _Pending],
        finish: Callable[[], None],
        force: bool,
        report: ProgressFn,
    ) -> int:
        """Chunk what is new, then store files, chunks and graph marks in batches; `finish` runs in the
        last transaction. Files whose processing failed are moved from `pending` to `skipped` (and their
        old rows to `removed`) before anything is written, so `finish` sees them."""
        graphs = GraphStore(store.conn)
        before = graphs.branch_keys(branch, [p.row.path for p in pending] + list(removed))
        processed = self._chunk_all(list(to_chunk.values()), report)
        failed: dict[str, str] = {}
        found: list[SkippedRow] = []  # problems.REASONS rows of this run
        for key, done in processed.items():
            path = to_chunk[key].row.path
            if done.error:
                failed[key] = done.error
            elif done.fallback:
                self._fallbacks += 1
                found.append(SkippedRow(path, "chunk-fallback", done.fallback))
                log.warning("chunking %s failed (%s); indexed as line windows", path, done.fallback)
            if done.graph_error:
                self._graph_errors += 1
                found.append(SkippedRow(path, "graph-error", done.graph_error))
                log.warning("code graph of %s not extracted: %s", path, done.graph_error)
        if failed:
            # Contained: such a file gets no row (so the next run tries it again), its old row goes, and
            # it is listed under "error" with the exception's one line.
            kept: list[_Pending] = []
            for item in pending:
                error = failed.get(item.row.content_key)
                if error is None:
                    kept.append(item)
                    continue
                log.warning("%s not indexed: %s", item.row.path, error)
                skipped.append(SkippedRow(item.row.path, "error", error))
                if item.row.path in before:
                    removed.append(item.row.path)
            pending[:] = kept
        # Before anything is overwritten: which paths change content, and what their old contents provided
        # (callers of a removed or renamed symbol must be re-resolved too).
        changed = [p.row.path for p in pending if before.get(p.row.path) != p.row.content_key]
        old_names = graphs.content_provides({before[p] for p in [*changed, *removed] if p in before})
        chunked = {key: item.records for key, item in processed.items() if key not in failed}
        vocab = store.vocabulary() if chunked else None
        chunks_added = 0
        total = len(pending)
        for start in range(0, max(total, 1), WRITE_BATCH_FILES):
            batch = pending[start : start + WRITE_BATCH_FILES]
            with store.transaction():
                if force:
                    # Chunk rows are rewritten under unchanged content keys: in-memory snapshots drop
                    # their base (snapshots.EPOCH_KEY).
                    store.set_meta("chunks_epoch", str(time.time_ns()))
                for item in batch:
                    records = chunked.get(item.row.content_key)
                    if records is not None and vocab is not None:
                        # Forced runs replace stored chunks content by content, inside each batch's
                        # transaction, so a killed run still leaves a usable index.
                        store.add_content(
                            item.row.content_key, item.row.language, records, vocab, replace=force
                        )
                        if graph_language(item.row.language):
                            self._store_graph(graphs, item.row, processed[item.row.content_key], force)
                        chunks_added += len(records)
                        del chunked[item.row.content_key]  # one content, stored once
                    store.upsert_file(branch, item.row)
            report("write", min(start + len(batch), total), total)
        with store.transaction():
            finish()
            problems.record(store, branch, [p.row.path for p in pending] + list(removed), found)
            if graph_enabled():
                # Edges are resolved later (Engine.refresh_graph), off the save path: only mark here, in
                # the same transaction as the files, so the marks can never be lost or run ahead.
                graphs.mark_dirty(
                    branch,
                    store.generation(),
                    changed=changed,
                    removed=removed,
                    old_names=old_names,
                    full=force,
                )
        self._rows_cache = None
        self._stored_cache = None
        return chunks_added

    def _store_graph(self, graphs: GraphStore, row: FileRow, done: ProcessedFile, force: bool) -> None:
        """The content's graph rows when extracted in the run; otherwise its pending mark for
        graph.extractor. Either way in the transaction of its chunks."""
        if self.extract_graph:
            if done.graph is not None:
                graphs.add_content(row.content_key, done.graph, replace=force)
            graphs.clear_pending([row.content_key])
        else:
            graphs.mark_pending([(row.content_key, row.language)])

    def _chunk_all(self, items: Sequence[_Pending], report: ProgressFn) -> dict[str, ProcessedFile]:
        work = [(p.row.path, p.text or "", p.row.language) for p in items]
        keys = [p.row.content_key for p in items]
        out: dict[str, ProcessedFile] = {}
        total = len(work)
        report("chunk", 0, total)
        if self.workers <= 1 or sum(len(item[1]) for item in work) < PARALLEL_THRESHOLD_BYTES:
            for i, (key, item) in enumerate(zip(keys, work, strict=True)):
                out[key] = process_file(*item, self.extract_graph)
                if (i + 1) % 50 == 0 or i + 1 == total:
                    report("chunk", i + 1, total)
            return out
        batches = list(_batches_by_size(work, keys, target_bytes=256 * 1024))
        done = 0
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=self.workers, mp_context=context) as pool:
            futures = [
                (batch_keys, pool.submit(_chunk_many, batch, self.extract_graph))
                for batch_keys, batch in batches
            ]
            for (batch_keys, future), (_, batch) in zip(futures, batches, strict=True):
                try:
                    results = future.result()
                except Exception as exc:  # the worker died or the pool broke: isolate the batch's files
                    results = _chunk_alone(batch, self.extract_graph, one_line(exc))
                for key, records in zip(batch_keys, results, strict=True):
                    out[key] = records
                done += len(batch_keys)
                report("chunk", done, total)
        return out


def _has_errors(skipped: Iterable[SkippedRow]) -> bool:
    return any(s.reason == "error" for s in skipped)


def _has_skips(store: Store, branch: str, paths: Iterable[str]) -> bool:
    """Whether any of `paths` has a stored skipped row (a path-level run must then rewrite them)."""
    return any(
        store.conn.execute("SELECT 1 FROM skipped WHERE branch=? AND path=?", (branch, p)).fetchone()
        for p in paths
    )


def _batches_by_size(
    work: Sequence[tuple[str, str, str]], keys: Sequence[str], *, target_bytes: int
) -> Iterator[tuple[list[str], list[tuple[str, str, str]]]]:
    """Group files into batches of roughly equal text size so both workers stay busy."""
    batch: list[tuple[str, str, str]] = []
    batch_keys: list[str] = []
    size = 0
    for key, item in zip(keys, work, strict=True):
        batch.append(item)
        batch_keys.append(key)
        size += len(item[1])
        if size >= target_bytes:
            yield batch_keys, batch
            batch, batch_keys, size = [], [], 0
    if batch:
        yield batch_keys, batch
