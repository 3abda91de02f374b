"""Embedding providers reached over HTTP: OpenAI, Google Gemini, Ollama and any OpenAI-compatible server.

Texts are truncated and grouped by an estimated token budget, sent with bounded concurrency and
pacing, and retried on transient failures. A batch that still fails does not sink the others:
`embed_batches` reports per-text results so the indexer can keep what worked.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Literal

import httpx
import msgspec
import numpy as np

from codebase_index.embeddings.base import EmbeddingError
from codebase_index.embeddings.http_retry import (
    RateGate,
    RequestFailure,
    RetryPolicy,
    estimate_tokens,
    plan_batches,
    send_with_retry,
    truncate_to_tokens,
)

Mode = Literal["document", "query"]

OLLAMA_DEFAULT_URL = "http://127.0.0.1:11434"
PROVIDERS: tuple[str, ...] = ("openai", "google", "ollama", "custom")

# Widths of models we know, so dimensions are fixed before the first request is made.
KNOWN_DIMENSIONS: dict[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
    "text-embedding-004": 768,
    # gemini-embedding-001 answers 3072 by default; we ask for 768 through outputDimensionality.
    "gemini-embedding-001": 768,
    "nomic-embed-text": 768,
    "mxbai-embed-large": 1024,
    "all-minilm": 384,
    "bge-m3": 1024,
    "snowflake-arctic-embed": 1024,
}


class RemoteEmbeddingSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What the config layer passes in; None means "the provider's default"."""

    provider: str = "auto"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    dimensions: int | None = None
    max_tokens: int | None = None
    max_batch_tokens: int | None = None
    max_batch_size: int | None = None
    timeout_ms: int = 30_000
    concurrency: int = 2
    request_interval_ms: int = 0
    max_retries: int = 4
    retry_delay_ms: int = 500
    max_retry_delay_ms: int = 30_000
    # A search waits this long for its query's vector, once (no retries): it falls back to keywords.
    query_timeout_ms: int = 2_000
    # Ollama: "embeddings" is the native one-text-per-request endpoint, "embed" the newer batched one.
    ollama_endpoint: str = "embeddings"

    def __repr__(self) -> str:
        # Structs print every field by default; the key must never reach a log line.
        key = "set" if self.api_key else "unset"
        return (
            f"RemoteEmbeddingSettings(provider={self.provider!r}, model={self.model!r}, "
            f"base_url={self.base_url!r}, api_key=<{key}>, dimensions={self.dimensions!r})"
        )


@dataclass(frozen=True)
class _ProviderDefaults:
    model: str | None
    base_url: str | None
    max_tokens: int
    max_batch_size: int
    max_batch_tokens: int
    key_env: tuple[str, ...]


_DEFAULTS: dict[str, _ProviderDefaults] = {
    "openai": _ProviderDefaults(
        "text-embedding-3-small", "https://api.openai.com/v1", 8191, 256, 100_000, ("OPENAI_API_KEY",)
    ),
    "google": _ProviderDefaults(
        "gemini-embedding-001",
        "https://generativelanguage.googleapis.com/v1beta",
        2048,
        100,
        100_000,
        ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    ),
    "ollama": _ProviderDefaults("nomic-embed-text", OLLAMA_DEFAULT_URL, 2048, 32, 16_000, ()),
    "custom": _ProviderDefaults(None, None, 8191, 64, 100_000, ()),
}


@dataclass(frozen=True)
class ResolvedEmbeddingSettings:
    """Settings with every default filled in and checked; built by `resolve_settings`."""

    provider: str
    model: str
    base_url: str
    api_key: str | None = field(repr=False)
    dimensions: int
    send_dimensions: bool
    max_tokens: int
    max_batch_tokens: int
    max_batch_size: int
    timeout_s: float
    query_timeout_s: float
    concurrency: int
    request_interval_s: float
    policy: RetryPolicy
    ollama_endpoint: str
    key_env: tuple[str, ...]


