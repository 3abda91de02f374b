"""The code-aware rerank: each signal on its own, fusion, the whole `rank`, the engine wiring, and the
external reranker's fall-back (against the real fake provider server on 127.0.0.1)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import msgspec
import pytest

from codebase_index.bm25 import stem
from codebase_index.config import Config, RerankerConfig, SearchConfig
from codebase_index.ranking import (
    Candidate,
    Penalties,
    RankParams,
    Relation,
    complete_keyword,
    definition_score,
    diversify,
    file_coherence,
    file_mass,
    file_penalty,
    file_ranks,
    fuse_rrf,
    fuse_weighted,
    identifier_keyword_weight,
    keyword_query,
    may_quote,
    merge_external,
    parse_query,
    path_score,
    path_stem_weights,
    quotes_query,
    rank,
    rank_hits,
    shadowed_private,
    stem_overlap,
    superseded_dirs,
    verbatim_run,
)
from codebase_index.ranking.features import CASE_FOLDED_DEFINITION
from codebase_index.ranking.query import INFLECTION_WEIGHT
from codebase_index.search import DocRow, FieldWeights, KeywordSnapshot, module_path, path_field_tokens
from codebase_index.service import Engine
from codebase_index.service.retrieval import head_quotes_query, head_texts
from codebase_index.vectors import Hit
from provider_server import closed_port_url, serve, status_fault
from test_vectors import make_repo, remote_config

# ------------------------------------------------------------------------------------------ query profile


@pytest.mark.parametrize(
    ("query", "identifiers", "symbol_query"),
    [
        ("getUserById", ("getUserById",), True),
        ("Foo::bar", ("Foo::bar",), True),
        ("_private", ("_private",), True),
        ("Session", ("Session",), True),
        ("where is parse_config called", ("parse_config",), False),
        ("how redirects are followed", (), False),
        ("HTTPServer shutdown", ("HTTPServer",), False),
    ],
)
def test_profile_finds_identifiers(query: str, identifiers: tuple[str, ...], symbol_query: bool) -> None:
    profile = parse_query(query)
    assert profile.identifiers == identifiers
    assert profile.symbol_query is symbol_query


def test_profile_drops_question_words_and_notices_test_and_doc_intent() -> None:
    profile = parse_query("how does the router handle redirects")
    assert profile.words == ("router", "redirects")
    assert profile.stems == {"router", "redirect"}
    assert not profile.wants_tests
    assert parse_query("tests for the router").wants_tests
    assert parse_query("README install guide").wants_docs
    assert parse_query("example of middleware").wants_examples


def test_test_intent_follows_inflections() -> None:
    # "mocking" asks for the mock implementation as "mock" does: files under mock/ are not demoted.
    assert parse_query("fake timers and timer mocking utilities").wants_tests
    assert parse_query("shared test fixtures").wants_tests
    assert not parse_query("timer utilities").wants_tests
    assert file_penalty("src/mock/timers.ts", parse_query("timer mocking")) == 1.0


def test_stem_conflates_inflections_but_not_short_words() -> None:
    assert stem("redirects") == stem("redirect") == stem("redirected") == stem("redirecting")
    assert stem("parses") == stem("parse") == stem("parsed")
    assert stem("class") == "class"
    assert stem("is") == "is"


def test_identifier_weight_rises_for_code_like_queries() -> None:
    assert identifier_keyword_weight(parse_query("getUserById"), 0.5) == 0.8
    assert identifier_keyword_weight(parse_query("where is getUserById called"), 0.5) == pytest.approx(0.65)
    assert identifier_keyword_weight(parse_query("payment validation"), 0.5) == 0.5
    # An explicit higher keyword share is never lowered.
    assert identifier_keyword_weight(parse_query("getUserById"), 0.9) == 0.9


# ------------------------------------------------------------------------------------------ chunk signals


def test_definition_score_exact_qualified_and_member() -> None:
    assert definition_score("getUserById", parse_query("getUserById")) == 1.0
    assert definition_score("UserService.getUserById", parse_query("getUserById")) == 1.0
    assert definition_score("Foo.bar", parse_query("Foo::bar")) == 1.0
    assert definition_score("Baz.bar", parse_query("Foo::bar")) == 0.7  # same name, other owner
    assert definition_score("Session.send", parse_query("Session")) == 0.7  # a member of it
    assert definition_score("get_user_by_id", parse_query("getUserById")) == 1.0
    assert definition_score("getUser", parse_query("getUserById")) == 0.0
    assert definition_score("", parse_query("getUserById")) == 0.0
    assert definition_score("getUserById", parse_query("how users are fetched")) == 0.0


def test_definition_score_sees_names_through_separators_and_non_ascii_letters() -> None:
    """The cheap pre-check (the wanted name inside the symbol with separators dropped) must keep every
    match the component comparison finds, whatever separates or spells the components."""
    assert definition_score("obj->handle_request", parse_query("handleRequest")) == 1.0
    assert definition_score("Foo-Bar.baz", parse_query("FooBar")) == 0.7  # a member of Foo-Bar
    assert definition_score("Straße.Größe", parse_query("Größe")) == 1.0
    assert definition_score("Straße.größe", parse_query("Größe")) == CASE_FOLDED_DEFINITION
    assert definition_score("Größe.mehr", parse_query("Größe")) == 0.7
    assert definition_score("ns::__init__", parse_query("__init__")) == 1.0
    assert definition_score("parse_json", parse_query("getUserById")) == 0.0
    assert definition_score("Größer", parse_query("Größe")) == 0.0  # a longer name only contains it


def test_definition_score_prefers_the_initial_case_typed() -> None:
    # A capitalised query names a type; the same name in lower case is a function or value.
    session = parse_query("Session")
    assert definition_score("Session", session) == 1.0
    assert definition_score("session", session) == CASE_FOLDED_DEFINITION < 1.0
    assert definition_score("command", parse_query("Command")) == CASE_FOLDED_DEFINITION
    assert definition_score("Session", parse_query("session")) == CASE_FOLDED_DEFINITION
    # Punctuation and the naming convention do not count as a different case.
    assert definition_score("$ZodError", parse_query("ZodError")) == 1.0
    assert definition_score("parse_config", parse_query("parseConfig")) == 1.0


def test_rank_puts_the_type_above_its_lowercase_factory() -> None:
    cands = [
        Candidate(1, "src/sessions.py", "session", "function", 1.0),
        Candidate(2, "src/sessions.py", "Session", "class", 0.9),
    ]
    assert [r.doc for r in rank(cands, parse_query("Session"))] == [2, 1]


def test_stem_overlap_matches_identifier_parts_in_any_casing() -> None:
    profile = parse_query("parse config")
    assert stem_overlap("parseConfig", profile) == 1.0
    assert stem_overlap("ConfigParser", profile) == 0.5  # "parser" is not "parse"
    assert stem_overlap("config_parse", profile) == 1.0
    assert stem_overlap("Router.mount", profile) == 0.0


def test_path_score_weighs_file_name_over_directories() -> None:
    profile = parse_query("how are redirects implemented")
    assert profile.words == ("redirects",)  # question words do not count
    assert path_score("lib/redirects.py", profile) == 1.0
    assert path_score("redirect/core.py", profile) == 0.5
    assert path_score("lib/core.py", profile) == 0.0


def test_path_score_sees_words_a_file_name_runs_together() -> None:
    profile = parse_query("real IP extraction from forwarded headers")
    # "real" and "ip" are both found in realip.go; route_headers.go only has "headers".
    assert path_score("middleware/realip.go", profile) > path_score("middleware/route_headers.go", profile)
    assert path_score("src/threadpool.c", parse_query("thread pool")) == 1.0
    assert path_score("threadpool/queue.c", parse_query("thread pool")) == 0.5  # a directory: half
    # A typed identifier's own parts are not a compound: the folder matches "websocket" only, not also
    # its parts web and socket (stems: websocket, web, socket, client).
    ws = parse_query("WebSocket client")
    assert path_score("src/websocket/reader.py", ws) == pytest.approx(0.5 / 4)


@pytest.mark.parametrize(
    ("path", "factor"),
    [
        ("src/session.py", 1.0),
        ("tests/test_session.py", 0.55),
        ("src/session_test.go", 0.55),
        ("src/session.spec.ts", 0.55),
        ("examples/session.py", 0.6),
        ("_examples/rest/main.go", 0.6),  # the underscore keeps Go tooling out of the folder
        ("vendor/lib/session.go", 0.6),
        ("src/_compat.py", 0.75),
        ("types/session.d.ts", 0.7),
        ("docs/session.md", 0.6),  # one doc penalty, whether by extension or folder
        ("docs/conf.py", 0.6),
        ("README.md", 0.6),
    ],
)
def test_file_penalty_by_kind(path: str, factor: float) -> None:
    assert file_penalty(path, parse_query("session cookies")) == pytest.approx(factor)


def test_file_penalty_spares_what_the_query_asks_for() -> None:
    assert file_penalty("tests/test_session.py", parse_query("session tests")) == 1.0
    assert file_penalty("docs/guide.md", parse_query("session docs")) == 1.0
    assert file_penalty("examples/app.py", parse_query("session example")) == 1.0


def test_file_coherence_and_diversify() -> None:
    assert file_coherence([1.0], 3) == 0.0
    assert file_coherence([1.0, 0.6, 0.3, 0.3, 0.3], 3) == pytest.approx(0.4)
    assert file_coherence([1.0, 0.5], 0) == 0.0
    out = diversify([(1, "a", 1.0), (2, "a", 0.95), (3, "a", 0.9), (4, "b", 0.5)], 0.5)
    assert [d for d, _ in out] == [1, 4, 2, 3]
    assert [d for d, _ in diversify([(1, "a", 1.0), (2, "a", 0.9), (3, "b", 0.5)], 1.0)] == [1, 2, 3]
    with pytest.raises(ValueError, match="decay"):
        diversify([], 0.0)


def test_file_mass_is_each_files_share_of_the_candidates() -> None:
    assert file_mass({"a.py": [0.5, 0.5, 0.5], "b.py": [1.0], "c.py": []}) == pytest.approx(
        {"a.py": 1.0, "b.py": 2 / 3, "c.py": 0.0}
    )
    assert file_mass({}) == {}
    assert file_mass({"a.py": [0.0]}) == {"a.py": 0.0}


def _sibling_and_core() -> list[Candidate]:
    # cobra.go has the single sharpest chunk; command.go holds most of the matching code.
    core = [Candidate(i, "pkg/command.go", f"Command.f{i}", "method", 0.3) for i in range(2, 8)]
    return [
        Candidate(0, "pkg/cobra.go", "setup", "function", 1.0),
        *core,
        Candidate(1, "pkg/command.go", "Command.Help", "method", 0.95),
    ]


def test_rank_lifts_the_file_most_of_the_evidence_points_at() -> None:
    described = parse_query("help text generation")
    assert rank(_sibling_and_core(), described)[0].doc == 1
    assert rank(_sibling_and_core(), described, RankParams(file_mass=0.0))[0].doc == 0
    # A literal query (a symbol lookup here) is not about a subject: the sharpest chunk stays first.
    assert rank(_sibling_and_core(), parse_query("helpTemplate"))[0].doc == 0


# ------------------------------------------------------------------------------------------ fusion


def test_fuse_rrf_weights_and_validation() -> None:
    fused = fuse_rrf([[1, 2, 1], [2]], k=60)
    assert fused[2] == pytest.approx(1 / 62 + 1 / 61)
    assert fused[1] == pytest.approx(1 / 61)  # a repeat within one ranking counts once
    weighted = fuse_rrf([[1], [2]], k=60, weights=[1.6, 0.4])
    assert weighted[1] > weighted[2]
    with pytest.raises(ValueError, match="rrfK"):
        fuse_rrf([[1]], k=0)
    with pytest.raises(ValueError, match="one weight"):
        fuse_rrf([[1], [2]], k=60, weights=[1.0])


def test_fuse_weighted_normalises_each_list() -> None:
    fused = fuse_weighted({1: 20.0, 2: 10.0}, {2: 0.8, 3: 0.4}, 0.5)
    assert fused == pytest.approx({1: 0.5, 2: 0.75, 3: 0.25})
    assert fuse_weighted({1: 5.0}, {}, 1.0) == {1: 1.0}
    with pytest.raises(ValueError, match="hybridWeight"):
        fuse_weighted({}, {}, 1.5)


# ------------------------------------------------------------------------------------------ rank


def test_rank_lifts_the_definition_over_a_stronger_mention() -> None:
    profile = parse_query("getUserById")
    ranked = rank(
        [
            Candidate(0, "src/controllers/users.ts", "UsersController.show", "method", 10.0),
            Candidate(1, "src/services/user.ts", "UserService.getUserById", "method", 7.0),
        ],
        profile,
    )
    assert [r.doc for r in ranked] == [1, 0]
    off = RankParams(definition=0.0, symbol_definition=0.0, stem=0.0, path=0.0)
    assert [r.doc for r in rank(_two_mentions(), profile, off)] == [0, 1]


def _two_mentions() -> list[Candidate]:
    return [
        Candidate(0, "src/controllers/users.ts", "UsersController.show", "method", 10.0),
        Candidate(1, "src/services/user.ts", "UserService.getUserById", "method", 7.0),
    ]


def test_a_symbol_lookup_puts_the_definition_above_a_stronger_path_match() -> None:
    cands = [
        Candidate(1, "routing/path_router.rs", "PathRouter.route", "method", 1.0),
        Candidate(2, "routing/mod.rs", "Router", "struct", 0.45),
    ]
    # The file name says "router" for doc 1; doc 2 defines the queried type.
    assert next(r.doc for r in rank(cands, parse_query("Router"))) == 2
    weak = RankParams(symbol_definition=RankParams().definition)
    assert next(r.doc for r in rank(cands, parse_query("Router"), weak)) == 1
    # In a description the same two chunks keep the ordinary definition weight.
    described = rank(cands, parse_query("how the Router dispatches"))
    assert [r.doc for r in described] == [
        r.doc for r in rank(cands, parse_query("how the Router dispatches"), weak)
    ]


def test_rank_demotes_tests_and_spreads_files() -> None:
    profile = parse_query("session cookies")
    candidates = [
        Candidate(0, "tests/test_session.py", "test_cookies", "function", 10.0),
        Candidate(1, "src/app.py", "App.cookies", "method", 9.0),
        Candidate(2, "src/app.py", "App.other", "method", 8.9),
        Candidate(3, "src/jar.py", "Jar", "class", 8.0),
    ]
    order = [r.doc for r in rank(candidates, profile, RankParams(path=0.0, stem=0.0))]
    assert order[0] == 1
    assert order.index(3) < order.index(2)  # a second file beats a second chunk of the first
    assert order.index(0) > order.index(3)  # the test file sinks below implementation files
    assert rank([], profile) == []


def _row(chunk_id: int, path: str, symbol: str, kind: str = "function") -> DocRow:
    return DocRow(chunk_id, path, "python", 0, 1, 2, kind, symbol, 1, b"", b"")


def _snapshot() -> KeywordSnapshot:
    return KeywordSnapshot(
        [
            _row(1, "a/redirects.py", "follow_redirects"),
            _row(2, "b/util.py", "helper"),
            _row(3, "tests/test_redirects.py", "test_follow"),
        ]
    )


def test_rank_hits_reranks_head_and_keeps_tail_below() -> None:
    snap = _snapshot()
    config = SearchConfig(rerank_top_n=2)
    hits = rank_hits(parse_query("follow_redirects"), snap, [(1, 5.0), (0, 4.0), (2, 3.0)], [], config)
    assert [h.doc for h in hits] == [0, 1, 2]
    assert hits[-1].score < min(h.score for h in hits[:2])
    plain = rank_hits(
        parse_query("follow_redirects"), snap, [(1, 5.0), (0, 4.0)], [], SearchConfig(rerank_top_n=0)
    )
    assert [h.doc for h in plain] == [1, 0]


def test_rank_hits_fuses_both_lists_with_either_strategy() -> None:
    snap = _snapshot()
    for strategy in ("rrf", "weighted"):
        config = SearchConfig(fusion_strategy=strategy, rerank_top_n=0)
        fused = rank_hits(
            parse_query("helper code"), snap, [(1, 3.0), (2, 1.0)], [(1, 0.9), (0, 0.8)], config
        )
        assert fused[0].doc == 1  # first in both lists
        assert {h.doc for h in fused} == {0, 1, 2}
    assert [
        h.doc
        for h in rank_hits(parse_query("x"), snap, [], [(2, 0.5), (0, 0.4)], SearchConfig(rerank_top_n=0))
    ] == [
        2,
        0,
    ]


def test_merge_external_puts_the_api_order_first_and_rejects_bad_answers() -> None:
    hits = [(7, 3.0), (8, 2.0), (9, 1.0), (10, 0.5)]
    assert [h.doc for h in merge_external(hits, [(2, 0.9), (0, 0.5)], 3)] == [9, 7, 8, 10]
    with pytest.raises(ValueError, match="outside"):
        merge_external(hits, [(3, 0.9)], 3)
    with pytest.raises(ValueError, match="twice"):
        merge_external(hits, [(1, 0.9), (1, 0.8)], 3)


@pytest.mark.parametrize(
    ("query", "code_like", "error_like"),
    [
        ("if err != nil { return nil, err }", True, False),
        ("const x = await fetch(url)", True, False),
        ("line one\nline two", True, False),
        ("port must be a number", False, True),
        ("cannot read property 'length' of undefined", False, True),
        ("Error: connection refused", False, True),
        ("how are routes registered", False, False),
        # Questions use error words without being pasted messages.
        ("how tasks that are not Send can run on a single thread", False, False),
        ("where is an invalid token rejected", False, False),
        ("session management", False, False),
        ("Foo::bar", False, False),
    ],
)
def test_profile_recognises_pasted_code_and_error_messages(
    query: str, code_like: bool, error_like: bool
) -> None:
    profile = parse_query(query)
    assert (profile.code_like, profile.error_like) == (code_like, error_like)


def test_literal_queries_lean_on_keywords() -> None:
    assert identifier_keyword_weight(parse_query("x = parse(raw); return x"), 0.5) == 0.85
    assert identifier_keyword_weight(parse_query("file not found: config.yml"), 0.5) == 1.0
    # A configured share above the floor is kept.
    assert identifier_keyword_weight(parse_query("x = parse(raw)"), 0.9) == 0.9


def test_path_score_abbreviations_count_only_when_asked() -> None:
    profile = parse_query("serialization implementations")
    assert path_score("src/ser/impls.rs", profile) == 0.0
    # "impls" abbreviates "implementations" in the file name (0.5), "ser" the directory (half of 0.5).
    assert path_score("src/ser/impls.rs", profile, abbreviation=0.5) == pytest.approx((0.5 + 0.25) / 2)
    # Two letters are not an abbreviation, and a part must be shorter than the word.
    assert path_score("de/implementations.rs", parse_query("deserialization"), abbreviation=1.0) == 0.0


def test_superseded_version_folders() -> None:
    assert superseded_dirs(["src/v3/a.ts", "src/v4/a.ts", "src/v4-mini/a.ts"]) == {"src/v3/"}
    flat = ["pkg/v1/a.py", "pkg/v1/b.py", "pkg/v1/c.py", "pkg/a.py", "pkg/b.py", "pkg/other.py"]
    assert superseded_dirs(flat) == {"pkg/v1/"}
    # An API version folder with its own files is current code, and so is a lone small one.
    assert superseded_dirs(["api/v1/users.go", "api/v1/items.go", "api/v1/auth.go", "api/server.go"]) == set()
    assert superseded_dirs(["pkg/v1/a.py", "pkg/a.py"]) == set()
    assert superseded_dirs([]) == set()


def test_rank_hits_demotes_superseded_copies() -> None:
    rows = [
        _row(1, "pkg/v1/fields.py", "Field"),
        _row(2, "pkg/v1/main.py", "Model"),
        _row(3, "pkg/v1/types.py", "Types"),
        _row(4, "pkg/fields.py", "Field"),
        _row(5, "pkg/main.py", "Model"),
        _row(6, "pkg/types.py", "Types"),
    ]
    snap = KeywordSnapshot(rows)
    hits = rank_hits(parse_query("field declaration"), snap, [(0, 5.0), (3, 4.0)], [], SearchConfig())
    assert [h.doc for h in hits] == [3, 0]
    off = RankParams(penalties=Penalties(superseded=1.0))
    assert [
        h.doc
        for h in rank_hits(
            parse_query("field declaration"), snap, [(0, 5.0), (3, 4.0)], [], SearchConfig(), off
        )
    ] == [
        0,
        3,
    ]


def test_shadowed_private_modules() -> None:
    paths = [
        "pkg/fields.py",
        "pkg/_internal/_fields.py",
        "pkg/_internal/_utils.py",  # no public utils.py: not shadowed
        "pkg/__init__.py",
        "cli/termui.py",
        "cli/_termui_impl.py",
        "lib/_client.js",
    ]
    assert shadowed_private(paths) == {"pkg/_internal/_fields.py", "cli/_termui_impl.py"}
    assert shadowed_private(["httpx/_client.py", "httpx/_models.py"]) == frozenset()


def test_rank_hits_prefers_the_public_module_over_its_private_twin() -> None:
    rows = [_row(1, "pkg/_internal/_fields.py", "collect_fields"), _row(2, "pkg/fields.py", "FieldInfo")]
    snap = KeywordSnapshot(rows)
    keyword = [(0, 5.0), (1, 4.0)]
    assert [h.doc for h in rank_hits(parse_query("model fields"), snap, keyword, [], SearchConfig())] == [
        1,
        0,
    ]
    off = RankParams(penalties=Penalties(shadowed=1.0))
    assert [
        h.doc for h in rank_hits(parse_query("model fields"), snap, keyword, [], SearchConfig(), off)
    ] == [0, 1]


def test_file_ranks_and_the_semantic_file_vote() -> None:
    assert file_ranks([3, 1, 2, 0], ["a", "b", "a", "c"].__getitem__) == {"c": 1, "b": 2, "a": 3}
    rows = [_row(1, "a.py", "one"), _row(2, "b.py", "two"), _row(3, "b.py", "three")]
    snap = KeywordSnapshot(rows)
    config = SearchConfig(rerank_top_n=0, rrf_k=1, hybrid_weight=0.5)
    keyword = [(0, 3.0), (1, 2.0)]
    semantic = [(2, 0.9), (0, 0.8)]
    # Without the vote doc 0 (first by keyword, second by vector) wins; b.py's best vector rank lifts
    # its other chunk, doc 1, when files vote.
    plain = rank_hits(
        parse_query("two things"), snap, keyword, semantic, config, RankParams(semantic_file=0.0)
    )
    voted = rank_hits(
        parse_query("two things"), snap, keyword, semantic, config, RankParams(semantic_file=5.0)
    )
    assert plain[0].doc == 0
    assert [h.doc for h in voted] == [2, 1, 0]


def test_literal_queries_fuse_by_score_under_rrf() -> None:
    rows = [_row(1, "a.py", "one"), _row(2, "b.py", "two"), _row(3, "c.py", "three")]
    snap = KeywordSnapshot(rows)
    config = SearchConfig(fusion_strategy="rrf", rerank_top_n=0)
    keyword = [(0, 30.0), (1, 2.0), (2, 1.9)]
    semantic = [(2, 0.9), (1, 0.85), (0, 0.2)]
    # A pasted line: the exact match's keyword margin decides; as ranks only, the vectors would win.
    literal = rank_hits(parse_query("value = compute(x);"), snap, keyword, semantic, config)
    assert literal[0].doc == 0
    described = rank_hits(
        parse_query("compute value"), snap, keyword, semantic, SearchConfig(rerank_top_n=0, hybrid_weight=0.2)
    )
    assert described[0].doc == 2
    # A lone identifier is literal too: the vectors miss its exact match, which must still come first
    # (as ranks only, doc 2, liked by both lists, would win).
    semantic_miss = [(2, 0.9), (1, 0.85)]
    assert rank_hits(parse_query("computeValue"), snap, keyword, semantic_miss, config)[0].doc == 0


def test_verbatim_run_finds_the_longest_shared_word_sequence() -> None:
    assert verbatim_run(["no", "such", "layout"], ["error", "no", "such", "layout", "here"]) == 3
    assert verbatim_run(["no", "such", "layout"], ["layout", "such", "no"]) == 1  # same words, no order
    assert verbatim_run(["a", "b", "a", "b", "c"], ["x", "a", "b", "c"]) == 3  # a later start is longer
    assert verbatim_run([], ["a"]) == 0
    assert verbatim_run(["a"], []) == 0


def test_quotes_query_needs_the_words_in_order_in_one_file() -> None:
    raising = ("cmd/run.go", 'return errors.New("empty github token for release")')
    assert quotes_query(parse_query("empty github token"), [raising])
    # A fragment cut mid-word (first word) or ending in a formatted value (last word) still quotes.
    assert quotes_query(parse_query("mpty github token for"), [raising])
    assert quotes_query(parse_query("empty github token VALUE"), [raising])
    # Two words missing, the words out of order, or fewer than three words: not a quote.
    assert not quotes_query(parse_query("really empty github token VALUE"), [raising])
    assert not quotes_query(parse_query("token github empty"), [raising])
    assert not quotes_query(parse_query("github token"), [raising])
    # Questions describe code even when a file repeats their words.
    assert not quotes_query(
        parse_query("where is empty github token"), [("a.go", "where is empty github token")]
    )
    # The same phrase in two files (a boilerplate doc comment) does not single one out; two chunks
    # of one file do.
    doc = "// returns the default text for this flag"
    assert not quotes_query(
        parse_query("returns the default text for this flag"), [("a.go", doc), ("b.go", doc)]
    )
    assert quotes_query(parse_query("returns the default text for this flag"), [("a.go", doc), ("a.go", doc)])
    assert not quotes_query(parse_query("empty github token"), [])


def test_may_quote_skips_queries_that_cannot_or_need_not_be_checked() -> None:
    assert may_quote(parse_query("empty github token"))
    assert not may_quote(parse_query("github token"))  # too short
    assert not may_quote(parse_query("where is the github token read"))  # a question
    assert not may_quote(parse_query("token must not be empty"))  # already an error message: keywords only
    assert not may_quote(parse_query("token = read(env);"))  # pasted code


def test_a_quoted_query_fuses_on_keywords() -> None:
    rows = [_row(1, "a.py", "one"), _row(2, "b.py", "two"), _row(3, "c.py", "three")]
    snap = KeywordSnapshot(rows)
    config = SearchConfig(fusion_strategy="rrf", rerank_top_n=0, hybrid_weight=0.3)
    keyword = [(0, 30.0), (1, 2.0), (2, 1.9)]
    semantic = [(2, 0.9), (1, 0.85), (0, 0.2)]
    query = "layouts slice was empty"
    assert (
        rank_hits(parse_query(query), snap, keyword, semantic, config)[0].doc != 0
    )  # as ranks, the vectors win
    quoted = rank_hits(parse_query(query), snap, keyword, semantic, config, verbatim=True)
    assert quoted[0].doc == 0  # the quoting chunk's keyword margin decides
    assert [h.doc for h in quoted[1:]] == [2, 1]  # the vectors still break a near tie


def test_engine_reads_the_best_keyword_chunks_for_a_quote(tmp_path: Path) -> None:
    root = make_repo(
        tmp_path / "repo",
        {
            "cmd/layout.go": 'package cmd\n\nfunc check() error { return errors.New("got nil layouts") }\n',
            "cmd/flags.go": "package cmd\n\n// String returns the default text for this flag\nfunc a() {}\n",
            "cmd/more.go": "package cmd\n\n// Text returns the default text for this flag\nfunc b() {}\n",
        },
    )
    engine = Engine(root, index_path=tmp_path / "index")
    engine.index()
    snap = engine.snapshot()

    def quoted(query: str) -> bool:
        hits = engine.search(query, mode="keyword").results
        by_id = {row.chunk_id: doc for doc, row in enumerate(snap.docs)}
        parsed = parse_query(query)
        texts = head_texts(engine, parsed, snap, [Hit(by_id[r.id], r.score) for r in hits])
        return head_quotes_query(parsed, snap, texts)

    assert quoted("got nil layouts")
    assert not quoted("returns the default text for this flag")  # two files say it
    assert not quoted("nil layouts got")
    engine.close()


def test_complete_keyword_adds_vector_candidates_at_their_keyword_score() -> None:
    scores = {2: 1.5, 3: 0.0, 4: 2.5}
    out = complete_keyword(
        [(0, 9.0), (1, 3.0)], [(3, 0.9), (2, 0.8), (0, 0.7), (4, 0.6)], lambda ds: [scores[d] for d in ds]
    )
    assert out == [(0, 9.0), (1, 3.0), (4, 2.5), (2, 1.5)]  # sorted after the list; no-term doc 3 left out
    assert complete_keyword([(0, 1.0)], [(0, 0.5)], lambda ds: [1.0 for _ in ds]) == [(0, 1.0)]


def test_rrf_ranks_a_vector_only_candidate_by_its_keyword_score() -> None:
    rows = [_row(1, "a.py", "one"), _row(2, "b.py", "two"), _row(3, "c.py", "three")]
    snap = KeywordSnapshot(rows)
    config = SearchConfig(fusion_strategy="rrf", rerank_top_n=0, rrf_k=1)
    keyword = [(0, 3.0)]  # the keyword top list (as cut at the pool size)
    semantic = [(1, 0.9), (2, 0.8)]
    params = RankParams(semantic_file=0.0)
    plain = rank_hits(parse_query("two things"), snap, keyword, semantic, config, params)
    assert [h.doc for h in plain][:2] == [0, 1]
    # Doc 2 also has the query words (below the keyword cut): with its keyword rank it passes doc 0.
    full = {0: 3.0, 1: 0.0, 2: 1.0}
    completed = rank_hits(
        parse_query("two things"),
        snap,
        keyword,
        semantic,
        config,
        params,
        keyword_score=lambda ds: [full[d] for d in ds],
    )
    assert [h.doc for h in completed] == [2, 0, 1]
    # Literal queries keep their own keyword list (score fusion): the same input, unchanged order.
    literal = rank_hits(parse_query("twoThings"), snap, keyword, semantic, config, params)
    completed_literal = rank_hits(
        parse_query("twoThings"),
        snap,
        keyword,
        semantic,
        config,
        params,
        keyword_score=lambda ds: [full[d] for d in ds],
    )
    assert [h.doc for h in literal] == [h.doc for h in completed_literal]


# ------------------------------------------------------------------------------------------ fields


def test_path_field_tokens_repeat_the_file_name() -> None:
    assert path_field_tokens("pkg/redirectHandler.go") == [
        "pkg",
        "redirecthandler",
        "redirect",
        "handler",
        "redirecthandler",
        "redirect",
        "handler",
    ]


def test_path_stem_weights_discount_words_most_paths_share() -> None:
    paths = [f"server/src/{name}.ts" for name in ("initTRPC", "router", "procedure", "middleware")]
    weights = path_stem_weights([*paths, "server/src/adapters/fastifyTRPCPlugin.ts"])
    assert weights["router"] > weights["trpc"] > weights["src"]
    assert all(0.0 < w <= 1.0 for w in weights.values())
    assert path_stem_weights([]) == {}
    # The project's name in the query no longer lets initTRPC.ts match "tRPC routers" as well as
    # router.ts does.
    profile = parse_query("how tRPC routers are created")
    flat = path_score("server/src/initTRPC.ts", profile)
    assert flat == path_score("server/src/router.ts", profile)
    weighted = path_score("server/src/initTRPC.ts", profile, weights=weights)
    assert weighted < path_score("server/src/router.ts", profile, weights=weights)
    # Stems no path has count 1.0, so an empty map changes nothing.
    assert path_score("server/src/router.ts", profile, weights={}) == path_score(
        "server/src/router.ts", profile
    )


def test_module_roots_are_named_by_their_folder() -> None:
    # Rust `mod.rs` and JS/TS `index.*` are imported by the folder's name; Python's __init__ is not.
    assert module_path("src/routing/mod.rs") == ("src", "routing")
    assert module_path("lib/router/index.ts") == ("lib", "router")
    assert module_path("mod.rs") == ("", "mod")  # no folder to stand for
    assert module_path("pkg/__init__.py") == ("pkg", "__init__")
    assert path_field_tokens("src/routing/mod.rs") == ["src", "routing", "routing"]
    middleware = parse_query("how middleware layers are mapped")
    assert path_score("src/middleware/mod.rs", middleware) > path_score("src/middleware/util.rs", middleware)
    assert path_score("src/middleware/mod.rs", middleware) == path_score("src/middleware.rs", middleware)


def _project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "redirects.py").write_text(
        "def resolve(response):\n    location = response.headers['location']\n    return location\n"
    )
    (root / "src" / "client.py").write_text(
        "def send(request):\n    '''Send the request; follow the location header of each redirect.'''\n"
        "    return request\n\n\ndef close():\n    return None\n"
    )
    (root / "tests" / "test_client.py").write_text(
        "def test_send():\n    assert send(make('redirect', 'location', 'redirect location'))\n"
    )
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def test_keyword_query_adds_inflections_for_descriptions_only() -> None:
    terms, weights = keyword_query("scheduled tasks")
    assert terms[:2] == ["scheduled", "tasks"] and weights[:2] == [1.0, 1.0]
    extra = dict(zip(terms[2:], weights[2:], strict=True))
    assert {"schedule", "task"} <= extra.keys()
    assert set(extra.values()) == {INFLECTION_WEIGHT}
    assert len(terms) == len(set(terms))
    # Literal queries are matched as typed.
    assert keyword_query("TaskScheduler")[0] == ["taskscheduler", "task", "scheduler"]
    assert "task" not in keyword_query("tasks must not be empty")[0]  # an error message


def test_search_finds_the_singular_identifier_of_a_plural_question(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "queue.py").write_text(
        "def enqueue(task, scheduler):\n    scheduler.schedule(task)\n    return task\n"
    )
    (root / "src" / "other.py").write_text("def render(page):\n    return page.title\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    engine = Engine(root, index_path=tmp_path / "index")
    engine.index()
    results = engine.search("how are tasks scheduled", mode="keyword").results
    assert results and results[0].path == "src/queue.py"  # the words only occur as `task`, `schedule`
    engine.close()


def test_semantic_mode_goes_through_the_code_aware_rank(tmp_path: Path) -> None:
    # Same text, so the same vector: the vectors tie, and only the rank tells the test file apart.
    body = "def settle(invoice, amount):\n    return invoice.pay(amount)\n"
    root = make_repo(tmp_path / "repo", {"lib/tests/test_billing.py": body, "lib/wallet.py": body})
    with serve(dims=8) as server:
        engine = Engine(root, remote_config(server.base_url), index_path=tmp_path / "idx")
        engine.index()
        engine.embed()
        snap = engine.snapshot()
        vecs = engine.vector_snapshot(snap)
        assert vecs is not None
        raw = vecs.semantic_hits(engine.query_vector("settle an invoice"), 2)
        assert [snap.docs[h.doc].path for h in raw] == ["lib/tests/test_billing.py", "lib/wallet.py"]  # a tie
        found = engine.search("settle an invoice", mode="semantic", top_k=2)
        assert found.strategy == "semantic"
        assert [r.path for r in found.results] == ["lib/wallet.py", "lib/tests/test_billing.py"]
        engine.close()


def test_path_field_finds_a_file_named_after_the_query(tmp_path: Path) -> None:
    engine = Engine(_project(tmp_path / "proj"), index_path=tmp_path / "index")
    engine.index(embed=False)
    snap = engine.snapshot()
    terms = ["redirects", "redirect"]
    ids = engine.store.term_ids(terms)
    plain = snap.enriched_hits(terms, [ids[t] for t in terms if t in ids], 5, FieldWeights(0, 0, 0))
    assert "src/redirects.py" not in {snap.docs[h.doc].path for h in plain}  # its text never says it
    enriched = snap.enriched_hits(terms, [ids[t] for t in terms if t in ids], 5, FieldWeights())
    assert "src/redirects.py" in {snap.docs[h.doc].path for h in enriched}
    top = [r.path for r in engine.search("redirect location", mode="keyword").results]
    assert top.index("src/client.py") < top.index("tests/test_client.py")  # the test sinks
    # Before any vector exists the default (hybrid) search falls back to keywords, ranked the same way.
    fallback = engine.search("redirect location")
    assert fallback.strategy == "keyword-fallback"
    assert [r.path for r in fallback.results] == top
    engine.close()


# ------------------------------------------------------------------------------------------ external reranker


def _with_reranker(root: Path, index: Path, base_url: str, **options: object) -> Engine:
    reranker = RerankerConfig(enabled=True, provider="custom", model="m", base_url=base_url, **options)  # type: ignore[arg-type]
    config = msgspec.structs.replace(Config(), reranker=reranker)
    return Engine(root, config, index_path=index)


def test_external_reranker_reorders_and_falls_back_on_failure(tmp_path: Path) -> None:
    root = _project(tmp_path / "proj")
    Engine(root, index_path=tmp_path / "index").index()
    plain = Engine(root, index_path=tmp_path / "index")
    deterministic = [r.id for r in plain.search("redirect location", mode="keyword").results]
    plain.close()
    with serve() as server:
        engine = _with_reranker(root, tmp_path / "index", server.base_url + "/v1", top_n=3)
        reranked = engine.search("redirect location", mode="keyword").results
        assert server.posts()[0].path == "/v1/rerank"
        assert engine.reranker_error is None
        assert sorted(r.id for r in reranked) == sorted(deterministic)
        server.enqueue(status_fault(500), status_fault(500), status_fault(500))
        failed = engine.search("redirect location", mode="keyword").results
        assert [r.id for r in failed] == deterministic
        assert engine.reranker_error is not None and "500" in engine.reranker_error
        engine.close()
    down = _with_reranker(root, tmp_path / "index", closed_port_url(), timeout_ms=500)
    assert [r.id for r in down.search("redirect location", mode="keyword").results] == deterministic
    assert down.reranker_error
    down.close()


# ------------------------------------------------------------------------------------------ parsed query


@pytest.mark.parametrize(
    ("query", "style"),
    [
        ("parseConfig", "identifier"),
        ("Session", "identifier"),
        ("src/router/index.ts", "path"),
        ("if (user == null) { return; }", "snippet"),
        ("ValueError: port must be a number", "error"),
        ("who calls refresh_token", "relation"),
        ("how are redirects followed across hosts", "description"),
        ("validate the payment amount before charging the customer card", "description"),
        ("redirect following", "phrase"),
    ],
)
def test_parse_query_names_the_style(query: str, style: str) -> None:
    assert parse_query(query).style == style


# Behaviour descriptions that hold a message's punctuation or words (backticks, apostrophes, quoted
# names, "does not", "already", "unknown") and pasted errors with and without the marks of program output.
_DESCRIPTIONS = (
    "Returns true if `self` is an inline table",
    "Yield the items from the iterable that haven't been seen yet",
    "Compute a polynomial's coefficients from its roots",
    "An owning iterator over a `Map`'s entries",
    "Adds a handler to the registry if the key does not already exist",
    "Raised when the specified algorithm is not recognized by the decoder",
    "consumes a hexadecimal integer after seeing the '0x' prefix",
    "Decodes an unknown data type into a specific reflection value",
    ":param str name: the name of the column, missing columns are skipped",
    # Change descriptions (commit subjects) name what was done.
    "Fix invalid header characters being accepted by the parser",
    "IO-892: Add a maximum traversal depth to the observer",
)
_ERRORS = (
    "n must be at least 1",
    "cannot squash non-struct type 'value'",
    "Invalid referrer policy: value",
    "response didn't finish yet",
    "Indices must be non-negative",
    "Test class cannot be null",
    "ValueError: window size should be positive",
    "Traceback (most recent call last): ... KeyError: 'port'",
    "panic: assignment to entry in nil map",
    "Error: result must be a pointer (exit status 1)",
    "seeing this in the logs: connection reset by peer",
    'it fails with "unsupported compression method", how do I fix this',
    "read more than %d bytes into the buffer",
    "thread 'main' panicked at src/parse.rs:42:9",
)


@pytest.mark.parametrize("query", _DESCRIPTIONS)
def test_descriptions_with_message_words_are_not_pasted_errors(query: str) -> None:
    parsed = parse_query(query)
    assert parsed.style == "description"
    assert not parsed.error_like and not parsed.literal
    # A description's words are searched with their inflections; a pasted message's only as typed.
    assert INFLECTION_WEIGHT in parsed.term_weights


@pytest.mark.parametrize("query", _ERRORS)
def test_pasted_errors_are_errors(query: str) -> None:
    parsed = parse_query(query)
    assert parsed.style == "error"
    assert parsed.error_like and parsed.literal
    assert set(parsed.term_weights) == {1.0}
    assert identifier_keyword_weight(parsed, 0.5) == 1.0


def test_a_question_about_an_error_is_a_description() -> None:
    assert parse_query("why does the decoder fail with an invalid header").style == "description"
    assert parse_query("where are unknown flags rejected").style == "description"


def test_parse_query_reads_literals_and_relations_once() -> None:
    parsed = parse_query('where is `parse_config` used in "config/loader.py"')
    assert parsed.quoted == ("parse_config", "config/loader.py")
    assert parsed.paths == ("config/loader.py",)
    assert parse_query("which function calls Session.send?").relation == Relation("callers", "Session.send")
    assert parse_query("callers of handle_request").relation == Relation("callers", "handle_request")
    assert parse_query("what does main call").relation == Relation("callees", "main")
    assert parse_query("where is getUser used").relation == Relation("references", "getUser")
    assert parse_query("where is the config loaded").relation is None  # asks for the code, not uses
    assert parse_query("how does the caller of X work").relation is None
    # The keyword terms are parsed with the query (inflections only for descriptions).
    assert parse_query("spawned tasks").terms[:2] == ("spawned", "tasks")
    assert keyword_query("getUserById") == (list(parse_query("getUserById").terms), [1.0] * 4)


# ------------------------------------------------------------------------------------------ guarantees

_GUARANTEE_REPO = {
    "app/settings.py": (
        "def load_settings(path):\n"
        "    '''Read the settings file.'''\n"
        "    text = open(path).read()\n"
        "    return parse_settings(text)\n\n\n"
        "def parse_settings(text):\n"
        "    values = {}\n"
        "    for line in text.splitlines():\n"
        "        key, _, value = line.partition('=')\n"
        "        values[key.strip()] = value.strip()\n"
        "    return values\n"
    ),
    "app/server.py": (
        "from app.settings import load_settings\n\n\n"
        "def start_server(config_path):\n"
        "    settings = load_settings(config_path)\n"
        "    port = int(settings.get('port', 8080))\n"
        "    return serve_forever(port)\n\n\n"
        "def serve_forever(port):\n"
        "    raise RuntimeError(f'settings port {port} must be free before serving')\n"
    ),
    "tests/test_settings.py": (
        "from app.settings import load_settings, parse_settings\n\n\n"
        "def test_parse_settings():\n"
        "    assert parse_settings('port = 1') == {'port': '1'}\n\n\n"
        "def test_load_settings(tmp_path):\n"
        "    (tmp_path / 's').write_text('port=2')\n"
        "    assert load_settings(tmp_path / 's')['port'] == '2'\n"
    ),
    "docs/settings.md": "# Settings\n\nparse_settings reads key = value lines; load_settings the file.\n",
}


@pytest.fixture(scope="module")
def guarantee_engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    base = tmp_path_factory.mktemp("guarantees")
    root = make_repo(base / "repo", _GUARANTEE_REPO)
    engine = Engine(root, index_path=base / "index")
    engine.index()
    return engine


def _ranked(engine: Engine, query: str, ranker: str) -> list[tuple[str, str]]:
    engine.config = msgspec.structs.replace(
        engine.config, search=msgspec.structs.replace(engine.config.search, ranker=ranker)
    )
    return [(r.path, r.symbol) for r in engine.search(query, mode="keyword").results]


@pytest.mark.parametrize("ranker", ["auto", "rules", "learned"])
def test_a_query_quoted_from_one_chunk_ranks_that_chunk_first(guarantee_engine: Engine, ranker: str) -> None:
    # Lines of one chunk, quoted verbatim (re-indented: whitespace runs count as one space).
    quoted = "key, _, value = line.partition('=')\n values[key.strip()] = value.strip()"
    assert _ranked(guarantee_engine, quoted, ranker)[0] == ("app/settings.py", "parse_settings")
    assert _ranked(guarantee_engine, "port = int(settings.get('port', 8080))", ranker)[0] == (
        "app/server.py",
        "start_server",
    )


@pytest.mark.parametrize("ranker", ["auto", "rules", "learned"])
def test_an_identifier_naming_one_definition_ranks_it_first(guarantee_engine: Engine, ranker: str) -> None:
    for name, path in [("parse_settings", "app/settings.py"), ("serve_forever", "app/server.py")]:
        assert _ranked(guarantee_engine, name, ranker)[0] == (path, name)


@pytest.mark.parametrize("ranker", ["auto", "rules", "learned"])
def test_a_relation_question_is_answered_by_the_caller(guarantee_engine: Engine, ranker: str) -> None:
    # "who calls load_settings": its callers (start_server, the test), not its definition, come first.
    top = _ranked(guarantee_engine, "who calls load_settings", ranker)[:2]
    assert ("app/server.py", "start_server") in top
    assert ("app/settings.py", "load_settings") not in top
    callees = _ranked(guarantee_engine, "what does start_server call", ranker)[:3]
    assert ("app/settings.py", "load_settings") in callees


@pytest.fixture
def model_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One entry per rank stage the fitted model scores (`pipeline.rank_learned`, counted in place)."""
    from codebase_index.ranking import pipeline

    scored: list[str] = []
    real = pipeline.rank_learned

    def counting(*args: object, **kwargs: object) -> object:
        scored.append("learned")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "rank_learned", counting)
    return scored


