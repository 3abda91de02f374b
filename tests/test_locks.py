"""The shared advisory file lock: one holder at a time, a non-waiting second caller is told, the lock is
free again once the holder leaves (even through an exception)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebase_index.locks import file_lock


def test_second_caller_without_wait_is_refused_while_held(tmp_path: Path) -> None:
    path = tmp_path / "job.lock"
    with file_lock(path, wait=False) as first:
        assert first is True
        with file_lock(path, wait=False) as second:
            assert second is False
    with file_lock(path, wait=False) as again:
        assert again is True


def test_lock_is_released_when_the_holder_raises(tmp_path: Path) -> None:
    path = tmp_path / "job.lock"
    with pytest.raises(RuntimeError), file_lock(path, wait=True) as held:
        assert held is True
        raise RuntimeError("job failed")
    with file_lock(path, wait=False) as after:
        assert after is True
