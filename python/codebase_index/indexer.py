"""The indexing pipeline: discover -> read -> chunk + tokenize (worker processes) -> store.

Stat-first change detection: a file whose size, mtime and inode are unchanged is not read; a changed file
whose content hash is already stored (another branch, another path, a touched file) is re-pointed, not
re-chunked. Writes go in batches of files, each one transaction. The per-file work (chunk, tokenize,
extract the graph; in worker processes for big batches) is `processing`; the stat-only re-check of the
last walk is `walk_cache`.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import msgspec

from . import embedder, literal_index, patterns, problems, processing, walk_cache
from . import files as discovery
from .chunking import language_for_path
from .config import Config
from .freshness import HEAD_META, head_commit
from .graph.store import EdgeRefresh, GraphStore
from .models import DiscoveredFile, SkippedFile
from .processing import (
    PassEmbedding,
    ProcessedFile,
    Work,
    chunk_slices,
    content_key,
    graph_enabled,
    graph_language,
    one_line,
)
from .store import FileRow, SkippedRow, Store

ProgressFn = Callable[[str, int, int], None]
log = logging.getLogger(__name__)

WRITE_BATCH_FILES = 200
READ_SLICE_BYTES = 2_000_000
"""Text read, chunked and written per slice of a run: what bounds a run's memory, whatever the project."""
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
    # Chunks embedded in this pass: an in-process model cheap enough (the static code model) embeds what
    # the run wrote before it returns; filled by the engine.
    embedded: int = 0


# Files no chunker knows (a type the user added with include/additionalInclude) are cut into line windows.
TEXT_LANGUAGE = "text"


class _Pending(msgspec.Struct):
    row: FileRow
    text: str | None  # None: content already stored, only the file row changes


class _WriteOutcome(msgspec.Struct):
    chunks_added: int
    files_written: int
    files_changed: int  # of those written, the ones whose content was read (not only re-stat'ed)
    vectors_added: int = 0  # chunks the pass model embedded beside chunking


def file_rules(root: Path, config: Config) -> discovery.FileRules:
    """The discovery rules a configuration asks for: what an index run, an estimate and a first-search
    file count all walk, so they agree on which files count."""
    return discovery.FileRules(
        root,
        include=config.include or None,
        additional_include=config.additional_include,
        exclude=config.exclude,
        max_file_size=config.indexing.max_file_size,
        include_secrets=config.include_secrets,
    )


