"""Search survives its dependencies: a query-time embedding provider that refuses connections, answers
500 or 401, or hangs, and an external reranker that fails, never fail a search. Every face (engine, CLI,
JSON-RPC sidecar, MCP) answers with keyword results, `strategy: keyword-fallback` and a one-line note;
a dependency that keeps failing is not called again for a cool-down; `status` shows the last error.

Real HTTP servers on 127.0.0.1 (tests/provider_server.py), real closed ports, real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from codebase_index import resilience
from codebase_index.config import Config, load_config
from codebase_index.service import Engine
from project_config import write_project_config
from provider_server import UNAUTHORIZED, serve, slow_fault, status_fault
from test_vectors import git

REPO = Path(__file__).resolve().parents[1]
FILES = {
    "src/billing.py": "def compute_invoice_total(lines, tax_rate):\n"
    "    subtotal = sum(line.price for line in lines)\n"
    "    return subtotal * (1 + tax_rate)\n",
    "src/auth.py": "def verify_token(token):\n    return token.startswith('tok_')\n",
}


def write_config(root: Path, base_url: str, **search: Any) -> None:
    config = {
        "embeddingProvider": "custom",
        "customProvider": {
            "baseUrl": base_url,
            "model": "fake-embed",
            "dimensions": 8,
            "requestIntervalMs": 0,
            "concurrency": 1,
        },
        # Indexing retries three times; a query must not (it has its own short budget, one try).
        "indexing": {"retries": 3, "retryDelayMs": 0},
        "search": search,
    }
    write_project_config(root, config)


def make_project(root: Path) -> Path:
    root.mkdir()
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    return root


def index_with_vectors(root: Path, index: Path, base_url: str, **search: Any) -> None:
    """Index and embed every chunk through the live provider at `base_url`."""
    write_config(root, base_url, **search)
    engine = Engine(root, index_path=index)
    engine.index()
    report = engine.embed()
    assert report is not None and report.embedded > 0 and report.pending == 0
    engine.close()


@pytest.fixture
def dead_provider(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A project whose every chunk has a vector, whose provider has since gone (its port is closed)."""
    root = make_project(tmp_path / "proj")
    index = tmp_path / "index"
    with serve(dims=8) as server:
        index_with_vectors(root, index, server.base_url)
    yield root, index


def test_closed_port_at_query_time_gives_keyword_results_and_a_note(
    dead_provider: tuple[Path, Path],
) -> None:
    root, index = dead_provider
    engine = Engine(root, index_path=index)
    response = engine.search("invoice total tax")
    assert response.strategy == "keyword-fallback"
    assert response.results and response.results[0].path == "src/billing.py"
    assert response.note is not None and "could not connect to custom at 127.0.0.1" in response.note
    assert "\n" not in response.note
    # Semantic mode asked explicitly falls back the same way rather than failing.
    semantic = engine.search("invoice total tax", mode="semantic")
    assert semantic.strategy == "keyword-fallback" and semantic.results
    engine.close()


