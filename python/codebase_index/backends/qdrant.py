"""The Qdrant backend: one collection per organisation or workspace holds every published chunk of every
repository and branch, with its payload, a dense vector (the index's embedding model) and a sparse BM25
vector made by our tokenizer (`sparse`: term-frequency parts; the collection's `idf` modifier supplies
the corpus statistics). A search asks for hybrid candidates in one request, a sparse and a dense
prefetch fused by reciprocal rank; ranking and formatting then run here (`federated`).

Addresses: `qdrant://HOST:PORT[/collection]` (`qdrants://` for TLS) or `http(s)://HOST:PORT`, and
`qdrant+local://PATH[#collection]` for qdrant-client's embedded store (one process at a time holds it).
A second, vector-less collection `<collection>-repos` lists the published repositories: branch last
published (searched by default), model, chunk count.

Filters run inside each prefetch (qdrant-client's embedded mode ignored a top-level filter on fusion
queries: qdrant/qdrant-client#1372); repository and branch are filtered as one `should` of (repo, branch).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np

from ..search import Filters, normalize_directory
from . import sparse
from .base import BackendError, Candidates, ChunkPayload, EmbedQuery, QueryInput, RepoInfo

DENSE = "dense"
SPARSE = "bm25"
DEFAULT_COLLECTION = "codebase"
PAYLOAD_KEYS = ("repo", "branches", "path", "start_line", "end_line", "kind", "symbol", "language")
# Indexed on a server so filters stay fast at millions of points (the embedded store scans).
INDEXED_KEYS = ("repo", "branches", "kind", "ext", "dirs", "content_hash")


def parse_target(url: str, collection: str | None = None) -> tuple[dict[str, Any], str, str]:
    """(QdrantClient keyword arguments, display location, collection) of a backend address.

    >>> parse_target("qdrant://db.internal:6333/acme")[1:]
    ('http://db.internal:6333', 'acme')
    >>> parse_target("qdrant+local:///tmp/store#team")[1:]
    ('/tmp/store', 'team')
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "qdrant+local":
        path = (parts.netloc + parts.path) or "."
        store = str(Path(path).expanduser())
        return {"path": store}, store, collection or parts.fragment or DEFAULT_COLLECTION
    if scheme in ("qdrant", "qdrants", "http", "https"):
        if not parts.hostname:
            raise BackendError(f"backend address {url!r} names no host (qdrant://HOST:PORT[/collection])")
        http = "https" if scheme in ("qdrants", "https") else "http"
        port = parts.port or 6333
        name = parts.path.strip("/") or None
        location = f"{http}://{parts.hostname}:{port}"
        return {"url": location}, location, collection or name or DEFAULT_COLLECTION
    raise BackendError(
        f"unknown backend address {url!r}: use qdrant://HOST:PORT[/collection] or qdrant+local://PATH"
    )


def _dirs(path: str) -> list[str]:
    """Every folder prefix of a path, as the directory filter matches it: `src/`, `src/api/`."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: n + 1]) + "/" for n in range(len(parts))]


def _ext(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    return "." + name.rsplit(".", 1)[-1].lower() if "." in name.lstrip(".") else ""


def point_payload(c: ChunkPayload) -> dict[str, Any]:
    """A chunk's payload in the collection: what results are formatted from, plus the filter keys."""
    return {
        "repo": c.repo,
        "branches": list(c.branches),
        "path": c.path,
        "start_line": c.start_line,
        "end_line": c.end_line,
        "kind": c.kind,
        "symbol": c.symbol,
        "language": c.language,
        "content_hash": c.content_hash,
        "text": c.text,
        "ext": _ext(c.path),
        "dirs": _dirs(c.path),
    }