class Indexer:
    """Brings one catalog (a branch, or a knowledge base) in the store up to date with the files under
    `root`. Keep one instance per root: it remembers the last walk and skip decisions so that a re-index
    with nothing changed costs one stat per file and no writes."""

    def __init__(self, root: Path, config: Config, store: Store, *, workers: int) -> None:
        self.root = root
        self.config = config
        self.store = store
        self.workers = workers
        self._scan: walk_cache.ScanCache | None = None
        # path -> (stat, skip): files that discovery passes but reading rejects (binary, generated).
        self._read_skips: dict[str, tuple[walk_cache.Stat, SkippedRow]] = {}
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
        # The model that embeds chunks in the run, beside chunking (set by the engine when the index's
        # model is the built-in static one); None leaves every vector to the embedding job.
        self.pass_embedding: PassEmbedding | None = None
        self._graph_errors = 0
        self._fallbacks = 0

    # -- discovery --------------------------------------------------------------------------------------

    def _rules_key(self) -> tuple[object, ...]:
        cfg = self.config
        return (
            cfg.include,
            cfg.additional_include,
            cfg.exclude,
            cfg.include_secrets,
            cfg.indexing.max_file_size,
        )

    def _new_rules(self) -> discovery.FileRules:
        return file_rules(self.root, self.config)

    def discover(self) -> discovery.DiscoveryResult:
        """The files to index: a stat-only re-check of the last walk when that is provably enough."""
        cached, self._rescan_clean = walk_cache.recheck(
            self._scan, self.root, self._rules_key(), self.config.indexing.max_file_size
        )
        if cached is not None:
            return cached
        rules = self._new_rules()
        self._rules = rules
        visited: list[str] = []
        scan_started = time.time_ns()
        found = rules.walk(visited)
        self._scan = walk_cache.record(rules, self._rules_key(), visited, found, scan_started)
        return found

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
        commit = head_commit(self.root)  # read before the walk: what this run's files can reflect
        report = progress or (lambda phase, done, total: None)
        self.last_graph = None
        self._graph_errors = 0
        self._fallbacks = 0
        with store.write_lock(timeout=LOCK_WAIT_S):
            report("discover", 0, 0)
            literal_index.ensure(store, locked=True)  # an index made before it existed gets it once
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
                _note_head(store, branch, commit)
                return self._report(branch, counts, 0, len(found.files), 0, 0, skipped, started)
            existing = self._stored_rows(branch, generation)
            skipped = [SkippedRow(s.path, s.reason, s.detail) for s in found.skipped]

            known: list[_Pending] = []  # content known from another branch's row: nothing to read
            to_read: list[tuple[DiscoveredFile, tuple[int, int, int, str, str] | None]] = []
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
                known_row = donor.get(entry.path)
                if known_row is not None and known_row[:3] == stat_now:
                    known.append(_Pending(FileRow(entry.path, *stat_now, known_row[3], known_row[4]), None))
                    continue
                known_skip = read_skips.get(entry.path)
                if known_skip is not None and known_skip[0] == stat_now and not force:
                    skipped.append(known_skip[1])
                    continue
                to_read.append((entry, old))
            removed = (
                sorted(set(existing) - {f.path for f in found.files}) if len(existing) > unchanged else []
            )
            stored_skipped, counts = self._stored_state(branch, generation)

            def idle() -> bool:
                """Nothing to write after all (every file read was skipped as before)."""
                return (
                    not removed
                    and not force
                    and frozenset(skipped) == stored_skipped
                    and store.has_catalog(branch)
                )

            if not to_read and not known and idle():
                self._synced = None if _has_errors(skipped) else (branch, generation)
                _note_head(store, branch, commit)
                return self._report(branch, counts, 0, unchanged, 0, 0, skipped, started)

            def read_slices() -> Iterator[list[_Pending]]:
                """The files to write, read a slice at a time (READ_SLICE_BYTES of text): a run holds a
                few slices' texts, never the project's."""
                if known:
                    yield known
                batch: list[_Pending] = []
                size = 0
                for entry, old in to_read:
                    item = self._prepare(entry, old, force)
                    if isinstance(item, SkippedRow):
                        if item.reason != "error":  # errors are retried by the next run
                            read_skips[entry.path] = ((entry.size, entry.mtime_ns, entry.inode), item)
                        skipped.append(item)
                        if old is not None:
                            removed.append(entry.path)  # indexed before, skipped now (binary, generated)
                    elif item is not None:
                        batch.append(item)
                        size += entry.size
                        if size >= READ_SLICE_BYTES:
                            yield batch
                            batch, size = [], 0
                if batch:
                    yield batch

            def finish() -> None:
                store.delete_files(branch, removed)
                store.purge_unreferenced_contents()
                store.replace_skipped(branch, skipped)
                store.mark_catalog(branch)
                store.set_meta(HEAD_META + branch, commit or "")  # what answers reflect
                store.set_meta("pipeline_version", PIPELINE_VERSION)
                store.bump_generation()

            outcome = self._write(
                store,
                branch,
                read_slices(),
                removed,
                skipped,
                finish,
                force,
                report,
                total=len(known) + len(to_read),
                parallel=sum(entry.size for entry, _ in to_read) >= processing.PARALLEL_THRESHOLD_BYTES,
                idle=idle,
            )
            if outcome is None:
                self._synced = None if _has_errors(skipped) else (branch, generation)
                return self._report(branch, counts, 0, unchanged, 0, 0, skipped, started)
            counts = store.counts(branch)
            # A run with errors is never "in sync": the next one must retry those files.
            self._synced = None if _has_errors(skipped) else (branch, store.generation())
        return self._report(
            branch,
            counts,
            outcome.files_changed,
            unchanged + outcome.files_written - outcome.files_changed,
            len(removed),
            outcome.chunks_added,
            skipped,
            started,
            embedded=outcome.vectors_added,
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
        # Read as answers read: a folder or file swapped for a link since the walk is not followed.
        text = discovery.read_inside(self.root, entry.path, None)
        if not isinstance(text, str):
            return SkippedRow(entry.path, text.reason, text.detail)
        rules = self._rules or self._new_rules()
        self._rules = rules
        made = rules.generated(entry.path, text)
        if made is not None:
            return SkippedRow(entry.path, "generated", made)
        secret = rules.secret(entry.path, text)
        if secret is not None:
            return SkippedRow(entry.path, "secret", secret)
        key = content_key(language, text)
        row = FileRow(entry.path, entry.size, entry.mtime_ns, entry.inode, key, language)
        if old is not None and old[3] == key and not force:
            return _Pending(row, None)  # touched but not changed
        return _Pending(row, text)

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
        *,
        embedded: int = 0,
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
            embedded=embedded,
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
                    if not discovery.is_text_name(rel):  # never stored: see files.is_text_name
                        found = rules.check(rel)
                        if isinstance(found, SkippedFile):
                            touched.add(found.path)
                            skipped.append(SkippedRow(found.path, found.reason, found.detail))
                        continue
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

                def finish() -> None:
                    store.delete_files(branch, removed)
                    store.purge_contents_if_unreferenced(old_keys)
                    store.update_skipped(branch, touched, skipped)
                    store.bump_generation()

                outcome = _WriteOutcome(0, 0, 0)
                if pending or removed or skipped or _has_skips(store, branch, touched):
                    text_bytes = sum(len(p.text or "") for p in pending)
                    outcome = (
                        self._write(
                            store,
                            branch,
                            [pending],
                            removed,
                            skipped,
                            finish,
                            False,
                            report,
                            total=len(pending),
                            parallel=text_bytes >= processing.PARALLEL_THRESHOLD_BYTES,
                        )
                        or outcome
                    )
                counts = store.counts(branch)
        if full:
            return self.run(branch, progress=progress)
        return self._report(
            branch,
            counts,
            outcome.files_changed,
            outcome.files_written - outcome.files_changed,
            len(removed),
            outcome.chunks_added,
            skipped,
            started,
            embedded=outcome.vectors_added,
        )

    # -- writing ------------------------------------------------------------------------------------------

    def _write(
        self,
        store: Store,
        branch: str,
        slices: Iterable[list[_Pending]],
        removed: list[str],
        skipped: list[SkippedRow],
        finish: Callable[[], None],
        force: bool,
        report: ProgressFn,
        *,
        total: int,
        parallel: bool,
        idle: Callable[[], bool] | None = None,
    ) -> _WriteOutcome | None:
        """Chunk what is new, slice by slice (the workers chunk the next slices while this one is
        written), then store its files, chunks, vectors and graph marks in batches, one transaction each;
        `finish` runs in the last transaction, after every slice. A file whose processing failed is not
        written: it goes to `skipped` (and its old row to `removed`), which `finish` sees. None (nothing
        written, `finish` not run) when no slice held a file and `idle()` says nothing else changed."""
        graphs = GraphStore(store.conn)
        embedding = self.pass_embedding
        seen: set[str] = set()  # content keys handed to the chunker in this run
        failed: dict[str, str] = {}
        found: list[SkippedRow] = []  # problems.REASONS rows of this run
        changed: list[str] = []
        old_keys: set[str] = set()  # what the changed paths held before: callers of those names re-resolve
        written_paths: list[str] = []
        outcome = _WriteOutcome(0, 0, 0)
        vocab = None
        clear_failures = embedding is not None and embedder.has_failures(store, embedding.model_id)

        def with_work(items: list[_Pending]) -> tuple[list[_Pending], Work]:
            """A slice and the contents in it that no earlier slice and no stored row holds."""
            fresh = {p.row.content_key for p in items if p.text is not None} - seen
            if not force:
                fresh -= store.known_contents(fresh)
            work: Work = []
            for item in items:
                key = item.row.content_key
                if key in fresh:
                    fresh.discard(key)
                    work.append((key, (item.row.path, item.text or "", item.row.language)))
            seen.update(key for key, _ in work)
            return items, work

        processed_slices = chunk_slices(
            (with_work(items) for items in slices),
            parallel=parallel,
            workers=self.workers,
            extract_graph=self.extract_graph,
            embedding=embedding,
            report=report,
            total=total,
        )
        for items, processed in processed_slices:
            path_of: dict[str, str] = {}
            for item in items:
                path_of.setdefault(item.row.content_key, item.row.path)
            for key, done in processed.items():
                path = path_of[key]
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
            # Before anything of this slice is overwritten: what its paths held (callers of a removed or
            # renamed symbol must be re-resolved too).
            before = graphs.branch_keys(branch, [p.row.path for p in items])
            kept: list[_Pending] = []
            for item in items:
                error = failed.get(item.row.content_key)
                if error is None:
                    kept.append(item)
                    continue
                # Contained: such a file gets no row (so the next run tries it again), its old row goes,
                # and it is listed under "error" with the exception's one line.
                log.warning("%s not indexed: %s", item.row.path, error)
                skipped.append(SkippedRow(item.row.path, "error", error))
                if item.row.path in before:
                    removed.append(item.row.path)
            for item in kept:
                old = before.get(item.row.path)
                if old != item.row.content_key:
                    changed.append(item.row.path)
                    if old is not None:
                        old_keys.add(old)
            if vocab is None and processed:
                vocab = store.vocabulary()
            for start in range(0, len(kept), WRITE_BATCH_FILES):
                batch = kept[start : start + WRITE_BATCH_FILES]
                with store.transaction():
                    if force:
                        # Chunk rows are rewritten under unchanged content keys: in-memory snapshots drop
                        # their base (snapshots.EPOCH_KEY).
                        store.set_meta("chunks_epoch", str(time.time_ns()))
                    for item in batch:
                        result = processed.get(item.row.content_key)
                        if result is not None and not result.error and vocab is not None:
                            del processed[item.row.content_key]  # one content, stored once
                            # Forced runs replace stored chunks content by content, inside each batch's
                            # transaction, so a killed run still leaves a usable index.
                            store.add_content(
                                item.row.content_key, item.row.language, result.records, vocab, replace=force
                            )
                            if embedding is not None and result.vectors:
                                outcome.vectors_added += embedder.insert_vectors(
                                    store,
                                    embedding.model_id,
                                    [r.chunk_hash for r in result.records],
                                    result.vectors,
                                    clear_failures=clear_failures,
                                )
                            if graph_language(item.row.language):
                                self._store_graph(graphs, item.row, result, force)
                            outcome.chunks_added += len(result.records)
                        store.upsert_file(branch, item.row)
                        written_paths.append(item.row.path)
                        outcome.files_written += 1
                        outcome.files_changed += item.text is not None
                report("write", len(written_paths), max(total, len(written_paths)))
        if not written_paths and idle is not None and idle():
            return None
        old_keys |= set(graphs.branch_keys(branch, removed).values())
        old_names = graphs.content_provides(old_keys)
        with store.transaction():
            finish()
            problems.record(store, branch, written_paths + list(removed), found)
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
        return outcome

    def _store_graph(self, graphs: GraphStore, row: FileRow, done: ProcessedFile, force: bool) -> None:
        """The content's graph rows when extracted in the run; otherwise its pending mark for
        graph.extractor. Either way in the transaction of its chunks."""
        if self.extract_graph:
            if done.graph is not None:
                graphs.add_content(row.content_key, done.graph, replace=force)
            graphs.clear_pending([row.content_key])
        else:
            graphs.mark_pending([(row.content_key, row.language)])


def _has_errors(skipped: Iterable[SkippedRow]) -> bool:
    return any(s.reason == "error" for s in skipped)


def _has_skips(store: Store, branch: str, paths: Iterable[str]) -> bool:
    """Whether any of `paths` has a stored skipped row (a path-level run must then rewrite them)."""
    return any(
        store.conn.execute("SELECT 1 FROM skipped WHERE branch=? AND path=?", (branch, p)).fetchone()
        for p in paths
    )


def _note_head(store: Store, branch: str, commit: str | None) -> None:
    """A run that found nothing to write still brings the catalog's commit up to date (a commit or a
    pull of what was already indexed): answers would otherwise call themselves stale."""
    if store.has_catalog(branch) and store.get_meta(HEAD_META + branch) != (commit or ""):
        store.set_meta(HEAD_META + branch, commit or "")
