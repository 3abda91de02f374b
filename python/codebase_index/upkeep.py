"""Index upkeep: garbage collection (stale branches, removed knowledge bases, orphaned contents and
embeddings), the automatic GC policy, and the cost estimate of an index run.

Kept apart from `service.Engine` (which calls in here) because none of it is on the search path.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

import msgspec

from . import git, knowledge
from .config import Config
from .store import IndexLockedError, Store

META_LAST_GC = "last_gc_at"

# US$ per 1M input tokens, list prices of each provider's default embedding model (checked 2025-06;
# local models cost nothing). Only a guide: the estimate counts tokens as characters / 4.
PRICES_PER_MTOK: dict[str, tuple[str, float | None]] = {
    "openai": ("text-embedding-3-small", 0.02),
    "openai-large": ("text-embedding-3-large", 0.13),
    "google": ("gemini-embedding-001", 0.15),
    "ollama": ("nomic-embed-text (local)", 0.0),
    "embedded": ("code-static (bundled, local)", 0.0),
    "custom": ("your endpoint", None),
}
CHARS_PER_TOKEN = 4


class GcReport(msgspec.Struct, rename="camel"):
    stale_catalogs: list[str]
    files_removed: int
    contents_removed: int
    embeddings_removed: int | None  # None: the store has no embeddings table
    seconds: float


class Estimate(msgspec.Struct, rename="camel"):
    files: int
    bytes: int
    files_to_index: int
    files_to_remove: int
    chunks: int
    chunks_to_embed: int
    tokens: int
    tokens_to_embed: int
    cost_usd: dict[str, float | None]
    skipped: dict[str, int]


def live_catalogs(root: Path, config: Config, store: Store) -> set[str] | None:
    """Catalog names that must be kept; None when the branches cannot be known (not a git checkout):
    then only knowledge-base catalogs are collected."""
    kbs = {kb.catalog for kb in knowledge.list_knowledge_bases(root, config, store)}
    branches = git.local_branches(root)
    if branches is None:
        return None
    return branches | git.worktree_heads(root) | {git.current_branch(root)} | kbs


def stale_catalogs(root: Path, config: Config, store: Store) -> list[str]:
    """Branches whose ref is gone (and detached commits no worktree has checked out), and knowledge
    bases no longer registered."""
    catalogs = store.branches()
    kbs = {kb.catalog for kb in knowledge.list_knowledge_bases(root, config, store)}
    live = live_catalogs(root, config, store)
    out = []
    for name in sorted(catalogs):
        if knowledge.is_catalog(name):
            if name not in kbs:
                out.append(name)
        elif live is not None and name not in live:
            out.append(name)
    return out


def _has_table(store: Store, name: str) -> bool:
    row = store.conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone()
    return row is not None


def collect_garbage(root: Path, config: Config, store: Store) -> GcReport:
    """Remove everything no live catalog refers to. Takes the writer lock (waits up to 3 s)."""
    started = time.perf_counter()
    with store.write_lock(timeout=3.0), store.transaction():
        stale = stale_catalogs(root, config, store)
        files_removed = sum(store.delete_catalog(name) for name in stale)
        contents_removed = store.purge_unreferenced_contents()
        embeddings_removed: int | None = None
        if _has_table(store, "embeddings"):
            from .embedder import purge_orphan_embeddings  # numpy: not on the CLI's start-up path

            embeddings_removed = purge_orphan_embeddings(store)
        store.set_meta(META_LAST_GC, f"{time.time():.3f}")
        if stale or contents_removed or embeddings_removed:
            store.bump_generation()
    return GcReport(stale, files_removed, contents_removed, embeddings_removed, time.perf_counter() - started)


def orphan_count(root: Path, config: Config, store: Store) -> int:
    """Rows GC would remove: files of stale catalogs plus unreferenced contents."""
    catalogs = store.branches()
    stale = stale_catalogs(root, config, store)
    return sum(catalogs.get(name, 0) for name in stale) + store.count_unreferenced_contents()


def auto_gc_due(root: Path, config: Config, store: Store, *, now: float | None = None) -> bool:
    """`indexing.autoGc` policy: every `gcIntervalDays`, or sooner once `gcOrphanThreshold` orphans
    piled up (checked by the caller only after runs that changed something, to keep no-change runs
    free)."""
    cfg = config.indexing
    if not cfg.auto_gc:
        return False
    last = float(store.get_meta(META_LAST_GC) or 0.0)
    now = time.time() if now is None else now
    if last == 0.0:
        _start_gc_clock(store, now)
        return False
    if now - last >= cfg.gc_interval_days * 86400:
        return True
    return orphan_count(root, config, store) >= max(1, cfg.gc_orphan_threshold)


def _start_gc_clock(store: Store, now: float) -> None:
    """Start the GC clock at the first check, so a fresh index is not collected at once."""
    try:
        with store.write_lock(timeout=0), store.transaction():
            if store.get_meta(META_LAST_GC) is None:
                store.set_meta(META_LAST_GC, f"{now:.3f}")
    except IndexLockedError:
        return  # someone else writes; the next check starts the clock


# The estimate chunks new or changed files for real (exact counts) up to this much text, then extrapolates
# the rest by the chunks and characters per byte it measured (the chunker runs at ~3 MB/s per core).
ESTIMATE_CHUNK_BYTES = 16_000_000


def _sample_order(path: str) -> bytes:
    """A fixed spread over the tree (not its first folders) for the files chunked when over budget."""
    return hashlib.blake2b(path.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def estimate(
    root: Path,
    config: Config,
    store: Store | None,
    branch: str,
    *,
    force: bool = False,
    pending: Mapping[str, tuple[int, int]] | None = None,
) -> Estimate:
    """What an index run would do and what embedding it would cost, without writing or embedding anything.
    Stored contents give exact chunk and token counts; new or changed files are read and chunked as the
    index run would (same reader, generated-file test and chunker, so the counts match it) up to
    ESTIMATE_CHUNK_BYTES, and the rest is extrapolated from what that measured. To embed: the new
    chunks, and those of unchanged files still waiting for a vector (`pending`, per path: chunks and
    characters, `embedder.pending_by_path`)."""
    from . import files as discovery
    from .chunking import chunk_text, language_for_path
    from .indexer import file_rules

    rules = file_rules(root, config)
    found = rules.walk()
    skipped = Counter(s.reason for s in found.skipped)
    existing = store.file_stats(branch) if store is not None else {}
    known_chars: dict[str, tuple[int, int]] = {}
    if store is not None:
        rows = store.conn.execute(
            """SELECT f.content_key, COUNT(c.id), COALESCE(SUM(LENGTH(c.text)), 0)
               FROM files f JOIN chunks c ON c.content_key = f.content_key
               WHERE f.branch = ? GROUP BY f.content_key""",
            (branch,),
        )
        known_chars = {key: (int(n), int(chars)) for key, n, chars in rows}
    chunks = chunks_new = chars = chars_new = changed = 0
    to_chunk = []
    kept = waiting = waiting_chars = 0  # unchanged files, and their chunks still without a vector
    for entry in found.files:
        old = existing.get(entry.path)
        if not force and old is not None and old[:3] == (entry.size, entry.mtime_ns, entry.inode):
            n, c = known_chars.get(old[3], (0, 0))
            chunks += n
            chars += c
            kept += 1
            n, c = (pending or {}).get(entry.path, (0, 0))
            waiting += n
            waiting_chars += c
        else:
            to_chunk.append(entry)
    to_chunk.sort(key=lambda e: _sample_order(e.path))
    budget = ESTIMATE_CHUNK_BYTES
    sampled_bytes = sampled_chunks = sampled_chars = 0
    rest: list[int] = []  # sizes of the files left to extrapolate
    for entry in to_chunk:
        if budget <= 0:
            rest.append(entry.size)
            continue
        budget -= entry.size
        text = discovery.read_text(entry.abs_path, entry.path, max_size=config.indexing.max_file_size)
        if not isinstance(text, str):
            skipped[text.reason] += 1
            continue
        if rules.generated(entry.path, text) is not None:
            skipped["generated"] += 1
            continue
        if rules.secret(entry.path, text) is not None:
            skipped["secret"] += 1
            continue
        try:
            spans = chunk_text(entry.path, text, language_for_path(entry.path) or "text")
        except Exception:  # the run would skip it as "error" too
            skipped["error"] += 1
            continue
        changed += 1
        n, c = len(spans), sum(len(span.text) for span in spans)
        sampled_bytes += entry.size
        sampled_chunks += n
        sampled_chars += c
        chunks_new += n
        chars_new += c
    if rest:
        per_byte = sampled_chunks / sampled_bytes if sampled_bytes else 1 / 600
        chars_per_byte = sampled_chars / sampled_bytes if sampled_bytes else 1.0
        changed += len(rest)
        for size in rest:
            chunks_new += max(1, round(size * per_byte))
            chars_new += round(size * chars_per_byte)
    chunks += chunks_new
    chars += chars_new
    files = kept + changed
    tokens = chars // CHARS_PER_TOKEN
    tokens_new = (chars_new + waiting_chars) // CHARS_PER_TOKEN
    cost = {
        name: (None if price is None else round(tokens_new / 1_000_000 * price, 4))
        for name, (_, price) in PRICES_PER_MTOK.items()
    }
    return Estimate(
        files=files,
        bytes=sum(f.size for f in found.files),
        files_to_index=changed,
        files_to_remove=len(set(existing) - {f.path for f in found.files}),
        chunks=chunks,
        chunks_to_embed=chunks_new + waiting,
        tokens=tokens,
        tokens_to_embed=tokens_new,
        cost_usd=cost,
        skipped=dict(skipped),
    )