class QdrantBackend:
    """A Qdrant collection as a search backend and a publishing target."""

    name = "qdrant"

    def __init__(
        self,
        client: Any,
        location: str,
        collection: str,
        shards: int | None = None,
        replicas: int | None = None,
    ) -> None:
        self.client = client
        self.location = location
        self.collection = collection
        self.manifest = f"{collection}-repos"
        self.shards = shards  # for a collection this backend creates on a cluster (None: server default)
        self.replicas = replicas

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        api_key: str | None = None,
        collection: str | None = None,
        timeout: float = 10.0,
        shards: int | None = None,
        replicas: int | None = None,
    ) -> QdrantBackend:
        try:
            from qdrant_client import QdrantClient
        except ImportError as exc:  # pragma: no cover - a dependency of the package
            raise BackendError(
                "qdrant-client is not installed: "
                "pip install 'local-codebase-index[qdrant]' (or qdrant-client)"
            ) from exc
        kwargs, location, name = parse_target(url, collection)
        try:
            if "path" in kwargs:
                client = QdrantClient(path=kwargs["path"])
            else:
                client = QdrantClient(
                    url=kwargs["url"], api_key=api_key, timeout=int(timeout), check_compatibility=False
                )
        except Exception as exc:
            raise BackendError(f"qdrant at {location}: {_reason(exc)}") from exc
        return cls(client, location, name, shards, replicas)

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """One client call; any failure becomes a BackendError naming the backend and what was asked."""
        try:
            return fn(*args, **kwargs)
        except BackendError:
            raise
        except Exception as exc:
            raise BackendError(f"qdrant at {self.location} ({what}): {_reason(exc)}") from exc

    # -- collections ----------------------------------------------------------------------------------

    def exists(self) -> bool:
        return bool(self._call("collection check", self.client.collection_exists, self.collection))

    def ensure_collection(self, dimensions: int | None) -> None:
        """Create the chunk collection (dense + sparse-with-idf vectors) and its manifest when missing;
        an existing collection must have the same dense width."""
        from qdrant_client import models

        if self.exists():
            info = self._call("collection info", self.client.get_collection, self.collection)
            vectors = info.config.params.vectors
            params = vectors.get(DENSE) if isinstance(vectors, dict) else None
            have = params.size if params is not None else None
            if dimensions is not None and have is not None and have != dimensions:
                raise BackendError(
                    f"collection {self.collection!r} holds {have}-dimensional vectors; this index has "
                    f"{dimensions} (publish to another collection or re-index with the same model)"
                )
        else:
            embedded = "path" in self.client.init_options
            cluster = {} if embedded else {"shard_number": self.shards, "replication_factor": self.replicas}
            self._call(
                "create collection",
                self.client.create_collection,
                self.collection,
                **cluster,
                vectors_config={
                    DENSE: models.VectorParams(size=dimensions or 384, distance=models.Distance.COSINE)
                },
                sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            )
            if not embedded:  # the embedded store has no payload indexes
                for key in INDEXED_KEYS:
                    self._call(
                        "payload index",
                        self.client.create_payload_index,
                        self.collection,
                        key,
                        field_schema=models.PayloadSchemaType.KEYWORD,
                    )
        if not self._call("manifest check", self.client.collection_exists, self.manifest):
            self._call("create manifest", self.client.create_collection, self.manifest, vectors_config={})

    # -- the manifest ---------------------------------------------------------------------------------

    def repos(self) -> list[RepoInfo]:
        if not self._call("manifest check", self.client.collection_exists, self.manifest):
            return []
        records, _ = self._call("read manifest", self.client.scroll, self.manifest, limit=10_000)
        out = [
            RepoInfo(
                name=r.payload["repo"],
                branch=r.payload["branch"],
                chunks=int(r.payload.get("chunks", 0)),
                model=r.payload.get("model"),
            )
            for r in records
        ]
        return sorted(out, key=lambda r: r.name)

    def model_id(self) -> str | None:
        return next((r.model for r in self.repos() if r.model), None)

    def record_repo(self, repo: str, branch: str, chunks: int, model: str | None) -> None:
        from qdrant_client import models

        from .base import point_id

        payload = {"repo": repo, "branch": branch, "chunks": chunks, "model": model, "at": time.time()}
        point = models.PointStruct(id=point_id(repo, "", 0, "manifest"), vector={}, payload=payload)
        self._call("write manifest", self.client.upsert, self.manifest, [point])

    # -- publishing -----------------------------------------------------------------------------------

    def branch_map(self, repo: str) -> dict[str, list[str]]:
        """point id -> branches of every point of `repo` (ids and one payload key only)."""
        from qdrant_client import models

        flt = models.Filter(must=[models.FieldCondition(key="repo", match=models.MatchValue(value=repo))])
        out: dict[str, list[str]] = {}
        offset = None
        while True:
            records, offset = self._call(
                "scroll",
                self.client.scroll,
                self.collection,
                scroll_filter=flt,
                limit=2048,
                offset=offset,
                with_payload=["branches"],
                with_vectors=False,
            )
            for r in records:
                out[str(r.id)] = list(r.payload.get("branches", []))
            if offset is None:
                return out

    def upsert(
        self,
        chunks: Sequence[ChunkPayload],
        vectors: Sequence[np.ndarray | None],
        sparse_vectors: Sequence[tuple[list[int], list[float]]],
    ) -> None:
        from qdrant_client import models

        points = []
        for c, dense, (indices, values) in zip(chunks, vectors, sparse_vectors, strict=True):
            vector: dict[str, Any] = {SPARSE: models.SparseVector(indices=indices, values=values)}
            if dense is not None:
                vector[DENSE] = dense.tolist()
            points.append(models.PointStruct(id=c.point_id, vector=vector, payload=point_payload(c)))
        if points:
            self._call("upsert", self.client.upsert, self.collection, points, wait=True)

    def set_branches(self, updates: Iterable[tuple[str, list[str]]]) -> None:
        by_value: dict[tuple[str, ...], list[str]] = {}
        for pid, names in updates:
            by_value.setdefault(tuple(sorted(names)), []).append(pid)
        for branches, ids in by_value.items():
            self._call(
                "set payload",
                self.client.set_payload,
                self.collection,
                payload={"branches": list(branches)},
                points=ids,
                wait=True,
            )

    def delete(self, ids: Sequence[str]) -> None:
        from qdrant_client import models

        if ids:
            self._call(
                "delete",
                self.client.delete,
                self.collection,
                models.PointIdsList(points=list(ids)),
                wait=True,
            )

    def count(self) -> int:
        return int(self._call("count", self.client.count, self.collection, exact=True).count)

    # -- searching ------------------------------------------------------------------------------------

    def _filter(self, repos: Sequence[RepoInfo], filters: Filters) -> Any:
        from qdrant_client import models

        def match(key: str, value: str) -> Any:
            return models.FieldCondition(key=key, match=models.MatchValue(value=value))

        must: list[Any] = []
        if filters.file_type:
            must.append(match("ext", "." + filters.file_type.lstrip(".").lower()))
        if filters.directory and (prefix := normalize_directory(filters.directory)):
            must.append(match("dirs", prefix))
        if filters.kind:
            must.append(match("kind", filters.kind))
        should: list[Any] = [
            models.Filter(must=[match("repo", r.name), match("branches", r.branch)]) for r in repos
        ]
        return models.Filter(must=must or None, should=should or None)

    def candidates(
        self, query: QueryInput, repos: Sequence[RepoInfo], filters: Filters, pool: int, embed: EmbedQuery
    ) -> Candidates:
        from qdrant_client import models

        if not repos:
            return Candidates([], "hybrid")
        if not self.exists():
            raise BackendError(
                f"qdrant at {self.location}: no collection {self.collection!r} (publish first)"
            )
        flt = self._filter(repos, filters)
        weights: dict[int, float] = {}
        for term, weight in zip(query.terms, query.weights, strict=True):
            index = sparse.term_index(term)
            weights[index] = weights.get(index, 0.0) + weight
        prefetch = []
        if weights:
            vector = models.SparseVector(indices=list(weights), values=list(weights.values()))
            prefetch.append(models.Prefetch(query=vector, using=SPARSE, limit=pool, filter=flt))
        notice = None
        models_held = {r.model for r in repos if r.model}
        model = next(iter(models_held), None)
        dense = embed(model) if model else None
        if len(models_held) > 1:
            notice, dense = (
                f"vector search skipped: the repositories hold vectors of {sorted(models_held)}",
                None,
            )
        elif dense is None:
            notice = (
                f"vector search skipped: no embedding provider for {model or 'the collection (no vectors)'}"
            )
        else:
            prefetch.append(models.Prefetch(query=dense.tolist(), using=DENSE, limit=pool, filter=flt))
        if not prefetch:
            return Candidates([], "keyword-fallback", notice)
        answer = self._call(
            "query",
            self.client.query_points,
            self.collection,
            prefetch=prefetch,
            query=models.RrfQuery(rrf=models.Rrf(k=query.rrf_k)),
            limit=2 * pool,
            with_payload=True,
        )
        chunks = []
        for point in answer.points:
            p = point.payload or {}
            chunks.append(
                (
                    ChunkPayload(
                        repo=p["repo"],
                        path=p["path"],
                        start_line=int(p["start_line"]),
                        end_line=int(p["end_line"]),
                        kind=p.get("kind", ""),
                        symbol=p.get("symbol", ""),
                        language=p.get("language", ""),
                        content_hash=p.get("content_hash", ""),
                        text=p.get("text", ""),
                        branches=tuple(p.get("branches", ())),
                    ),
                    float(point.score),
                )
            )
        chunks.sort(key=lambda item: (-item[1], item[0].point_id))
        return Candidates(chunks, "hybrid" if dense is not None else "keyword-fallback", notice)

    def close(self) -> None:
        with contextlib.suppress(Exception):  # closing a dead connection must not hide the real error
            self.client.close()


def _reason(exc: BaseException) -> str:
    """A one-line cause: the innermost message of a connection error, else the exception's text."""
    text = str(exc).strip() or type(exc).__name__
    cause = exc.__cause__ or exc.__context__
    if cause is not None and ("connect" in text.lower() or not str(exc).strip()):
        inner = str(cause).strip()
        if inner:
            text = f"{text}: {inner}"
    return text.splitlines()[0][:300]