def test_a_failing_provider_is_tried_once_per_query_then_cools_down(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    index = tmp_path / "index"
    with serve(dims=8) as server:
        index_with_vectors(root, index, server.base_url)
        engine = Engine(root, index_path=index)
        before = len(server.posts())
        server.enqueue(*[status_fault(500, "provider exploded")] * 10)
        first = engine.search("invoice total")
        assert first.strategy == "keyword-fallback" and "provider exploded" in (first.note or "")
        assert len(server.posts()) == before + 1, "one try at query time, no retries"
        second = engine.search("verify token")
        assert len(server.posts()) == before + 2 and "500" in (second.note or "")
        # Two failures in a row: the provider is not called again during the cool-down.
        third = engine.search("token prefix")
        assert len(server.posts()) == before + 2
        assert third.strategy == "keyword-fallback" and "cooling down" in (third.note or "")
        assert third.results and third.results[0].path == "src/auth.py"
        # Another process (a CLI search) sees the same open breaker through the index folder.
        other = Engine(root, index_path=index)
        assert "cooling down" in (other.search("tax rate").note or "")
        assert len(server.posts()) == before + 2
        # status names the dependency, its last error and that it is not being called.
        status = engine.status()
        assert [d.name for d in status.dependencies] == [resilience.QUERY_EMBEDDING]
        assert status.dependencies[0].failures == 2 and "provider exploded" in status.dependencies[0].error
        assert "not called until" in resilience.describe(status.dependencies[0])
        other.close()
        engine.close()


def test_cool_down_ends_and_a_success_resets_the_breaker(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    index = tmp_path / "index"
    now = [1000.0]
    with serve(dims=8) as server:
        index_with_vectors(root, index, server.base_url)
        engine = Engine(root, index_path=index)
        engine._breakers[resilience.QUERY_EMBEDDING] = resilience.Breaker(
            index, resilience.QUERY_EMBEDDING, clock=lambda: now[0]
        )
        server.enqueue(status_fault(503), status_fault(503))
        engine.search("invoice one")
        engine.search("invoice two")
        calls = len(server.posts())
        assert "cooling down" in (engine.search("invoice three").note or "")
        assert len(server.posts()) == calls
        now[0] += resilience.COOL_DOWN_SECONDS + 1
        healthy = engine.search("invoice four")
        assert len(server.posts()) == calls + 1
        assert healthy.strategy == "hybrid" and healthy.note is None
        state = engine.status().dependencies[0]
        assert state.recovered_at == now[0] and "ok again" in resilience.describe(state)
        engine.close()


def test_a_hanging_provider_is_given_up_after_the_query_budget(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    index = tmp_path / "index"
    with serve(dims=8) as server:
        index_with_vectors(root, index, server.base_url, queryEmbeddingTimeoutMs=200)
        server.enqueue(slow_fault(30.0))
        engine = Engine(root, index_path=index)
        response = engine.search("invoice total")
        assert response.strategy == "keyword-fallback" and response.results
        assert "did not answer the query within 200 ms" in (response.note or "")
        assert "queryEmbeddingTimeoutMs" in (response.note or "")
        engine.close()


def test_a_rejected_key_at_query_time_falls_back(tmp_path: Path) -> None:
    root = make_project(tmp_path / "proj")
    index = tmp_path / "index"
    with serve(dims=8) as server:
        index_with_vectors(root, index, server.base_url)
        server.enqueue(UNAUTHORIZED)
        engine = Engine(root, index_path=index)
        response = engine.search("verify token")
        assert response.strategy == "keyword-fallback" and response.results
        assert "401" in (response.note or "") and "apiKey" in (response.note or "")
        engine.close()


def test_reranker_failure_keeps_the_order_with_a_note_and_shows_in_status(
    dead_provider: tuple[Path, Path],
) -> None:
    root, index = dead_provider
    base = load_config(root)
    reranker = msgspec.structs.replace(
        base.reranker, enabled=True, provider="custom", model="m", base_url="http://127.0.0.1:9"
    )
    config: Config = msgspec.structs.replace(base, reranker=reranker)
    engine = Engine(root, config, index_path=index)
    plain = engine.search("invoice total", mode="keyword")
    assert plain.strategy == "keyword" and plain.results
    assert plain.note is not None and plain.note.startswith("reranker failed (could not connect")
    assert "built-in order" in plain.note
    engine.search("verify token", mode="keyword")
    cooled = engine.search("tax", mode="keyword")
    assert "reranker skipped" in (cooled.note or "") and "cooling down" in (cooled.note or "")
    names = {d.name for d in engine.status().dependencies}
    assert resilience.RERANKER in names
    engine.close()


# -- the other faces: CLI, JSON-RPC sidecar, MCP -------------------------------------------------------


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codebase_index.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_search_with_a_dead_provider_exits_0_with_the_note_on_stderr(
    dead_provider: tuple[Path, Path],
) -> None:
    root, index = dead_provider
    done = _cli("search", "invoice total tax", "--root", str(root), "--index-dir", str(index), cwd=root)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "src/billing.py" in done.stdout
    assert "note: keyword results only: the embedding provider failed (could not connect" in done.stderr
    assert done.stderr.count("could not connect") == 1, "the reason once, as the note"
    as_json = _cli("search", "invoice", "--json", "--root", str(root), "--index-dir", str(index), cwd=root)
    payload = json.loads(as_json.stdout)
    assert payload["strategy"] == "keyword-fallback" and payload["note"]
    status = _cli("status", "--root", str(root), "--index-dir", str(index), cwd=root)
    assert status.returncode == 0 and "dependency:  query embedding: failing" in status.stdout


def test_rpc_search_with_a_dead_provider(dead_provider: tuple[Path, Path]) -> None:
    from test_rpc import Sidecar

    root, index = dead_provider
    proc = Sidecar(root, index)
    try:
        reply = proc.result("search", {"query": "invoice total tax", "limit": 3})
        assert reply["data"]["strategy"] == "keyword-fallback"
        assert "could not connect" in reply["data"]["note"]
        assert reply["text"].startswith("note: keyword results only")
        assert "src/billing.py" in reply["text"]
        status = proc.result("status")
        assert status["data"]["dependencies"][0]["name"] == "query embedding"
        assert "query embedding: failing" in status["text"]
        logs = proc.result("logs", {"level": "warning"})
        assert any("query embedding failed" in r["message"] for r in logs["data"]["records"])
    finally:
        assert proc.close() == 0


def test_mcp_search_with_a_dead_provider(dead_provider: tuple[Path, Path]) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    root, index = dead_provider
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "codebase_index.cli", "mcp", "--project", str(root), "--index-dir", str(index)],
        cwd=str(REPO),
        env={k: v for k, v in os.environ.items() if k in ("PATH", "PYTHONPATH", "HOME", "XDG_CONFIG_HOME")},
    )

    async def run() -> Any:
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await session.call_tool("codebase_search", {"query": "invoice total tax"})

    result = anyio.run(run)
    assert not result.is_error
    text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    assert text.startswith("note: keyword results only: the embedding provider failed")
    assert "src/billing.py" in text


def test_provider_dead_from_the_start_says_embedding_failed(tmp_path: Path) -> None:
    """No vector was ever computed (the provider never answered): the note says why, not "wait"."""
    from provider_server import closed_port_url

    root = make_project(tmp_path / "proj")
    write_config(root, closed_port_url())
    engine = Engine(root, index_path=tmp_path / "index")
    engine.index()
    report = engine.embed()
    assert report is not None and report.failed > 0
    response = engine.search("invoice total")
    assert response.strategy == "keyword-fallback" and response.results
    assert "embedding failed" in (response.note or "") and "could not connect" in (response.note or "")
    engine.close()


def test_the_model_starts_first_only_once_the_engine_has_seen_vectors(tmp_path: Path) -> None:
    """`early_embedding` (the model started before the snapshot is read) answers only for an engine whose
    last search found vectors: not on its first search, never in keyword mode; a cached query comes back
    as its vector; a provider cooling down gives no model call and the reason."""
    import numpy as np

    from codebase_index.service.embedding import breaker, early_embedding, provider_endpoint

    root = make_project(tmp_path / "proj")
    index = tmp_path / "index"
    with serve(dims=8) as server:
        index_with_vectors(root, index, server.base_url, queryEmbeddingTimeoutMs=5000)
        engine = Engine(root, index_path=index)
        assert early_embedding(engine, "invoice total", None) == (None, "")  # nothing seen yet
        assert engine.search("invoice total").strategy == "hybrid"
        fresh, why = early_embedding(engine, "tax rate", None)
        assert callable(fresh) and not isinstance(fresh, np.ndarray) and why == ""
        assert early_embedding(engine, "tax rate", "keyword") == (None, "")
        cached, _ = early_embedding(engine, "invoice total", "hybrid")
        assert isinstance(cached, np.ndarray)
        provider = engine.embedding_provider()
        assert provider is not None
        guard = breaker(engine, resilience.QUERY_EMBEDDING)
        for _ in range(resilience.FAILURES_TO_OPEN):
            guard.failure(provider_endpoint(provider), "connection refused")
        posts = len(server.posts())
        found, why = early_embedding(engine, "tax rate", None)
        assert found is None and "cooling down" in why and len(server.posts()) == posts
        response = engine.search("tax rate")
        assert response.strategy == "keyword-fallback" and "cooling down" in (response.note or "")
        engine.close()


def test_concurrent_hybrid_searches_answer_as_each_does_alone(tmp_path: Path) -> None:
    """More hybrid searches at once than the engine has search threads (a sidecar serving several
    requests together): each embeds its own query and answers exactly what it answers alone, and none
    waits forever for a search thread."""
    import threading

    from codebase_index.service.embedding import SEARCH_THREADS

    queries = [
        "invoice total",
        "tax rate",
        "verify token",
        "token prefix check",
        "compute the invoice",
        "subtotal of line prices",
        "sum of prices",
        "auth token",
        "billing with tax",
        "startswith tok",
    ]
    assert len(queries) > SEARCH_THREADS
    root = make_project(tmp_path / "proj")
    index = tmp_path / "index"

    def answered(response: Any) -> tuple[str, list[tuple[str, int]]]:
        return response.strategy, [(r.path, r.start_line) for r in response.results]

    with serve(dims=8) as server:
        index_with_vectors(root, index, server.base_url, queryEmbeddingTimeoutMs=5000)
        engine = Engine(root, index_path=index)
        alone = {q: answered(engine.search(q)) for q in queries}
        engine.close()
        engine = Engine(root, index_path=index)
        engine.search("warm up")  # the engine's first search reads the snapshot before embedding
        before = len(server.posts())
        together: dict[str, tuple[str, list[tuple[str, int]]]] = {}
        errors: list[BaseException] = []
        start = threading.Barrier(len(queries))

        def search(query: str) -> None:
            try:
                start.wait(10)
                together[query] = answered(engine.search(query))
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=search, args=(q,)) for q in queries]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert not errors
        assert not any(t.is_alive() for t in threads)
        assert together == alone
        assert {strategy for strategy, _ in together.values()} == {"hybrid"}
        assert len(server.posts()) == before + len(queries)  # each query embedded once, none cached
        engine.close()