def resolve_settings(
    settings: RemoteEmbeddingSettings, env: Mapping[str, str] | None = None
) -> ResolvedEmbeddingSettings:
    """Fill provider defaults and find the API key, failing early with what to set."""
    environ = os.environ if env is None else env
    provider = settings.provider.lower()
    if provider not in _DEFAULTS:
        raise EmbeddingError(
            f"unknown embedding provider {settings.provider!r}: use one of {', '.join(PROVIDERS)}"
        )
    defaults = _DEFAULTS[provider]
    model = settings.model or defaults.model
    base_url = (settings.base_url or defaults.base_url or "").rstrip("/")
    if provider == "custom" and not base_url:
        raise EmbeddingError(
            "custom embedding provider needs a baseUrl (an OpenAI-compatible /embeddings API)"
        )
    if not model:
        raise EmbeddingError(f"{provider} embedding provider needs a model name")
    api_key = settings.api_key or next(
        (environ[name] for name in defaults.key_env if environ.get(name)), None
    )
    if defaults.key_env and not api_key:
        raise EmbeddingError(
            f"no API key for {provider}: set {' or '.join(defaults.key_env)} or the embedding apiKey setting"
        )
    dimensions = settings.dimensions or KNOWN_DIMENSIONS.get(_bare_model(model))
    if not dimensions or dimensions <= 0:
        raise EmbeddingError(
            f"unknown width for {provider} model {model!r}: set the embedding dimensions setting"
        )
    ollama_endpoint = settings.ollama_endpoint
    if ollama_endpoint not in ("embeddings", "embed"):
        raise EmbeddingError(f"ollama endpoint must be 'embeddings' or 'embed', not {ollama_endpoint!r}")
    max_batch_size = settings.max_batch_size or defaults.max_batch_size
    if provider == "ollama" and ollama_endpoint == "embeddings":
        max_batch_size = 1
    return ResolvedEmbeddingSettings(
        provider=provider,
        model=model,
        base_url=base_url,
        api_key=api_key,
        dimensions=dimensions,
        # Only models that can shorten their output accept the parameter; others reject it with a 400.
        send_dimensions=provider == "google"
        or (
            provider == "openai" and model.startswith("text-embedding-3") and settings.dimensions is not None
        ),
        max_tokens=max(1, settings.max_tokens or defaults.max_tokens),
        max_batch_tokens=max(1, settings.max_batch_tokens or defaults.max_batch_tokens),
        max_batch_size=max(1, max_batch_size),
        timeout_s=max(0.001, settings.timeout_ms / 1000),
        query_timeout_s=max(0.001, settings.query_timeout_ms / 1000),
        concurrency=max(1, settings.concurrency),
        request_interval_s=max(0.0, settings.request_interval_ms / 1000),
        policy=RetryPolicy(
            max_retries=max(0, settings.max_retries),
            base_delay=max(0.0, settings.retry_delay_ms / 1000),
            max_delay=max(0.0, settings.max_retry_delay_ms / 1000),
        ),
        ollama_endpoint=ollama_endpoint,
        key_env=defaults.key_env,
    )


def _bare_model(model: str) -> str:
    name = model.removeprefix("models/")
    return name.split(":", 1)[0] if ":" in name else name


@dataclass(frozen=True)
class FailedBatch:
    """Texts (by index into the input) that could not be embedded, and why."""

    indices: tuple[int, ...]
    error: str
    status: int | None = None
    retryable: bool = False


@dataclass(frozen=True)
class EmbedOutcome:
    """Per-text result: rows where `ok` is False are zeros and belong to one of `failed`."""

    vectors: np.ndarray
    ok: np.ndarray
    failed: list[FailedBatch]

    @property
    def complete(self) -> bool:
        return not self.failed


class _BatchFailed(Exception):
    def __init__(self, message: str, *, status: int | None, retryable: bool, fatal: bool) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        # A wrong key, model or width fails every batch the same way: stop sending the rest.
        self.fatal = fatal


