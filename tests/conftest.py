"""Shared test setup: every test gets its own registry of indexed repositories (`repos`), so index runs in
tests never touch the user's registry and tests never see each other's repositories."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBASE_INDEX_REGISTRY", str(tmp_path / "registry" / "repos.json"))
