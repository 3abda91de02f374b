"""The bounded fuzz of `make test`: a few hundred files of mixed formats sampled from this venv's
site-packages (and node_modules when present) through the real index pipeline, in-process and in the
worker pool. Nothing may abort a run and every file must be accounted for (indexed or skipped with a
reason). `make fuzz` runs the same harness over the whole trees."""

from __future__ import annotations

from pathlib import Path

import pytest

from codebase_index import processing
from fuzz_index import default_trees, fuzz, hostile_tree, sample_tree

SAMPLE_FILES = 300


@pytest.mark.parametrize("pool", [False, True], ids=["serial", "pool"])
def test_a_sample_of_real_files_never_aborts_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, pool: bool
) -> None:
    trees = default_trees(Path(__file__).resolve().parent.parent)
    assert trees, "site-packages of the running interpreter must exist"
    sample = tmp_path / "sample"
    copied = sample_tree(trees, sample, SAMPLE_FILES)
    assert copied >= 100
    if pool:
        monkeypatch.setattr(processing, "PARALLEL_THRESHOLD_BYTES", 0)
    report = fuzz([sample], workers=2 if pool else 1)
    print(report.as_dict())  # run with -s to see the per-reason counts
    assert report.aborted == []
    assert report.runs >= 1 and report.files > 0 and report.chunks > report.files
    # Every copied file is indexed or skipped with a reason; errors are named with their detail.
    assert report.seen == copied
    assert len(report.errors) == report.skipped.get("error", 0)
    assert all(": " in e for e in report.errors)


def test_hostile_names_and_ignore_files_never_abort_a_run(tmp_path: Path) -> None:
    """Generated names (not UTF-8, control characters, 255 bytes, nested past PATH_MAX) and hostile ignore
    files (lines git drops, bytes that are not UTF-8, too large to read) through the real pipeline."""
    written = hostile_tree(tmp_path / "hostile" / "names", files=300)
    assert written > 200
    report = fuzz([tmp_path / "hostile"], workers=1)
    print(report.as_dict())
    assert report.aborted == []
    assert report.files > 0
    assert report.skipped["unreadable-name"] > 0 and report.skipped["invalid-ignore"] > 0