# Wire formats -------------------------------------------------------------------------------------


class _OpenAIItem(msgspec.Struct):
    index: int
    embedding: list[float]


class _OpenAIAnswer(msgspec.Struct):
    data: list[_OpenAIItem]


class _GoogleEmbedding(msgspec.Struct):
    values: list[float]


class _GoogleAnswer(msgspec.Struct):
    embeddings: list[_GoogleEmbedding]


class _OllamaAnswer(msgspec.Struct):
    embedding: list[float]


class _OllamaBatchAnswer(msgspec.Struct):
    embeddings: list[list[float]]


def _request_url(cfg: ResolvedEmbeddingSettings) -> str:
    if cfg.provider == "google":
        return f"{cfg.base_url}/models/{cfg.model.removeprefix('models/')}:batchEmbedContents"
    if cfg.provider == "ollama":
        return f"{cfg.base_url}/api/{cfg.ollama_endpoint}"
    return f"{cfg.base_url}/embeddings"


def _request_headers(cfg: ResolvedEmbeddingSettings) -> dict[str, str]:
    headers = {"content-type": "application/json", "accept": "application/json"}
    if cfg.api_key:
        if cfg.provider == "google":
            headers["x-goog-api-key"] = cfg.api_key
        else:
            headers["authorization"] = f"Bearer {cfg.api_key}"
    return headers


def _google_task(cfg: ResolvedEmbeddingSettings, mode: Mode) -> str:
    if mode == "document":
        return "RETRIEVAL_DOCUMENT"
    return (
        "CODE_RETRIEVAL_QUERY" if _bare_model(cfg.model).startswith("gemini-embedding") else "RETRIEVAL_QUERY"
    )


def _encode_request(cfg: ResolvedEmbeddingSettings, texts: Sequence[str], mode: Mode) -> bytes:
    if cfg.provider == "google":
        model = cfg.model if cfg.model.startswith("models/") else f"models/{cfg.model}"
        requests = []
        for text in texts:
            item: dict[str, object] = {
                "model": model,
                "content": {"parts": [{"text": text}]},
                "taskType": _google_task(cfg, mode),
            }
            if cfg.send_dimensions:
                item["outputDimensionality"] = cfg.dimensions
            requests.append(item)
        return msgspec.json.encode({"requests": requests})
    if cfg.provider == "ollama":
        if cfg.ollama_endpoint == "embeddings":
            return msgspec.json.encode({"model": cfg.model, "prompt": texts[0]})
        return msgspec.json.encode({"model": cfg.model, "input": list(texts)})
    body: dict[str, object] = {"model": cfg.model, "input": list(texts)}
    if cfg.send_dimensions:
        body["dimensions"] = cfg.dimensions
    return msgspec.json.encode(body)


def _decode_answer(cfg: ResolvedEmbeddingSettings, raw: bytes, count: int) -> list[list[float]]:
    """Vectors in input order; raises ValueError/msgspec errors on anything malformed."""
    if cfg.provider == "google":
        rows = [item.values for item in msgspec.json.decode(raw, type=_GoogleAnswer).embeddings]
    elif cfg.provider == "ollama" and cfg.ollama_endpoint == "embeddings":
        rows = [msgspec.json.decode(raw, type=_OllamaAnswer).embedding]
    elif cfg.provider == "ollama":
        rows = msgspec.json.decode(raw, type=_OllamaBatchAnswer).embeddings
    else:
        items = msgspec.json.decode(raw, type=_OpenAIAnswer).data
        if sorted(item.index for item in items) != list(range(len(items))):
            raise ValueError("answer indices are not 0..n-1")
        rows = [item.embedding for item in sorted(items, key=lambda item: item.index)]
    if len(rows) != count:
        raise ValueError(f"{len(rows)} vectors for {count} inputs")
    return rows


