"""Under umask 000 everything codebase-index creates for itself is still the user's alone: folders 0700,
files 0600. A real index (SQLite with its -wal and -shm files, locks, an ANN index from a real embedding
run against the fake provider server, savings, dependency states), the sidecar's lock and rotating log,
the repository registry and the trust record are created, then every mode is read back from disk."""

from __future__ import annotations

import logging
import logging.handlers
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from codebase_index import rpc, tools, trust, vectors
from codebase_index.config import Config
from codebase_index.context.savings import Savings
from codebase_index.repos import registry_path
from codebase_index.resilience import Breaker
from codebase_index.service import Engine
from provider_server import serve


@pytest.fixture
def open_umask() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def modes(top: Path) -> dict[str, int]:
    """Every folder and file under `top` (and `top`) with its permission bits."""
    found = {str(top): stat.S_IMODE(top.lstat().st_mode)}
    for folder, dirs, files in os.walk(top):
        for name in dirs + files:
            path = Path(folder) / name
            found[str(path)] = stat.S_IMODE(path.lstat().st_mode)
    return found


def assert_private(top: Path) -> None:
    wrong = {
        path: oct(mode)
        for path, mode in modes(top).items()
        if mode != (0o700 if Path(path).is_dir() else 0o600)
    }
    assert not wrong, wrong


def test_everything_created_is_private_under_umask_000(
    tmp_path: Path, open_umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "project"
    root.mkdir()
    for i in range(8):
        (root / f"m{i}.py").write_text(f"def helper_{i}(a, b):\n    return a * {i} - b\n")
    made = tmp_path / "made-by-us"  # none of these folders exists yet
    index = made / "deep" / "index"
    monkeypatch.setattr(vectors, "ANN_THRESHOLD", 4)
    monkeypatch.setattr(Engine, "ann_threshold", lambda self: 4)
    with serve(dims=8) as server:
        config = msgspec.convert(
            {
                "embeddingProvider": "custom",
                "customProvider": {"baseUrl": server.base_url, "model": "fake-embed", "dimensions": 8},
            },
            Config,
        )
        engine = Engine(root, config, index_path=index)
        try:
            engine.index()
            report = engine.embed()
            assert report is not None and report.embedded > 0
            assert engine.search("helper").results
            Breaker(index, "embedding").failure("key", "a failure on record")
            Savings(index, lambda path: "text").record("codebase_search", "answer", ["m1.py"], lambda p: None)
            lock = rpc.acquire_sidecar_lock(index)
            os.close(lock)
            logger = logging.getLogger("codebase_index")
            before = list(logger.handlers)
            rpc.configure_logging(index, "info", tools.LogBuffer())
            try:
                logger.warning("a line in the sidecar log")
                for handler in logger.handlers:
                    if isinstance(handler, logging.handlers.RotatingFileHandler):
                        handler.doRollover()  # the new file too
                logger.warning("a line in the next log file")
            finally:
                for handler in [h for h in logger.handlers if h not in before]:
                    logger.removeHandler(handler)
                    handler.close()
            names = set(os.listdir(index))
            assert {
                "codebase.db",
                "codebase.db-wal",
                "codebase.db-shm",
                "sidecar.log",
                "sidecar.log.1",
            } <= names
            assert any(name.endswith(".usearch") for name in names), names  # the ANN index was written
            assert "savings.json" in names and "dependencies.json" in names
            assert_private(made)
        finally:
            engine.close()
    registry = registry_path()
    assert registry.is_file()
    assert_private(registry.parent)
    trust.trust(root, tmp_path / "user" / "config", data=b"{}")
    assert_private(tmp_path / "user")
