"""The exact-literal retriever and its FTS5 trigram index: found where BM25 ranks low, kept in step with
every write (changed and deleted files, branches), built once for an index made before it existed, and
the degraded path where SQLite has no trigram tokenizer (real SQLite, real grammars, real git repos)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from codebase_index import literal, literal_index
from codebase_index.ranking import parse_query
from codebase_index.service import Engine
from codebase_index.service.retrieval import keyword_candidates
from test_vectors import git, make_repo

# Many chunks full of the message's words, one chunk holding the message itself: BM25 ranks the words.
_NOISE = "".join(
    f"def package_version_{i}(name, version):\n"
    f"    '''Package name and version {i}: the package name, the package version.'''\n"
    f"    package = lookup_package(name, version)\n"
    f"    return package.name, package.version, name, version\n\n\n"
    for i in range(60)
)
_REPO = {
    "pkg/noise.py": _NOISE,
    "pkg/publish.py": (
        "import os\n\n\n"
        "def publish(manifest, registry, token, retries=3):\n"
        "    while retries:\n"
        "        retries -= 1\n"
        "        response = registry.put(manifest, token=token)\n"
        "        if response.status == 409:\n"
        '            raise PublishError("name@version is taken")\n'
        "        if response.ok:\n"
        "            return response\n"
        "    os.sync()\n"
    ),
    "pkg/other.py": "def other():\n    return 'nothing to see'\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo", _REPO)


@pytest.fixture
def engine(repo: Path, tmp_path: Path) -> Iterator[Engine]:
    eng = Engine(repo, index_path=tmp_path / "index")
    eng.index()
    yield eng
    eng.close()


def _literal_paths(eng: Engine, query: str) -> dict[str, set[str]]:
    snap = eng.snapshot()
    found = literal.retrieve(eng.store, snap, parse_query(query))
    assert not found.unavailable
    return {snap.docs[d].path: {lit.kind for lit in lits} for d, lits in found.matches.items()}


def _holders(eng: Engine, text: str) -> set[str]:
    """The files whose chunks hold `text`, quoted in a query."""
    return {path for path, kinds in _literal_paths(eng, f"'{text}'").items() if "quoted" in kinds}


def _integrity(db: Path) -> None:
    conn = sqlite3.connect(db)
    try:  # raises on an index that differs from the chunks it is built over
        # rank 1: against the chunks it indexes, not only its own structure
        table = literal_index.LITERAL_TABLE
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


def test_a_quoted_string_bm25_ranks_low_is_found_and_ranked_first(engine: Engine) -> None:
    query = 'it fails with "name@version" for the package name and version'
    keyword = engine.search(query, mode="keyword", top_k=60).results
    # BM25 alone: the words are everywhere, the publishing chunk is not in the first 30 candidates.
    parsed = parse_query(query)
    snap = engine.snapshot()
    _, hits = keyword_candidates(engine, parsed, snap, None, 200)
    bm25_rank = next(i for i, h in enumerate(hits) if snap.docs[h.doc].symbol == "publish")
    assert bm25_rank >= 30
    assert _literal_paths(engine, query) == {"pkg/publish.py": {"quoted"}}
    assert (keyword[0].path, keyword[0].symbol) == ("pkg/publish.py", "publish")


def test_a_pasted_message_is_found_by_its_words_in_order(engine: Engine) -> None:
    found = _literal_paths(engine, "why does it fail with name@version is taken")
    assert found == {"pkg/publish.py": {"message"}}
    top = engine.search("why does it fail with name@version is taken", mode="keyword").results[0]
    assert (top.path, top.symbol) == ("pkg/publish.py", "publish")


def test_changed_and_deleted_files_keep_the_index_in_step(engine: Engine, repo: Path, tmp_path: Path) -> None:
    assert "pkg/other.py" in _holders(engine, "nothing to see")
    (repo / "pkg/other.py").write_text("def other():\n    return 'something else entirely'\n")
    engine.index()
    assert _holders(engine, "nothing to see") == set()
    assert _holders(engine, "something else entirely") == {"pkg/other.py"}
    (repo / "pkg/publish.py").unlink()
    engine.index()
    assert _holders(engine, "name@version is taken") == set()
    _integrity(tmp_path / "index" / "codebase.db")
    rows = engine.store.conn.execute(f"SELECT COUNT(*) FROM {literal_index.LITERAL_TABLE}").fetchone()[0]
    assert rows == engine.store.conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]


def test_path_level_updates_keep_the_index_in_step(engine: Engine, repo: Path, tmp_path: Path) -> None:
    # What the watcher runs on a save: only the named files.
    (repo / "pkg/other.py").write_text("def other():\n    return 'saved by the editor'\n")
    (repo / "pkg/extra.py").write_text("def extra():\n    return 'a new file appears'\n")
    (repo / "pkg/publish.py").unlink()
    report = engine.index_paths(["pkg/other.py", "pkg/extra.py", "pkg/publish.py"])
    assert (report.files_changed, report.files_removed) == (2, 1)
    assert _holders(engine, "saved by the editor") == {"pkg/other.py"}
    assert _holders(engine, "a new file appears") == {"pkg/extra.py"}
    assert _holders(engine, "nothing to see") == set()
    assert _holders(engine, "name@version is taken") == set()
    _integrity(tmp_path / "index" / "codebase.db")


def test_a_branch_sees_only_its_own_chunks(engine: Engine, repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "pkg/other.py").write_text("def other():\n    return 'only on the feature branch'\n")
    engine.index()
    assert _holders(engine, "only on the feature branch") == {"pkg/other.py"}
    git(repo, "checkout", "-q", "-f", "main")
    engine.index()
    # The feature branch's chunk is still stored (the branch may come back) but is not main's.
    assert _holders(engine, "only on the feature branch") == set()
    assert "pkg/other.py" in _holders(engine, "nothing to see")


def test_an_index_made_before_the_literal_index_gets_it_once(engine: Engine, tmp_path: Path) -> None:
    db = tmp_path / "index" / "codebase.db"
    engine.close()
    conn = sqlite3.connect(db)
    for trigger in ("chunks_literal_ai", "chunks_literal_ad", "chunks_literal_au"):
        conn.execute(f"DROP TRIGGER {trigger}")
    conn.execute(f"DROP TABLE {literal_index.LITERAL_TABLE}")
    conn.execute("DELETE FROM meta WHERE key='literal_index'")
    conn.commit()
    chunks_before = conn.execute("SELECT id, chunk_hash FROM chunks ORDER BY id").fetchall()
    conn.close()
    again = Engine(engine.root, index_path=tmp_path / "index")
    try:
        assert again.status().literal_index is None  # built on open, from the stored chunks
        report = again.index()
        assert report.files_changed == 0  # nothing re-chunked (nor re-embedded)
        assert again.store.conn.execute("SELECT id, chunk_hash FROM chunks ORDER BY id").fetchall() == (
            chunks_before
        )
        assert _holders(again, "nothing to see") == {"pkg/other.py"}
        _integrity(db)
    finally:
        again.close()


@pytest.fixture
def no_trigram(monkeypatch: pytest.MonkeyPatch) -> None:
    """A SQLite without the trigram tokenizer, as the detection meets it: the probe asks SQLite for a
    tokenizer it does not have and gets SQLite's own error."""
    monkeypatch.setattr(literal_index, "LITERAL_TOKENIZER", "no_such_tokenizer")