# Provider -----------------------------------------------------------------------------------------


class RemoteEmbeddingProvider:
    """An `EmbeddingProvider` backed by an HTTP API; thread-safe, reuses one connection pool."""

    def __init__(
        self,
        cfg: ResolvedEmbeddingSettings,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self._cfg = cfg
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._gate = RateGate(cfg.request_interval_s, sleep=sleep)
        self._client = httpx.Client(
            timeout=httpx.Timeout(cfg.timeout_s),
            limits=httpx.Limits(max_connections=cfg.concurrency, max_keepalive_connections=cfg.concurrency),
        )
        self._url = _request_url(cfg)
        self._headers = _request_headers(cfg)
        self._secrets = (cfg.api_key,) if cfg.api_key else ()
        self._nomic = _bare_model(cfg.model).startswith("nomic-embed-text")

    def __repr__(self) -> str:
        return f"RemoteEmbeddingProvider({self.model_id!r}, dimensions={self.dimensions})"

    @property
    def model_id(self) -> str:
        return f"{self._cfg.provider}:{self._cfg.model}"

    @property
    def dimensions(self) -> int:
        return self._cfg.dimensions

    @property
    def settings(self) -> ResolvedEmbeddingSettings:
        return self._cfg

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> RemoteEmbeddingProvider:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        outcome = self.embed_batches(texts)
        if outcome.failed:
            lost = sum(len(batch.indices) for batch in outcome.failed)
            raise EmbeddingError(
                f"{lost} of {len(texts)} texts could not be embedded; first error: {outcome.failed[0].error}"
            )
        return outcome.vectors

    def embed_query(self, text: str) -> np.ndarray:
        """One request within the query budget (`query_timeout_ms`), no retries and no pacing: a search
        waiting on it falls back to keywords rather than wait through the indexing retry policy."""
        try:
            return self._embed_batch([self._prepare(text, "query")], "query")[0]
        except _BatchFailed as failure:
            raise EmbeddingError(failure.message) from None

    def embed_batches(self, texts: Sequence[str]) -> EmbedOutcome:
        """Embed documents batch by batch; failed batches are reported, successful ones kept."""
        prepared = [self._prepare(text, "document") for text in texts]
        batches = plan_batches(
            [estimate_tokens(text) for text in prepared], self._cfg.max_batch_tokens, self._cfg.max_batch_size
        )
        vectors = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        ok = np.zeros(len(texts), dtype=bool)
        failed: list[FailedBatch] = []
        stop = threading.Event()
        first_fatal: list[_BatchFailed] = []

        def run(batch: list[int]) -> np.ndarray | _BatchFailed:
            if stop.is_set():
                return first_fatal[0]
            try:
                return self._embed_batch([prepared[i] for i in batch], "document")
            except _BatchFailed as failure:
                if failure.fatal and not stop.is_set():
                    first_fatal.append(failure)
                    stop.set()
                return failure

        workers = min(self._cfg.concurrency, len(batches))
        if workers <= 1:
            results = [run(batch) for batch in batches]
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="embed") as pool:
                results = list(pool.map(run, batches))
        for batch, result in zip(batches, results, strict=True):
            if isinstance(result, _BatchFailed):
                failed.append(FailedBatch(tuple(batch), result.message, result.status, result.retryable))
            else:
                vectors[batch] = result
                ok[batch] = True
        return EmbedOutcome(vectors=vectors, ok=ok, failed=failed)

    def _prepare(self, text: str, mode: Mode) -> str:
        if self._nomic:
            # nomic-embed-text was trained with task prefixes and embeds poorly without them.
            text = ("search_query: " if mode == "query" else "search_document: ") + text
        text = truncate_to_tokens(text, self._cfg.max_tokens)
        # OpenAI-style APIs reject empty strings outright.
        return text if text.strip() else " "

    def _embed_batch(self, texts: list[str], mode: Mode) -> np.ndarray:
        cfg = self._cfg
        query = mode == "query"
        try:
            rows = send_with_retry(
                self._client,
                self._url,
                body=_encode_request(cfg, texts, mode),
                headers=self._headers,
                decode=lambda raw: _decode_answer(cfg, raw, len(texts)),
                policy=_NO_RETRIES if query else cfg.policy,
                gate=_NO_PACING if query else self._gate,
                secrets=self._secrets,
                rng=self._rng,
                sleep=self._sleep,
                timeout=cfg.query_timeout_s if query else None,
            )
        except RequestFailure as failure:
            raise _BatchFailed(
                describe_failure(cfg, failure, query=query),
                status=failure.status,
                retryable=failure.retryable_later,
                fatal=failure.status in (401, 403, 404),
            ) from None
        widths = {len(row) for row in rows}
        if widths != {cfg.dimensions}:
            got = ", ".join(str(width) for width in sorted(widths))
            raise _BatchFailed(
                f"{cfg.provider} model {cfg.model!r} returned {got}-dimensional vectors, expected "
                f"{cfg.dimensions}: set the embedding dimensions setting to match the model",
                status=None,
                retryable=False,
                fatal=True,
            )
        matrix = np.asarray(rows, dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(matrix)) or np.any(norms == 0):
            raise _BatchFailed(
                f"garbage answer from {cfg.provider}: zero or non-finite vector",
                status=None,
                retryable=True,
                fatal=False,
            )
        return (matrix / norms).astype(np.float32)


