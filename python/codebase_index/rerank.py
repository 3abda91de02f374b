"""Deterministic, code-aware ranking: fusion of keyword and vector rankings, then a rerank of the top
candidates with signals a plain BM25 score cannot see (definitions, identifier stems, file paths, file
kind, file coherence, diversity).

Everything here is a pure function over small records, so each signal is unit-tested on its own and the
engine (``Engine.search``) only gathers candidates and calls :func:`rank`. Constants live in
:class:`RankParams`; they were chosen on two golden sets (the 26-repo benchmark and a docstring /
identifier / error-message set built from other code) and kept only where both improved.
"""

from __future__ import annotations

import functools
import math
import re
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from .bm25 import QUERY_STOP_WORDS, inflections, split_identifier, stem, tokenize
from .search import Hit, KeywordSnapshot, module_path, query_terms

if TYPE_CHECKING:
    from .config import SearchConfig

__all__ = [
    "Candidate",
    "QueryProfile",
    "RankParams",
    "Ranked",
    "complete_keyword",
    "definition_score",
    "diversify",
    "file_coherence",
    "file_mass",
    "file_penalty",
    "file_ranks",
    "fuse_rrf",
    "fuse_weighted",
    "identifier_keyword_weight",
    "keyword_query",
    "merge_external",
    "path_score",
    "profile_query",
    "rank",
    "rank_hits",
    "shadowed_private",
    "stem",
    "stem_overlap",
    "superseded_dirs",
]


# ------------------------------------------------------------------------------------------ query profile

# Extra words that carry no intent in a natural-language code question ("how does X work").
_QUESTION_WORDS = frozenset(
    [
        "how",
        "does",
        "do",
        "what",
        "where",
        "when",
        "why",
        "which",
        "who",
        "is",
        "are",
        "implemented",
        "implementation",
        "handled",
        "handle",
        "work",
        "works",
        "used",
        "use",
        "using",
        "code",
        "logic",
        "function",
        "functions",
        "method",
        "methods",
        "class",
        "classes",
    ]
)
_IDENTIFIER_SHAPES = (
    re.compile(r"[a-z0-9][A-Z]"),  # camelCase, getUserById
    re.compile(r"[A-Z]{2,}[a-z]"),  # HTTPServer
    re.compile(r"\w_\w|^_\w"),  # snake_case, _private
    re.compile(r"\w(::|\.|->|#)\w"),  # Foo::bar, pkg.func, obj->f, Class#method
    re.compile(r"\w\(\)?$"),  # call()
)
_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures", "mock", "mocks"})
_DOC_WORDS = frozenset({"doc", "docs", "documentation", "readme", "guide", "tutorial", "changelog"})
_EXAMPLE_WORDS = frozenset({"example", "examples", "demo", "sample", "samples"})


# Pasted code: punctuation natural-language questions do not use (a qualified `Foo::bar` is an identifier).
_CODE_SYNTAX = re.compile(r"[(){};=\[\]]|:=|=>|->|\n")
# Pasted error messages: the phrasing of runtime errors, quoted names, `%` verbs, "key: value".
_ERROR_SHAPE = re.compile(
    r"\b(cannot|can't|could not|couldn't|invalid|must|expected|unexpected|failed|unsupported|missing"
    r"|unknown|required|not allowed|not found|no such|does not|doesn't|already|not supported|not defined"
    r"|undefined|illegal|too many|too few|out of range|should be|is not|are not)\b|[`'\"%]|\w: ",
    re.IGNORECASE,
)


# A question or a how-to ("how tasks that are not Send run", "where is X validated") describes code, even
# when it uses error words; pasted messages do not open like that.
_QUESTION_START = re.compile(r"\s*(how|what|where|why|which|when|who|does|do|is|are|can)\b", re.IGNORECASE)


@dataclass(frozen=True)
class QueryProfile:
    """What the query asks for, derived once per query."""

    text: str
    words: tuple[str, ...]  # content words, lower-case, stop/question words dropped, in order
    stems: frozenset[str]  # stems of words and of their identifier parts
    identifiers: tuple[str, ...]  # code-like words as typed ("getUserById", "Foo::bar", "Session")
    symbol_query: bool  # the whole query is one identifier or qualified name
    wants_tests: bool
    wants_docs: bool
    wants_examples: bool
    code_like: bool = False  # pasted code: brackets, `=`, `;`, `=>`, several lines
    error_like: bool = False  # pasted error message: error phrasing, quotes, `key: value`
    compounds: tuple[tuple[str, frozenset[str]], ...] = ()  # see `_compounds`


@functools.lru_cache(maxsize=1 << 16)
def _normalize_name(name: str) -> str:
    """Case-, underscore- and separator-insensitive form of an identifier: `get_user` == `getUser`."""
    return re.sub(r"[\W_]+", "", name).lower()


@functools.lru_cache(maxsize=1 << 12)
def profile_query(query: str) -> QueryProfile:
    """Classify a query: identifiers it names, content words and their stems, and what kind of file
    (tests, docs, examples) it explicitly asks for.

    >>> p = profile_query("how does parseConfig handle Foo::bar")
    >>> p.identifiers, p.symbol_query
    (('parseConfig', 'Foo::bar'), False)
    >>> profile_query("Session").symbol_query, profile_query("redirect following").symbol_query
    (True, False)
    """
    raw_words = query.split()
    identifiers: list[str] = []
    for raw in raw_words:
        word = raw.strip("`'\",;:!?()[]{}<>")
        if not word or not re.search(r"\w", word):
            continue
        if any(shape.search(word) for shape in _IDENTIFIER_SHAPES):
            identifiers.append(word.rstrip("()"))
    single = len(raw_words) == 1 and bool(
        re.fullmatch(r"[\w:.#>\-]+\(?\)?", raw_words[0] if raw_words else "")
    )
    if single and not identifiers:
        identifiers.append(raw_words[0].rstrip("()"))
    tokens = [t for t in tokenize(query) if t not in QUERY_STOP_WORDS]
    words = tuple(dict.fromkeys(t for t in tokens if t not in _QUESTION_WORDS)) or tuple(
        dict.fromkeys(tokens)
    )
    stems = frozenset(stem(w) for w in words)
    lowered = set(tokenize(query))
    return QueryProfile(
        text=query,
        words=words,
        stems=stems,
        identifiers=tuple(identifiers),
        symbol_query=single,
        wants_tests=bool({stem(w) for w in lowered} & _TEST_STEMS),
        wants_docs=bool(lowered & _DOC_WORDS),
        wants_examples=bool(lowered & _EXAMPLE_WORDS),
        code_like=bool(_CODE_SYNTAX.search(query.strip())),
        error_like=bool(_ERROR_SHAPE.search(query)) and not _QUESTION_START.match(query),
        compounds=_compounds(words),
    )


