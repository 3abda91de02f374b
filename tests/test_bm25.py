from __future__ import annotations

import math
import random
import unicodedata
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from codebase_index import bm25
from codebase_index.bm25 import (
    Corpus,
    PostingsIndex,
    Scorer,
    Vocabulary,
    count_terms,
    fuse_ranked,
    reciprocal_rank_fusion,
    tokenize,
    tokenize_counts,
)

PACKAGE_DIR = Path(bm25.__file__).parent

# ---------------------------------------------------------------------------------------------------------
# Tokenizer
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("getUserById", ["getuserbyid", "get", "user", "by", "id"]),
        ("GetUserById", ["getuserbyid", "get", "user", "by", "id"]),
        ("HTTPServer2", ["httpserver2", "http", "server", "2"]),
        ("HTTPServer", ["httpserver", "http", "server"]),
        ("parseJSON", ["parsejson", "parse", "json"]),
        ("IOError", ["ioerror", "io", "error"]),
        ("getHTTPResponseCode", ["gethttpresponsecode", "get", "http", "response", "code"]),
        ("parseURLs", ["parseurls", "parse", "urls"]),
        ("IDsByName", ["idsbyname", "ids", "by", "name"]),
        ("URLs", ["urls"]),
        ("snake_case_name", ["snake_case_name", "snake", "case", "name"]),
        ("SCREAMING_SNAKE", ["screaming_snake", "screaming", "snake"]),
        ("kebab-case", ["kebab", "case"]),
        ("utf8_decode", ["utf8_decode", "utf", "8", "decode"]),
        ("sha256sum", ["sha256sum", "sha", "256", "sum"]),
        ("__init__", ["init"]),
        ("_private_name", ["private_name", "private", "name"]),
        ("0x1F 3d 42", ["0x1f", "3d", "42"]),
        ("self", ["self"]),
        ("a.b->c::d", ["a", "b", "c", "d"]),
    ],
)
def test_tokenize_identifiers(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_tokenize_keeps_order_across_a_line_of_code() -> None:
    assert tokenize("def read_file(path: str) -> bytes:  # TODO") == [
        "def",
        "read_file",
        "read",
        "file",
        "path",
        "str",
        "bytes",
        "todo",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("café crème", ["café", "crème"]),
        ("Größe berechnenFür", ["größe", "berechnenfür", "berechnen", "für"]),
        ("получитьИмяПользователя", ["получитьимяпользователя", "получить", "имя", "пользователя"]),
        ("ΑλφαΒήτα", ["αλφαβήτα", "αλφα", "βήτα"]),
        ("数据库 连接", ["数据库", "连接"]),
        ("naïve_Ünicode", ["naïve_ünicode", "naïve", "ünicode"]),
    ],
)
def test_tokenize_unicode_letters_and_accents_are_kept(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_tokenize_composed_and_decomposed_accents_agree() -> None:
    composed = "résuméParser"
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed
    assert tokenize(decomposed) == tokenize(composed) == ["résuméparser", "résumé", "parser"]


@pytest.mark.parametrize("text", ["", "   \n\t", "+-*/ () {} ;", "___", "_ __ ___"])
def test_tokenize_empty_and_punctuation_only(text: str) -> None:
    assert tokenize(text) == []
    assert tokenize_counts(text) == {}


def test_tokenize_counts_matches_counting_tokenize_on_real_source() -> None:
    for path in sorted(PACKAGE_DIR.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert tokenize_counts(text) == Counter(tokenize(text)), path.name


def test_tokenize_query_drops_english_filler_but_not_code_keywords() -> None:
    assert bm25.tokenize_query("Return the value of this key if it is in the map") == [
        "return",
        "value",
        "this",
        "key",
        "if",
        "is",
        "in",
        "map",
    ]
    assert bm25.tokenize_query("the of") == ["the", "of"]  # nothing else left: keep them
    assert bm25.tokenize_query("") == []
    assert (
        not {"is", "in", "and", "or", "for", "if", "not", "as", "with", "from", "this"}
        & bm25.QUERY_STOP_WORDS
    )


def test_corpus_string_queries_skip_stop_words_token_queries_do_not() -> None:
    corpus: Corpus[int] = Corpus()
    corpus.add(1, "# read the settings from the file at the path")
    corpus.add(2, "def load_config(): ...")
    assert [doc for doc, _ in corpus.search("the config")] == [2]
    # Taken literally, three "the"s in a comment outscore the one config function: the failure mode.
    assert [doc for doc, _ in corpus.search(["the", "config"])] == [1, 2]


def test_count_terms_first_seen_order() -> None:
    assert count_terms(["b", "a", "b", "c", "b"]) == (["b", "a", "c"], [3, 1, 1])
    assert count_terms([]) == ([], [])


# ---------------------------------------------------------------------------------------------------------
# BM25 scoring
# ---------------------------------------------------------------------------------------------------------


def _three_docs() -> Corpus[str]:
    corpus: Corpus[str] = Corpus()
    corpus.add("d1", ["a", "b", "a"])
    corpus.add("d2", ["b", "c"])
    corpus.add("d3", ["c", "c", "c", "d"])
    return corpus


def test_scores_match_hand_computed_values() -> None:
    # N = 3, avgdl = (3 + 2 + 4) / 3 = 3, k1 = 1.5, b = 0.75.
    # idf(a) = ln(1 + (3 - 1 + 0.5) / 1.5) = ln(8/3); idf(c) = ln(1 + 1.5 / 2.5) = ln(1.6).
    # d1: a, tf 2, dl 3 -> 2 * 2.5 / (2 + 1.5 * (0.25 + 0.75 * 3/3)) = 5 / 3.5
    # d2: c, tf 1, dl 2 -> 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2/3)) = 2.5 / 2.125
    # d3: c, tf 3, dl 4 -> 7.5 / (3 + 1.5 * (0.25 + 0.75 * 4/3)) = 7.5 / 4.875
    expected = {
        "d1": math.log(8 / 3) * 5 / 3.5,
        "d2": math.log(1.6) * 2.5 / 2.125,
        "d3": math.log(1.6) * 7.5 / 4.875,
    }
    results = _three_docs().search(["a", "c"], k=0)
    assert [doc for doc, _ in results] == ["d1", "d3", "d2"]
    for doc, score in results:
        assert score == pytest.approx(expected[doc], rel=1e-6)


def test_k1_and_b_are_configurable() -> None:
    corpus: Corpus[str] = Corpus(k1=1.2, b=0.0)
    corpus.add("d1", ["a", "b", "a"])
    corpus.add("d2", ["b", "c"])
    corpus.add("d3", ["c", "c", "c", "d"])
    # b = 0: no length normalisation; d3: tf 3 -> 3 * 2.2 / (3 + 1.2).
    scores = dict(corpus.search(["c"], k=0))
    assert scores["d3"] == pytest.approx(math.log(1.6) * 3 * 2.2 / 4.2, rel=1e-6)
    assert scores["d2"] == pytest.approx(math.log(1.6) * 2.2 / 2.2, rel=1e-6)


def test_idf_is_never_negative() -> None:
    for n_docs in range(1, 30):
        for df in range(0, n_docs + 1):
            assert bm25.idf(n_docs, df) > 0.0
    corpus: Corpus[int] = Corpus()
    for i in range(5):
        corpus.add(i, "self common self")
    results = corpus.search("self", k=0)
    assert len(results) == 5
    assert all(score > 0 for _, score in results)


def test_ties_are_broken_by_id_ascending() -> None:
    corpus: Corpus[int] = Corpus()
    for doc_id in (7, 3, 5, 1):
        corpus.add(doc_id, "open the file")
    corpus.add(4, "close the socket")
    assert [doc for doc, _ in corpus.search("open", k=0)] == [1, 3, 5, 7]
    # The cut at k falls inside the tie: the smallest ids win, deterministically.
    assert [doc for doc, _ in corpus.search("open", k=2)] == [1, 3]

    named: Corpus[str] = Corpus()
    for name in ("zeta", "alpha", "mid"):
        named.add(name, "same text")
    assert [doc for doc, _ in named.search("text")] == ["alpha", "mid", "zeta"]


def test_k_limits_and_k_le_zero_returns_all_matches() -> None:
    corpus: Corpus[int] = Corpus()
    for i in range(20):
        corpus.add(i, "parse " * (i + 1) + f"token{i}")
    corpus.add(100, "unrelated words only")
    assert len(corpus.search("parse", k=5)) == 5
    everything = corpus.search("parse", k=0)
    assert len(everything) == 20 == len(corpus.search("parse", k=-1))
    assert 100 not in {doc for doc, _ in everything}
    scores = [s for _, s in everything]
    assert scores == sorted(scores, reverse=True)
    assert corpus.search("parse", k=5) == everything[:5]


def test_remove_add_after_search_and_replace() -> None:
    corpus = _three_docs()
    assert [doc for doc, _ in corpus.search(["c"])] == ["d3", "d2"]
    corpus.remove("d3")
    assert len(corpus) == 2
    assert "d3" not in corpus
    assert [doc for doc, _ in corpus.search(["c"])] == ["d2"]
    # With d3 gone the IDF of c is recomputed over two documents.
    (_, score), *_ = corpus.search(["c"])
    assert score == pytest.approx(
        math.log(1 + 1.5 / 1.5) * 2.5 / (1 + 1.5 * (0.25 + 0.75 * 2 / 2.5)), rel=1e-6
    )
    corpus.add("d4", "c c")
    assert {doc for doc, _ in corpus.search(["c"])} == {"d2", "d4"}
    corpus.add("d4", "nothing relevant")  # replaces the previous text
    assert [doc for doc, _ in corpus.search(["c"])] == ["d2"]
    assert len(corpus) == 3
    with pytest.raises(KeyError):
        corpus.remove("missing")


def test_empty_corpus_and_queries_without_known_terms() -> None:
    empty: Corpus[int] = Corpus()
    assert empty.search("anything") == []
    assert len(empty) == 0
    corpus = _three_docs()
    assert corpus.search("") == []
    assert corpus.search("zzz unknown") == []


def test_scorer_uses_idf_of_its_candidates_only() -> None:
    texts = {
        1: "load config file",
        2: "load config from env",
        3: "save config file",
        4: "render html template",
        5: "render json template",
    }
    subset = {i: texts[i] for i in (1, 2, 3)}
    scorer: Scorer[int] = Scorer(subset)
    assert len(scorer) == 3
    results = scorer.score("config file")
    # Same answer as a corpus holding only the subset...
    alone: Corpus[int] = Corpus()
    for doc_id, text in subset.items():
        alone.add(doc_id, text)
    assert results == alone.search("config file", k=0)
    # ...and not the scores of the full corpus, whose IDF differs.
    full: Corpus[int] = Corpus()
    for doc_id, text in texts.items():
        full.add(doc_id, text)
    assert dict(results)[1] != pytest.approx(dict(full.search("config file", k=0))[1])
    # "config" is in all three candidates: a small positive weight, not a negative one.
    assert all(score > 0 for _, score in scorer.score("config"))
    assert [doc for doc, _ in results] == [1, 3, 2]
    assert scorer.score("config file", k=1) == results[:1]


def test_scorer_accepts_token_sequences() -> None:
    scorer: Scorer[str] = Scorer({"x": ["alpha", "beta"], "y": ["beta", "beta", "gamma"]})
    assert [doc for doc, _ in scorer.score(["gamma"])] == ["y"]
    assert [doc for doc, _ in scorer.score(["beta"])] == ["y", "x"]


# ---------------------------------------------------------------------------------------------------------
# Rank fusion
# ---------------------------------------------------------------------------------------------------------


def test_reciprocal_rank_fusion_values() -> None:
    fused = reciprocal_rank_fusion(["a", "b", "c"], ["c", "a"])
    assert fused == pytest.approx({"a": 1 / 61 + 1 / 62, "b": 1 / 62, "c": 1 / 63 + 1 / 61})
    custom = reciprocal_rank_fusion([1, 2], k=0)
    assert custom == pytest.approx({1: 1.0, 2: 0.5})


def test_rrf_accepts_pairs_and_counts_duplicates_once() -> None:
    as_pairs = reciprocal_rank_fusion([("a", 10.0), ("b", 3)], [(7, np.float32(0.5))])
    assert as_pairs == pytest.approx({"a": 1 / 61, "b": 1 / 62, 7: 1 / 61})
    assert reciprocal_rank_fusion(["a", "a", "b"]) == pytest.approx({"a": 1 / 61, "b": 1 / 62})
    assert reciprocal_rank_fusion() == {}
    assert reciprocal_rank_fusion([], []) == {}


def test_fuse_ranked_order_and_ties() -> None:
    ranked = fuse_ranked(["b", "a"], ["a", "b"], ["c"])
    # a and b tie (1/61 + 1/62 each) and sort by id; c (1/61 alone) comes last.
    assert [doc for doc, _ in ranked] == ["a", "b", "c"]
    assert ranked[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert [doc for doc, _ in fuse_ranked([3, 1, 2], [2, 3])] == [3, 2, 1]


# ---------------------------------------------------------------------------------------------------------
# PostingsIndex
# ---------------------------------------------------------------------------------------------------------


def _source_chunks() -> list[str]:
    """Real text: this package's own source cut into 15-line pieces."""
    chunks: list[str] = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        chunks.extend("".join(lines[i : i + 15]) for i in range(0, len(lines), 15))
    return chunks


def _reference_bm25(
    docs: list[Counter[str]], query: list[str], k1: float = 1.5, b: float = 0.75
) -> list[float]:
    """Plain-Python BM25 straight from the formula, as an oracle."""
    n = len(docs)
    avgdl = sum(sum(d.values()) for d in docs) / n
    out = []
    for d in docs:
        dl = sum(d.values())
        score = 0.0
        for term in set(query):
            tf = d.get(term, 0)
            if tf:
                df = sum(1 for other in docs if term in other)
                score += (
                    math.log(1 + (n - df + 0.5) / (df + 0.5))
                    * tf
                    * (k1 + 1)
                    / (tf + k1 * (1 - b + b * dl / avgdl))
                )
        out.append(score)
    return out


QUERIES = ["self parse tokens", "return self", "vocab ids for tokens", "numpy array float32", "chunk"]


def test_postings_index_matches_reference_and_corpus() -> None:
    chunks = _source_chunks()
    assert len(chunks) > 20
    vocab = Vocabulary()
    encoded = [vocab.encode(text) for text in chunks]
    index = PostingsIndex.from_documents(
        [ids for ids, _ in encoded],
        [tfs.astype(np.uint16) for _, tfs in encoded],
        vocab_size=len(vocab),
    )
    assert index.n_docs == len(chunks)
    corpus: Corpus[int] = Corpus()
    for i, text in enumerate(chunks):
        corpus.add(i, text)
    counts = [Counter(tokenize(text)) for text in chunks]
    for query in QUERIES:
        tokens = tokenize(query)
        expected = _reference_bm25(counts, tokens)
        got = index.scores(vocab.ids_for(tokens, add=False))
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        docs, scores = index.top_k(vocab.ids_for(tokens, add=False), k=10)
        assert [(int(d), pytest.approx(float(s), rel=1e-6)) for d, s in zip(docs, scores, strict=True)] == [
            (d, s) for d, s in corpus.search(query, k=10)
        ]
        assert list(scores) == sorted(scores, reverse=True)
        assert (scores > 0).all()


def test_top_k_orders_by_score_then_index_and_excludes_zero() -> None:
    index = PostingsIndex.from_documents(
        term_ids=[[0], [1], [2], [0], [0, 1], [1]],
        term_freqs=[[1], [1], [1], [1], [1, 1], [1]],
        doc_lengths=[1, 1, 1, 1, 1, 1],
    )
    docs, scores = index.top_k([0, 1], k=0)
    # Both terms have df 3, so documents 0, 1, 3 and 5 tie and come in index order; 2 does not match.
    assert docs.tolist() == [4, 0, 1, 3, 5]
    assert scores[0] > scores[1] == scores[2] == scores[3] == scores[4] > 0
    docs, _ = index.top_k([0, 1], k=3)
    assert docs.tolist() == [4, 0, 1]
    docs, scores = index.top_k([99], k=5)  # out of the vocabulary: matches nothing
    assert docs.size == 0 and scores.size == 0


def test_candidate_mask_filters_without_changing_idf() -> None:
    chunks = _source_chunks()
    vocab = Vocabulary()
    encoded = [vocab.encode(text) for text in chunks]
    index = PostingsIndex.from_documents([e[0] for e in encoded], [e[1] for e in encoded])
    query = vocab.ids_for(tokenize("self tokens"), add=False)
    full = index.scores(query)
    mask = np.zeros(index.n_docs, dtype=bool)
    mask[::3] = True
    masked = index.scores(query, candidate_mask=mask)
    np.testing.assert_array_equal(masked[mask], full[mask])
    assert not masked[~mask].any()
    docs, _ = index.top_k(query, k=0, candidate_mask=mask)
    assert docs.size > 0 and mask[docs].all()
    expected = [int(i) for i in np.flatnonzero(mask & (full > 0))]
    assert sorted(docs.tolist()) == expected
    with pytest.raises(ValueError):
        index.scores(query, candidate_mask=np.ones(3, dtype=bool))


def test_query_repeats_count_once_unless_weighted() -> None:
    index = PostingsIndex.from_documents([[0, 1], [1]], [[2, 1], [3]])
    once = index.scores([0])
    np.testing.assert_array_equal(index.scores([0, 0, 0]), once)
    np.testing.assert_allclose(index.scores([0, 0], weights=[1.0, 1.5]), once * 2.5, rtol=1e-6)
    np.testing.assert_allclose(
        index.scores([0, 1], weights=[0.5, 2.0]), 0.5 * once + 2.0 * index.scores([1]), rtol=1e-6
    )
    with pytest.raises(ValueError):
        index.scores([0, 1], weights=[1.0])


def test_from_documents_merges_repeated_terms_and_validates() -> None:
    merged = PostingsIndex.from_documents([[4, 4, 1], [1]], [[1, 2, 1], [1]])
    plain = PostingsIndex.from_documents([[4, 1], [1]], [[3, 1], [1]])
    np.testing.assert_array_equal(merged.doc_freqs, plain.doc_freqs)
    np.testing.assert_allclose(merged.scores([4, 1]), plain.scores([4, 1]))
    assert merged.doc_lengths.tolist() == [4.0, 1.0]
    assert merged.vocab_size == 5

    explicit = PostingsIndex.from_documents([[0], [0]], [[1], [1]], doc_lengths=[1, 9], vocab_size=3)
    assert explicit.vocab_size == 3 and explicit.avgdl == 5.0
    short_doc, long_doc = explicit.scores([0])
    assert short_doc > long_doc > 0

    with pytest.raises(ValueError):
        PostingsIndex.from_documents([[0]], [[1], [1]])
    with pytest.raises(ValueError):
        PostingsIndex.from_documents([[0, 1]], [[1]])
    with pytest.raises(ValueError):
        PostingsIndex.from_documents([[-1]], [[1]])
    with pytest.raises(ValueError):
        PostingsIndex.from_documents([[5]], [[1]], vocab_size=3)
    with pytest.raises(ValueError):
        PostingsIndex.from_documents([[0]], [[1]], doc_lengths=[1, 2])


def test_empty_index() -> None:
    index = PostingsIndex.from_documents([], [])
    assert index.n_docs == 0
    docs, scores = index.top_k([0], k=3)
    assert docs.size == 0 and scores.size == 0
    only_empty_docs = PostingsIndex.from_documents([[], []], [[], []], vocab_size=2)
    assert only_empty_docs.scores([0, 1]).tolist() == [0.0, 0.0]


def test_random_corpora_agree_with_reference() -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(30)]
    for _ in range(20):
        docs = [Counter(rng.choices(words, k=rng.randint(1, 12))) for _ in range(rng.randint(1, 25))]
        corpus: Corpus[int] = Corpus(k1=1.2, b=0.5)
        for i, doc in enumerate(docs):
            corpus.add(i, list(doc.elements()))
        query = rng.sample(words, 3)
        expected = _reference_bm25(docs, query, k1=1.2, b=0.5)
        got = dict(corpus.search(query, k=0))
        for i, score in enumerate(expected):
            assert got.get(i, 0.0) == pytest.approx(score, rel=1e-5, abs=1e-7)


# ---------------------------------------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------------------------------------


def test_vocabulary_round_trip_and_encoding(tmp_path: Path) -> None:
    source = tmp_path / "example.py"
    source.write_text(
        "class HTTPServer:\n    def handle_request(self, request):\n        return self.reply\n"
    )
    vocab = Vocabulary()
    ids, tfs = vocab.encode(source.read_text())
    assert ids.dtype == np.int32 and tfs.dtype == np.int32
    assert ids.tolist() == sorted(ids.tolist())
    assert {vocab.term(i): int(tf) for i, tf in zip(ids, tfs, strict=True)} == tokenize_counts(
        source.read_text()
    )

    restored = Vocabulary.from_rows(reversed(vocab.rows()))
    assert restored.rows() == vocab.rows()
    assert restored.get("server") == vocab.get("server") is not None
    assert "request" in restored and "missing" not in restored

    known_ids, known_tfs = restored.encode("self unknownWord self", add=False)
    assert known_ids.tolist() == [vocab.get("self")]
    assert known_tfs.tolist() == [2]
    assert len(restored) == len(vocab)  # add=False did not grow it
    nothing_ids, nothing_tfs = restored.encode("zzz", add=False)
    assert nothing_ids.size == 0 and nothing_tfs.size == 0

    with pytest.raises(ValueError):
        Vocabulary.from_rows([(0, "a"), (2, "b")])
    with pytest.raises(ValueError):
        Vocabulary.from_rows([(0, "a"), (1, "a")])


def test_large_term_ids_sort_correctly() -> None:
    # Ids sharing their low 16 bits exercise the two-pass radix sort used above 65,536 terms.
    big = [[5, 65_541, 131_077], [65_541], [5, 131_077], [131_077, 70_000]]
    small = [[0, 1, 2], [1], [0, 2], [2, 3]]
    remap = {5: 0, 65_541: 1, 131_077: 2, 70_000: 3}
    freqs = [[1, 2, 3], [1], [2, 1], [4, 1]]
    large = PostingsIndex.from_documents(big, freqs, vocab_size=200_000)
    compact = PostingsIndex.from_documents(small, freqs)
    for term, small_id in remap.items():
        np.testing.assert_array_equal(large.scores([term]), compact.scores([small_id]))
        assert large.doc_freqs[term] == compact.doc_freqs[small_id]
    assert large.doc_freqs.sum() == compact.doc_freqs.sum() == 8


def test_inflections_share_the_stem_and_skip_short_or_code_words() -> None:
    assert "task" in bm25.inflections("tasks")
    forms = bm25.inflections("scheduled")
    assert {"schedule", "scheduling", "schedules"} <= set(forms)
    assert "scheduled" not in forms  # never the word itself
    assert all(bm25.stem(f) == bm25.stem("scheduled") for f in forms)
    assert "routes" not in bm25.inflections("router")  # another stem: route vs router
    assert bm25.inflections("io") == () and bm25.inflections("utf8") == () and bm25.inflections("a_b") == ()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_top_k_with_sampled_floor_equals_a_full_sort(seed: int) -> None:
    """`_rank` skips most documents through a sampled lower bound of the k-th score: the answer must be
    exactly the full sort's (score desc, index asc), ties at the cut and mostly-zero arrays included."""
    rng = np.random.default_rng(seed)
    for n, k in [(5000, 10), (5000, 100), (3300, 100), (20_000, 1), (5000, 0), (4000, 3000)]:
        coarse = rng.integers(0, 6, n).astype(np.float32)  # few distinct values: ties everywhere
        fine = rng.random(n, dtype=np.float32) * (rng.random(n) < 0.3)
        sparse = np.zeros(n, np.float32)
        sparse[rng.choice(n, 50, replace=False)] = rng.random(50, dtype=np.float32)
        for scores in (coarse, fine, sparse):
            positive = [i for i in range(n) if scores[i] > 0]
            want = sorted(positive, key=lambda i: (-float(scores[i]), i))
            if k > 0:
                want = want[:k]
            docs, top = bm25._rank(scores, k)
            assert docs.tolist() == want
            assert top.tolist() == scores[want].tolist()
