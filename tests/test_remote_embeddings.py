"""Remote embedding providers against a real HTTP server on 127.0.0.1 speaking each wire format."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from codebase_index.embeddings.base import EmbeddingError, EmbeddingProvider
from codebase_index.embeddings.http_retry import (
    RateGate,
    RetryPolicy,
    estimate_tokens,
    parse_retry_after,
    plan_batches,
    truncate_to_tokens,
)
from codebase_index.embeddings.remote import (
    RemoteEmbeddingProvider,
    RemoteEmbeddingSettings,
    create_remote_provider,
    resolve_settings,
)
from provider_server import (
    GARBAGE,
    MISSING_FIELD,
    UNAUTHORIZED,
    WRONG_DIMS,
    FakeProviderServer,
    Fault,
    closed_port_url,
    expected_vector,
    serve,
    slow_fault,
    status_fault,
)

KEY = "sk-test-SECRET-0123456789"


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with serve() as running:
        yield running


class SleepLog:
    """Records requested back-off delays instead of sleeping, so tests assert values, not timings."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def make(
    server: FakeProviderServer,
    provider: str = "openai",
    sleep: Callable[[float], None] | None = None,
    **overrides: object,
) -> RemoteEmbeddingProvider:
    base = {
        "openai": f"{server.base_url}/v1",
        "google": f"{server.base_url}/v1beta",
        "ollama": server.base_url,
        "custom": f"{server.base_url}/custom",
    }[provider]
    options: dict[str, object] = {
        "provider": provider,
        "base_url": base,
        "api_key": KEY if provider in ("openai", "google") else None,
        "dimensions": server.dims,
        "retry_delay_ms": 1,
        "max_retries": 2,
        "timeout_ms": 2000,
        "concurrency": 1,
        "model": "test-model" if provider == "custom" else None,
    }
    options.update(overrides)
    settings = RemoteEmbeddingSettings(**options)  # type: ignore[arg-type]
    return create_remote_provider(settings, env={}, sleep=sleep or SleepLog(), rng=random.Random(7))


def assert_vectors(vectors: np.ndarray, texts: list[str], dims: int, prefix: str = "") -> None:
    assert vectors.dtype == np.float32
    assert vectors.shape == (len(texts), dims)
    expected = np.stack([expected_vector(prefix + text, dims) for text in texts])
    np.testing.assert_allclose(vectors, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


# Wire formats -------------------------------------------------------------------------------------


def test_openai_request_shape_and_index_order(server: FakeProviderServer) -> None:
    texts = ["def alpha(): pass", "class Beta: ...", "gamma = 3"]
    with make(server, "openai") as provider:
        assert isinstance(provider, EmbeddingProvider)
        assert provider.model_id == "openai:text-embedding-3-small"
        assert provider.dimensions == server.dims
        vectors = provider.embed_documents(texts)
    # The server answers in reverse order; rows must still line up with the inputs.
    assert_vectors(vectors, texts, server.dims)
    (request,) = server.posts()
    assert request.path == "/v1/embeddings"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {"model": "text-embedding-3-small", "input": texts, "dimensions": server.dims}


def test_openai_without_configured_dimensions_sends_none(server: FakeProviderServer) -> None:
    with serve(dims=1536) as wide, make(wide, "openai", dimensions=None) as provider:
        assert provider.dimensions == 1536
        provider.embed_query("x")
        assert "dimensions" not in wide.posts()[0].body


def test_google_batch_embed_contents_shape(server: FakeProviderServer) -> None:
    texts = ["first chunk", "second chunk"]
    with make(server, "google") as provider:
        assert provider.model_id == "google:gemini-embedding-001"
        assert_vectors(provider.embed_documents(texts), texts, server.dims)
        query = provider.embed_query("where is auth handled")
    assert_vectors(query[None, :], ["where is auth handled"], server.dims)
    documents, question = server.posts()
    assert documents.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert documents.headers["x-goog-api-key"] == KEY
    assert "authorization" not in documents.headers
    assert documents.body == {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": text}]},
                "taskType": "RETRIEVAL_DOCUMENT",
                "outputDimensionality": server.dims,
            }
            for text in texts
        ]
    }
    assert question.body["requests"][0]["taskType"] == "CODE_RETRIEVAL_QUERY"