def test_without_the_tokenizer_search_degrades_and_status_says_so(
    repo: Path, tmp_path: Path, no_trigram: None, capsys: pytest.CaptureFixture[str]
) -> None:
    from codebase_index.cli import main

    eng = Engine(repo, index_path=tmp_path / "index")
    try:
        eng.index()
        reason = eng.status().literal_index
        assert reason is not None and "no_such_tokenizer" in reason
        found = literal.retrieve(eng.store, eng.snapshot(), parse_query("'nothing to see'"))
        assert found.matches == {} and not found.looked_up and found.unavailable == reason
        # Today's behaviour: the exact text is looked for among the best keyword candidates.
        top = eng.search("def other():\n    return 'nothing to see'", mode="keyword").results[0]
        assert (top.path, top.symbol) == ("pkg/other.py", "other")
    finally:
        eng.close()
    assert main(["status", "--root", str(repo), "--index-dir", str(tmp_path / "index")]) == 0
    out = capsys.readouterr().out
    assert out.count("no exact-literal index") == 1 and "no_such_tokenizer" in out


def test_an_index_opened_without_the_tokenizer_stays_writable_and_is_rebuilt_later(
    engine: Engine, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.close()
    monkeypatch.setattr(literal_index, "LITERAL_TOKENIZER", "no_such_tokenizer")
    degraded = Engine(repo, index_path=tmp_path / "index")
    try:
        # Its triggers are dropped on open, so writing chunks does not need the missing tokenizer.
        (repo / "pkg/other.py").write_text("def other():\n    return 'written while degraded'\n")
        assert degraded.index().files_changed == 1
        assert degraded.store.get_meta("literal_index") == "stale"
    finally:
        degraded.close()
    monkeypatch.setattr(literal_index, "LITERAL_TOKENIZER", "trigram")
    capable = Engine(repo, index_path=tmp_path / "index")
    try:
        assert capable.status().literal_index is None
        assert _holders(capable, "written while degraded") == {"pkg/other.py"}
        assert _holders(capable, "nothing to see") == set()
        _integrity(tmp_path / "index" / "codebase.db")
    finally:
        capable.close()


def test_repair_finds_and_rebuilds_an_index_that_disagrees_with_the_chunks(
    engine: Engine, tmp_path: Path
) -> None:
    assert engine.repair().problems == []
    engine.close()
    conn = sqlite3.connect(tmp_path / "index" / "codebase.db")
    # A chunk's text changed behind the index's back (no trigger to follow it).
    conn.execute("DROP TRIGGER chunks_literal_au")
    conn.execute("UPDATE chunks SET text = 'changed behind its back' WHERE symbol = 'other'")
    for statement in literal_index.schema(literal_index.LITERAL_TOKENIZER):
        conn.execute(statement)
    conn.commit()
    conn.close()
    again = Engine(engine.root, index_path=tmp_path / "index")
    try:
        report = again.repair()
        assert report.ok and report.moved_aside is None
        assert any("exact-literal index disagrees" in p for p in report.problems)
        assert "exact-literal index rebuilt from the chunks" in report.repaired
        assert _holders(again, "changed behind its back") == {"pkg/other.py"}
        assert again.repair().problems == []
        _integrity(tmp_path / "index" / "codebase.db")
    finally:
        again.close()


def _message_repo(root: Path, noise_doc: str) -> Path:
    """60 functions whose docstrings say `noise_doc`, two that raise "Value must be greater than or equal
    to zero." (in zz/, indexed after the noise)."""
    noise = "".join(
        f"def limit_{i}(count):\n    '''{noise_doc}'''\n    return count + {i}\n\n\n" for i in range(60)
    )
    raising = "".join(
        f"def {name}(count):\n"
        "    '''Value must be greater than or equal to zero.'''\n"
        "    if count < 0:\n"
        "        raise ValueError('Value must be greater than or equal to zero.')\n"
        "    return count\n\n\n"
        for name in ("retry", "bulkhead")
    )
    return make_repo(root, {"pkg/limits.py": noise, "zz/policies.py": raising})


def test_a_message_whose_windows_are_all_common_is_found_by_its_longest_run(tmp_path: Path) -> None:
    """Every three-word window of the pasted message is held by more than literal.LIMIT chunks ("Value
    must be", "must be greater", "equal to zero."): the window grown to the longest run some chunk holds
    finds the raisers, which BM25 alone ranks below the noise."""
    repo = _message_repo(tmp_path / "repo", "Value must be greater than one, or equal to zero.")
    query = "seeing this in the logs: Value must be greater than or equal to zero."
    eng = Engine(repo, index_path=tmp_path / "index")
    try:
        eng.index()
        found = literal.retrieve(eng.store, eng.snapshot(), parse_query(query))
        assert {lit.text for lit in found.common} >= {"Value must be", "must be greater", "equal to zero."}
        snap = eng.snapshot()
        assert {snap.docs[d].symbol for d in found.matches} == {"retry", "bulkhead"}
        top = eng.search(query, mode="keyword").results[0]
        assert (top.path, top.symbol in ("retry", "bulkhead")) == ("zz/policies.py", True)
    finally:
        eng.close()


def test_a_grown_run_more_chunks_hold_keeps_the_best_by_keyword_score(tmp_path: Path) -> None:
    """The whole message is in 62 chunks (60 docstrings, 2 raisers): the LIMIT holders kept are the best
    by keyword score (the raisers say it twice), not the first the index returns."""
    repo = _message_repo(tmp_path / "repo", "Value must be greater than or equal to zero.")
    query = "seeing this in the logs: Value must be greater than or equal to zero."
    eng = Engine(repo, index_path=tmp_path / "index")
    try:
        eng.index()
        snap = eng.snapshot()
        scores, _ = keyword_candidates(eng, parse_query(query), snap, None, 200)
        found = literal.retrieve(eng.store, snap, parse_query(query), keyword_scores=scores)
        assert len(found.matches) == literal.LIMIT
        assert {"retry", "bulkhead"} <= {snap.docs[d].symbol for d in found.matches}
        top = eng.search(query, mode="keyword").results[0]
        assert (top.path, top.symbol in ("retry", "bulkhead")) == ("zz/policies.py", True)
    finally:
        eng.close()


def test_a_message_two_functions_raise_in_different_case_ranks_the_one_in_the_pasted_case_first(
    tmp_path: Path,
) -> None:
    """Both raise "number of iterables and ..." (one capitalised, and it says the words more often, so it
    comes first by keyword score): the pasted lower-case message names the raiser that has it in that
    case."""
    capital = (
        "def zip_offset(*iterables, offsets):\n"
        "    '''Zip the iterables with offsets: one offset per iterable.'''\n"
        "    if len(iterables) != len(offsets):\n"
        "        raise ValueError('Number of iterables and offsets did not match')\n"
        "    return zip(*iterables)\n"
    )
    lower = (
        "def zip_equal(*iterables):\n"
        "    sizes = [len(it) for it in iterables]\n"
        "    if len(set(sizes)) > 1:\n"
        "        raise ValueError('Mismatching number of iterables and lengths.')\n"
        "    return zip(*iterables)\n"
    )
    repo = make_repo(tmp_path / "repo", {"pkg/offsets.py": capital, "pkg/equal.py": lower})
    eng = Engine(repo, index_path=tmp_path / "index")
    try:
        eng.index()
        top = eng.search("error: number of iterables and", mode="keyword").results
        assert top[0].symbol == "zip_equal", [r.symbol for r in top]
        # In the other function's case, the other one.
        top = eng.search("error: Number of iterables and", mode="keyword").results
        assert top[0].symbol == "zip_offset", [r.symbol for r in top]
    finally:
        eng.close()


def test_a_pasted_message_with_a_value_finds_its_raiser_below_the_thirtieth_keyword_candidate(
    tmp_path: Path,
) -> None:
    """The message has format holes ("'%s' expected type '%s', got '%s'"), so neither the quoted part nor
    any window of it is in the literal index; 40 chunks say its words more often. The texts read for a
    query that presents a message go deeper than 30 candidates, so the raiser is found and ranked first."""
    noise = "".join(
        f"// TestType{i} checks the type we got for value {i}: type, value, got.\n"
        f'func TestType{i}(t *testing.T) {{ check(t, "type", "value", "got", {i}) }}\n\n'
        for i in range(40)
    )
    raising = (
        "package decode\n\n"
        "func decodeInt(name string, data interface{}, val reflect.Value) error {\n"
        "\tif !ok {\n"
        "\t\treturn fmt.Errorf(\"'%s' expected type '%s', got '%s'\", name, val.Type(), data)\n"
        "\t}\n"
        "\treturn nil\n"
        "}\n"
    )
    repo = make_repo(
        tmp_path / "repo",
        {"decode/checks_test.go": "package decode\n\n" + noise, "decode/decode.go": raising},
    )
    eng = Engine(repo, index_path=tmp_path / "index")
    try:
        eng.index()
        query = "got err \"type 'value', got\""
        snap = eng.snapshot()
        _, hits = keyword_candidates(eng, parse_query(query), snap, None, 100)
        at = next(i for i, h in enumerate(hits, 1) if snap.docs[h.doc].symbol == "decodeInt")
        assert 30 < at <= 60, at  # where the old read depth (30) missed it
        top = eng.search(query, mode="keyword").results
        assert top[0].symbol == "decodeInt", [r.symbol for r in top[:5]]
    finally:
        eng.close()
