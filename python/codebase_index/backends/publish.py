"""Publish a local index's branch to a shared backend, incrementally.

The local index already holds every chunk, its tokens and its vector; publishing embeds nothing that it
has (pending chunks are embedded first, as an index run would) and sends only what the collection lacks.
A point's id is a hash of (repo, path, start line, content hash), so:
- a chunk already in the collection (published by this machine or another one, for this branch or
  another) is not sent again: at most its `branches` payload gains this branch (`linked`);
- a changed file's chunks get new ids and are sent (`sent`); chunks this branch no longer has lose the
  branch, and are deleted when no branch is left (`deleted`, `unlinked`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import msgspec
import numpy as np

from ..embedder import META_DIMENSIONS, META_MODEL, decode_vectors, embedding_key
from ..service import Engine
from . import sparse
from .base import ChunkPayload, point_id
from .qdrant import QdrantBackend

BATCH = 256


class PublishReport(msgspec.Struct):
    repo: str
    branch: str
    target: str
    collection: str
    chunks: int  # the branch's chunks
    sent: int  # points uploaded (payload + vectors)
    linked: int  # already in the collection: only the branch added to their payload
    unchanged: int
    deleted: int
    unlinked: int  # still used by another branch: only this branch removed
    without_vector: int  # sent with the sparse vector only (not embedded locally)
    model: str | None
    seconds: float


def _term_hashes(engine: Engine) -> np.ndarray:
    rows = engine.store.conn.execute("SELECT id, term FROM terms").fetchall()
    top = max((i for i, _ in rows), default=0)
    out = np.zeros(top + 1, dtype=np.int64)
    for i, term in rows:
        out[i] = sparse.term_index(term)
    return out


def chunk_payload(row: tuple, repo: str, text: str, branches: tuple[str, ...]) -> ChunkPayload:
    """The payload of one chunk row as `publish` reads it from the store (id, path, language, start and
    end line, kind, symbol, n_tokens, term ids, term frequencies, chunk hash)."""
    return ChunkPayload(
        repo=repo,
        path=row[1],
        start_line=row[3],
        end_line=row[4],
        kind=row[5],
        symbol=row[6],
        language=row[2],
        content_hash=row[10],
        text=text,
        branches=branches,
    )


def publish(
    engine: Engine,
    backend: QdrantBackend,
    repo: str,
    *,
    embed: bool = True,
    progress: Callable[[str, int, int], None] | None = None,
    branch: str | None = None,
) -> PublishReport:
    """Send `engine`'s current branch (or the index's catalog `branch`) to `backend` as repository `repo`
    (see the module docstring)."""
    start = time.perf_counter()
    if not engine.has_index():
        engine.index()
    if embed:
        engine.embed()  # only chunks without a vector; nothing already embedded is embedded again
    store = engine.store
    branch = branch or engine.branch()
    model = store.get_meta(META_MODEL)
    dims_meta = store.get_meta(META_DIMENSIONS)
    dims = int(dims_meta) if dims_meta else None
    backend.ensure_collection(dims)
    rows = store.conn.execute(
        """SELECT c.id, f.path, f.language, c.start_line, c.end_line, c.kind, c.symbol, c.n_tokens,
                  c.term_ids, c.term_tfs, c.chunk_hash
           FROM files f JOIN chunks c ON c.content_key = f.content_key
           WHERE f.branch = ? ORDER BY f.path, c.ordinal""",
        (branch,),
    ).fetchall()
    wanted: dict[str, tuple] = {}
    for r in rows:
        wanted.setdefault(point_id(repo, r[1], r[3], r[10]), r)
    existing = backend.branch_map(repo)
    to_send = [pid for pid in wanted if pid not in existing]
    to_link = [
        (pid, [*existing[pid], branch]) for pid in wanted if pid in existing and branch not in existing[pid]
    ]
    stale = [(pid, b) for pid, b in existing.items() if branch in b and pid not in wanted]
    to_delete = [pid for pid, b in stale if set(b) == {branch}]
    to_unlink = [(pid, [x for x in b if x != branch]) for pid, b in stale if set(b) != {branch}]
    hashes = _term_hashes(engine) if to_send else np.zeros(0, np.int64)
    without_vector = 0
    for begin in range(0, len(to_send), BATCH):
        batch = [wanted[pid] for pid in to_send[begin : begin + BATCH]]
        texts = _texts(engine, [r[0] for r in batch])
        vectors = _vectors(engine, batch, model, dims)
        without_vector += sum(v is None for v in vectors)
        chunks = [chunk_payload(r, repo, texts.get(r[0], ""), (branch,)) for r in batch]
        sparse_vectors = [_sparse_of(r, hashes) for r in batch]
        backend.upsert(chunks, vectors, sparse_vectors)
        if progress is not None:
            progress("publish", min(begin + BATCH, len(to_send)), len(to_send))
    backend.set_branches([*to_link, *to_unlink])
    backend.delete(to_delete)
    backend.record_repo(repo, branch, len(wanted), model)
    return PublishReport(
        repo=repo,
        branch=branch,
        target=backend.location,
        collection=backend.collection,
        chunks=len(wanted),
        sent=len(to_send),
        linked=len(to_link),
        unchanged=len(wanted) - len(to_send) - len(to_link),
        deleted=len(to_delete),
        unlinked=len(to_unlink),
        without_vector=without_vector,
        model=model,
        seconds=round(time.perf_counter() - start, 3),
    )


def _sparse_of(row: tuple, hashes: np.ndarray) -> tuple[list[int], list[float]]:
    """A chunk's sparse vector: its text's terms (local ids -> `sparse.term_index`) plus its name's and
    path's (`sparse.field_terms`), at the length of all of them (as `local.LocalView` scores it)."""
    extra = sparse.field_terms(row[6], row[1])
    indices = np.concatenate(
        [
            hashes[np.frombuffer(row[8], np.int32).astype(np.int64)],
            np.array([sparse.term_index(t) for t in extra], dtype=np.int64),
        ]
    )
    tfs = np.concatenate([np.frombuffer(row[9], np.int32), np.ones(len(extra), np.int32)])
    return sparse.sparse_vector(indices, tfs, row[7] + len(extra))


def _texts(engine: Engine, ids: Sequence[int]) -> dict[int, str]:
    marks = ",".join("?" * len(ids))
    return dict(engine.store.conn.execute(f"SELECT id, text FROM chunks WHERE id IN ({marks})", list(ids)))


def _vectors(
    engine: Engine, batch: Sequence[tuple], model: str | None, dims: int | None
) -> list[np.ndarray | None]:
    """The stored vector of each row (by its embedding key), None where the chunk has none."""
    if model is None or dims is None:
        return [None] * len(batch)
    keys = [embedding_key(r[1], r[6], r[5], r[10]) for r in batch]
    unique = list(dict.fromkeys(keys))
    marks = ",".join("?" * len(unique))
    found = engine.store.conn.execute(
        f"SELECT chunk_hash, vector FROM embeddings WHERE model_id = ? AND chunk_hash IN ({marks})",
        (model, *unique),
    ).fetchall()
    good = [(k, b) for k, b in found if len(b) == dims * 2]
    decoded = decode_vectors([b for _, b in good], dims) if good else np.zeros((0, dims), np.float32)
    by_key = {k: decoded[n] for n, (k, _) in enumerate(good)}
    return [by_key.get(k) for k in keys]