def test_ollama_native_one_text_per_request_with_nomic_prefixes(server: FakeProviderServer) -> None:
    texts = ["fn main() {}", "struct Point;", "impl Point {}"]
    with make(server, "ollama", dimensions=None) as provider:
        assert provider.model_id == "ollama:nomic-embed-text"
        assert provider.dimensions == 768
    server.dims = 768
    with make(server, "ollama", dimensions=None) as provider:
        vectors = provider.embed_documents(texts)
        provider.embed_query("point")
    assert_vectors(vectors, texts, 768, prefix="search_document: ")
    posts = server.posts()
    assert [r.path for r in posts] == ["/api/embeddings"] * 4
    assert [r.body for r in posts[:3]] == [
        {"model": "nomic-embed-text", "prompt": f"search_document: {text}"} for text in texts
    ]
    assert posts[3].body["prompt"] == "search_query: point"
    assert all("authorization" not in r.headers for r in posts)


def test_ollama_embed_endpoint_batches(server: FakeProviderServer) -> None:
    texts = ["a", "b", "c"]
    with make(server, "ollama", model="all-minilm", ollama_endpoint="embed", dimensions=None) as provider:
        assert provider.dimensions == 384
    with make(server, "ollama", model="all-minilm", ollama_endpoint="embed") as provider:
        assert_vectors(provider.embed_documents(texts), texts, server.dims)
    (request,) = server.posts()
    assert request.path == "/api/embed"
    assert request.body == {"model": "all-minilm", "input": texts}


def test_custom_openai_compatible_endpoint(server: FakeProviderServer) -> None:
    texts = ["one", "two"]
    with make(server, "custom", api_key="custom-key-123") as provider:
        assert provider.model_id == "custom:test-model"
        assert_vectors(provider.embed_documents(texts), texts, server.dims)
    (request,) = server.posts()
    assert request.path == "/custom/embeddings"
    assert request.body == {"model": "test-model", "input": texts}
    assert request.headers["authorization"] == "Bearer custom-key-123"


def test_custom_needs_base_url_and_dimensions() -> None:
    with pytest.raises(EmbeddingError, match="baseUrl"):
        create_remote_provider(RemoteEmbeddingSettings(provider="custom", model="m"), env={})
    with pytest.raises(EmbeddingError, match="dimensions"):
        create_remote_provider(
            RemoteEmbeddingSettings(provider="custom", model="m", base_url="http://127.0.0.1:9"), env={}
        )


def test_defaults_and_keys_from_env() -> None:
    openai = resolve_settings(RemoteEmbeddingSettings(provider="openai"), env={"OPENAI_API_KEY": KEY})
    assert (openai.model, openai.dimensions, openai.api_key) == ("text-embedding-3-small", 1536, KEY)
    google = resolve_settings(RemoteEmbeddingSettings(provider="google"), env={"GEMINI_API_KEY": "g-key"})
    assert (google.model, google.dimensions, google.api_key) == ("gemini-embedding-001", 768, "g-key")
    ollama = resolve_settings(RemoteEmbeddingSettings(provider="ollama"), env={})
    assert (ollama.base_url, ollama.model, ollama.dimensions) == (
        "http://127.0.0.1:11434",
        "nomic-embed-text",
        768,
    )
    with pytest.raises(EmbeddingError, match="OPENAI_API_KEY"):
        resolve_settings(RemoteEmbeddingSettings(provider="openai"), env={})
    with pytest.raises(EmbeddingError, match="unknown embedding provider"):
        resolve_settings(RemoteEmbeddingSettings(provider="bogus"), env={})
    settings = RemoteEmbeddingSettings(provider="openai", api_key=KEY)
    assert KEY not in repr(settings) and KEY not in str(settings)
    assert KEY not in repr(openai)


# Batching, truncation, concurrency, pacing --------------------------------------------------------


def test_batches_respect_item_cap(server: FakeProviderServer) -> None:
    texts = [f"text number {i}" for i in range(10)]
    with make(server, max_batch_size=3) as provider:
        assert_vectors(provider.embed_documents(texts), texts, server.dims)
    assert [len(r.texts) for r in server.posts()] == [3, 3, 3, 1]
    assert [t for r in server.posts() for t in r.texts] == texts


def test_batches_respect_token_budget_and_truncate_long_inputs(server: FakeProviderServer) -> None:
    texts = ["word " * 10] * 6 + ["x" * 4000]
    assert estimate_tokens(texts[0]) == 10
    with make(server, max_batch_tokens=25, max_tokens=50) as provider:
        outcome = provider.embed_batches(texts)
    assert outcome.complete
    posts = server.posts()
    assert [len(r.texts) for r in posts] == [2, 2, 2, 1]
    assert all(sum(estimate_tokens(t) for t in r.texts) <= 50 for r in posts)
    sent_long = posts[-1].texts[0]
    assert sent_long == "x" * 200 and estimate_tokens(sent_long) == 50


def test_concurrency_bound_is_respected() -> None:
    texts = [f"t{i}" for i in range(12)]
    with serve(hold_first=3) as server, make(server, concurrency=3, max_batch_size=1) as provider:
        assert_vectors(provider.embed_documents(texts), texts, server.dims)
        assert server.max_in_flight == 3
        assert len(server.posts()) == 12