def test_the_auto_ranker_scores_pasted_code_and_change_requests_with_the_model(
    guarantee_engine: Engine, model_calls: list[str]
) -> None:
    scored = model_calls
    for query, scorer in [
        ("port = int(settings.get('port', 8080))", "learned"),
        ("Fix the port check when the settings file is missing", "learned"),
        ("how are the settings parsed", "rules"),
        ("parse_settings", "rules"),
        ("who calls load_settings", "rules"),
    ]:
        before = len(scored)
        assert _ranked(guarantee_engine, query, "auto")
        assert ("learned" if len(scored) > before else "rules") == scorer, query


def test_the_auto_ranker_leaves_change_requests_among_vector_candidates_to_the_rules(
    guarantee_engine: Engine, model_calls: list[str]
) -> None:
    # Held out (train cv and validation), the rules beat the model on change requests once the vectors
    # are fused in; pasted code keeps the model in either case.
    from codebase_index.ranking import pipeline

    scored = model_calls
    snap = guarantee_engine.snapshot()
    docs = list(range(len(snap.docs)))
    keyword_hits = [(d, 1.0 / (1 + i)) for i, d in enumerate(docs)]
    semantic_hits = [(d, 0.9 - 0.01 * i) for i, d in enumerate(reversed(docs))]
    search = guarantee_engine.config.search
    for query, vectors, scorer in [
        ("Fix the port check when the settings file is missing", False, "learned"),
        ("Fix the port check when the settings file is missing", True, "rules"),
        ("port = int(settings.get('port', 8080))", True, "learned"),
    ]:
        before = len(scored)
        hits = pipeline.rank_hits(
            parse_query(query), snap, keyword_hits, semantic_hits if vectors else [], search
        )
        assert sorted(h.doc for h in hits) == docs
        assert ("learned" if len(scored) > before else "rules") == scorer, (query, vectors)


