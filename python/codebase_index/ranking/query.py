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
    message_words = tuple(_message_tokens(text))
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
_MESSAGE_TOKEN = re.compile(r"[^\W_]+|(?<![-=])[<>]=?|[!=]==?")
_OPERATORS = frozenset({"<", ">", "<=", ">=", "==", "!=", "===", "!=="})
_NOT_CONTENT = _FILLER | _OPERATORS


def _message_tokens(text: str) -> list[str]:
    """`_plain_words` and the comparison operators between them: what `verbatim_spans` matches.

    >>> _message_tokens("n must be >= 0, x -> y")
    ['n', 'must', 'be', '>=', '0', 'x', 'y']
    """
    return _MESSAGE_TOKEN.findall(text.lower())


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


# A pasted message inside other words ("why does it fail with unsupported compression method", "getting
# X when I run it"): the chunk holding the longest stretch of the query verbatim is the raising site when
# the stretch has at least this many words, this many of them content words, and no other candidate
# read holds a stretch as long (see `pipeline.guarantees`).
MESSAGE_MIN_WORDS = 3
# Share of the query's content words the run must cover: a message is most of what a user pastes, a
# phrase of a description that recurs in some log line is not ("for file changes" in "test watcher for
# file changes in watch mode"). Lower when the query itself says it is about a failure.
MESSAGE_COVERAGE = 0.6
MESSAGE_COVERAGE_ERROR = 0.4
MESSAGE_CANDIDATES = 30  # the best keyword candidates whose texts are read for it
MESSAGE_MIN_CONTENT = 2


def may_hold_message(parsed: ParsedQuery) -> bool:
    """Whether the query may hold a pasted message (with or without words around it): any query but one
    that names a symbol, a file or a relation.

    >>> [may_hold_message(parse_query(q)) for q in ("why does it fail with bad gzip header", "parse_config")]
    [True, False]
    """
    return parsed.style not in ("identifier", "path", "relation")


def verbatim_spans(parsed: ParsedQuery, texts: Iterable[tuple[int, str]]) -> dict[int, int]:
    """For each (doc, text): the length of the longest run of the query's words (as written) that one
    string literal of the text holds consecutively on a line that raises, throws, logs or reports an
    error (the message a user pastes), counted only when the run has `MESSAGE_MIN_CONTENT` content words
    and covers `MESSAGE_COVERAGE` of the query's (`MESSAGE_COVERAGE_ERROR` when it names a failure).
    A run in plain code, a comment or a docstring does not count: a description's words recur there
    (benchmark descriptions lost 0.003 when any text counted).

    >>> q = parse_query("why does it fail with unsupported compression method")
    >>> raising = "raise CompressionError('unsupported compression method')"
    >>> verbatim_spans(q, [(1, raising), (2, "# unsupported compression method")])
    {1: 3, 2: 0}
    >>> verbatim_spans(q, [(3, "raise CompressionError(\\n    f'unsupported compression method')")])
    {3: 3}
    """
    words = parsed.message_words
    content = sum(1 for w in words if w not in _NOT_CONTENT)
    cued = parsed.mentions_error or parsed.style in ("error", "snippet")
    need = max(MESSAGE_MIN_CONTENT, (MESSAGE_COVERAGE_ERROR if cued else MESSAGE_COVERAGE) * content)
    wanted = {w for w in words if w not in _NOT_CONTENT}
    out: dict[int, int] = {}
    for doc, text in texts:
        best = 0
        # A run's content words stand in the text, so a text (or literal) holding fewer of them than
        # `need`, even as substrings, cannot qualify: most are rejected before any regex (13 -> <1 ms).
        # A message with format holes needs only its own words there (the values fill the rest).
        lower = text.lower()
        if not _holds_enough(wanted, lower, need) and not (
            cued and _HOLE_START.search(text) and _holds_enough(wanted, lower, MESSAGE_MIN_CONTENT)
        ):
            out[doc] = 0
            continue
        for m in _STRING_LITERAL.finditer(text):
            literal = m.group().lower()
            holed = cued and _FORMAT_HOLE.search(m.group()) is not None
            if not _holds_enough(wanted, literal, MESSAGE_MIN_CONTENT if holed else need):
                continue
            line_start = text.rfind("\n", 0, m.start()) + 1
            if line_start > 0 and _OPENS_LINE.fullmatch(text, line_start, m.start()):
                # The literal opens its line: the call that raises or logs it may be on the line before,
                # or before the other arguments' lines (each ending with a comma) when it is not the first.
                for _ in range(_ARGUMENT_LINES):
                    above_end = line_start - 1
                    line_start = text.rfind("\n", 0, above_end) + 1
                    if line_start == 0 or not text[line_start:above_end].rstrip().endswith(","):
                        break
            line_end = text.find("\n", m.end())
            if not _REPORTING_LINE.search(text, line_start, line_end if line_end >= 0 else len(text)):
                continue
            start, length = longest_run(words, _message_tokens(literal))
            if (
                length > best
                and sum(1 for w in words[start : start + length] if w not in _NOT_CONTENT) >= need
            ):
                best = length
            if holed:
                # The user's message has values where the code's has format holes (`%s`, `{}`, `${x}`):
                # a hole stands for the words of a value, the message's own words must still be there.
                # Only for a query that presents a message (`cued`): in a description ("how path
                # convertor types work") a hole would swallow the next word of the sentence.
                # The run counts the literal's words and holes it spans (a value of several words is
                # one hole), so a message spelling more of the query beats a generic "expected %v, got
                # %v" whose holes swallow the words it lacks.
                start, length, filled = message_run(words, message_words(m.group()))
                covered = range(start, start + length)
                size = length - len(filled) + _holes(sorted(filled))
                if (
                    size > best
                    and sum(1 for k in covered if words[k] not in _NOT_CONTENT) >= need
                    and sum(1 for k in covered if k not in filled and words[k] not in _NOT_CONTENT)
                    >= MESSAGE_MIN_CONTENT
                ):
                    best = size
        out[doc] = best
    return out