def test_serial_when_concurrency_is_one() -> None:
    with serve(delay=0.01) as server, make(server, concurrency=1, max_batch_size=1) as provider:
        provider.embed_documents(["a", "b", "c"])
        assert server.max_in_flight == 1


def test_rate_gate_spaces_request_starts() -> None:
    now = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)

    gate = RateGate(0.5, clock=lambda: now[0], sleep=sleep)
    for _ in range(3):
        gate.wait()
    assert slept == [0.5, 1.0]  # second and third start 0.5 s and 1.0 s after the first
    now[0] = 200.0
    gate.wait()
    assert slept == [0.5, 1.0]  # long after the last start: no wait


# Retries ------------------------------------------------------------------------------------------


def test_retries_429_and_500_then_succeeds(server: FakeProviderServer) -> None:
    server.enqueue(status_fault(429), status_fault(503))
    sleeps = SleepLog()
    with make(server, sleep=sleeps, max_retries=3) as provider:
        assert_vectors(provider.embed_documents(["x"]), ["x"], server.dims)
    assert len(server.posts()) == 3
    assert len(sleeps.delays) == 2
    # Full jitter: each delay within [0, base * 2^attempt].
    assert all(0 <= d <= 0.001 * 2**i for i, d in enumerate(sleeps.delays))


def test_retry_after_is_honoured_and_capped(server: FakeProviderServer) -> None:
    server.enqueue(status_fault(429, retry_after="0.05"), status_fault(503, retry_after="100"))
    seen: list[tuple[float, int]] = []

    def sleep(seconds: float) -> None:
        seen.append((seconds, len(server.posts())))

    with make(server, sleep=sleep, max_retries=3, max_retry_delay_ms=80) as provider:
        assert_vectors(provider.embed_documents(["x"]), ["x"], server.dims)
    # Each wait follows the failed request and uses the server's value (capped), not the tiny backoff.
    assert seen == [(0.05, 1), (0.08, 2)]
    assert len(server.posts()) == 3


def test_retry_after_http_date() -> None:
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:30 GMT", now=1445412480.0) == 30.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412500.0) == 0.0
    assert parse_retry_after("-3") == 0.0
    assert parse_retry_after("") is None
    policy = RetryPolicy(max_retries=1, base_delay=1.0, max_delay=4.0)
    assert policy.delay_for(0, 10.0, random.Random(1)) == 4.0
    assert 0.0 <= policy.delay_for(5, None, random.Random(1)) <= 4.0


def test_gives_up_after_max_retries(server: FakeProviderServer) -> None:
    server.enqueue(*[status_fault(500, "upstream exploded")] * 5)
    with make(server, max_retries=2) as provider, pytest.raises(EmbeddingError) as info:
        provider.embed_documents(["x"])
    assert len(server.posts()) == 3
    message = str(info.value)
    assert "500 from openai after 3 attempts" in message and "upstream exploded" in message


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_no_retry_on_client_errors(server: FakeProviderServer, status: int) -> None:
    server.enqueue(status_fault(status, "you did something wrong"))
    sleeps = SleepLog()
    with make(server, sleep=sleeps) as provider, pytest.raises(EmbeddingError, match=f"{status} from openai"):
        provider.embed_query("x")
    assert len(server.posts()) == 1
    assert sleeps.delays == []


@pytest.mark.parametrize("provider_name", ["openai", "google"])
def test_401_message_names_env_var_and_hides_key(server: FakeProviderServer, provider_name: str) -> None:
    server.enqueue(UNAUTHORIZED)
    with make(server, provider_name) as provider, pytest.raises(EmbeddingError) as info:
        provider.embed_documents(["x"])
    message = str(info.value)
    assert "401" in message and "Incorrect API key" in message
    assert ("OPENAI_API_KEY" if provider_name == "openai" else "GOOGLE_API_KEY") in message
    assert KEY not in message and "SECRET" not in message


def test_timeout_is_retried_then_reported(server: FakeProviderServer) -> None:
    server.enqueue(slow_fault(0.5))
    with make(server, timeout_ms=100) as provider:
        assert_vectors(provider.embed_documents(["slow"]), ["slow"], server.dims)
    assert len(server.posts()) == 2
    server.enqueue(*[slow_fault(0.5)] * 2)
    with make(server, timeout_ms=100, max_retries=1) as provider, pytest.raises(EmbeddingError) as info:
        provider.embed_documents(["slow"])
    assert "timed out after 2 attempts" in str(info.value)


