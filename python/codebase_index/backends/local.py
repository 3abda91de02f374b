"""The local backend: candidates from this machine's indexes, one per repository (see `repos`).

Each repository's branch is read once per index generation into a `LocalView`: its chunks and their
BM25 term-frequency parts (`sparse.tf_weights`, postings by local term id). A query scores every
view with the IDF of the union of the searched repositories (`sparse.union_idf`), exactly what a
Qdrant collection holding those repositories computes, and takes vector candidates from each engine's
own vector snapshot (exact or ANN, as a single-repository search does). The single-repository search
(`Engine.search`) does not come through here and is unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..bm25 import PostingsIndex
from ..embedder import EmbeddingMismatchError
from ..search import Filters, normalize_directory
from ..service import Engine
from ..service.embedding import usable_vectors
from ..store import StoreError
from . import sparse
from .base import BackendError, Candidates, ChunkPayload, EmbedQuery, QueryInput, RepoInfo, point_id
from .federated import fuse_lists


class LocalView:
    """One repository branch's chunks with BM25 tf parts at `sparse.REFERENCE_LENGTH`."""

    def __init__(self, engine: Engine, name: str) -> None:
        self.name = name
        self.branch = engine.branch()
        self.generation = engine.store.generation()
        term_ids: list[np.ndarray] = []
        term_tfs: list[np.ndarray] = []
        rows: list[tuple[int, str, str, int, int, int, str, str, int]] = []
        lengths: list[int] = []
        # The store's vocabulary, extended here by name/path terms no text held (`sparse.field_terms`).
        self.vocab: dict[str, int] = dict(engine.store.conn.execute("SELECT term, id FROM terms"))
        next_id = max(self.vocab.values(), default=0) + 1
        for r in engine.store.iter_branch_postings(self.branch):
            rows.append(r[:9])
            extra = []
            for term in sparse.field_terms(r[7], r[1]):
                tid = self.vocab.get(term)
                if tid is None:
                    tid = self.vocab[term] = next_id
                    next_id += 1
                extra.append(tid)
            term_ids.append(np.concatenate([np.frombuffer(r[9], dtype=np.int32), np.array(extra, np.int32)]))
            term_tfs.append(
                np.concatenate([np.frombuffer(r[10], dtype=np.int32), np.ones(len(extra), np.int32)])
            )
            lengths.append(r[8] + len(extra))
        self.rows = rows
        # Postings hold idf x tf part (the local idf, a scalar per term): divided out per query term.
        self.postings = PostingsIndex.from_documents(
            term_ids,
            term_tfs,
            np.array(lengths, dtype=np.float32),
            k1=sparse.K1,
            b=sparse.B,
            avgdl=sparse.REFERENCE_LENGTH,
        )
        self.by_location = {(r[1], r[3]): n for n, r in enumerate(rows)}
        self._hashes: dict[int, str] | None = None
        self._engine = engine

    def __len__(self) -> int:
        return len(self.rows)

    def term_postings(self, term_id: int) -> tuple[np.ndarray, np.ndarray]:
        """(documents, BM25 tf parts) of one local term id."""
        index = self.postings
        if not 0 <= term_id < index.vocab_size:
            return np.zeros(0, np.int32), np.zeros(0, np.float64)
        start, end = int(index.indptr[term_id]), int(index.indptr[term_id + 1])
        if start == end:
            return np.zeros(0, np.int32), np.zeros(0, np.float64)
        parts = index.post_scores[start:end].astype(np.float64) / float(index.idf[term_id])
        return index.post_docs[start:end], parts

    def mask(self, filters: Filters) -> np.ndarray | None:
        if filters.is_empty():
            return None
        ext = "." + filters.file_type.lstrip(".").lower() if filters.file_type else None
        prefix = normalize_directory(filters.directory) if filters.directory else ""
        return np.fromiter(
            (
                (ext is None or r[1].lower().endswith(ext))
                and (not prefix or r[1].startswith(prefix))
                and (not filters.kind or r[6] == filters.kind)
                for r in self.rows
            ),
            dtype=bool,
            count=len(self.rows),
        )

    def hashes(self) -> dict[int, str]:
        if self._hashes is None:
            conn = self._engine.store.conn
            ids = sorted({r[0] for r in self.rows})
            found: dict[int, str] = {}
            for start in range(0, len(ids), 500):
                part = ids[start : start + 500]
                marks = ",".join("?" * len(part))
                found.update(conn.execute(f"SELECT id, chunk_hash FROM chunks WHERE id IN ({marks})", part))
            self._hashes = found
        return self._hashes

    def point_id(self, doc: int) -> str:
        row = self.rows[doc]
        return point_id(self.name, row[1], row[4], self.hashes().get(row[0], ""))

    def payloads(self, docs: Sequence[int]) -> list[ChunkPayload]:
        ids = [self.rows[d][0] for d in docs]
        marks = ",".join("?" * len(ids))
        conn = self._engine.store.conn
        texts = dict(conn.execute(f"SELECT id, text FROM chunks WHERE id IN ({marks})", ids)) if ids else {}
        hashes = self.hashes()
        out = []
        for d in docs:
            cid, path, language, _ordinal, start, end, kind, symbol, _n = self.rows[d]
            out.append(
                ChunkPayload(
                    repo=self.name,
                    path=path,
                    start_line=start,
                    end_line=end,
                    kind=kind,
                    symbol=symbol,
                    language=language,
                    content_hash=hashes.get(cid, ""),
                    text=texts.get(cid, ""),
                    branches=(self.branch,),
                    chunk_id=cid,
                )
            )
        return out