# A format hole in a message literal, where the message a user sees has a value: printf verbs (C, Go,
# Python `%`, with `%(name)s`), braces (Python format and f-strings, Rust, C# `{0}`, JS `${x}`, Ruby
# `#{x}`, PHP `{$x}`), Swift `\(x)`, and PHP/Kotlin `$name`.
_FORMAT_HOLE = re.compile(
    r"%(?:\([\w.]*\))?[-+#0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|z|j|t|L)?[sdifFeEgGxXoucqvTwpr]"
    r"|[$#]\{[^{}\n]{0,40}\}|(?<!\{)\{[^{}\n]{0,40}\}(?!\})"
    r"|\\\([^()\n]{0,40}\)"
    r"|\$[A-Za-z_]\w*"
)
_HOLE_START = re.compile(r"[%{$\\]")  # a text without these holds no format hole
HOLE = ""  # a format hole among `message_words`


def _holes(filled: Sequence[int]) -> int:
    """How many holes fill these (sorted) query positions: one per run of consecutive positions.

    >>> _holes([1, 2, 3, 5]), _holes([])
    (2, 0)
    """
    return sum(1 for i, k in enumerate(filled) if i == 0 or filled[i - 1] != k - 1)


def message_words(literal: str) -> list[str]:
    """A message literal's words (`_message_tokens`), each run of format holes as one `HOLE`.

    >>> message_words("'%s' expected type '%s', got %v")
    ['', 'expected', 'type', '', 'got', '']
    >>> message_words("`Invalid referrerPolicy: ${policy}`"), message_words('"{} {:?}: {{literal}}"')
    (['invalid', 'referrerpolicy', ''], ['', 'literal'])
    """
    out: list[str] = []
    at = 0
    for m in _FORMAT_HOLE.finditer(literal):
        out += _message_tokens(literal[at : m.start()])
        if not out or out[-1] != HOLE:
            out.append(HOLE)
        at = m.end()
    out += _message_tokens(literal[at:])
    return out