def test_an_unreadable_ranking_model_falls_back_to_the_rules_and_says_so(
    guarantee_engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A damaged install (weights.json truncated): pasted code, which `auto` scores with the model, is
    answered by the hand-set scorer with a note naming the cause; other queries carry no note."""
    from codebase_index.ranking import learned

    broken = tmp_path / "weights.json"
    broken.write_text('{"features": ["fused"], "weig')
    monkeypatch.setattr(learned, "WEIGHTS_FILE", broken)
    engine = guarantee_engine
    engine.config = msgspec.structs.replace(
        engine.config, search=msgspec.structs.replace(engine.config.search, ranker="auto")
    )
    snippet = "port = int(settings.get('port', 8080))"
    response = engine.search(snippet, mode="keyword")
    assert response.results[0].path == "app/server.py"
    assert "ranking model could not be read" in response.note and "JSONDecodeError" in response.note
    assert [(r.path, r.symbol) for r in response.results] == _ranked(engine, snippet, "rules")
    assert "ranking model" not in (engine.search("how are the settings parsed", mode="keyword").note or "")


def test_guarantees_promote_only_a_unique_match() -> None:
    from codebase_index.ranking.pipeline import guarantees

    ranked = [Hit(1, 3.0), Hit(2, 2.0), Hit(3, 1.0)]
    cands = [Candidate(1, "a.py", "other", "function", 3.0), Candidate(3, "b.py", "target", "function", 1.0)]
    assert [h.doc for h in guarantees(ranked, parse_query("target"), cands, [])] == [3, 1, 2]
    assert [h.doc for h in guarantees(ranked, parse_query("some text here"), cands, [2])] == [2, 1, 3]
    # Two chunks hold the quote, or two definitions: nothing is promoted.
    assert guarantees(ranked, parse_query("some text here"), cands, [2, 3]) == ranked
    two = [*cands, Candidate(2, "c.py", "target", "function", 2.0)]
    assert guarantees(ranked, parse_query("target"), two, []) == ranked


@pytest.mark.parametrize("ranker", ["auto", "rules", "learned"])
def test_a_pasted_message_with_words_around_it_ranks_the_raising_site_first(
    guarantee_engine: Engine, ranker: str
) -> None:
    for query in (
        "why does it fail with must be free before serving",
        "getting settings port must be free when I start it",
    ):
        assert _ranked(guarantee_engine, query, ranker)[0] == ("app/server.py", "serve_forever")


def test_verbatim_spans_count_messages_in_reporting_lines_only() -> None:
    from codebase_index.ranking.messages import message_holder, verbatim_spans

    q = parse_query("why does it fail with unsupported compression method")
    texts = [
        (1, "raise CompressionError('unsupported compression method')"),
        (2, "doc = 'unsupported compression method'"),  # a string, but not reported
        (3, 'log.warning("unsupported compression")'),  # reported, but a shorter run
    ]
    spans = verbatim_spans(q, texts)
    assert spans == {1: 3, 2: 0, 3: 2}
    assert message_holder(spans) == 1
    assert message_holder({1: 3, 2: 3}) is None  # two holders: nothing is promoted
    assert message_holder({1: 2}) is None  # too short to be a message


def test_verbatim_spans_read_format_holes_as_the_values_a_user_pastes() -> None:
    """A raised message with format holes (`%s`, `${x}`, `{}`, `{name:?}`, `{0}`) is seen by the user
    with values in their place: the pasted message's run goes through the holes, so the raiser holds the
    longest run (before, each run broke at the value: 2 words, no holder)."""
    from codebase_index.ranking.messages import message_holder, verbatim_spans

    cases = [
        (
            "getting error: name: unsupported type: chan when decoding",
            'fmt.Errorf("%s: unsupported type: %s", n, k)',
        ),
        (
            "TypeError: Invalid referrerPolicy: origin-when-crossorigin",
            "throw new TypeError(`Invalid referrerPolicy: ${p}`)",
        ),
        (
            "why do I get 'port' expected type 'int', got 'string'",
            "return fmt.Errorf(\"'%s' expected type '%s', got '%s'\", a, b, c)",
        ),
        (
            "ValueError: width 7 is larger than the page",
            'raise ValueError(f"width {w} is larger than the page")',
        ),
        ("panicked at span 3..9 should be in input", 'panic!("span {span:?} should be in input")'),
        (
            "seeing this in the logs: Value 12 is out of range",
            'throw new ArgumentException(string.Format("Value {0} is out of range", v));',
        ),
    ]
    for query, raising in cases:
        q = parse_query(query)
        mention = "# unsupported type, referrerPolicy, expected type, larger than the page, span, range"
        spans = verbatim_spans(q, [(1, raising), (2, mention)])
        assert spans[1] >= 3 and spans[2] == 0, (query, spans)
        assert message_holder(spans) == 1
    # The message's own words must still be there: holes alone match nothing.
    assert verbatim_spans(parse_query("error: foo bar baz qux"), [(1, 'raise E(f"{a} {b}: {c}")')]) == {1: 0}
    # A hole is one word of the run however many words its value has: the message spelling more of the
    # query wins over a generic one whose holes swallow the words it lacks.
    q = parse_query("'port' expected type 'int', got 'string'")
    generic = 't.Fatalf("case %d: expected %#v, got %#v", i, want, got)'
    specific = "return fmt.Errorf(\"'%s' expected type '%s', got '%s'\", a, b, c)"
    assert message_holder(verbatim_spans(q, [(1, generic), (2, specific)])) == 2
    # A description presents no message: a hole does not swallow the sentence's next word.
    convertor = [(1, "raise ValueError(f\"Unknown path convertor '{convertor_type}'\")")]
    assert verbatim_spans(parse_query("how path convertor types work for route parameters"), convertor) == {
        1: 0
    }


def test_a_message_quoted_whole_needs_one_content_word() -> None:
    """Quotes mark where a pasted message starts and ends: a raising literal holding the whole quoted
    message counts with one content word ("should be in input" around a value); the same words
    unquoted, or a quote the run does not cover whole, still need two."""
    from codebase_index.ranking.messages import message_holder, verbatim_spans

    raising = 'panic!("span {span:?} should be in input:\\n```\\n{input}\\n```")'
    mention = "# the span should be in the input"
    quoted = parse_query('it fails with "value should be in input:", how do I fix this')
    spans = verbatim_spans(quoted, [(1, raising), (2, mention)])
    assert spans[1] >= 5 and spans[2] == 0
    assert message_holder(spans) == 1
    unquoted = parse_query("it fails with value should be in input, how do I fix this")
    assert verbatim_spans(unquoted, [(1, raising)]) == {1: 0}
    longer = parse_query('it fails with "value should be in input: no such key", how do I fix this')
    assert verbatim_spans(longer, [(1, raising)]) == {1: 0}


def test_verbatim_spans_find_the_raising_call_above_a_message_that_is_not_its_first_argument() -> None:
    """A message on its own line after other arguments' lines (a C# `throw new X(` with the name and the
    value on the lines between) is raised by the call lines above, not only the line before; a C# `$"`
    opens its line like a Python f"."""
    from codebase_index.ranking.messages import message_holder, verbatim_spans

    q = parse_query("failed: value must be a positive TimeSpan (or Timeout.InfiniteTimeSpan to")
    raising = (
        "if (timeout <= TimeSpan.Zero)\n{\n    throw new ArgumentOutOfRangeException(\n"
        "        nameof(timeout),\n        timeout,\n"
        '        $"{nameof(timeout)} must be a positive TimeSpan (or Timeout.InfiniteTimeSpan to indicate'
        ' none)");\n}'
    )
    shorter = 'throw new ArgumentOutOfRangeException(nameof(t), t, "must be a positive TimeSpan.");'
    listed = (
        'var names = new[] {\n    "a",\n    "must be a positive TimeSpan (or Timeout.InfiniteTimeSpan",\n};'
    )
    spans = verbatim_spans(q, [(1, raising), (2, shorter), (3, listed)])
    assert spans[1] > spans[2] >= 3 and spans[3] == 0
    assert message_holder(spans) == 1