def _top(scores: np.ndarray, k: int) -> list[int]:
    positive = np.flatnonzero(scores > 0)
    if positive.shape[0] > k:
        part = np.argpartition(-scores[positive], k - 1)[:k]
        positive = positive[part]
    return positive.tolist()


class LocalBackend:
    """Multi-repository search over local indexes; `engines` maps repository name -> its engine."""

    name = "local"

    def __init__(self, engines: dict[str, Engine]) -> None:
        self.engines = engines
        self._views: dict[str, LocalView] = {}

    @classmethod
    def open(cls, entries: Sequence[RepoInfo]) -> LocalBackend:
        from ..repos import engine_for

        return cls({e.name: engine_for(e) for e in entries})

    def view(self, name: str) -> LocalView:
        engine = self.engines[name]
        found = self._views.get(name)
        if found is None or found.generation != engine.store.generation() or found.branch != engine.branch():
            found = LocalView(engine, name)
            self._views[name] = found
        return found

    def repos(self) -> list[RepoInfo]:
        out = []
        for name, engine in self.engines.items():
            counts = engine.store.counts(engine.branch()) if engine.has_index() else {"chunks": 0}
            out.append(
                RepoInfo(name=name, branch=engine.branch(), chunks=counts["chunks"], root=str(engine.root))
            )
        return out

    def model_id(self) -> str | None:
        for engine in self.engines.values():
            provider = engine.embedding_provider()
            if provider is not None:
                return provider.model_id
        return None

    def candidates(
        self, query: QueryInput, repos: Sequence[RepoInfo], filters: Filters, pool: int, embed: EmbedQuery
    ) -> Candidates:
        views = []
        for repo in repos:
            if repo.name not in self.engines:
                raise BackendError(f"repository {repo.name!r} has no local index here")
            try:
                views.append(self.view(repo.name))
            except StoreError as exc:
                raise BackendError(f"{repo.name}: {exc}") from exc
        keyword = self._keyword(query, views, filters, pool)
        semantic, notice = self._semantic(query, views, filters, pool, embed)
        strategy = "hybrid" if notice is None else "hybrid-partial" if semantic else "keyword-fallback"
        return Candidates(fuse_lists(keyword, semantic, query.rrf_k), strategy, notice)

    def _keyword(
        self, query: QueryInput, views: Sequence[LocalView], filters: Filters, pool: int
    ) -> list[tuple[ChunkPayload, float]]:
        per_view: list[list[tuple[float, np.ndarray, np.ndarray, str]]] = []
        df = dict.fromkeys(query.terms, 0)
        n_docs = 0
        for view in views:
            ids = view.vocab
            found = []
            for term, weight in zip(query.terms, query.weights, strict=True):
                if term in ids:
                    docs, parts = view.term_postings(ids[term])
                    if docs.shape[0]:
                        df[term] += int(docs.shape[0])
                        found.append((weight, docs, parts, term))
            n_docs += len(view)
            per_view.append(found)
        out: list[tuple[float, str, LocalView, int]] = []
        for view, found in zip(views, per_view, strict=True):
            if not found:
                continue
            scores = np.zeros(len(view), dtype=np.float64)
            for weight, docs, parts, term in found:
                scores[docs] += weight * sparse.union_idf(n_docs, df[term]) * parts
            mask = view.mask(filters)
            if mask is not None:
                scores[~mask] = 0.0
            for d in _top(scores, pool):
                out.append((float(scores[d]), "", view, d))
        return self._materialise(out, pool)

    def _semantic(
        self, query: QueryInput, views: Sequence[LocalView], filters: Filters, pool: int, embed: EmbedQuery
    ) -> tuple[list[tuple[ChunkPayload, float]], str | None]:
        out: list[tuple[float, str, LocalView, int]] = []
        reasons = []
        for view in views:
            engine = self.engines[view.name]
            snap = engine.snapshot()
            try:
                vecs, reason = usable_vectors(engine, snap, required=False)
            except EmbeddingMismatchError as exc:
                vecs, reason = None, str(exc)
            if vecs is None:
                reasons.append(f"{view.name}: {reason}")
                continue
            vector = embed(vecs.model_id)
            if vector is None:
                reasons.append(f"{view.name}: no embedding provider for {vecs.model_id}")
                continue
            for hit in vecs.semantic_hits(vector, pool, snap.candidate_mask(filters)):
                doc = snap.docs[hit.doc]
                n = view.by_location.get((doc.path, doc.ordinal))
                if n is not None:  # knowledge-base documents are not part of a repository's chunks
                    out.append((float(hit.score), "", view, n))
        notice = "vector search skipped for " + "; ".join(reasons) if reasons else None
        return self._materialise(out, pool), notice

    @staticmethod
    def _materialise(
        found: list[tuple[float, str, LocalView, int]], pool: int
    ) -> list[tuple[ChunkPayload, float]]:
        """The best `pool` of (score, view, doc) across repositories, ties by point id, with payloads."""
        keyed = [(score, view.point_id(doc), view, doc) for score, _, view, doc in found]
        keyed.sort(key=lambda item: (-item[0], item[1]))
        keyed = keyed[:pool]
        by_view: dict[int, tuple[LocalView, list[int]]] = {}
        for _, _, view, doc in keyed:
            by_view.setdefault(id(view), (view, []))[1].append(doc)
        payload_of: dict[tuple[int, int], ChunkPayload] = {}
        for key, (view, docs) in by_view.items():
            for doc, payload in zip(docs, view.payloads(docs), strict=True):
                payload_of[(key, doc)] = payload
        return [(payload_of[(id(view), doc)], score) for score, _, view, doc in keyed]

    def close(self) -> None:
        for engine in self.engines.values():
            engine.close()
