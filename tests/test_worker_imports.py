"""Worker processes start in our working folder, usually the project: they must not import a
repository's own modules (a `multiprocessing/` package there ran in every spawned worker)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codebase_index.isolate import run_isolated


def _fail(item: int, why: str) -> int:
    raise AssertionError(f"the worker failed: {why}")


@pytest.mark.skipif(sys.version_info < (3, 11), reason="Python 3.10 has no PYTHONSAFEPATH (SECURITY.md)")
def test_spawned_workers_never_import_from_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "cloned"
    (project / "multiprocessing").mkdir(parents=True)
    marker = tmp_path / "ran"
    (project / "multiprocessing" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)  # restored after the test
    monkeypatch.chdir(project)
    assert run_isolated(abs, [-3, -4], _fail) == [3, 4]
    assert not marker.exists()