def test_verbatim_spans_tell_messages_apart_by_their_comparison_operators() -> None:
    """ "n must be > 0" and "n must be >= 0" are different messages: the operator is part of the run (it
    was dropped with the punctuation, so both raisers held "n must be 0" and tied)."""
    from codebase_index.ranking.messages import message_holder, verbatim_spans

    q = parse_query("ValueError: n must be > 0")
    texts = [
        (1, "if n < 0:\n    raise ValueError('n must be >= 0')"),
        (2, "if n < 1:\n    raise ValueError('n must be > 0')"),
        (3, "f = lambda x: x  # -> 0"),
    ]
    spans = verbatim_spans(q, texts)
    assert spans[2] > spans[1] and spans[3] == 0
    assert message_holder(spans) == 2


def test_a_message_several_definitions_raise_puts_a_raiser_first_not_a_test() -> None:
    from codebase_index.ranking.model import Candidate
    from codebase_index.ranking.pipeline import guaranteed_first

    q = parse_query("ValueError: n must be at least 1")
    cands = [
        Candidate(0, "src/about.py", "describe", "function", 3.0),  # mentions the words, raises nothing
        Candidate(1, "tests/test_more.py", "test_n", "function", 2.0),  # asserts the message
        Candidate(2, "src/more.py", "chunked", "function", 1.0),
        Candidate(3, "src/more.py", "sliced", "function", 0.5),
    ]
    # Three chunks hold the message's longest run: the first of them outside tests goes first.
    assert guaranteed_first(q, cands, (), {0: 0, 1: 5, 2: 5, 3: 5}) == 2
    assert guaranteed_first(q, cands, (), {0: 0, 1: 5, 3: 5}) == 3
    assert guaranteed_first(q, cands, (), {1: 5, 2: 4}) == 1  # one longest run: its holder
    assert guaranteed_first(q, cands, (), {1: 2, 2: 2}) is None  # too short to be a message


def test_rank_uses_file_features_computed_ahead_and_they_equal_its_own() -> None:
    """A hybrid search computes the keyword candidates' file features while the query vector is being
    computed (`pipeline.prepare` -> `rank(paths=...)`): the scorer uses them, and computed ahead they
    give the very scores the scorer computes itself."""
    from codebase_index.ranking.model import Candidate, path_features, rank

    parsed = parse_query("session cookie persistence")
    cands = [
        Candidate(1, "src/sessions.py", "Session", "class", 3.0),
        Candidate(2, "tests/test_cookies.py", "test_cookie", "function", 2.5),
        Candidate(3, "src/cookies.py", "CookieJar", "class", 2.0),
        Candidate(4, "src/sessions.py", "Session.persist", "method", 1.0),
    ]
    ahead = path_features(["src/sessions.py", "tests/test_cookies.py"], parsed)
    assert rank(cands, parsed, paths=ahead) == rank(cands, parsed)
    assert rank(cands, parsed)[0].doc != 3
    assert rank(cands, parsed, paths={"src/cookies.py": (9.0, 1.0)})[0].doc == 3
