"""Shared test setup: every test gets its own registry of indexed repositories (`repos`) and its own user
config folder (the global config file and the trust record of `codebase-index trust`), so tests never
touch the user's files and never see each other's."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEBASE_INDEX_REGISTRY", str(tmp_path / "registry" / "repos.json"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))
