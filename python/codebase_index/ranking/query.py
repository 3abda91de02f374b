"""Query parsing: the typed query every later stage reads, parsed once per search.

A query arrives as text in one of several styles (an identifier, a short phrase, a description, a pasted
error or log line, a code snippet, a relation question such as "who calls X", a path); `parse_query`
names its style, the literals it holds (identifiers, quoted strings, paths) and the derived word and stem
sets, and the keyword retriever's weighted terms. Nothing downstream re-reads the raw text for these.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..bm25 import QUERY_STOP_WORDS, inflections, stem, tokenize
from ..search import query_terms
from .literals import Literal, literal_fragments
from .style import (
    ERROR_WORDS,
    QUESTION_START,
    change_shape,
    classify,
    code_shape,
    error_shape,
    message_phrasing,
    relation_of,
)
from .style import STYLES as STYLES  # re-exported: the style is read with the parsed query
from .style import Relation as Relation

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
# One search over the alternatives (a word has an identifier's shape when any of them occurs in it).
_IDENTIFIER_SHAPE = re.compile(
    r"[a-z0-9][A-Z]"  # camelCase, getUserById
    r"|[A-Z]{2,}[a-z]"  # HTTPServer
    r"|\w_\w|^_\w"  # snake_case, _private
    r"|\w(?:::|\.|->|#)\w"  # Foo::bar, pkg.func, obj->f, Class#method
    r"|\w\(\)?$"  # call()
)
_WORD_CHAR = re.compile(r"\w")
_TEST_WORDS = frozenset({"test", "tests", "testing", "spec", "specs", "fixture", "fixtures", "mock", "mocks"})
_DOC_WORDS = frozenset({"doc", "docs", "documentation", "readme", "guide", "tutorial", "changelog"})
_EXAMPLE_WORDS = frozenset({"example", "examples", "demo", "sample", "samples"})


_TRACEBACK_HEADER = re.compile(r"\bTraceback \(most recent call last\):?")
_QUOTED = re.compile(r"`([^`]+)`|\"([^\"]+)\"|'([^']{2,})'")
_PATH_WORD = re.compile(r"^[\w.\-]*[\w\-]/[\w./\-]+$|^[\w\-]+\.(?:[a-z]{1,4})$")
# Words that do not make a run of the query a quotation on their own ("it fail with", "when the").
_FILLER = (
    QUERY_STOP_WORDS
    | _QUESTION_WORDS
    | {"a", "an", "and", "or", "the", "of", "to", "in", "on", "for", "from", "by", "as", "at", "into", "its"}
    | {"it", "is", "be", "this", "that", "with", "when", "after", "get", "getting", "fail", "i", "my", "we"}
)


@dataclass(frozen=True)
class ParsedQuery:
    """The typed query: what it asks for and the literals in it, derived once per search and passed to
    every stage (retrievers, fusion, features, scoring)."""

    text: str
    words: tuple[str, ...]  # content words, lower-case, stop/question words dropped, in order
    stems: frozenset[str]  # stems of words and of their identifier parts
    identifiers: tuple[str, ...]  # code-like words as typed ("getUserById", "Foo::bar", "Session")
    symbol_query: bool  # the whole query is one identifier or qualified name
    wants_tests: bool
    wants_docs: bool
    wants_examples: bool
    code_like: bool = False  # pasted code (`style.code_shape`): brackets, `=`, `;`, `=>`, several lines
    error_like: bool = False  # pasted error or log line, not a question (`style.error_shape`)
    compounds: tuple[tuple[str, frozenset[str]], ...] = ()  # see `_compounds`
    style: str = "phrase"  # one of `STYLES`
    quoted: tuple[str, ...] = ()  # text in quotes or backticks, as typed
    paths: tuple[str, ...] = ()  # words that look like file paths
    relation: Relation | None = None  # set for relation questions ("who calls X")
    question: bool = False  # opens like a question or a how-to (`style.QUESTION_START`)
    change: bool = False  # a change request or commit subject ("Fix ...", `style.change_shape`)
    terms: tuple[str, ...] = ()  # the keyword retriever's terms (`keyword_query`)
    term_weights: tuple[float, ...] = ()
    plain_words: tuple[str, ...] = ()  # words as written, for the verbatim check (`quotes_query`)
    message_words: tuple[str, ...] = ()  # plain words and comparison operators (`verbatim_spans`)
    mentions_error: bool = False  # message words or failure words anywhere, even in a question
    literals: tuple[Literal, ...] = ()  # what the exact-literal retriever looks up (`literals`)

    @property
    def literal(self) -> bool:
        """The query is text to find verbatim (one identifier, pasted code or an error message), not a
        description. Identifiers too: benchmark symbol queries 0.943 -> 0.951, validation identifiers
        0.990 -> 0.995 (overall 0.8457 -> 0.8475 and 0.931 -> 0.933)."""
        return self.symbol_query or self.code_like or self.error_like


@functools.lru_cache(maxsize=1 << 12)
def parse_query(query: str) -> ParsedQuery:
    """Parse a query once: its style, the identifiers, quoted strings and paths it names, content words
    and their stems, what kind of file (tests, docs, examples) it explicitly asks for, and the keyword
    retriever's weighted terms.

    >>> p = parse_query("how does parseConfig handle Foo::bar")
    >>> p.identifiers, p.symbol_query
    (('parseConfig', 'Foo::bar'), False)
    >>> parse_query("Session").symbol_query, parse_query("redirect following").symbol_query
    (True, False)
    """
    # A pasted Python traceback's header names no code: its words ("most recent call last") only pull
    # chunks that say "last" or "call" (the header still makes the query an error, `error_shape`).
    text = _TRACEBACK_HEADER.sub(" ", query).strip() or query
    raw_words = text.split()
    identifiers: list[str] = []
    for raw in raw_words:
        word = raw.strip("`'\",;:!?()[]{}<>")
        if not word or not _WORD_CHAR.search(word):
            continue
        if _IDENTIFIER_SHAPE.search(word):
            identifiers.append(word.rstrip("()"))
    single = len(raw_words) == 1 and bool(
        re.fullmatch(r"[\w:.#>\-]+\(?\)?", raw_words[0] if raw_words else "")
    )
    if single and not identifiers:
        identifiers.append(raw_words[0].rstrip("()"))
    tokens = [t for t in tokenize(text) if t not in QUERY_STOP_WORDS]
    words = tuple(dict.fromkeys(t for t in tokens if t not in _QUESTION_WORDS)) or tuple(
        dict.fromkeys(tokens)
    )
    stems = frozenset(stem(w) for w in words)
    lowered = set(tokenize(text))
    code_like = code_shape(text)
    question = bool(QUESTION_START.match(text))
    error_like = error_shape(query) and not question
    symbol_query = single
    literal = symbol_query or code_like or error_like
    terms, term_weights = _keyword_terms(text, literal)
    quoted = tuple(next(g for g in m.groups() if g) for m in _QUOTED.finditer(text))
    paths = tuple(w.strip("`'\",;:()") for w in raw_words if _PATH_WORD.match(w.strip("`'\",;:()")))
    relation = relation_of(text)
    style = classify(relation, paths, raw_words, symbol_query, code_like, error_like, question, words)
    plain_words = tuple(_plain_words(text))
    message_words = tuple(message_tokens(text))
    mentions_error = error_like or message_phrasing(text) or bool(ERROR_WORDS.search(text))
    literals = literal_fragments(
        text,
        quotation=code_like or error_like,
        # A pasted snippet's string literals are evidence when they read like a message ("invalid key");
        # 'abcb' or 'foo' in a doctest is test data that other doctests hold too.
        quoted=tuple(q for q in quoted if " " in q.strip()) if code_like else quoted,
        identifiers=identifiers,
        message_from=_message_start(raw_words, style, mentions_error),
        filler=_FILLER,
    )
    return ParsedQuery(
        text=query,
        words=words,
        stems=stems,
        identifiers=tuple(identifiers),
        symbol_query=symbol_query,
        wants_tests=bool({stem(w) for w in lowered} & _TEST_STEMS),
        wants_docs=bool(lowered & _DOC_WORDS),
        wants_examples=bool(lowered & _EXAMPLE_WORDS),
        code_like=code_like,
        error_like=error_like,
        compounds=_compounds(words),
        style=style,
        quoted=quoted,
        paths=paths,
        relation=relation,
        question=question,
        change=not code_like and not symbol_query and change_shape(text),
        terms=tuple(terms),
        term_weights=tuple(term_weights),
        plain_words=plain_words,
        message_words=message_words,
        mentions_error=mentions_error,
        literals=literals,
    )


def _message_start(raw_words: Sequence[str], style: str, mentions_error: bool) -> int | None:
    """Where a pasted message may start among the query's words: anywhere in an error-shaped query; in
    a description or phrase, after a failure word that introduces one ("why does it fail with X", "error:
    X", "panics saying X"); None for other queries (no message runs are looked up). A description that
    only talks about errors ("how are validation errors reported") quotes nothing.

    >>> _message_start("why does it fail with bad gzip header".split(), "description", True)
    5
    >>> _message_start("how are validation errors turned into responses".split(), "description", True)
    """
    if style == "error":
        return 0
    if not mentions_error or style not in ("description", "phrase"):
        return None
    for i, word in enumerate(raw_words[:-1]):
        bare = word.strip("`'\",;.!?")
        if not ERROR_WORDS.fullmatch(bare.rstrip(":")):
            continue
        if bare.endswith(":"):
            return i + 1
        if raw_words[i + 1].lower() in _MESSAGE_CONNECTORS:
            return i + 2
    return None


# Words after a failure word that introduce the message itself ("fails with", "errors saying").
_MESSAGE_CONNECTORS = frozenset({"with", "saying", "says", "like", "that"})


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


# Stems, so that "mocking", "mocked" or "fixtures" ask for test code as "mock" does.
_TEST_STEMS = frozenset(stem(w) for w in _TEST_WORDS)


# Keyword share (at least) for queries that are literal text to find rather than a description:
# measured on the validation set, vectors cost pasted code 0.95 -> 0.86 and error messages 0.92 -> 0.83
# (file nDCG@10) at the default weight, while helping descriptions.
# Error messages: keywords only (the vectors still add candidates after the keyword matches). A pasted
# message is found by its words at the raising site; the sentence model scores other messages about
# the same subject close to it. Validation errors 0.871 -> 0.882 (hybrid MEAN 0.933 -> 0.937, keyword
# mode 0.908), benchmark unchanged; 0.9 gave 0.876. Safe since questions are never error-like (see
# `style.QUESTION_START`).
SYMBOL_KEYWORD_WEIGHT = 0.8
CODE_KEYWORD_WEIGHT = 0.85
ERROR_KEYWORD_WEIGHT = 1.0


# Literal queries (`ParsedQuery.literal`) fuse by score even when rrf is configured: how far the exact match
# stands out is the signal, and RRF keeps only ranks (validation: snippets 0.89 -> 0.95, errors
# 0.83 -> 0.87 file nDCG@10; benchmark descriptions unchanged).
LITERAL_SCORE_FUSION = True


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
    parsed = parse_query(query)
    return list(parsed.terms), list(parsed.term_weights)


def _keyword_terms(query: str, literal: bool) -> tuple[list[str], list[float]]:
    """`keyword_query` for a query whose literalness is known (`ParsedQuery.literal`)."""
    terms = list(query_terms(query))
    weights = [1.0] * len(terms)
    if literal:
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


# Comparison operators, which tell messages apart that the same words spell ("n must be > 0", "n must be
# >= 0"); not an arrow's ">" (->, =>).
MESSAGE_TOKEN = re.compile(r"[^\W_]+|(?<![-=])[<>]=?|[!=]==?")
_OPERATORS = frozenset({"<", ">", "<=", ">=", "==", "!=", "===", "!=="})
NOT_CONTENT = _FILLER | _OPERATORS


def message_tokens(text: str) -> list[str]:
    """`_plain_words` and the comparison operators between them: what `verbatim_spans` matches.

    >>> message_tokens("n must be >= 0, x -> y")
    ['n', 'must', 'be', '>=', '0', 'x', 'y']
    """
    return MESSAGE_TOKEN.findall(text.lower())


def verbatim_run(query_words: Sequence[str], text_words: Sequence[str]) -> int:
    """Length of the longest run of consecutive query words that also appears consecutively in the text.

    >>> verbatim_run(["value", "not", "recognized"], ["throw", "value", "not", "recognized"])
    3
    >>> verbatim_run(["a", "b", "c"], ["b", "x", "c"])
    1
    """
    return longest_run(query_words, text_words)[1]


def may_quote(parsed: ParsedQuery) -> bool:
    """Whether `quotes_query` could hold for this query, before reading any text: at least
    `VERBATIM_MIN_WORDS` words, not a question, and not literal already (an identifier, pasted code or
    an error message fuses on keywords anyway).

    >>> [may_quote(parse_query(q)) for q in ("got nil layouts slice", "how are layouts sliced", "nil slice")]
    [True, False, False]
    """
    return len(parsed.plain_words) >= VERBATIM_MIN_WORDS and not parsed.question and not parsed.literal


def quotes_query(parsed: ParsedQuery, texts: Iterable[tuple[str, str]]) -> bool:
    """Whether the query's words stand verbatim in the (path, text) candidates of exactly one file: all
    of them in order, or all but the first or last (a pasted fragment cut mid-word, a placeholder in
    place of a formatted value), and at least `VERBATIM_MIN_WORDS`. Questions are descriptions however
    well their words match, and a phrase several files repeat (a boilerplate doc comment such as
    "returns the default text for this flag" on every flag type) does not say which one is meant.

    >>> quotes_query(parse_query("value not recognized"), [("a.py", "raise Error(f'{x} not recognized')")])
    False
    >>> texts = [("a.go", 'errors.New("got nil/empty layouts slice")')]
    >>> quotes_query(parse_query("got nil/empty layouts slice"), texts)
    True
    >>> cut = parse_query("Please provide only one of value")
    >>> quotes_query(cut, [("a.js", '"Please provide only one of --" + k')])
    True
    >>> quotes_query(parse_query("got no name"), [("a.go", "// got no name"), ("b.go", "// got no name")])
    False
    """
    words = parsed.plain_words
    need = max(VERBATIM_MIN_WORDS, len(words) - 1)
    if len(words) < VERBATIM_MIN_WORDS or parsed.question:
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


QUOTATION_MIN_WORDS = 4  # a shorter plain-words query is a phrase that may merely recur in some comment


def is_quotation(parsed: ParsedQuery) -> bool:
    """The query may be text quoted from the code (pasted code, an error message, or four or more words
    that are not a question): the queries the exact-text guarantee applies to. Three words ("selector
    event loop") are a phrase the answer need not spell; it may recur verbatim in an unrelated comment.

    >>> [is_quotation(parse_query(q)) for q in ("selector event loop", "x = f(y)", "how is the loop closed")]
    [False, True, False]
    """
    if parsed.code_like or parsed.error_like:
        return True
    return len(parsed.plain_words) >= QUOTATION_MIN_WORDS and not parsed.question


def exact_matches(parsed: ParsedQuery, texts: Iterable[tuple[int, str]]) -> list[int]:
    """The documents among (doc, text) whose text holds the whole query verbatim (whitespace runs
    count as one space): the exact-literal evidence behind the quoted-text guarantee (`pipeline`).

    >>> exact_matches(parse_query("if x  is None:"), [(1, "y = 2"), (2, "    if x is None:\\n  return")])
    [2]
    """
    words = parsed.text.split()
    if not words:
        return []
    wanted = " ".join(words)
    # A text holding the query holds its longest word as it is (a word has no whitespace to normalise):
    # testing that first spares normalising the whitespace of most texts.
    longest = max(words, key=len)
    return [doc for doc, text in texts if longest in text and wanted in " ".join(text.split())]


def longest_run(query_words: Sequence[str], text_words: Sequence[str]) -> tuple[int, int]:
    """(start in the query, length) of the longest run of consecutive query words that also appears
    consecutively in the text (`verbatim_run` is its length).

    >>> longest_run(["x", "not", "recognized"], ["value", "not", "recognized"])
    (1, 2)
    """
    wanted = set(query_words)
    starts: dict[str, list[int]] = {}
    for j, t in enumerate(text_words):
        if t in wanted:
            starts.setdefault(t, []).append(j)
    best, best_start = 0, 0
    n, m = len(query_words), len(text_words)
    for i, q in enumerate(query_words):
        if n - i <= best:
            break
        for j in starts.get(q, ()):
            k = 1
            while i + k < n and j + k < m and query_words[i + k] == text_words[j + k]:
                k += 1
            if k > best:
                best, best_start = k, i
    return best_start, best


def identifier_keyword_weight(parsed: ParsedQuery, base: float) -> float:
    """Keyword share in hybrid fusion: identifier-like queries, pasted code and pasted error messages
    trust exact matches more than vectors; descriptions keep the configured share.

    >>> identifier_keyword_weight(parse_query("getUserById"), 0.5)
    0.8
    >>> identifier_keyword_weight(parse_query("where are payments validated"), 0.5)
    0.5
    >>> identifier_keyword_weight(parse_query("if (user == null) { return; }"), 0.5)
    0.85
    >>> identifier_keyword_weight(parse_query("port must be a number"), 0.5)
    1.0
    """
    weight = base
    if parsed.symbol_query:
        weight = max(weight, SYMBOL_KEYWORD_WEIGHT)
    elif parsed.identifiers:
        weight = max(weight, min(1.0, base + 0.15))
    if parsed.code_like:
        weight = max(weight, CODE_KEYWORD_WEIGHT)
    if parsed.error_like:
        weight = max(weight, ERROR_KEYWORD_WEIGHT)
    return weight