# Stems, so that "mocking", "mocked" or "fixtures" ask for test code as "mock" does.
_TEST_STEMS = frozenset(stem(w) for w in _TEST_WORDS)


# Keyword share (at least) for queries that are literal text to find rather than a description:
# measured on the validation set, vectors cost pasted code 0.95 -> 0.86 and error messages 0.92 -> 0.83
# (file nDCG@10) at the default weight, while helping descriptions.
# Error messages: keywords only (the vectors still add candidates after the keyword matches). A pasted
# message is found by its words at the raising site; the sentence model scores other messages about
# the same subject close to it. Validation errors 0.871 -> 0.882 (hybrid MEAN 0.933 -> 0.937, keyword
# mode 0.908), benchmark unchanged; 0.9 gave 0.876. Safe since questions are never error-like (see
# `_QUESTION_START`).
SYMBOL_KEYWORD_WEIGHT = 0.8
CODE_KEYWORD_WEIGHT = 0.85
ERROR_KEYWORD_WEIGHT = 1.0


# Literal queries (see `_literal`) fuse by score even when rrf is configured: how far the exact match
# stands out is the signal, and RRF keeps only ranks (validation: snippets 0.89 -> 0.95, errors
# 0.83 -> 0.87 file nDCG@10; benchmark descriptions unchanged).
LITERAL_SCORE_FUSION = True


def _literal(profile: QueryProfile) -> bool:
    """The query is text to find verbatim (one identifier, pasted code or an error message), not a
    description. Identifiers too: benchmark symbol queries 0.943 -> 0.951, validation identifiers
    0.990 -> 0.995 (overall 0.8457 -> 0.8475 and 0.931 -> 0.933)."""
    return profile.symbol_query or profile.code_like or profile.error_like


# Weight of an inflection the query did not type (`task` for "tasks") beside the typed word (1.0).
# Benchmark keyword 0.8085 -> 0.8340, hybrid 0.8583 -> 0.8640 (semble's BM25 indexes stems beside
# words for the same reason); validation keyword 0.939 -> 0.941, hybrid 0.937 -> 0.937. Weight 1.0:
# benchmark 0.8645 but validation hybrid 0.935; 0.75: 0.8664 / 0.936.
INFLECTION_WEIGHT = 0.5


def keyword_query(query: str) -> tuple[list[str], list[float]]:
    """The keyword retriever's weighted terms: the query's tokens, plus, for a description, the other
    inflections of its words at `INFLECTION_WEIGHT` (the caller keeps those its vocabulary holds).
    Literal queries (an identifier, pasted code or an error message) are matched as typed.

    >>> keyword_query("spawned tasks")[0][:4]
    ['spawned', 'tasks', 'spawn', 'spawne']
    >>> keyword_query("getUserById")
    (['getuserbyid', 'get', 'user', 'id'], [1.0, 1.0, 1.0, 1.0])
    """
    terms = list(query_terms(query))
    weights = [1.0] * len(terms)
    if _literal(profile_query(query)):
        return terms, weights
    seen = set(terms)
    for term in list(terms):
        for form in inflections(term):
            if form not in seen:
                seen.add(form)
                terms.append(form)
                weights.append(INFLECTION_WEIGHT)
    return terms, weights


# A query whose words the code holds verbatim, in order (a pasted message or docstring the shape
# detectors above do not recognise: "value not recognized", "got nil/empty layouts slice") is literal text
# too: keywords find the quoting chunk, vectors only the chunks about the same subject. On the validation
# sets every pasted error where hybrid lost to keyword mode had no error shape; fusing these like pasted
# code (0.85): hybrid errors go 0.806 -> 0.911, js 0.879 -> 0.898, py 0.916 -> 0.918 (MEAN 0.938 ->
# 0.943), benchmark and file-level set unchanged. 0.92 / 1.0: the same errors but go descriptions -0.022
# before `quotes_query` ignored phrases several files repeat.
VERBATIM_MIN_WORDS = 3
VERBATIM_KEYWORD_WEIGHT = 0.85
VERBATIM_CANDIDATES = 10  # how many of the best keyword candidates are read for the check


def _plain_words(text: str) -> list[str]:
    """Lower-case words and numbers as written (no identifier splitting): the order `verbatim_run` reads."""
    return re.findall(r"[^\W_]+", text.lower())


def verbatim_run(query_words: Sequence[str], text_words: Sequence[str]) -> int:
    """Length of the longest run of consecutive query words that also appears consecutively in the text.

    >>> verbatim_run(["value", "not", "recognized"], ["throw", "value", "not", "recognized"])
    3
    >>> verbatim_run(["a", "b", "c"], ["b", "x", "c"])
    1
    """
    wanted = set(query_words)
    starts: dict[str, list[int]] = {}
    for j, t in enumerate(text_words):
        if t in wanted:
            starts.setdefault(t, []).append(j)
    best = 0
    n, m = len(query_words), len(text_words)
    for i, q in enumerate(query_words):
        if n - i <= best:
            break
        for j in starts.get(q, ()):
            k = 1
            while i + k < n and j + k < m and query_words[i + k] == text_words[j + k]:
                k += 1
            best = max(best, k)
    return best


def may_quote(query: str) -> bool:
    """Whether `quotes_query` could hold for this query, before reading any text: at least
    `VERBATIM_MIN_WORDS` words, not a question, and not literal already (an identifier, pasted code or
    an error message fuses on keywords anyway).

    >>> may_quote("got nil layouts slice"), may_quote("how are layouts sliced"), may_quote("nil slice")
    (True, False, False)
    """
    return (
        len(_plain_words(query)) >= VERBATIM_MIN_WORDS
        and not _QUESTION_START.match(query)
        and not _literal(profile_query(query))
    )


