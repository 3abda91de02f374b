"""Remote rerankers against a real HTTP server on 127.0.0.1 speaking the Cohere-shaped /rerank API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from codebase_index.rerank_providers import (
    HttpReranker,
    Reranker,
    RerankError,
    RerankSettings,
    create_reranker,
)
from provider_server import (
    BAD_INDEX,
    GARBAGE,
    MISSING_FIELD,
    UNAUTHORIZED,
    FakeProviderServer,
    Fault,
    closed_port_url,
    serve,
    slow_fault,
    status_fault,
)

KEY = "co-test-SECRET-abcdef123456"
DOCS = [
    "parse the config file",
    "open a database connection pool",
    "database migrations run on startup",
    "render the html template",
]


@pytest.fixture
def server() -> Iterator[FakeProviderServer]:
    with serve() as running:
        yield running


def make(server: FakeProviderServer, provider: str = "cohere", **overrides: object) -> HttpReranker:
    options: dict[str, object] = {
        "provider": provider,
        "base_url": f"{server.base_url}/v1" if provider != "custom" else f"{server.base_url}/custom",
        "api_key": KEY if provider != "custom" else None,
        "retry_delay_ms": 1,
        "timeout_ms": 2000,
    }
    options.update(overrides)
    return create_reranker(RerankSettings(**options), env={}, sleep=lambda _seconds: None)  # type: ignore[arg-type]


def test_cohere_request_shape_and_ranking(server: FakeProviderServer) -> None:
    reranker = make(server)
    assert isinstance(reranker, Reranker)
    ranked = reranker.rerank("database connection", DOCS, top_n=3)
    # Overlap scores: doc1 has 2 words, doc2 has 1; the server answers in index order, we sort.
    assert ranked == [(1, 2.0), (2, 1.0), (0, 0.0)]
    (request,) = server.posts()
    assert request.path == "/v1/rerank"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {
        "model": "rerank-v3.5",
        "query": "database connection",
        "documents": DOCS,
        "top_n": 3,
    }
    reranker.close()


def test_jina_defaults(server: FakeProviderServer) -> None:
    reranker = make(server, "jina")
    assert reranker.model_id == "jina:jina-reranker-v2-base-multilingual"
    assert reranker.rerank("html template", DOCS, top_n=1) == [(3, 2.0)]
    assert server.posts()[0].body["model"] == "jina-reranker-v2-base-multilingual"


def test_custom_endpoint_without_key(server: FakeProviderServer) -> None:
    reranker = make(server, "custom", model="bge-reranker")
    assert reranker.rerank("config", DOCS, top_n=10)[0] == (0, 1.0)
    (request,) = server.posts()
    assert request.path == "/custom/rerank"
    assert "authorization" not in request.headers
    assert request.body["top_n"] == len(DOCS)  # never more than there are documents


def test_empty_documents_make_no_request(server: FakeProviderServer) -> None:
    assert make(server).rerank("anything", [], top_n=5) == []
    assert server.posts() == []


def test_long_documents_are_truncated(server: FakeProviderServer) -> None:
    make(server, max_tokens_per_doc=10).rerank("x", ["y" * 400], top_n=1)
    assert server.posts()[0].body["documents"] == ["y" * 40]


def test_401_is_not_retried_and_hides_key(server: FakeProviderServer) -> None:
    server.enqueue(UNAUTHORIZED)
    with pytest.raises(RerankError) as info:
        make(server, max_retries=3).rerank("q", DOCS, top_n=2)
    message = str(info.value)
    assert "401 from cohere reranker" in message and "COHERE_API_KEY" in message
    assert KEY not in message and "SECRET" not in message
    assert len(server.posts()) == 1


def test_transient_failures_retry_then_give_up(server: FakeProviderServer) -> None:
    server.enqueue(status_fault(429, retry_after="0"))
    assert make(server, max_retries=1).rerank("database", DOCS, top_n=1) == [(1, 1.0)]
    assert len(server.posts()) == 2
    server.enqueue(status_fault(502, "bad gateway"), status_fault(502, "bad gateway"))
    with pytest.raises(RerankError, match="502 from cohere reranker after 2 attempts: bad gateway"):
        make(server, max_retries=1).rerank("database", DOCS, top_n=1)
    assert len(server.posts()) == 4


def test_timeout_raises(server: FakeProviderServer) -> None:
    server.enqueue(slow_fault(0.5))
    with pytest.raises(RerankError, match="timed out"):
        make(server, timeout_ms=100, max_retries=0).rerank("q", DOCS, top_n=2)


def test_unreachable_raises() -> None:
    settings = RerankSettings(provider="custom", model="m", base_url=closed_port_url(), max_retries=0)
    with pytest.raises(RerankError, match="could not connect"):
        create_reranker(settings, env={}).rerank("q", DOCS, top_n=2)


@pytest.mark.parametrize("fault", [GARBAGE, MISSING_FIELD])
def test_garbage_raises(server: FakeProviderServer, fault: Fault) -> None:
    server.enqueue(fault)
    with pytest.raises(RerankError, match="garbage answer from cohere"):
        make(server).rerank("q", DOCS, top_n=2)
    assert len(server.posts()) == 1


def test_out_of_range_index_is_garbage(server: FakeProviderServer) -> None:
    server.enqueue(BAD_INDEX)
    with pytest.raises(RerankError, match="index 4 for 4 documents"):
        make(server).rerank("q", DOCS, top_n=2)


def test_settings_keys_and_errors() -> None:
    with pytest.raises(RerankError, match="COHERE_API_KEY"):
        create_reranker(RerankSettings(provider="cohere"), env={})
    from_env = create_reranker(RerankSettings(provider="jina"), env={"JINA_API_KEY": "jina-key"})
    assert from_env.api_key == "jina-key"
    with pytest.raises(RerankError, match="baseUrl"):
        create_reranker(RerankSettings(provider="custom", model="m"), env={})
    with pytest.raises(RerankError, match="unknown rerank provider"):
        create_reranker(RerankSettings(provider="nope"), env={})
    settings = RerankSettings(provider="cohere", api_key=KEY)
    assert KEY not in repr(settings)
    assert KEY not in repr(create_reranker(settings, env={}))
