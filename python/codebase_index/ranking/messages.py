"""Pasted messages: where a query holds an error or log message the code raises, which chunk raises it.
`verbatim_spans` measures, for each candidate text read, the longest run of the query's words that one
string literal on a raising line holds (format holes such as `%s` or `{}` standing for the values the user
pasted); `message_holder(s)` name the chunks the guarantees put first (`pipeline.guarantees`). The query
side (its words, `message_tokens`) comes from `query.parse_query`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from .query import (  # noqa: F401  (parse_query: the doctests use it)
    MESSAGE_TOKEN,
    NOT_CONTENT,
    ParsedQuery,
    longest_run,
    message_tokens,
    parse_query,
)

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
# ... for an error message (a failure word, an error's shape): BM25 on a message's words is weak evidence
# (the raiser of "'%s' expected type '%s', got '%s'" among seven sits at keyword rank 32). Pasted code reads
# 30: at 60 no validation snippet changed, and each read text is scanned for message runs.
MESSAGE_CANDIDATES_ERROR = 60
MESSAGE_MIN_CONTENT = 2


def message_candidates(parsed: ParsedQuery) -> int:
    """How many of the best keyword candidates' texts are read for `verbatim_spans`."""
    return (
        MESSAGE_CANDIDATES_ERROR if parsed.mentions_error or parsed.style == "error" else MESSAGE_CANDIDATES
    )