def quotes_query(query: str, texts: Iterable[tuple[str, str]]) -> bool:
    """Whether the query's words stand verbatim in the (path, text) candidates of exactly one file: all
    of them in order, or all but the first or last (a pasted fragment cut mid-word, a placeholder in
    place of a formatted value), and at least `VERBATIM_MIN_WORDS`. Questions are descriptions however
    well their words match, and a phrase several files repeat (a boilerplate doc comment such as
    "returns the default text for this flag" on every flag type) does not say which one is meant.

    >>> quotes_query("value not recognized", [("a.py", "raise Error(f'{x} not recognized')")])
    False
    >>> quotes_query("got nil/empty layouts slice", [("a.go", 'errors.New("got nil/empty layouts slice")')])
    True
    >>> quotes_query("Please provide only one of value", [("a.js", '"Please provide only one of --" + k')])
    True
    >>> quotes_query("got no name", [("a.go", "// got no name"), ("b.go", "// got no name")])
    False
    """
    words = _plain_words(query)
    need = max(VERBATIM_MIN_WORDS, len(words) - 1)
    if len(words) < VERBATIM_MIN_WORDS or _QUESTION_START.match(query):
        return False
    wanted = set(words)
    files: set[str] = set()
    for path, text in texts:
        if path in files:
            continue
        text_words = _plain_words(text)
        if len(wanted.intersection(text_words)) >= need and verbatim_run(words, text_words) >= need:
            files.add(path)
    return len(files) == 1


def identifier_keyword_weight(profile: QueryProfile, base: float) -> float:
    """Keyword share in hybrid fusion: identifier-like queries, pasted code and pasted error messages
    trust exact matches more than vectors; descriptions keep the configured share.

    >>> identifier_keyword_weight(profile_query("getUserById"), 0.5)
    0.8
    >>> identifier_keyword_weight(profile_query("where are payments validated"), 0.5)
    0.5
    >>> identifier_keyword_weight(profile_query("if (user == null) { return; }"), 0.5)
    0.85
    >>> identifier_keyword_weight(profile_query("port must be a number"), 0.5)
    1.0
    """
    weight = base
    if profile.symbol_query:
        weight = max(weight, SYMBOL_KEYWORD_WEIGHT)
    elif profile.identifiers:
        weight = max(weight, min(1.0, base + 0.15))
    if profile.code_like:
        weight = max(weight, CODE_KEYWORD_WEIGHT)
    if profile.error_like:
        weight = max(weight, ERROR_KEYWORD_WEIGHT)
    return weight


# ------------------------------------------------------------------------------------------ chunk signals


@functools.lru_cache(maxsize=1 << 16)
def _name_parts(name: str) -> tuple[str, ...]:
    """Lower-case parts of every identifier in a (possibly qualified) name."""
    parts: list[str] = []
    for word in re.findall(r"\w+", name):
        split = split_identifier(word)
        parts.extend(split[1:] if len(split) > 1 else split)
    return tuple(parts)


# Definition score of a name that matches the queried identifier only with its initial in the other case
# (`session()` or `command()` for "Session" or "Command"): by the conventions of most languages one is a
# type and the other a function or value, often a factory of the type. Benchmark symbol queries 0.950 ->
# 0.961 (requests Session, httpx Timeout, click Command); validation identifiers unchanged.
CASE_FOLDED_DEFINITION = 0.6


def _same_initial_case(ident: str, name: str) -> bool:
    """The first letters of the last component of `ident` and of `name` have the same case (`getUserById`
    ~ `get_user_by_id`, `$ZodError` ~ `ZodError`, not `Session` ~ `session`)."""
    first = re.search(r"[^\W\d_]", re.split(r"[.:#/]+|->", ident)[-1])
    other = re.search(r"[^\W\d_]", name)
    return first is None or other is None or first.group().isupper() == other.group().isupper()


