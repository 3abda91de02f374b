"""Vector retrieval over one branch: exact numpy search, and a usearch ANN index for big indexes.

`VectorSnapshot` holds a float32 row per document of the keyword snapshot (same doc numbering, so
filters' masks apply unchanged), filled from SQLite as embeddings land: `refresh` reads only rows newer
than the last one seen. Exact search (one matrix-vector product on one BLAS thread, no copy of the matrix
unless a filter keeps few rows) costs ~1.6 ms at 10k vectors and ~13 ms at 100k on this machine; above
`ANN_THRESHOLD` vectors a persisted usearch index (cosine, f16) answers instead, plus an exact pass over
vectors newer than the ANN file.

The ANN file lives in the index folder, is written atomically (temp file + rename) by the embedding side
(`AnnIndex.sync`, never by a search) and is rebuilt from SQLite, without re-embedding, when it is missing,
unreadable or disagrees with the database. `verify_vectors` (the health check) compares it with SQLite:
counts, plus a sample of ids whose stored vectors must match, and repairs or rebuilds it. Writers of the
file hold `ann.lock`, so a health check and the embedding job never interleave their saves.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import msgspec
import numpy as np

from .embedder import decode_vectors, ensure_tables
from .embeddings.blas_threads import single_blas_thread
from .private_files import chmod_private, make_private_dir, open_private, write_private
from .search import Hit
from .store import Store

# Measured (bench/bench_vectors.py, 384 d, one BLAS thread, loaded 2-core machine): exact search p50 1.6 ms
# at 10k vectors, 6.9 ms at 50k, 13 ms at 100k, 26 ms at 200k; usearch 0.7-0.9 ms throughout (recall@10
# 1.0) but it must be built (~750-1,600 vectors/s). From 40k on, exact search would eat a third of the
# 15 ms hybrid budget, so the embedding side builds the ANN index there.
ANN_THRESHOLD = 40_000
_OVERSAMPLE = 4
_GATHER_BELOW = 8  # exact search copies the allowed rows out when they are under 1/8 of all rows
ANN_LOCK_NAME = "ann.lock"
# Above this share of differing keys a repair would keep little of the old graph: rebuild instead.
_REPAIR_LIMIT = 0.1


def exact_top_k(
    matrix: np.ndarray, query: np.ndarray, k: int, allowed: np.ndarray | None
) -> list[tuple[int, float]]:
    """Top-k rows of `matrix` by dot product with `query` (cosine for unit vectors), best first.

    `allowed` is a boolean row mask (None = every row). Ties break by row number, so results are stable.

    >>> m = np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
    >>> [(r, round(s, 2)) for r, s in exact_top_k(m, np.array([1, 0], np.float32), 2, None)]
    [(0, 1.0), (2, 0.6)]
    """
    rows, scores = exact_top_k_arrays(matrix, query, k, allowed)
    # tolist() converts each array in one call (the same ints and floats as int()/float() per item).
    return list(zip(rows.tolist(), scores.tolist(), strict=True))


def exact_top_k_arrays(
    matrix: np.ndarray, query: np.ndarray, k: int, allowed: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray]:
    """`exact_top_k` as two arrays (rows, scores), without building a pair per row."""
    if k <= 0 or matrix.shape[0] == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    rows: np.ndarray | None = None
    # One BLAS thread: a matrix-vector product is memory-bound, and OpenBLAS's second thread made it 20x
    # slower (7k x 384: 16 ms vs 0.7 ms) whenever other work kept the cores busy (bench_vectors.py).
    with single_blas_thread():
        if allowed is None:
            scores = matrix @ query
        else:
            n_allowed = int(np.count_nonzero(allowed))
            if n_allowed == 0:
                return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
            if n_allowed * _GATHER_BELOW < matrix.shape[0]:
                rows = np.flatnonzero(allowed)  # few rows: copying them out beats scanning them all
                scores = matrix[rows] @ query
            else:  # most rows: scan all (no copy of the matrix) and rule the others out, if any
                scores = matrix @ query
                if n_allowed < matrix.shape[0]:
                    scores[~allowed] = -np.inf
                    k = min(k, n_allowed)
    k = min(k, scores.shape[0])
    top = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
    order = top[np.lexsort((top, -scores[top]))]
    picked = order if rows is None else rows[order]
    return picked, scores[order]


class VectorSnapshot:
    """Vectors for the documents of one keyword snapshot; documents without a vector are skipped."""

    def __init__(self, doc_hashes: Sequence[str], dimensions: int, model_id: str) -> None:
        self.model_id = model_id
        self.dimensions = dimensions
        self.matrix = np.zeros((len(doc_hashes), dimensions), dtype=np.float32)
        self.present = np.zeros(len(doc_hashes), dtype=bool)
        self._docs_of: dict[str, list[int]] = {}
        for doc, chunk_hash in enumerate(doc_hashes):
            self._docs_of.setdefault(chunk_hash, []).append(doc)
        self.docs_of_id: dict[int, list[int]] = {}  # embeddings.id -> documents
        self.last_id = 0
        self.ann: AnnIndex | None = None
        self.bad_rows = 0  # stored blobs of the wrong width, skipped (the health check deletes them)
        self._ann_stamp: tuple[int, int] | None = None

    def __len__(self) -> int:
        # count_nonzero: ~10x a bool sum, which widens to integers (a hybrid search asks up to three times).
        return int(np.count_nonzero(self.present))

    @property
    def n_docs(self) -> int:
        return int(self.present.shape[0])

    def add_rows(self, rows: Iterable[tuple[int, str, bytes]]) -> int:
        """Take (embedding id, chunk hash, float16 blob) rows; returns how many documents gained a vector."""
        ids: list[int] = []
        docs: list[list[int]] = []
        blobs: list[bytes] = []
        width = self.dimensions * 2
        for emb_id, chunk_hash, blob in rows:
            self.last_id = max(self.last_id, emb_id)
            targets = self._docs_of.get(chunk_hash)
            if targets and len(blob) != width:
                self.bad_rows += 1
            elif targets:
                ids.append(emb_id)
                docs.append(targets)
                blobs.append(blob)
        if not blobs:
            return 0
        vectors = decode_vectors(blobs, self.dimensions)
        added = 0
        for emb_id, targets, vector in zip(ids, docs, vectors, strict=True):
            self.docs_of_id[emb_id] = targets
            for doc in targets:
                added += int(not self.present[doc])
                self.matrix[doc] = vector
                self.present[doc] = True
        return added

    def refresh(self, store: Store) -> int:
        """Load embeddings committed since the last look; cheap when nothing is new."""
        ensure_tables(store.conn)
        rows = store.conn.execute(
            "SELECT id, chunk_hash, vector FROM embeddings WHERE model_id = ? AND id > ? ORDER BY id",
            (self.model_id, self.last_id),
        )
        return self.add_rows(rows)

    def reload_ann(self, index_dir: Path) -> bool:
        """Pick up an ANN file saved since the last look (by the embedding job or a health check); costs one
        stat when nothing changed. Returns whether the index was (re)loaded."""
        stamp = AnnIndex.stamp(index_dir, self.model_id)
        if stamp == self._ann_stamp:
            return False
        self._ann_stamp = stamp
        self.ann = AnnIndex.load(index_dir, self.model_id, self.dimensions) if stamp is not None else None
        return self.ann is not None

    def vector_of(self, doc: int) -> np.ndarray | None:
        return self.matrix[doc] if self.present[doc] else None

    def semantic_hits(
        self,
        query: np.ndarray,
        k: int,
        mask: np.ndarray | None = None,
        exclude: Callable[[int], bool] | None = None,
    ) -> list[Hit]:
        """Documents nearest to `query` by cosine, best first; `mask` filters, `exclude` drops single docs."""
        if k <= 0:
            return []
        docs, cosines = self.nearest(query, k + (8 if exclude is not None else 0), mask)
        found = zip(docs.tolist(), cosines.tolist(), strict=True)
        if exclude is None:
            return list(map(Hit._make, found))[:k]
        return [Hit(doc, score) for doc, score in found if not exclude(doc)][:k]

    def nearest(
        self, query: np.ndarray, k: int, mask: np.ndarray | None = None, searched: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """`semantic_hits` without `exclude`, as two arrays (documents, cosines), best first: a deep list
        (hybrid search's file vote reads a thousand) without a pair object per document. Over the ANN
        index the search asks for `searched` documents (default k; oversampled as `semantic_hits` does)
        and keeps every allowed one it finds, up to k: an ANN search for a thousand would cost several
        times one for the candidates, a longer exact scan only its sort."""
        if k <= 0 or not self.present.any():
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        allowed = self.present if mask is None else (self.present & mask)
        ann = self._usable_ann(allowed)
        if ann is None:
            return exact_top_k_arrays(self.matrix, query, k, allowed)
        found = self._ann_hits(ann, query, min(k, searched or k), allowed, keep=k)
        docs = np.fromiter((d for d, _ in found), np.int64, len(found))
        return docs, np.fromiter((s for _, s in found), np.float64, len(found))

    def _usable_ann(self, allowed: np.ndarray) -> AnnIndex | None:
        """The ANN index when it answers this search (a big index, a filter keeping enough of it)."""
        ann = self.ann
        if ann is not None and ann.size >= ANN_THRESHOLD and np.count_nonzero(allowed) >= ANN_THRESHOLD // 4:
            return ann
        return None

    def _ann_hits(
        self, ann: AnnIndex, query: np.ndarray, k: int, allowed: np.ndarray, keep: int | None = None
    ) -> list[tuple[int, float]]:
        """ANN over the persisted index, oversampling until k allowed docs turn up, plus an exact pass
        over documents whose vectors are newer than the index file; the best `keep` (default k) found."""
        scores: dict[int, float] = {}
        count = k * _OVERSAMPLE
        while True:
            keys, dists = ann.search(query, count)
            for key, dist in zip(keys, dists, strict=True):
                for doc in self.docs_of_id.get(int(key), ()):
                    if allowed[doc] and doc not in scores:
                        scores[doc] = 1.0 - float(dist)
            if len(scores) >= k or count >= ann.size:
                break
            count *= 4
        fresh = [doc for emb_id, docs in self.docs_of_id.items() if emb_id > ann.max_id for doc in docs]
        if fresh:
            tail = np.zeros(self.n_docs, dtype=bool)
            tail[fresh] = True
            for doc, score in exact_top_k(self.matrix, query, k, tail & allowed):
                scores.setdefault(doc, score)
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[: keep or k]


# -- the persisted ANN index ----------------------------------------------------------------------------


def usearch_index_class() -> Any:
    """usearch's `Index`, imported after onnxruntime: onnxruntime 1.32's native library crashes the
    process (SIGSEGV) when it loads after usearch's, which a sidecar opening a large index before its
    first query embedding did; the other order is fine. Without onnxruntime (numpy embeddings, remote
    providers) usearch loads alone."""
    with contextlib.suppress(ImportError):
        import onnxruntime  # noqa: F401
    from usearch.index import Index

    return Index


def _file_stem(model_id: str) -> str:
    return "vectors-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", model_id)


@contextlib.contextmanager
def ann_lock(index_dir: Path) -> Iterator[None]:
    """Serialise writers of the ANN file across threads and processes (readers never take it)."""
    make_private_dir(index_dir)
    fd = open_private(index_dir / ANN_LOCK_NAME)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _valid_rows(model_id: str, dimensions: int) -> tuple[str, tuple[str, int]]:
    """WHERE clause + parameters of the stored vectors usable for `model_id` (right blob width)."""
    return "model_id = ? AND length(vector) = ?", (model_id, dimensions * 2)


class AnnIndex:
    """A usearch index over every stored vector of one model, keyed by `embeddings.id`."""

    def __init__(self, index: object, model_id: str, dimensions: int, max_id: int, size: int) -> None:
        self._index = index
        self.model_id = model_id
        self.dimensions = dimensions
        self.max_id = max_id
        self.size = size

    @staticmethod
    def paths(index_dir: Path, model_id: str) -> tuple[Path, Path]:
        stem = _file_stem(model_id)
        return index_dir / f"{stem}.usearch", index_dir / f"{stem}.json"

    @classmethod
    def stamp(cls, index_dir: Path, model_id: str) -> tuple[int, int] | None:
        """(mtime_ns, inode) of the meta file, which is replaced last on every save; None when absent."""
        try:
            st = cls.paths(index_dir, model_id)[1].stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_ino

    def search(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        matches = self._index.search(query, min(count, self.size))  # type: ignore[attr-defined]
        return np.asarray(matches.keys), np.asarray(matches.distances)

    def keys(self) -> np.ndarray:
        return np.asarray(self._index.keys, dtype=np.uint64)  # type: ignore[attr-defined]

    def get(self, ids: Sequence[int]) -> list[np.ndarray | None]:
        """Stored vectors (float32) of these keys; None for a key the index lacks."""
        found = self._index.get(np.asarray(ids, dtype=np.uint64), dtype=np.float32)  # type: ignore[attr-defined]
        return list(found) if isinstance(found, tuple) else [found]

    @classmethod
    def load(cls, index_dir: Path, model_id: str, dimensions: int) -> AnnIndex | None:
        """The saved index if present and readable, else None (the caller searches exactly)."""
        Index = usearch_index_class()

        data_path, meta_path = cls.paths(index_dir, model_id)
        try:
            meta = json.loads(meta_path.read_text())
            if meta.get("model") != model_id or meta.get("dimensions") != dimensions:
                return None
            index = Index.restore(str(data_path), view=False)
        except (OSError, ValueError, RuntimeError):
            return None
        if index is None or len(index) != meta.get("size") or index.ndim != dimensions:
            return None
        return cls(index, model_id, dimensions, int(meta["maxId"]), len(index))

    @classmethod
    def sync(cls, store: Store, index_dir: Path, model_id: str, dimensions: int) -> tuple[AnnIndex, str]:
        """Bring the saved index up to date with SQLite: add new rows, repair a few missing or purged keys,
        or rebuild when missing, corrupt or far off. Returns the index and what was done ("current",
        "updated", "repaired", "rebuilt")."""
        with ann_lock(index_dir):
            return cls._sync(
                store, index_dir, model_id, dimensions, cls.load(index_dir, model_id, dimensions)
            )

    @classmethod
    def _sync(
        cls, store: Store, index_dir: Path, model_id: str, dimensions: int, current: AnnIndex | None
    ) -> tuple[AnnIndex, str]:
        """`sync` with the lock held and the saved index already loaded (None: rebuild from scratch)."""
        Index = usearch_index_class()

        ensure_tables(store.conn)
        where, params = _valid_rows(model_id, dimensions)
        max_id = store.conn.execute(
            f"SELECT COALESCE(MAX(id), 0) FROM embeddings WHERE {where}", params
        ).fetchone()[0]
        action = "current"
        if current is not None:
            covered = store.conn.execute(
                f"SELECT COUNT(*) FROM embeddings WHERE {where} AND id <= ?", (*params, current.max_id)
            ).fetchone()[0]
            if covered != current.size:
                action = "repaired" if current._repair(store, where, params) else "rebuilt"
                if action == "rebuilt":
                    current = None
        if current is None:
            index = Index(ndim=dimensions, metric="cos", dtype="f16")
            current = cls(index, model_id, dimensions, 0, 0)
            action = "rebuilt"
        if max_id > current.max_id:
            rows = store.conn.execute(
                f"SELECT id, vector FROM embeddings WHERE {where} AND id > ? ORDER BY id",
                (*params, current.max_id),
            )
            current._add_rows(rows)
            if action == "current":
                action = "updated"
        if action != "current":
            current._save(index_dir)
        return current, action

    def _repair(self, store: Store, where: str, params: tuple[str, int]) -> bool:
        """Make the keys up to `max_id` equal SQLite's ids (drop purged ones, add missing ones); False when
        so much differs that a rebuild is the better graph."""
        stored = np.fromiter(
            (
                r[0]
                for r in store.conn.execute(
                    f"SELECT id FROM embeddings WHERE {where} AND id <= ?", (*params, self.max_id)
                )
            ),
            dtype=np.uint64,
        )
        keys = self.keys()
        extra = np.setdiff1d(keys, stored, assume_unique=True)
        missing = np.setdiff1d(stored, keys, assume_unique=True)
        if extra.size + missing.size > max(16, _REPAIR_LIMIT * max(keys.size, stored.size)):
            return False
        if extra.size:
            self._index.remove(extra)  # type: ignore[attr-defined]
            self.size = len(self._index)  # type: ignore[arg-type]
        for start in range(0, missing.size, 500):
            part = [int(i) for i in missing[start : start + 500]]
            marks = ",".join("?" * len(part))
            self._add_rows(
                store.conn.execute(f"SELECT id, vector FROM embeddings WHERE id IN ({marks})", part)
            )
        return True

    def _add_rows(self, rows: Iterable[tuple[int, bytes]]) -> None:
        batch_ids: list[int] = []
        batch_blobs: list[bytes] = []
        for emb_id, blob in rows:
            batch_ids.append(emb_id)
            batch_blobs.append(blob)
            if len(batch_ids) >= 4096:
                self._add(batch_ids, batch_blobs)
                batch_ids, batch_blobs = [], []
        if batch_ids:
            self._add(batch_ids, batch_blobs)

    def _add(self, ids: list[int], blobs: list[bytes]) -> None:
        vectors = decode_vectors(blobs, self.dimensions)
        self._index.add(np.asarray(ids, dtype=np.uint64), vectors)  # type: ignore[attr-defined]
        self.max_id = max(self.max_id, max(ids))
        self.size = len(self._index)  # type: ignore[arg-type]

    def _save(self, index_dir: Path) -> None:
        data_path, meta_path = self.paths(index_dir, self.model_id)
        tmp_data = data_path.with_suffix(".usearch.tmp")
        tmp_meta = meta_path.with_suffix(".json.tmp")
        self._index.save(str(tmp_data))  # type: ignore[attr-defined]
        chmod_private(tmp_data)  # the library writes with the umask's mode
        meta = {
            "model": self.model_id,
            "dimensions": self.dimensions,
            "maxId": self.max_id,
            "size": self.size,
        }
        write_private(tmp_meta, json.dumps(meta).encode())
        # Data first, then the meta that vouches for it: a crash between the two leaves a mismatch the
        # next load detects (size check), never a wrong answer.
        os.replace(tmp_data, data_path)
        os.replace(tmp_meta, meta_path)

    @classmethod
    def remove(cls, index_dir: Path, model_id: str) -> None:
        with ann_lock(index_dir):
            for path in cls.paths(index_dir, model_id):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()


# -- verification (the health check) ----------------------------------------------------------------------


class VectorCheck(msgspec.Struct, rename="camel"):
    """What `verify_vectors` found and did: the vector part of `index_health_check`."""

    model: str
    dimensions: int
    stored: int  # usable vectors of the model in SQLite (after removing bad rows)
    bad_rows_removed: int  # blobs of the wrong width, deleted (their chunks are embedded again)
    ann: str  # "not needed" (exact search only), "ok", "updated", "repaired" or "rebuilt"
    ann_size: int  # vectors in the ANN index after the check (0 when not needed)
    sampled: int  # ids whose ANN vector was compared with SQLite
    mismatched: int  # of those, missing from the ANN index or holding another vector
    problems: list[str]  # what disagreed, in words; empty when everything agreed

    @property
    def ok(self) -> bool:
        return not self.problems


def sample_mismatches(ann: AnnIndex, store: Store, model_id: str, ids: Sequence[int]) -> int:
    """How many of `ids` the ANN index lacks or holds with a vector other than SQLite's."""
    if not ids:
        return 0
    marks = ",".join("?" * len(ids))
    blobs = dict(
        store.conn.execute(
            f"SELECT id, vector FROM embeddings WHERE model_id = ? AND id IN ({marks})", (model_id, *ids)
        )
    )
    wanted = [i for i in ids if i in blobs]
    stored = decode_vectors([blobs[i] for i in wanted], ann.dimensions)
    got = ann.get(wanted)
    bad = len(ids) - len(wanted)  # sampled ids that vanished meanwhile count as disagreement
    for expected, actual in zip(stored, got, strict=True):
        # Both sides hold the same float16 numbers, so any real difference is far above this tolerance.
        if actual is None or not np.allclose(actual, expected, atol=2e-3):
            bad += 1
    return bad


def verify_vectors(
    store: Store,
    index_dir: Path,
    model_id: str,
    dimensions: int,
    *,
    threshold: int = ANN_THRESHOLD,
    sample: int = 64,
    seed: int | None = None,
) -> VectorCheck:
    """Check the vectors of `model_id` against SQLite and fix what disagrees, never re-embedding anything.

    Stored rows of the wrong width are deleted (the next embedding run redoes them). The ANN file, when the
    index is big enough to use one (or one exists), must load, hold as many vectors as SQLite up to its
    last id, and return SQLite's vector for `sample` random ids; otherwise it is repaired or rebuilt from
    SQLite. Below `threshold` with no file, search is exact over SQLite's vectors: nothing else to check.
    """
    ensure_tables(store.conn)
    problems: list[str] = []
    with ann_lock(index_dir):
        wrong_width = "FROM embeddings WHERE model_id = ? AND length(vector) <> ?"
        bad_rows = int(
            store.conn.execute(f"SELECT COUNT(*) {wrong_width}", (model_id, dimensions * 2)).fetchone()[0]
        )
        if bad_rows:  # a clean check writes nothing
            with store.transaction():
                store.conn.execute(f"DELETE {wrong_width}", (model_id, dimensions * 2))
            problems.append(
                f"{bad_rows} stored vectors were not {dimensions}-dimensional (deleted; re-embedded)"
            )
        where, params = _valid_rows(model_id, dimensions)
        stored = int(
            store.conn.execute(f"SELECT COUNT(*) FROM embeddings WHERE {where}", params).fetchone()[0]
        )
        data_path, meta_path = AnnIndex.paths(index_dir, model_id)
        exists = data_path.exists() or meta_path.exists()
        current = AnnIndex.load(index_dir, model_id, dimensions) if exists else None
        sampled = mismatched = 0
        if current is None and not exists and stored < threshold:
            return VectorCheck(model_id, dimensions, stored, bad_rows, "not needed", 0, 0, 0, problems)
        if current is None:
            problems.append(
                "the ANN index file is unreadable or does not match its metadata"
                if exists
                else f"the ANN index file is missing ({stored} vectors need one)"
            )
        else:
            ids = [
                int(r[0])
                for r in store.conn.execute(
                    f"SELECT id FROM embeddings WHERE {where} AND id <= ?", (*params, current.max_id)
                )
            ]
            if len(ids) != current.size:
                problems.append(
                    f"the ANN index holds {current.size} vectors, SQLite {len(ids)} "
                    f"(ids up to {current.max_id})"
                )
            rng = random.Random(seed)
            picked = ids if len(ids) <= sample else rng.sample(ids, sample)
            sampled = len(picked)
            mismatched = sample_mismatches(current, store, model_id, picked)
            if mismatched:
                problems.append(f"{mismatched} of {sampled} sampled vectors differ from SQLite's")
                current = None  # vectors disagree: the file cannot be trusted, rebuild it whole
        ann, action = AnnIndex._sync(store, index_dir, model_id, dimensions, current)
    return VectorCheck(
        model=model_id,
        dimensions=dimensions,
        stored=stored,
        bad_rows_removed=bad_rows,
        ann="ok" if action == "current" else action,
        ann_size=ann.size,
        sampled=sampled,
        mismatched=mismatched,
        problems=problems,
    )