_NO_RETRIES = RetryPolicy(max_retries=0)
_NO_PACING = RateGate(0.0)


def describe_failure(cfg: ResolvedEmbeddingSettings, failure: RequestFailure, *, query: bool = False) -> str:
    """One line for the user: who failed, how, and what to change. Never contains the API key."""
    who = cfg.provider
    tries = f" after {failure.attempts} attempts" if failure.attempts > 1 else ""
    if failure.kind == "garbage":
        return f"garbage answer from {who}: {failure.excerpt}"
    if failure.kind == "timeout" and query:
        limit = f"{cfg.query_timeout_s * 1000:.0f} ms"
        return f"{who} did not answer the query within {limit} (search.queryEmbeddingTimeoutMs)"
    if failure.kind == "timeout":
        limit = f"{cfg.timeout_s * 1000:.0f} ms"
        return f"{who} timed out{tries} (timeout {limit}): raise timeoutMs or lower maxBatchSize"
    if failure.kind == "connection":
        hint = "is Ollama running (ollama serve)?" if who == "ollama" else "check baseUrl and the network"
        return f"could not connect to {who} at {_host_of(cfg.base_url)}{tries} ({failure.excerpt}): {hint}"
    status = failure.status or 0
    head = f"{status} from {who}{tries}: {failure.excerpt}"
    if status in (401, 403):
        where = " or ".join(cfg.key_env) if cfg.key_env else "the embedding apiKey setting"
        return f"{head}; check {where}"
    if status == 404:
        if who == "ollama":
            return f"{head}; run `ollama pull {cfg.model}` or check the model name"
        return f"{head}; check the model name {cfg.model!r} and baseUrl"
    if status == 413:
        return f"{head}; lower maxBatchSize or maxTokens"
    if status == 429:
        return f"{head}; rate limited: lower concurrency or raise requestIntervalMs"
    if status >= 500:
        return f"{head}; the provider is failing, try again later"
    return f"{head}; the provider rejected the request: check model and dimensions settings"


def _host_of(url: str) -> str:
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, TypeError):
        return "the configured baseUrl"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.host}{port}"


def create_remote_provider(
    settings: RemoteEmbeddingSettings,
    *,
    env: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> RemoteEmbeddingProvider:
    """Build a provider from settings; raises EmbeddingError naming the missing key/model/width."""
    return RemoteEmbeddingProvider(resolve_settings(settings, env), sleep=sleep, rng=rng)