@functools.lru_cache(maxsize=1 << 16)
def _qualified(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Components of a qualified name (`Foo::bar`, `pkg.Foo.bar`, `a->b`) as written and normalised."""
    components = tuple(c for c in re.split(r"[.:#/]+|->", name) if c)
    return components, tuple(_normalize_name(c) for c in components)


# ASCII characters `_normalize_name` drops (everything but letters and digits), for `str.translate`.
_ASCII_NON_WORD = {c: None for c in range(128) if not chr(c).isalnum()}


def _squashed(name: str) -> str:
    """`_normalize_name` of a whole qualified name: the concatenation of its normalised components (the
    separators `_qualified` splits on are dropped by the normalisation too). ASCII names skip the regex."""
    if name.isascii():
        return name.translate(_ASCII_NON_WORD).lower()
    return _normalize_name(name)


@functools.lru_cache(maxsize=1 << 12)
def _wanted_lasts(identifiers: tuple[str, ...]) -> tuple[str, ...]:
    """The normalised last component of each queried identifier that has one (`definition_score`)."""
    return tuple(wanted[-1] for wanted in (_qualified(ident)[1] for ident in identifiers) if wanted)


def definition_score(symbol: str, profile: QueryProfile) -> float:
    """1.0 when the chunk defines the queried identifier (last name component, case- and
    underscore-insensitive, but see `CASE_FOLDED_DEFINITION` for the case of its initial), 0.7 when it
    defines a member of it or its qualified tail matches (`Foo::bar` vs `Foo.bar`), else 0.

    >>> p = profile_query("Session")
    >>> definition_score("Session", p), definition_score("Session.request", p), definition_score("get", p)
    (1.0, 0.7, 0.0)
    >>> definition_score("session", p), definition_score("ConfigParser", profile_query("config_parser"))
    (0.6, 0.6)
    """
    if not symbol or not profile.identifiers:
        return 0.0
    # Every match below needs some wanted last name equal to one of the symbol's normalised components,
    # hence inside their concatenation (`_squashed`): most candidates fail that cheap test (a first query
    # on the stdlib spent 0.33 ms of its 0.88 ms rerank splitting and normalising symbols it then rejected).
    squashed = _squashed(symbol)
    if not any(last in squashed for last in _wanted_lasts(profile.identifiers)):
        return 0.0
    components, normalized = _qualified(symbol)
    if not components:
        return 0.0
    last = normalized[-1]
    best = 0.0
    for ident in profile.identifiers:
        wanted = _qualified(ident)[1]
        if not wanted:
            continue
        if wanted[-1] == last and (len(wanted) == 1 or normalized[-len(wanted) :] == wanted):
            if _same_initial_case(ident, components[-1]):
                return 1.0
            best = max(best, CASE_FOLDED_DEFINITION)
            continue
        if wanted[-1] == last or wanted[-1] in normalized[:-1]:
            best = max(best, 0.7)
    return best


def stem_overlap(name: str, profile: QueryProfile) -> float:
    """Share of the query's content stems found among a name's identifier parts (stemmed):
    `parse config` ~ `parseConfig`, `ConfigParser`, `config_parser`.

    >>> stem_overlap("ConfigParser", profile_query("parse config"))
    0.5
    >>> stem_overlap("parse_config", profile_query("parse config"))
    1.0
    """
    if not name or not profile.stems:
        return 0.0
    parts = {stem(p) for p in _name_parts(name)}
    return len(profile.stems & parts) / len(profile.stems)


@functools.lru_cache(maxsize=1 << 14)
def _path_parts(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """Stems of the module name (the file name without extension, or the folder of a module root such as
    `mod.rs`: see `search.module_path`) and of the directories above it."""
    head, base = module_path(path)
    return (
        frozenset(stem(p) for p in _name_parts(base)),
        frozenset(stem(p) for p in _name_parts(head)) if head else frozenset(),
    )


@functools.lru_cache(maxsize=1 << 16)
def _abbreviated_in(parts: frozenset[str], word: str) -> bool:
    """Some part is a code abbreviation of `word`: a prefix of at least 3 letters, 2+ letters shorter
    (`impl` ~ implementations, `ser` ~ serialization, `cfg` is not caught). Cached (the same folders and
    query words recur) and tested inline (this runs for most query stems of every file a first query
    ranks, before the cache has seen its words)."""
    n = len(word)
    return n >= 5 and any(3 <= len(part) <= n - 2 and word.startswith(part) for part in parts)


def _compounds(words: Sequence[str]) -> tuple[tuple[str, frozenset[str]], ...]:
    """Runs of 2-3 consecutive query words as one word a path may spell (`realip.go` for "real IP",
    `threadpool.c` for "thread pool"): (stem of the joined run, stems of its words). Runs that spell a
    typed word are left out (`WebSocket` is typed; its parts web, socket are not a compound).

    >>> [joined for joined, _ in _compounds(("real", "ip", "headers"))]
    ['realip', 'ipheader', 'realipheader']
    >>> "websocket" in [joined for joined, _ in _compounds(("websocket", "web", "socket"))]
    False
    """
    typed = set(words)
    out: list[tuple[str, frozenset[str]]] = []
    for size in (2, 3):
        for i in range(len(words) - size + 1):
            run = words[i : i + size]
            if "".join(run) not in typed:
                out.append((stem("".join(run)), frozenset(stem(w) for w in run)))
    return tuple(out)


def path_score(
    path: str,
    profile: QueryProfile,
    abbreviation: float = 0.0,
    weights: Mapping[str, float] | None = None,
) -> float:
    """How well the file path names the query's subject: query stems in the file name count fully,
    in directory names half, and `abbreviation` times that when a path part only abbreviates the
    word (`impls.rs` for "implementations"); words a path part spells as one (`realip.go` for "real
    IP", see `_compounds`) count as found there. The result is the matched share of the query's stems,
    each stem counted by `weights` when given (see `path_stem_weights`; missing stems count 1.0).
    Compounds: benchmark hybrid 0.8519 -> 0.8535, keyword 0.8079 -> 0.8085; validation unchanged.

    >>> path_score("src/requests/sessions.py", profile_query("how sessions persist"))
    0.5
    >>> path_score("lib/router/layer.js", profile_query("router middleware"))
    0.25
    >>> path_score("lib/router/index.js", profile_query("router middleware"))  # a module root
    0.5
    >>> path_score("src/ser/impls.rs", profile_query("implementations"), abbreviation=0.5)
    0.5
    >>> path_score("middleware/realip.go", profile_query("real IP headers"))
    0.6666666666666666
    """
    if not profile.stems:
        return 0.0
    name_stems, dir_stems = _path_parts(path)
    in_name: set[str] = set()
    in_dir: set[str] = set()
    for joined, run in profile.compounds:
        if joined in name_stems:
            in_name |= run
        elif joined in dir_stems:
            in_dir |= run
    total = 0.0
    norm = 0.0
    for s in profile.stems:
        w = 1.0 if weights is None else weights.get(s, 1.0)
        norm += w
        if s in name_stems or s in in_name:
            total += w
        elif s in dir_stems or s in in_dir:
            total += 0.5 * w
        elif abbreviation:
            if _abbreviated_in(name_stems, s):
                total += abbreviation * w
            elif _abbreviated_in(dir_stems, s):
                total += 0.5 * abbreviation * w
    return total / norm if norm > 0 else 0.0


_TEST_PATH = re.compile(
    r"(^|/)(tests?|__tests__|testing|spec|specs|e2e|fixtures?|testdata|mocks?)(/|$)"
    r"|(^|/)(test_[^/]*|conftest\.py)$|(_test|_spec|\.test|\.spec|Tests?|Spec)\.\w+$"
)
_EXAMPLE_PATH = re.compile(r"(^|/)_?(examples?|samples?|demos?|benchmarks?|bench|playground|scripts)(/|$)")
_VENDOR_PATH = re.compile(r"(^|/)(vendor|vendored|third_party|thirdparty|external|deps|node_modules)(/|$)")
_COMPAT_PATH = re.compile(r"(^|/)(_?compat\w*|legacy|deprecated)(/|\.|$)")
_DOC_EXTENSIONS = (".md", ".mdx", ".rst", ".txt", ".adoc")
_DOC_PATH = re.compile(r"(^|/)(docs?|documentation)(/|$)")


@dataclass(frozen=True)
class Penalties:
    """Multipliers (< 1 demotes) for files that are rarely the answer to an implementation question."""

    test: float = 0.55
    example: float = 0.6
    vendor: float = 0.6
    compat: float = 0.75
    stub: float = 0.7
    doc: float = 0.6
    superseded: float = 0.6  # old-version copies (`superseded_dirs`): keyword 0.8053 -> 0.8102
    # Private modules behind a public one (`shadowed_private`): benchmark hybrid 0.8640 -> 0.8652.
    shadowed: float = 0.6


def file_penalty(path: str, profile: QueryProfile, penalties: Penalties | None = None) -> float:
    """Multiplier for the file kind unless the query asks for that kind (a query about tests is not
    penalised for finding tests). Penalties of several kinds multiply.

    >>> file_penalty("tests/test_api.py", profile_query("session cookies"))
    0.55
    >>> file_penalty("tests/test_api.py", profile_query("session cookie tests"))
    1.0
    >>> file_penalty("src/api.py", profile_query("session cookies"))
    1.0
    """
    pen = penalties or Penalties()
    test, example, vendor, compat, stub, doc = _file_kinds(path)
    factor = 1.0
    if test and not profile.wants_tests:
        factor *= pen.test
    if example and not profile.wants_examples:
        factor *= pen.example
    if vendor:
        factor *= pen.vendor
    if compat:
        factor *= pen.compat
    if stub:
        factor *= pen.stub
    if doc and not profile.wants_docs:
        factor *= pen.doc
    return factor


@functools.lru_cache(maxsize=1 << 16)
def _file_kinds(path: str) -> tuple[bool, bool, bool, bool, bool, bool]:
    """(test, example, vendored, compat shim, .d.ts stub, docs) for a path; cached, paths repeat."""
    lower = path.lower()
    return (
        bool(_TEST_PATH.search(path)),
        bool(_EXAMPLE_PATH.search(lower)),
        bool(_VENDOR_PATH.search(lower)),
        bool(_COMPAT_PATH.search(lower)),
        lower.endswith(".d.ts"),
        lower.endswith(_DOC_EXTENSIONS) or bool(_DOC_PATH.search(lower)),
    )


_VERSION_DIR = re.compile(r"v(\d+)")


def superseded_dirs(paths: Iterable[str]) -> frozenset[str]:
    """Version folders (`v1/`, `v3/`) that hold an older copy of code kept for compatibility, as
    "dir/" prefixes: `vN` is superseded when a sibling `vM` with M > N exists, or when it is the only
    version folder there and most of its (3 or more) file names also exist directly in its parent
    (`pydantic/v1/fields.py` beside `pydantic/fields.py`). Queries about the current API rarely want
    those copies.

    >>> sorted(superseded_dirs(["src/v3/types.ts", "src/v4/types.ts", "src/index.ts"]))
    ['src/v3/']
    >>> sorted(superseded_dirs(["pkg/v1/a.py", "pkg/v1/b.py", "pkg/v1/c.py", "pkg/a.py", "pkg/b.py"]))
    ['pkg/v1/']
    >>> sorted(superseded_dirs(["api/v1/users.go", "api/handler.go"]))
    []
    """
    files_in: dict[str, set[str]] = {}
    versions: dict[str, dict[str, int]] = {}  # parent -> {version dir name: N}
    for path in paths:
        head, _, name = path.rpartition("/")
        files_in.setdefault(head, set()).add(name)
        parts = path.split("/")[:-1]
        for i, part in enumerate(parts):
            if (m := _VERSION_DIR.fullmatch(part)) is not None:
                versions.setdefault("/".join(parts[:i]), {})[part] = int(m.group(1))
    out: set[str] = set()
    for parent, found in versions.items():
        newest = max(found.values())
        for part, n in found.items():
            folder = f"{parent}/{part}" if parent else part
            if n < newest:
                out.add(folder + "/")
                continue
            own = files_in.get(folder, set())
            if len(found) == 1 and len(own) >= 3 and len(own & files_in.get(parent, set())) * 2 >= len(own):
                out.add(folder + "/")
    return frozenset(out)


def shadowed_private(paths: Iterable[str]) -> frozenset[str]:
    """Private modules that implement a public module of the same name: `_x.ext` or `_x_impl.ext`
    (anywhere, e.g. `_internal/_fields.py`) when a public `x.ext` exists (`fields.py`). Questions about
    the feature name the public module, the entry point users read; its private twin is the detail
    behind it. A package whose modules are all private (`httpx/_client.py`) has no twins.

    >>> sorted(shadowed_private(["pkg/fields.py", "pkg/_internal/_fields.py", "pkg/_internal/_utils.py"]))
    ['pkg/_internal/_fields.py']
    >>> sorted(shadowed_private(["click/termui.py", "click/_termui_impl.py", "click/__init__.py"]))
    ['click/_termui_impl.py']
    >>> sorted(shadowed_private(["httpx/_client.py", "httpx/_models.py"]))
    []
    """
    names: dict[str, list[str]] = {}
    for path in paths:
        names.setdefault(path.rpartition("/")[2], []).append(path)
    public = {name for name in names if not name.startswith("_")}
    out: set[str] = set()
    for name, where in names.items():
        if not name.startswith("_") or name.startswith("__"):
            continue
        bare = name.lstrip("_")
        base, dot, ext = bare.partition(".")
        if bare in public or (base.endswith("_impl") and f"{base[:-5]}{dot}{ext}" in public):
            out.update(where)
    return frozenset(out)


# ------------------------------------------------------------------------------------------ fusion


def fuse_rrf(
    rankings: Sequence[Sequence[int]], k: int, weights: Sequence[float] | None = None
) -> dict[int, float]:
    """Weighted reciprocal-rank fusion: sum of w / (k + rank) over the rankings (rank from 1).

    >>> fused = fuse_rrf([[1, 2], [2, 3]], k=1)
    >>> {d: round(s, 3) for d, s in fused.items()}
    {1: 0.5, 2: 0.833, 3: 0.333}
    """
    if k < 1:
        raise ValueError(f"rrfK must be >= 1, got {k}")
    ws = list(weights) if weights is not None else [1.0] * len(rankings)
    if len(ws) != len(rankings):
        raise ValueError("one weight per ranking is required")
    fused: dict[int, float] = {}
    for ranking, w in zip(rankings, ws, strict=True):
        seen: set[int] = set()
        for rank, doc in enumerate(ranking, 1):
            if doc in seen:
                continue
            seen.add(doc)
            fused[doc] = fused.get(doc, 0.0) + w / (k + rank)
    return fused


def _minmax(scores: Mapping[int, float]) -> dict[int, float]:
    """Scale to 0..1 by the max (a lone or all-equal list maps to 1.0); negative scores clip to 0."""
    if not scores:
        return {}
    top = max(scores.values())
    low = min(0.0, min(scores.values()))
    span = top - low
    if span <= 0:
        return dict.fromkeys(scores, 1.0)
    return {d: (s - low) / span for d, s in scores.items()}


def fuse_weighted(
    keyword: Mapping[int, float], semantic: Mapping[int, float], keyword_weight: float
) -> dict[int, float]:
    """Convex combination of max-normalised keyword and vector scores; a document missing from one list
    gets 0 from it.

    >>> fuse_weighted({1: 10.0, 2: 5.0}, {2: 0.9, 3: 0.3}, 0.5)
    {1: 0.5, 2: 0.75, 3: 0.16666666666666666}
    """
    if not 0.0 <= keyword_weight <= 1.0:
        raise ValueError(f"hybridWeight must be within 0..1, got {keyword_weight}")
    kw, sem = _minmax(keyword), _minmax(semantic)
    out: dict[int, float] = {}
    for doc in dict.fromkeys([*kw, *sem]):
        out[doc] = keyword_weight * kw.get(doc, 0.0) + (1.0 - keyword_weight) * sem.get(doc, 0.0)
    return out


# ------------------------------------------------------------------------------------------ rerank


class Candidate(NamedTuple):
    """One chunk as the reranker sees it: identity, where it lives, and its first-stage score. A named
    tuple, not a frozen dataclass: a search builds 100 of these and 100 `Ranked`, and a frozen
    dataclass's __init__ costs 0.8 us (0.3 us for two fields) against a tuple's 0.25 us."""

    doc: int
    path: str
    symbol: str
    kind: str
    score: float
    superseded: bool = False  # lives in an old-version copy of the code (see `superseded_dirs`)
    shadowed: bool = False  # a private module behind a public one (see `shadowed_private`)


class Ranked(NamedTuple):
    doc: int
    score: float


@dataclass(frozen=True)
class RankParams:
    """Weights of the rerank signals; see the module docstring for how they were chosen."""

    definition: float = 0.6
    # The definition bonus when the whole query is one identifier (a symbol lookup): the definition must
    # outweigh path matches, mentions and file coherence. Benchmark symbol queries 0.961 -> 0.979 (hybrid
    # 0.8676 -> 0.8703), validation identifiers 0.995 -> 0.998; 1.0: 0.968, 2.5: same as 1.5. Raising
    # `definition` itself instead cost pasted snippets 0.957 -> 0.919 (they name many identifiers).
    symbol_definition: float = 1.5
    # Identifier-stem bonus: measured neutral on the benchmark (-0.0006) and harmful on the validation
    # set (chunk nDCG@10 -0.008), so off by default; the signal stays for callers who want it.
    stem: float = 0.0
    path: float = 0.5
    # Share of a path match given to an abbreviation (`impls.rs` ~ "implementations"); benchmark
    # keyword nDCG@10 0.8032 -> 0.8053, validation unchanged (0.938 -> 0.939).
    path_abbreviation: float = 0.5
    coherence: float = 0.15
    coherence_chunks: int = 3
    repeat_decay: float = 0.5
    # RRF only: weight of each retriever's file-level vote (see `_fused`); 0 turns it off. The vector
    # vote at 0.5 gave hybrid 0.8491 -> 0.8517 on the benchmark (1.0: 0.8508; a keyword vote hurt).
    keyword_file: float = 0.0
    semantic_file: float = 0.5
    # Descriptions only (`_literal` queries skip it): each file's best chunk gains this times the file's
    # total candidate score relative to the largest total (`file_mass`), so the file most of the
    # evidence points at wins over a sibling with one sharper chunk (cobra command.go over cobra.go,
    # gson GsonBuilder). Benchmark hybrid 0.8706 -> 0.8715 (15 -> 17 repos >= semble), keyword 0.839 ->
    # 0.840; validation MEAN keyword 0.9422 -> 0.9434, hybrid 0.9385 -> 0.9375 (one Go docstring query,
    # rank 1 -> 3); file-level set keyword 0.668 -> 0.672, hybrid 0.707 -> 0.713. 0.075 / 0.1: 0.8709 /
    # 0.8709 with validation hybrid 0.9373 / 0.935; on literal queries too it cost symbol lookups.
    file_mass: float = 0.05
    penalties: Penalties = field(default_factory=Penalties)


def file_coherence(chunk_scores: Sequence[float], max_chunks: int) -> float:
    """Support from a file's other matching chunks: the mean of its next-best `max_chunks` normalised
    chunk scores after the best (0 for a file with one matching chunk).

    >>> file_coherence([1.0, 0.5, 0.5], 3)
    0.3333333333333333
    >>> file_coherence([0.9], 3)
    0.0
    """
    if max_chunks <= 0 or len(chunk_scores) < 2:
        return 0.0
    rest = sorted(chunk_scores, reverse=True)[1 : 1 + max_chunks]
    return sum(rest) / max_chunks


def file_mass(by_file: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """Each file's total candidate score relative to the largest total (0..1): the file the candidate
    list as a whole points at, however its evidence is split into chunks.

    >>> file_mass({"a.py": [1.0, 0.5], "b.py": [0.75]})
    {'a.py': 1.0, 'b.py': 0.5}
    """
    sums = {path: sum(vals) for path, vals in by_file.items()}
    top = max(sums.values(), default=0.0)
    return {path: (s / top if top > 0 else 0.0) for path, s in sums.items()}


def diversify(items: Sequence[tuple[int, str, float]], decay: float) -> list[tuple[int, float]]:
    """Reorder (doc, file, score) so repeated chunks of one file sink: the n-th chunk of a file (n from
    0, in score order) keeps score * decay**n. decay 1.0 leaves the order alone.

    >>> diversify([(1, "a", 1.0), (2, "a", 0.9), (3, "b", 0.6)], 0.5)
    [(1, 1.0), (3, 0.6), (2, 0.45)]
    """
    if not 0.0 < decay <= 1.0:
        raise ValueError(f"repeat decay must be within (0, 1], got {decay}")
    seen: dict[str, int] = {}
    out: list[tuple[int, float]] = []
    for doc, file, score in sorted(items, key=lambda it: (-it[2], it[0])):
        n = seen.get(file, 0)
        seen[file] = n + 1
        out.append((doc, score * (decay**n)))
    out.sort(key=lambda it: (-it[1], it[0]))
    return out


def rank(
    candidates: Iterable[Candidate],
    profile: QueryProfile,
    params: RankParams | None = None,
    path_weights: Mapping[str, float] | None = None,
) -> list[Ranked]:
    """Rerank first-stage candidates (any score scale, higher is better) into the final order.

    Per chunk: normalised first-stage score, plus definition, identifier-stem and path bonuses, times
    the file-kind penalty; per file: a coherence bonus from its other matching chunks and, for
    descriptions, a bonus on its best chunk from its share of all the candidates' score (`file_mass`);
    finally repeated chunks of one file are decayed so other plausible files surface.
    """
    p = params or RankParams()
    cands = list(candidates)
    if not cands:
        return []
    top = max(c.score for c in cands)
    scale = 1.0 / top if top > 0 else 1.0
    per_chunk: list[tuple[Candidate, float]] = []
    by_file: dict[str, list[float]] = {}
    per_path: dict[str, tuple[float, float]] = {}  # path -> (path bonus, file penalty): chunks share files
    definition = p.symbol_definition if profile.symbol_query else p.definition
    for c in cands:
        base = max(0.0, c.score * scale)
        # Without identifiers definition_score is 0 (a description: no call per candidate).
        bonus = definition * definition_score(c.symbol, profile) if profile.identifiers else 0.0
        if p.stem:
            bonus += p.stem * stem_overlap(c.symbol, profile)
        found = per_path.get(c.path)
        if found is None:
            found = (
                p.path * path_score(c.path, profile, p.path_abbreviation, path_weights),
                file_penalty(c.path, profile, p.penalties),
            )
            per_path[c.path] = found
        bonus += found[0]
        value = (base + bonus * base**0.5) * found[1]
        if c.superseded:
            value *= p.penalties.superseded
        if c.shadowed:
            value *= p.penalties.shadowed
        per_chunk.append((c, value))
        by_file.setdefault(c.path, []).append(value)
    coherence = {path: file_coherence(vals, p.coherence_chunks) for path, vals in by_file.items()}
    items = [(c.doc, c.path, v + p.coherence * coherence[c.path]) for c, v in per_chunk]
    if p.file_mass and not _literal(profile):
        # Only each file's best chunk: the file is lifted once, its other chunks still decay behind it.
        mass = file_mass(by_file)
        best: dict[str, int] = {}
        for i, (_, path, v) in enumerate(items):
            if path not in best or v > items[best[path]][2]:
                best[path] = i
        for path, i in best.items():
            doc, _, v = items[i]
            items[i] = (doc, path, v + p.file_mass * mass[path])
    return [Ranked(doc, score) for doc, score in diversify(items, p.repeat_decay)]


def file_ranks(ranking: Sequence[int], file_of: Callable[[int], str]) -> dict[str, int]:
    """1-based rank of each file by its best chunk in a chunk ranking (the file-level view of it).

    >>> file_ranks([4, 5, 6], {4: "a", 5: "a", 6: "b"}.__getitem__)
    {'a': 1, 'b': 2}
    """
    out: dict[str, int] = {}
    for doc in ranking:
        out.setdefault(file_of(doc), len(out) + 1)
    return out


def _fused(
    profile: QueryProfile,
    keyword_hits: Sequence[tuple[int, float]],
    semantic_hits: Sequence[tuple[int, float]],
    config: SearchConfig,
    file_of: Callable[[int], str] | None = None,
    params: RankParams | None = None,
    keyword_score: Callable[[Sequence[int]], Sequence[float]] | None = None,
    verbatim: bool = False,
) -> list[tuple[int, float]]:
    """One first-stage order: keyword scores alone, or the configured fusion of both rankings.

    With RRF, each retriever also votes for files: a chunk gains `file_weight` times the RRF term of
    its file's rank in that retriever's file-level view, so a file whose chunks the vectors like as a
    whole lifts its chunks found by either retriever. Given `keyword_score` (a document's keyword score),
    RRF ranks the vector candidates the keyword list left out by their keyword score too
    (`complete_keyword`): benchmark hybrid 0.8535 -> 0.8583. Literal queries (score fusion) keep their
    own keyword list: there the added candidates pushed definitions out of the reranked head (symbol
    queries 0.961 -> 0.951). Completing the vector list the same way (kw-only candidates at their
    cosine) measured worse (0.8550), so the vector list stays as retrieved. `verbatim` (a candidate
    quotes the query, see `quotes_query`) fuses by score at `VERBATIM_KEYWORD_WEIGHT`, as pasted code."""
    if not semantic_hits:
        ordered = list(keyword_hits)
    elif not keyword_hits:
        ordered = list(semantic_hits)
    else:
        weight = identifier_keyword_weight(profile, config.hybrid_weight)
        if verbatim:
            weight = max(weight, VERBATIM_KEYWORD_WEIGHT)
        literal = _literal(profile) or verbatim
        if config.fusion_strategy == "weighted" or (LITERAL_SCORE_FUSION and literal):
            fused = fuse_weighted(dict(keyword_hits), dict(semantic_hits), weight)
        else:
            if keyword_score is not None:
                keyword_hits = complete_keyword(keyword_hits, semantic_hits, keyword_score)
            # Weights 2w and 2(1-w): plain RRF at hybridWeight 0.5. The default 0.6 leans on keywords
            # since inflections and `complete_keyword` made them stronger: benchmark hybrid 0.8652 ->
            # 0.8676, validation hybrid 0.937 -> 0.938 (0.5 / 0.55 / 0.65 / 0.7: 0.8652 / 0.8656 /
            # 0.8652 / 0.8628).
            lists = [[d for d, _ in keyword_hits], [d for d, _ in semantic_hits]]
            weights = [2.0 * weight, 2.0 * (1.0 - weight)]
            fused = fuse_rrf(lists, config.rrf_k, weights)
            p = params or RankParams()
            if file_of is not None:
                for ranking, w, fw in zip(lists, weights, (p.keyword_file, p.semantic_file), strict=True):
                    if fw <= 0:
                        continue
                    ranks = file_ranks(ranking, file_of)
                    for doc in fused:
                        r = ranks.get(file_of(doc))
                        if r is not None:
                            fused[doc] += fw * w / (config.rrf_k + r)
        ordered = list(fused.items())
    ordered.sort(key=lambda item: (-item[1], item[0]))
    return ordered


def complete_keyword(
    keyword_hits: Sequence[tuple[int, float]],
    semantic_hits: Sequence[tuple[int, float]],
    keyword_score: Callable[[Sequence[int]], Sequence[float]],
) -> list[tuple[int, float]]:
    """The keyword ranking extended with the vector candidates it left out, at their true keyword score.

    The keyword retriever returns its top `pool` only, and on code that top is crowded with tiny chunks
    (a two-line chunk that repeats a query word outscores the module doc that explains the subject). A
    vector candidate outside it then counted as unmatched by keywords in fusion, below chunks both
    retrievers merely like. The added documents score at most the list's last score (they were not in
    its top), so appending them in score order keeps the list sorted; those without any query term
    (score 0) stay out.

    >>> kw_scores = {2: 2.0, 3: 0.0}
    >>> complete_keyword([(1, 5.0)], [(2, 0.9), (3, 0.8), (1, 0.7)], lambda ds: [kw_scores[d] for d in ds])
    [(1, 5.0), (2, 2.0)]
    """
    have = {d for d, _ in keyword_hits}
    missing = [d for d, _ in semantic_hits if d not in have]
    extra = [(d, float(s)) for d, s in zip(missing, keyword_score(missing), strict=True) if s > 0]
    extra.sort(key=lambda item: (-item[1], item[0]))
    return [*keyword_hits, *extra]


def path_stem_weights(paths: Sequence[str]) -> dict[str, float]:
    """How much each stem found in the paths counts in `path_score`: the square root of its BM25 idf over
    the files (name and folder stems) relative to the idf of a stem no path has. A word most paths
    share (the project's own name: "trpc" in `initTRPC.ts`, a `src` folder) says little about which
    file a query means; a stem absent from the map counts 1.0. Benchmark hybrid 0.8715 -> 0.8736 (18
    repos >= semble: monolog -0.008 -> +0.001; trpc -0.029 -> -0.011), keyword 0.8399 -> 0.8408;
    validation MEAN hybrid 0.9375 -> 0.9385, keyword 0.9434 -> 0.9435. The plain ratio (no root):
    0.8743 but keyword mode 0.8383; its square: 0.8708.

    >>> w = path_stem_weights(["pkg/a.py", "pkg/b.py", "pkg/router.py", "pkg/c.py"])
    >>> round(w["router"], 2), round(w["pkg"], 2)
    (0.72, 0.21)
    """
    df: dict[str, int] = {}
    for path in paths:
        name, dirs = _path_parts(path)
        for s in name | dirs:
            df[s] = df.get(s, 0) + 1
    n = len(paths)
    unseen = math.log(1.0 + (n + 0.5) / 0.5)
    return {s: math.sqrt(math.log(1.0 + (n - d + 0.5) / (d + 0.5)) / unseen) for s, d in df.items()}


_LAYOUT: weakref.WeakKeyDictionary[
    KeywordSnapshot, tuple[int, tuple[str, ...], frozenset[str], dict[str, float]]
] = weakref.WeakKeyDictionary()


def _layout_of(snap: KeywordSnapshot) -> tuple[tuple[str, ...], frozenset[str], dict[str, float]]:
    """(`superseded_dirs`, `shadowed_private`, `path_stem_weights`) of a snapshot's files, computed once
    per snapshot (and again if its file list grows or shrinks)."""
    n = len(snap.file_paths)
    cached = _LAYOUT.get(snap)
    if cached is None or cached[0] != n:
        paths = snap.file_paths
        cached = (
            n,
            tuple(sorted(superseded_dirs(paths))),
            shadowed_private(paths),
            path_stem_weights(paths),
        )
        _LAYOUT[snap] = cached
    return cached[1], cached[2], cached[3]


def rank_hits(
    query: str,
    snap: KeywordSnapshot,
    keyword_hits: Sequence[tuple[int, float]],
    semantic_hits: Sequence[tuple[int, float]],
    config: SearchConfig,
    params: RankParams | None = None,
    keyword_score: Callable[[Sequence[int]], Sequence[float]] | None = None,
    verbatim: bool = False,
) -> list[Hit]:
    """THE ranking entry point of every search mode: fuse the retrievers' candidates (either list may
    be empty), rerank the best `config.rerank_top_n` with the code-aware signals, keep the rest after
    them in fused order. Scores are comparable within one answer only. `keyword_score` gives any
    document's keyword score, `verbatim` says a keyword candidate quotes the query (see `_fused`)."""
    profile = profile_query(query)
    docs = snap.docs
    ordered = _fused(
        profile, keyword_hits, semantic_hits, config, lambda d: docs[d].path, params, keyword_score, verbatim
    )
    top_n = config.rerank_top_n
    if top_n <= 0 or not ordered:
        return [Hit(d, s) for d, s in ordered]
    head, tail = ordered[:top_n], ordered[top_n:]
    old, shadowed, path_weights = _layout_of(snap)
    candidates = []
    for d, s in head:
        doc = docs[d]
        path = doc.path
        candidates.append(
            Candidate(d, path, doc.symbol, doc.kind, s, bool(old) and path.startswith(old), path in shadowed)
        )
    ranked = rank(candidates, profile, params, path_weights)
    out = [Hit(r.doc, r.score) for r in ranked]
    if tail:
        # The tail keeps its fused order, scaled to sit strictly below the reranked head.
        floor = min((r.score for r in ranked), default=1.0)
        last = head[-1][1] or 1.0
        out += [Hit(d, floor * 0.999 * (s / last if last > 0 else 1.0)) for d, s in tail]
    return out


def merge_external(
    hits: Sequence[tuple[int, float]], external: Sequence[tuple[int, float]], top_n: int
) -> list[Hit]:
    """Apply an external reranker's answer ((index into hits[:top_n], relevance) pairs, best first) to
    the deterministic order: the indices it returned come first in its order, the rest of the head
    keeps its deterministic order after them, then the tail. Scores become ranks (1/position) so that
    the two scales are never mixed. Raises ValueError on an index outside the head or a repeat.

    >>> merge_external([Hit(7, 3.0), Hit(8, 2.0), Hit(9, 1.0)], [(1, 0.9)], 2)
    [Hit(doc=8, score=1.0), Hit(doc=7, score=0.5), Hit(doc=9, score=0.333333)]
    """
    head = list(hits[:top_n])
    chosen: list[int] = []
    for index, _ in external:
        if not 0 <= index < len(head):
            raise ValueError(f"reranker returned index {index} outside the {len(head)} documents sent")
        if index in chosen:
            raise ValueError(f"reranker returned index {index} twice")
        chosen.append(index)
    rest = [i for i in range(len(head)) if i not in set(chosen)]
    order = [head[i][0] for i in chosen + rest] + [h[0] for h in hits[top_n:]]
    return [Hit(doc, round(1.0 / (pos + 1), 6)) for pos, doc in enumerate(order)]