def message_run(query_words: Sequence[str], literal_words: Sequence[str]) -> tuple[int, int, frozenset[int]]:
    """`longest_run` for a message literal with format holes (`message_words`): (start in the query,
    length, the query positions holes stand for). A hole between two of the literal's words stands for
    the query's words up to the next of them (at least one); one at either end of the run for one word.

    >>> q = "getting value unsupported type int when decoding".split()
    >>> message_run(q, ["", "unsupported", "type", ""])
    (1, 4, frozenset({1, 4}))
    >>> message_run("expected a big map got int".split(), ["expected", "", "got", ""])
    (0, 6, frozenset({1, 2, 3, 5}))
    """
    wanted = set(query_words)
    starts: dict[str, list[int]] = {}
    for j, t in enumerate(literal_words):
        if t != HOLE and t in wanted:
            starts.setdefault(t, []).append(j)
    best: tuple[int, int, frozenset[int]] = (0, 0, frozenset())
    n, m = len(query_words), len(literal_words)
    for i, q in enumerate(query_words):
        if n - i + 1 <= best[1]:
            break
        for j in starts.get(q, ()):
            filled: list[int] = []
            lo = i
            if j > 0 and literal_words[j - 1] == HOLE and i > 0:
                lo = i - 1
                filled.append(lo)
            qi, lj = i, j
            while qi < n and lj < m:
                t = literal_words[lj]
                if t != HOLE:
                    if query_words[qi] != t:
                        break
                    qi += 1
                    lj += 1
                    continue
                nxt = literal_words[lj + 1] if lj + 1 < m else None
                k = qi + 1
                while nxt is not None and k < n and query_words[k] != nxt:
                    k += 1
                if nxt is None or k >= n:  # the literal ends here, or never resumes: one word
                    filled.append(qi)
                    qi += 1
                    break
                filled.extend(range(qi, k))
                qi, lj = k, lj + 1
            if qi - lo > best[1]:
                best = (lo, qi - lo, frozenset(filled))
    return best


# A line that raises, throws, logs or builds an error: where the messages users paste are written.
_REPORTING_LINE = re.compile(
    r"raise|throw|panic|error|exception|fail|warn|log|reject|assert|abort|fatal|die\b|bail|expect\(",
    re.IGNORECASE,
)
# What may stand before a string literal that opens its line: indentation and a string prefix (f'', r"",
# C# $"" and @"").
_OPENS_LINE = re.compile(r"\s*[rRbBfFuU$@]{0,3}")
_ARGUMENT_LINES = 8  # how many lines above a literal opening its line are read for the raising call
# One-line string literals (quotes, backticks) where a raised, logged or returned message is written.
_STRING_LITERAL = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|`[^`]*`')


def _holds_enough(words: Iterable[str], text: str, need: float) -> bool:
    """At least `need` of `words` occur in `text` (as substrings); stops as soon as the answer is known."""
    if need <= 0:
        return True
    found = 0
    for w in words:
        if w in text:
            found += 1
            if found >= need:
                return True
    return False


def message_holders(spans: dict[int, int]) -> frozenset[int]:
    """Every document whose verbatim run (`verbatim_spans`) is the longest and at least `MESSAGE_MIN_WORDS`
    long (`message_holder` is the one when there is one).

    >>> sorted(message_holders({1: 4, 2: 4, 3: 2})), message_holders({1: 2, 2: 2})
    ([1, 2], frozenset())
    """
    best = max(spans.values(), default=0)
    if best < MESSAGE_MIN_WORDS:
        return frozenset()
    return frozenset(d for d, n in spans.items() if n == best)


def message_holder(spans: dict[int, int]) -> int | None:
    """The one document whose verbatim run (`verbatim_spans`) is at least `MESSAGE_MIN_WORDS` long and
    longer than every other's, if any."""
    if not spans:
        return None
    best = max(spans.values())
    if best < MESSAGE_MIN_WORDS:
        return None
    holders = [d for d, n in spans.items() if n == best]
    return holders[0] if len(holders) == 1 else None


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
