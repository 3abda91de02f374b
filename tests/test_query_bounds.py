"""A query's memory is linear in its length: long words once cost every prefix (10k letters, 237 MB)."""

from __future__ import annotations

import subprocess
import sys
import tracemalloc
from pathlib import Path

from codebase_index.ranking.features import path_score
from codebase_index.ranking.query import parse_query
from codebase_index.tools.schema import MAX_QUERY_CHARS


def _peak_bytes(query: str) -> int:
    tracemalloc.start()
    try:
        parsed = parse_query(query)
        path_score("src/" + query[:40] + "/impl.py", parsed, abbreviation=0.5)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_one_long_word_costs_memory_linear_in_its_length() -> None:
    word = "q" * MAX_QUERY_CHARS * 5  # quadratic prefixes of this took ~950 MB
    assert _peak_bytes(word) < 50 * len(word)


def test_a_seven_megabyte_word_is_parsed_and_scored_in_bounded_memory() -> None:
    word = "z" * 7_000_000
    assert _peak_bytes(word) < 10 * len(word)


def test_abbreviations_of_long_words_still_match() -> None:
    parsed = parse_query("implementations")
    assert path_score("src/ser/impls.rs", parsed, abbreviation=0.5) == 0.5


def test_the_cli_refuses_a_query_over_the_maximum_length(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "codebase_index.cli",
            "search",
            "--root",
            str(tmp_path),
            "--index-dir",
            str(tmp_path / ".idx"),
            "w" * (MAX_QUERY_CHARS + 1),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode != 0
    assert f"at most {MAX_QUERY_CHARS}" in proc.stderr