def test_a_query_gets_its_own_budget_and_one_try(server: FakeProviderServer) -> None:
    """Indexing may retry a slow provider; a search waiting on its query vector may not."""
    server.enqueue(slow_fault(0.5))
    before = len(server.posts())
    with (
        make(server, timeout_ms=30_000, max_retries=4, query_timeout_ms=100) as provider,
        pytest.raises(EmbeddingError) as info,
    ):
        provider.embed_query("slow")
    assert len(server.posts()) == before + 1
    assert "did not answer the query within 100 ms (search.queryEmbeddingTimeoutMs)" in str(info.value)
    server.enqueue(status_fault(503))
    with make(server, max_retries=4, query_timeout_ms=5_000) as provider, pytest.raises(EmbeddingError):
        provider.embed_query("unavailable")
    assert len(server.posts()) == before + 2, "a 503 is retried while indexing, never for a query"


def test_connection_refused_is_retried_and_explained() -> None:
    sleeps = SleepLog()
    settings = RemoteEmbeddingSettings(
        provider="ollama", base_url=closed_port_url(), max_retries=2, retry_delay_ms=1, timeout_ms=500
    )
    provider = create_remote_provider(settings, env={}, sleep=sleeps)
    with provider:
        with pytest.raises(EmbeddingError, match=r"could not connect to ollama .* \(ollama serve\)"):
            provider.embed_documents(["x"])
        assert len(sleeps.delays) == 2
        with pytest.raises(EmbeddingError, match=r"could not connect to ollama"):
            provider.embed_query("x")
        assert len(sleeps.delays) == 2, "a query is not retried"


@pytest.mark.parametrize("fault", [GARBAGE, MISSING_FIELD])
def test_garbage_answers_are_errors_not_retried(server: FakeProviderServer, fault: Fault) -> None:
    server.enqueue(fault)
    with make(server) as provider, pytest.raises(EmbeddingError, match="garbage answer from openai"):
        provider.embed_documents(["x", "y"])
    assert len(server.posts()) == 1


def test_wrong_dimensions_named_and_stops_the_run(server: FakeProviderServer) -> None:
    server.enqueue(WRONG_DIMS)
    with make(server, max_batch_size=1) as provider:
        outcome = provider.embed_batches(["a", "b", "c"])
    assert len(server.posts()) == 1  # the width is wrong for every batch: no point sending more
    assert not outcome.ok.any()
    assert sorted(i for batch in outcome.failed for i in batch.indices) == [0, 1, 2]
    assert (
        f"returned {server.dims + 1}-dimensional vectors, expected {server.dims}" in outcome.failed[0].error
    )


# Partial failure ----------------------------------------------------------------------------------


def test_partial_failure_keeps_successful_batches() -> None:
    texts = [f"chunk {i}" for i in range(8)]
    texts[5] = "chunk POISON 5"
    with serve(poison="POISON") as server, make(server, max_batch_size=2, concurrency=2) as provider:
        outcome = provider.embed_batches(texts)
        assert outcome.ok.tolist() == [True, True, True, True, False, False, True, True]
        (failure,) = outcome.failed
        assert failure.indices == (4, 5)
        assert failure.status == 500 and failure.retryable
        good = [i for i in range(8) if outcome.ok[i]]
        assert_vectors(outcome.vectors[good], [texts[i] for i in good], server.dims)
        assert not outcome.vectors[[4, 5]].any()
        # 3 good batches + the poisoned one tried 1 + max_retries times.
        assert len(server.posts()) == 3 + 3
        with pytest.raises(EmbeddingError, match="2 of 8 texts could not be embedded"):
            provider.embed_documents(texts)


def test_auth_failure_stops_remaining_batches(server: FakeProviderServer) -> None:
    server.enqueue(UNAUTHORIZED)
    with make(server, max_batch_size=1) as provider:
        outcome = provider.embed_batches(["a", "b", "c", "d"])
    assert len(server.posts()) == 1
    assert [b.indices for b in outcome.failed] == [(0,), (1,), (2,), (3,)]
    assert not outcome.failed[0].retryable


def test_empty_input_sends_nothing(server: FakeProviderServer) -> None:
    with make(server) as provider:
        assert provider.embed_documents([]).shape == (0, server.dims)
        provider.embed_documents([""])
    assert [r.texts for r in server.posts()] == [[" "]]


# Helpers ------------------------------------------------------------------------------------------


def test_token_helpers() -> None:
    code = "def handler(request):\n    return request.user.id\n"
    assert estimate_tokens(code) >= len(code) // 4
    assert truncate_to_tokens(code, 1000) == code
    cut = truncate_to_tokens(code, 5)
    assert code.startswith(cut) and estimate_tokens(cut) <= 5
    assert plan_batches([], 10, 10) == []
    assert plan_batches([50], 10, 10) == [[0]]