def test_retrievers_run_beside_the_query_embedding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hybrid search computes the query's embedding on the searching thread and runs the snapshot checks
    and the keyword, graph and exact-text retrievers on one of the engine's search threads meanwhile: they
    are done while the embedding request is still in flight. (The engine's first search, before it has
    seen vectors, reads the snapshot first.) A repeated query is served from the cache without a request;
    close() ends the search threads."""
    import threading

    from codebase_index.service import retrieval

    gathered: list[tuple[str, bool]] = []  # (thread name, the embedding request answered yet)
    answered = threading.Event()
    real_gather = retrieval.gather

    def gather(*args: Any, **kwargs: Any) -> Any:
        found = real_gather(*args, **kwargs)
        gathered.append((threading.current_thread().name, answered.is_set()))
        return found

    monkeypatch.setattr(retrieval, "gather", gather)
    root = make_project(tmp_path / "proj")
    index = tmp_path / "index"
    with serve(dims=8) as server:
        index_with_vectors(root, index, server.base_url, queryEmbeddingTimeoutMs=5000)
        engine = Engine(root, index_path=index)
        assert engine.search("tax rate").strategy == "hybrid"  # the first search: one stage after the other
        gathered.clear()
        before = len(server.posts())
        server.enqueue(slow_fault(0.5))
        answer: list[Any] = []

        def searching() -> None:
            provider = engine.embedding_provider()
            assert provider is not None
            real_embed = provider.embed_query

            def embed_query(text: str) -> Any:
                try:
                    return real_embed(text)
                finally:
                    answered.set()

            provider.embed_query = embed_query  # type: ignore[method-assign]
            answer.append(engine.search("invoice total tax"))

        thread = threading.Thread(target=searching, name="the-caller")
        thread.start()
        thread.join(10)
        assert answer and answer[0].strategy == "hybrid"
        assert answer[0].results[0].path == "src/billing.py"
        assert len(server.posts()) == before + 1, "one embedding request, made by the searching thread"
        assert gathered == [(gathered[0][0], False)], "the retrievers finished before the embedding came back"
        assert gathered[0][0].startswith("search") and gathered[0][0] != "the-caller"
        search_threads = [t for t in threading.enumerate() if t.name.startswith("search")]
        assert search_threads
        again = engine.search("invoice total tax")
        assert again.strategy == "hybrid" and len(server.posts()) == before + 1  # cached
        engine.close()
        assert not any(t.is_alive() for t in search_threads)


def test_the_unreadable_model_note_follows_the_scorer_the_ranking_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A damaged install (weights.json truncated) is named in a search's note exactly when the ranking
    would have used the model: `auto` gives change requests among vector candidates to the rules, so a
    hybrid one carries no note; without vector candidates (keyword mode, or a filter keeping only files
    not embedded yet, where the hybrid search has no vector hit) the model was asked and the note says so."""
    from codebase_index.ranking import learned
    from codebase_index.search import Filters

    root = make_project(tmp_path / "proj")
    index = tmp_path / "index"
    broken = tmp_path / "weights.json"
    broken.write_text('{"features": ["fused"], "weig')
    with serve(dims=8) as server:
        index_with_vectors(root, index, server.base_url, queryEmbeddingTimeoutMs=5000)
        (root / "src" / "tax").mkdir()
        (root / "src" / "tax" / "rates.py").write_text(
            "def apply_tax_rate(amount, rate):\n    return amount * rate\n"
        )
        engine = Engine(root, index_path=index)
        engine.index()  # the new file is indexed, not embedded
        monkeypatch.setattr(learned, "WEIGHTS_FILE", broken)
        request = "Fix the tax rate applied to the invoice total"
        assert engine.search(request).strategy == "hybrid-partial"
        assert "ranking model" not in (engine.search(request).note or "")
        keyword = engine.search(request, mode="keyword")
        assert "ranking model could not be read" in (keyword.note or "")
        only_new = engine.search(request, filters=Filters(directory="src/tax"))
        assert only_new.strategy == "hybrid-partial" and only_new.results[0].path == "src/tax/rates.py"
        assert "ranking model could not be read" in (only_new.note or "")
        engine.close()
