"""Remote rerankers (Cohere, Jina, any compatible `/rerank`) behind one small interface.

Reranking sits on the query path, so it retries little and fails loudly with RerankError: the
search layer then keeps its own deterministic order instead of waiting on a struggling API.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import httpx
import msgspec

from codebase_index.embeddings.http_retry import (
    RateGate,
    RequestFailure,
    RetryPolicy,
    send_with_retry,
    truncate_to_tokens,
)

RERANK_PROVIDERS: tuple[str, ...] = ("cohere", "jina", "custom")


class RerankError(Exception):
    """The reranker could not rank; the message says why and what to change, never the key."""


@runtime_checkable
class Reranker(Protocol):
    def rerank(self, query: str, documents: Sequence[str], top_n: int) -> list[tuple[int, float]]:
        """(index into documents, relevance) pairs, best first, at most top_n."""
        ...


class RerankSettings(msgspec.Struct, frozen=True, kw_only=True):
    """What the config layer passes in; None means "the provider's default"."""

    provider: str
    model: str | None = None
    api_key: str | None = None
    base_url: str | None = None
    top_n: int = 20
    timeout_ms: int = 10_000
    max_retries: int = 1
    retry_delay_ms: int = 250
    max_retry_delay_ms: int = 2_000
    max_tokens_per_doc: int = 1024

    def __repr__(self) -> str:
        key = "set" if self.api_key else "unset"
        return (
            f"RerankSettings(provider={self.provider!r}, model={self.model!r}, "
            f"base_url={self.base_url!r}, api_key=<{key}>, top_n={self.top_n})"
        )


@dataclass(frozen=True)
class _RerankDefaults:
    model: str | None
    base_url: str | None
    key_env: tuple[str, ...]


_DEFAULTS: dict[str, _RerankDefaults] = {
    "cohere": _RerankDefaults("rerank-v3.5", "https://api.cohere.com/v1", ("COHERE_API_KEY",)),
    "jina": _RerankDefaults(
        "jina-reranker-v2-base-multilingual", "https://api.jina.ai/v1", ("JINA_API_KEY",)
    ),
    "custom": _RerankDefaults(None, None, ()),
}


class _RerankItem(msgspec.Struct):
    index: int
    relevance_score: float


class _RerankAnswer(msgspec.Struct):
    results: list[_RerankItem]


@dataclass
class HttpReranker:
    """Cohere-shaped `POST {base_url}/rerank`; Jina and most self-hosted rerankers speak the same."""

    provider: str
    model: str
    base_url: str
    api_key: str | None = field(repr=False)
    top_n: int
    timeout_s: float
    policy: RetryPolicy
    max_tokens_per_doc: int
    key_env: tuple[str, ...]
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    _client: httpx.Client = field(init=False, repr=False)
    _gate: RateGate = field(init=False, repr=False)
    _rng: random.Random = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._client = httpx.Client(timeout=httpx.Timeout(self.timeout_s))
        self._gate = RateGate(0.0)
        self._rng = random.Random()

    @property
    def model_id(self) -> str:
        return f"{self.provider}:{self.model}"

    def close(self) -> None:
        self._client.close()

    def rerank(
        self, query: str, documents: Sequence[str], top_n: int | None = None
    ) -> list[tuple[int, float]]:
        wanted = min(self.top_n if top_n is None else top_n, len(documents))
        if wanted <= 0:
            return []
        body = msgspec.json.encode(
            {
                "model": self.model,
                "query": query,
                "documents": [truncate_to_tokens(doc, self.max_tokens_per_doc) for doc in documents],
                "top_n": wanted,
            }
        )
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        try:
            answer = send_with_retry(
                self._client,
                f"{self.base_url}/rerank",
                body=body,
                headers=headers,
                decode=lambda raw: msgspec.json.decode(raw, type=_RerankAnswer),
                policy=self.policy,
                gate=self._gate,
                secrets=(self.api_key,) if self.api_key else (),
                rng=self._rng,
                sleep=self.sleep,
            )
        except RequestFailure as failure:
            raise RerankError(self._describe(failure)) from None
        return self._check(answer, len(documents), wanted)

    def _check(self, answer: _RerankAnswer, count: int, wanted: int) -> list[tuple[int, float]]:
        seen: set[int] = set()
        ranked: list[tuple[int, float]] = []
        for item in answer.results:
            if not 0 <= item.index < count or item.index in seen:
                raise RerankError(
                    f"garbage answer from {self.provider}: index {item.index} for {count} documents"
                )
            seen.add(item.index)
            ranked.append((item.index, float(item.relevance_score)))
        # Providers sort already, but the contract is ours: best first, ties by original position.
        ranked.sort(key=lambda pair: (-pair[1], pair[0]))
        return ranked[:wanted]

    def _describe(self, failure: RequestFailure) -> str:
        who = self.provider
        tries = f" after {failure.attempts} attempts" if failure.attempts > 1 else ""
        if failure.kind == "garbage":
            return f"garbage answer from {who} reranker: {failure.excerpt}"
        if failure.kind == "timeout":
            return f"{who} reranker timed out{tries}: raise the rerank timeoutMs"
        if failure.kind == "connection":
            return (
                f"could not connect to {who} reranker{tries} ({failure.excerpt}): "
                "check baseUrl and the network"
            )
        head = f"{failure.status} from {who} reranker{tries}: {failure.excerpt}"
        if failure.status in (401, 403):
            where = " or ".join(self.key_env) if self.key_env else "the rerank apiKey setting"
            return f"{head}; check {where}"
        if failure.status == 429:
            return f"{head}; rate limited"
        if failure.status and failure.status >= 500:
            return f"{head}; the provider is failing, try again later"
        return f"{head}; check the rerank model {self.model!r} and baseUrl"


def create_reranker(
    settings: RerankSettings,
    *,
    env: Mapping[str, str] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> HttpReranker:
    """Build a reranker with provider defaults; raises RerankError naming what is missing."""
    environ = os.environ if env is None else env
    provider = settings.provider.lower()
    if provider not in _DEFAULTS:
        raise RerankError(
            f"unknown rerank provider {settings.provider!r}: use one of {', '.join(RERANK_PROVIDERS)}"
        )
    defaults = _DEFAULTS[provider]
    base_url = (settings.base_url or defaults.base_url or "").rstrip("/")
    if not base_url:
        raise RerankError("custom rerank provider needs a baseUrl (a Cohere-compatible /rerank API)")
    model = settings.model or defaults.model
    if not model:
        raise RerankError(f"{provider} rerank provider needs a model name")
    api_key = settings.api_key or next(
        (environ[name] for name in defaults.key_env if environ.get(name)), None
    )
    if defaults.key_env and not api_key:
        raise RerankError(
            f"no API key for {provider} reranker: set {' or '.join(defaults.key_env)} or rerank apiKey"
        )
    return HttpReranker(
        provider=provider,
        model=model,
        base_url=base_url,
        api_key=api_key,
        top_n=max(1, settings.top_n),
        timeout_s=max(0.001, settings.timeout_ms / 1000),
        policy=RetryPolicy(
            max_retries=max(0, settings.max_retries),
            base_delay=max(0.0, settings.retry_delay_ms / 1000),
            max_delay=max(0.0, settings.max_retry_delay_ms / 1000),
        ),
        max_tokens_per_doc=max(1, settings.max_tokens_per_doc),
        key_env=defaults.key_env,
        sleep=sleep,
    )
