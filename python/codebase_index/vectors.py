"""Vector retrieval over one branch: exact numpy search, and a usearch ANN index for big indexes.

`VectorSnapshot` holds a float32 row per document of the keyword snapshot (same doc numbering, so
filters' masks apply unchanged), filled from SQLite as embeddings land: `refresh` reads only rows newer
than the last one seen. Exact search (one matrix-vector product) costs ~2.7 ms at 10k vectors and ~27 ms
at 100k on this machine; above `ANN_THRESHOLD` vectors a persisted usearch index (cosine, f16) answers
instead, plus an exact pass over vectors newer than the ANN file.

The ANN file lives in the index folder, is written atomically (temp file + rename) by the embedding side
(`AnnIndex.sync`, never by a search) and is rebuilt from SQLite, without re-embedding, when it is missing,
unreadable or disagrees with the database.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .embedder import decode_vectors, ensure_tables
from .store import Store

# Measured crossover (bench/bench_vectors.py): below this many vectors exact search is as fast as ANN
# and needs no index build (usearch builds ~600-1,200 vectors/s here).
ANN_THRESHOLD = 60_000
_OVERSAMPLE = 4


class Hit(NamedTuple):
    doc: int
    score: float


def exact_top_k(
    matrix: np.ndarray, query: np.ndarray, k: int, allowed: np.ndarray | None
) -> list[tuple[int, float]]:
    """Top-k rows of `matrix` by dot product with `query` (cosine for unit vectors), best first.

    `allowed` is a boolean row mask (None = every row). Ties break by row number, so results are stable.

    >>> m = np.array([[1, 0], [0, 1], [0.6, 0.8]], dtype=np.float32)
    >>> [(r, round(s, 2)) for r, s in exact_top_k(m, np.array([1, 0], np.float32), 2, None)]
    [(0, 1.0), (2, 0.6)]
    """
    if k <= 0 or matrix.shape[0] == 0:
        return []
    if allowed is not None:
        rows = np.flatnonzero(allowed)
        if rows.size == 0:
            return []
        scores = matrix[rows] @ query
    else:
        rows = None
        scores = matrix @ query
    k = min(k, scores.shape[0])
    top = np.argpartition(-scores, k - 1)[:k] if k < scores.shape[0] else np.arange(scores.shape[0])
    order = top[np.lexsort((top, -scores[top]))]
    picked = order if rows is None else rows[order]
    return [(int(r), float(s)) for r, s in zip(picked, scores[order], strict=True)]


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

    def __len__(self) -> int:
        return int(self.present.sum())

    @property
    def n_docs(self) -> int:
        return int(self.present.shape[0])

    def add_rows(self, rows: Iterable[tuple[int, str, bytes]]) -> int:
        """Take (embedding id, chunk hash, float16 blob) rows; returns how many documents gained a vector."""
        ids: list[int] = []
        docs: list[list[int]] = []
        blobs: list[bytes] = []
        for emb_id, chunk_hash, blob in rows:
            self.last_id = max(self.last_id, emb_id)
            targets = self._docs_of.get(chunk_hash)
            if targets:
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
        if k <= 0 or not self.present.any():
            return []
        allowed = self.present if mask is None else (self.present & mask)
        want = k + (8 if exclude is not None else 0)
        ann = self.ann
        if ann is not None and ann.size >= ANN_THRESHOLD and int(allowed.sum()) >= ANN_THRESHOLD // 4:
            found = self._ann_hits(ann, query, want, allowed)
        else:
            found = exact_top_k(self.matrix, query, want, allowed)
        hits = [Hit(doc, score) for doc, score in found if exclude is None or not exclude(doc)]
        return hits[:k]

    def _ann_hits(
        self, ann: AnnIndex, query: np.ndarray, k: int, allowed: np.ndarray
    ) -> list[tuple[int, float]]:
        """ANN over the persisted index, oversampling until k allowed docs turn up, plus an exact pass
        over documents whose vectors are newer than the index file."""
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
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]


# -- the persisted ANN index ----------------------------------------------------------------------------


def _file_stem(model_id: str) -> str:
    return "vectors-" + re.sub(r"[^A-Za-z0-9_.-]+", "_", model_id)


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

    def search(self, query: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
        matches = self._index.search(query, min(count, self.size))  # type: ignore[attr-defined]
        return np.asarray(matches.keys), np.asarray(matches.distances)

    @classmethod
    def load(cls, index_dir: Path, model_id: str, dimensions: int) -> AnnIndex | None:
        """The saved index if present and readable, else None (the caller searches exactly)."""
        from usearch.index import Index

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
        """Bring the saved index up to date with SQLite: add new rows, or rebuild when missing, corrupt or
        inconsistent (rows deleted). Returns the index and what was done ("current", "updated", "rebuilt")."""
        from usearch.index import Index

        ensure_tables(store.conn)
        max_id = store.conn.execute(
            "SELECT COALESCE(MAX(id), 0) FROM embeddings WHERE model_id = ?", (model_id,)
        ).fetchone()[0]
        current = cls.load(index_dir, model_id, dimensions)
        action = "current"
        if current is not None:
            covered = store.conn.execute(
                "SELECT COUNT(*) FROM embeddings WHERE model_id = ? AND id <= ?", (model_id, current.max_id)
            ).fetchone()[0]
            if covered != current.size:
                current = None  # rows were purged or the file belongs to another database
        if current is None:
            index = Index(ndim=dimensions, metric="cos", dtype="f16")
            current = cls(index, model_id, dimensions, 0, 0)
            action = "rebuilt"
        if max_id > current.max_id:
            rows = store.conn.execute(
                "SELECT id, vector FROM embeddings WHERE model_id = ? AND id > ? ORDER BY id",
                (model_id, current.max_id),
            )
            batch_ids: list[int] = []
            batch_blobs: list[bytes] = []
            for emb_id, blob in rows:
                batch_ids.append(emb_id)
                batch_blobs.append(blob)
                if len(batch_ids) >= 4096:
                    current._add(batch_ids, batch_blobs)
                    batch_ids, batch_blobs = [], []
            if batch_ids:
                current._add(batch_ids, batch_blobs)
            if action == "current":
                action = "updated"
        if action != "current":
            current._save(index_dir)
        return current, action

    def _add(self, ids: list[int], blobs: list[bytes]) -> None:
        vectors = decode_vectors(blobs, self.dimensions)
        self._index.add(np.asarray(ids, dtype=np.uint64), vectors)  # type: ignore[attr-defined]
        self.max_id = max(self.max_id, max(ids))
        self.size += len(ids)

    def _save(self, index_dir: Path) -> None:
        data_path, meta_path = self.paths(index_dir, self.model_id)
        tmp_data = data_path.with_suffix(".usearch.tmp")
        tmp_meta = meta_path.with_suffix(".json.tmp")
        self._index.save(str(tmp_data))  # type: ignore[attr-defined]
        meta = {
            "model": self.model_id,
            "dimensions": self.dimensions,
            "maxId": self.max_id,
            "size": self.size,
        }
        tmp_meta.write_text(json.dumps(meta))
        # Data first, then the meta that vouches for it: a crash between the two leaves a mismatch the
        # next load detects (size check), never a wrong answer.
        os.replace(tmp_data, data_path)
        os.replace(tmp_meta, meta_path)

    @classmethod
    def remove(cls, index_dir: Path, model_id: str) -> None:
        for path in cls.paths(index_dir, model_id):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
