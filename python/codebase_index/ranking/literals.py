"""The literals of a query the exact-literal retriever looks up verbatim (`codebase_index.literal`):
derived once by `query.parse_query` and carried on the `ParsedQuery`.

Kinds, strongest evidence first:
  query       the query itself (its longest line) when it is pasted code or an error message (a quoted
              plain-words sentence is left to the best keyword candidates: BM25 ranks a chunk holding all
              its words high, and looking it up cost 0.1 ms of keyword p50 on the benchmark)
  quoted      a string the user put in quotes or backticks
  identifier  a qualified name as typed (`Foo::bar`, `pkg.func`)
  message     a run of `MESSAGE_WINDOW` words of a query that may hold a pasted error message, from where
              the message may start (a user's words around it and format holes filled with a value
              break longer runs)
The trigram index needs at least `MIN_CHARS` characters; shorter literals are not looked up.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

MIN_CHARS = 3
MESSAGE_WINDOW = 3
MESSAGE_MIN_CONTENT = 2  # content words a window needs (as `messages.MESSAGE_MIN_CONTENT` for a run)
KINDS = ("query", "quoted", "identifier", "message")
_WORD = re.compile(r"[^\W_]+")
_QUALIFIED = re.compile(r"\w(\.|::|#|->)\w")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*")


def message_window(tokens: Sequence[str], start: int, end: int) -> str:
    """The query's words `start`..`end` (whitespace-split) as a message literal is looked up: joined by
    single spaces, without the quotes a user put around the message.

    >>> message_window(["got", '"bad', "gzip", 'header"'], 1, 4)
    'bad gzip header'
    """
    return " ".join(tokens[start:end]).strip("`'\"").strip()


class Literal(NamedTuple):
    kind: str  # one of `KINDS`
    text: str  # looked up verbatim (ASCII case folded)


def literal_fragments(
    text: str,
    *,
    quotation: bool,
    quoted: Sequence[str],
    identifiers: Sequence[str],
    message_from: int | None,
    filler: frozenset[str],
) -> tuple[Literal, ...]:
    """The literals of a query, each at most once (its strongest kind). Identifiers are looked up when
    qualified (`Foo::bar`, `pkg.func`: BM25 splits them into common words; a plain one is a keyword the
    symbol field already matches); message runs from word `message_from` on (None: none).

    >>> literal_fragments("why does it fail with bad gzip header", quotation=False, quoted=(),
    ...     identifiers=(), message_from=4, filler=frozenset({"why", "does", "it", "fail", "with"}))
    (Literal(kind='message', text='with bad gzip'), Literal(kind='message', text='bad gzip header'))
    >>> literal_fragments("`x` in Foo::parse", quotation=False, quoted=("x",),
    ...     identifiers=("Foo::parse", "parse_headers"), message_from=None, filler=frozenset())
    (Literal(kind='identifier', text='Foo::parse'),)
    """
    out: dict[str, Literal] = {}

    def add(kind: str, fragment: str) -> None:
        fragment = fragment.strip()
        if len(fragment) >= MIN_CHARS and fragment.lower() not in out:
            out[fragment.lower()] = Literal(kind, fragment)

    if quotation:
        add("query", max(text.splitlines() or [""], key=lambda line: len(line.strip())))
    for q in quoted:
        add("quoted", q)
    for ident in identifiers:
        m = _IDENTIFIER.search(ident)  # as written in code: `ValueError("bad` in a snippet is ValueError
        if m and _QUALIFIED.search(m.group()):
            add("identifier", m.group())
    if message_from is not None:
        tokens = text.split()
        for i in range(message_from, len(tokens) - MESSAGE_WINDOW + 1):
            window = tokens[i : i + MESSAGE_WINDOW]
            words = [w for t in window for w in _WORD.findall(t.lower())]
            if sum(1 for w in words if w not in filler) >= MESSAGE_MIN_CONTENT:
                add("message", message_window(tokens, i, i + MESSAGE_WINDOW))
    return tuple(out.values())