def _cued(parsed: ParsedQuery) -> bool:
    """The query presents a message (says it is about a failure, or is shaped as an error or code)."""
    return parsed.mentions_error or parsed.style in ("error", "snippet")


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

    Several texts holding the longest run (a message two definitions raise in different case): those
    holding it in the query's case keep it, the others count one word less (`_prefer_query_case`).

    >>> q = parse_query("error: number of iterables and")
    >>> verbatim_spans(q, [(1, "raise ValueError('Number of iterables and offsets')"),
    ...     (2, "raise ValueError('Mismatching number of iterables and lengths')")])
    {1: 3, 2: 4}
    """
    words = parsed.message_words
    content = sum(1 for w in words if w not in NOT_CONTENT)
    cued = _cued(parsed)
    need = max(MESSAGE_MIN_CONTENT, (MESSAGE_COVERAGE_ERROR if cued else MESSAGE_COVERAGE) * content)
    wanted = {w for w in words if w not in NOT_CONTENT}
    # A message the user quoted whole marks its own bounds: a run covering it needs one content word
    # ("value should be in input:" where the code says "span {span:?} should be in input:").
    quotes = _quoted_ranges(parsed) if cued else ()
    floor = 1 if quotes else need
    out: dict[int, int] = {}
    held: dict[int, str] = {}  # texts holding a run long enough for the guarantees
    for doc, text in texts:
        best = 0
        # A run's content words stand in the text, so a text (or literal) holding fewer of them than
        # `need`, even as substrings, cannot qualify: most are rejected before any regex (13 -> <1 ms).
        # A message with format holes needs only its own words there (the values fill the rest).
        lower = text.lower()
        if not _holds_enough(wanted, lower, floor) and not (
            cued
            and _HOLE_START.search(text)
            and _holds_enough(wanted, lower, min(floor, MESSAGE_MIN_CONTENT))
        ):
            out[doc] = 0
            continue
        for m in _STRING_LITERAL.finditer(text):
            literal = m.group().lower()
            holed = cued and _FORMAT_HOLE.search(m.group()) is not None
            if not _holds_enough(wanted, literal, min(floor, MESSAGE_MIN_CONTENT) if holed else floor):
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
            start, length = longest_run(words, message_tokens(literal))
            if length > best:
                said = sum(1 for w in words[start : start + length] if w not in NOT_CONTENT)
                if said >= need or (said and _covers_quote(start, length, quotes)):
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
                if size > best:
                    said = sum(1 for k in covered if words[k] not in NOT_CONTENT)
                    own = sum(1 for k in covered if k not in filled and words[k] not in NOT_CONTENT)
                    if (said >= need and own >= MESSAGE_MIN_CONTENT) or (
                        own and _covers_quote(start, length, quotes)
                    ):
                        best = size
        out[doc] = best
        if best >= MESSAGE_MIN_WORDS:
            held[doc] = text
    return _prefer_query_case(parsed, out, held)


def _quoted_ranges(parsed: ParsedQuery) -> tuple[tuple[int, int], ...]:
    """(start, end) positions among the query's `message_words` of each string it quotes that has at
    least `MESSAGE_MIN_WORDS` words.

    >>> _quoted_ranges(parse_query('it fails with "value should be in input:", how do I fix this'))
    ((3, 8),)
    """
    words = parsed.message_words
    out = []
    for q in parsed.quoted:
        tokens = message_tokens(q)
        n = len(tokens)
        if n >= MESSAGE_MIN_WORDS:
            out += [(i, i + n) for i in range(len(words) - n + 1) if list(words[i : i + n]) == tokens][:1]
    return tuple(out)


def _covers_quote(start: int, length: int, quotes: Sequence[tuple[int, int]]) -> bool:
    """The run `start`..`start + length` holds one of the quoted strings (`_quoted_ranges`) whole."""
    return any(start <= lo and hi <= start + length for lo, hi in quotes)


def _prefer_query_case(parsed: ParsedQuery, spans: dict[int, int], held: Mapping[int, str]) -> dict[int, int]:
    """When several texts hold the longest run (case folded), and some hold it in the case the query
    has it, the others count one word less: a message pasted from a log keeps its case, so "number of
    iterables and" is the raiser of "Mismatching number of iterables and lengths", not of "Number of
    iterables and offsets didn't match". A run through format holes is never held in the query's case
    word for word (its holes are not words): when every tied run goes through holes, nothing changes."""
    best = max(spans.values(), default=0)
    tied = [d for d in held if spans[d] == best]
    if len(tied) < 2:
        return spans
    cased = MESSAGE_TOKEN.findall(parsed.text)
    if tuple(w.lower() for w in cased) != parsed.message_words:
        return spans
    keep = [d for d in tied if longest_run(cased, MESSAGE_TOKEN.findall(held[d]))[1] >= best]
    if keep and len(keep) < len(tied):
        for d in tied:
            if d not in keep:
                spans[d] = best - 1
    return spans


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
    """A message literal's words (`message_tokens`), each run of format holes as one `HOLE`.

    >>> message_words("'%s' expected type '%s', got %v")
    ['', 'expected', 'type', '', 'got', '']
    >>> message_words("`Invalid referrerPolicy: ${policy}`"), message_words('"{} {:?}: {{literal}}"')
    (['invalid', 'referrerpolicy', ''], ['', 'literal'])
    """
    out: list[str] = []
    at = 0
    for m in _FORMAT_HOLE.finditer(literal):
        out += message_tokens(literal[at : m.start()])
        if not out or out[-1] != HOLE:
            out.append(HOLE)
        at = m.end()
    out += message_tokens(literal[at:])
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


def message_holders(spans: Mapping[int, int]) -> frozenset[int]:
    """Every document whose verbatim run (`verbatim_spans`) is the longest and at least `MESSAGE_MIN_WORDS`
    long (`message_holder` is the one when there is one).

    >>> sorted(message_holders({1: 4, 2: 4, 3: 2})), message_holders({1: 2, 2: 2})
    ([1, 2], frozenset())
    """
    best = max(spans.values(), default=0)
    if best < MESSAGE_MIN_WORDS:
        return frozenset()
    return frozenset(d for d, n in spans.items() if n == best)


def message_holder(spans: Mapping[int, int]) -> int | None:
    """The one document whose verbatim run (`verbatim_spans`) is at least `MESSAGE_MIN_WORDS` long and
    longer than every other's, if any (`message_holders` when it has one member).

    >>> message_holder({1: 4, 2: 3}), message_holder({1: 4, 2: 4})
    (1, None)
    """
    holders = message_holders(spans)
    return next(iter(holders)) if len(holders) == 1 else None
