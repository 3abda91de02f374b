"""Code-aware tokenization: identifiers, their camelCase/snake_case parts, query stop words, stemming.

The one tokenizer every stage shares: documents are indexed with `tokenize`/`tokenize_counts`, queries go
through `tokenize_query`, and ranking compares query words with path and symbol parts by `stem`.
Kept apart from `bm25` (scoring) because several stages use it without any index.

>>> tokenize("HTTPServer2 getUserById")
['httpserver2', 'http', 'server', '2', 'getuserbyid', 'get', 'user', 'by', 'id']
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

__all__ = [
    "QUERY_STOP_WORDS",
    "count_terms",
    "inflections",
    "split_identifier",
    "stem",
    "tokenize",
    "tokenize_counts",
    "tokenize_query",
]


# Words are `\w+` runs so snake_case identifiers stay whole; hyphens, dots and operators separate words.
_WORD_FINDALL = re.compile(r"\w+").findall

# Sub-word rule, in priority order: a plural acronym (`URLs`, `IDs`) stays one part; an upper-case run
# followed by a capitalised word gives the acronym alone (`HTTPServer` -> HTTP, Server); an optional
# capital plus lower-case letters (`get`, `User`); a trailing upper-case run (`parseJSON` -> JSON); digits.
# Underscores are matched by no branch, so they separate parts.
_PART_TEMPLATE = r"{U}{{2,}}s(?!{L})|{U}+(?={U}{L})|{U}?{L}+|{U}+|\d+"
_ASCII_PARTS = re.compile(_PART_TEMPLATE.format(U="[A-Z]", L="[a-z]"), re.ASCII).findall


@functools.cache
def _unicode_parts() -> Callable[[str], list[Any]]:
    """Build the Unicode variant lazily: enumerating upper-case code points costs ~60 ms once."""
    ranges: list[str] = []
    start = prev = -2
    for cp in range(sys.maxunicode + 1):
        if chr(cp).isupper():
            if cp != prev + 1:
                if start >= 0:
                    ranges.append(_char_range(start, prev))
                start = cp
            prev = cp
    ranges.append(_char_range(start, prev))
    upper = "".join(ranges)
    pattern = _PART_TEMPLATE.format(U=f"[{upper}]", L=rf"[^\W\d_{upper}]")
    return re.compile(pattern).findall


def _char_range(start: int, end: int) -> str:
    return re.escape(chr(start)) if start == end else f"{re.escape(chr(start))}-{re.escape(chr(end))}"


@functools.lru_cache(maxsize=1 << 18)
def split_identifier(word: str) -> tuple[str, ...]:
    """Tokens for one `\\w+` word: the whole identifier first, then its parts if it has several.

    Cached because identifiers repeat heavily across a code base; this is what makes tokenizing a
    repository cheap. Leading/trailing underscores are dropped (`__init__` -> `init`); words starting
    with a digit are literals (`0x1F`, `3d`) and are not split.

    >>> split_identifier("getUserById")
    ('getuserbyid', 'get', 'user', 'by', 'id')
    >>> split_identifier("HTTPServer2")
    ('httpserver2', 'http', 'server', '2')
    >>> split_identifier("snake_case_name")
    ('snake_case_name', 'snake', 'case', 'name')
    >>> split_identifier("parseJSON"), split_identifier("__init__"), split_identifier("0x1F")
    (('parsejson', 'parse', 'json'), ('init',), ('0x1f',))
    """
    core = word.strip("_")
    if not core:
        return ()
    whole = core.lower()
    if core[0].isdigit():
        return (whole,)
    parts = _ASCII_PARTS(core) if core.isascii() else _unicode_parts()(core)
    if len(parts) <= 1:
        return (whole,)
    return (whole, *(p.lower() for p in parts))


def _normalize(text: str) -> str:
    """NFC so that a composed and a decomposed accent give the same token; ASCII skips the work."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def tokenize(text: str) -> list[str]:
    """Split code or prose into lower-case search tokens, in order (used for queries and documents).

    Each identifier yields itself and, when it has several parts, its camelCase / PascalCase /
    snake_case / digit parts. Hyphenated words (`kebab-case`) yield only their parts: a hyphen is as
    often a minus sign as a joiner, so no `kebab-case` token is made. Accents are kept, not stripped.

    >>> tokenize("getUserById(user_id)")
    ['getuserbyid', 'get', 'user', 'by', 'id', 'user_id', 'user', 'id']
    >>> tokenize("kebab-case")
    ['kebab', 'case']
    >>> tokenize("Größe berechnenFür café")
    ['größe', 'berechnenfür', 'berechnen', 'für', 'café']
    """
    out: list[str] = []
    extend = out.extend
    for word in _WORD_FINDALL(_normalize(text)):
        extend(split_identifier(word))
    return out


# English function words dropped from natural-language queries only (documents keep every token). Words
# that are keywords somewhere (`is`, `in`, `and`, `or`, `for`, `if`, `not`, `as`, `with`, `from`, `this`)
# are deliberately absent. On 1,000 stdlib docstring -> function queries this list raised MRR@10 from
# 0.275 to 0.294 and recall@10 from 0.470 to 0.513: code has little English prose, so these words keep
# a high IDF there and pull queries towards comment-heavy chunks.
QUERY_STOP_WORDS: frozenset[str] = frozenset(
    (  # noqa: SIM905 (one line of words reads better than a column of 29 literals)
        "a an the of to be it its at by on are was were which into will can has have been these those there "
        "than such should would could"
    ).split()
)


def tokenize_query(text: str) -> list[str]:
    """`tokenize` minus :data:`QUERY_STOP_WORDS`, unless that would leave nothing to search for.

    >>> tokenize_query("return the path of the config file")
    ['return', 'path', 'config', 'file']
    >>> tokenize_query("the")
    ['the']
    """
    tokens = tokenize(text)
    kept = [t for t in tokens if t not in QUERY_STOP_WORDS]
    return kept or tokens


_SUFFIXES = ("ations", "ation", "ings", "ing", "ies", "es", "ed", "s")
# The suffixes a word ending in a given letter may have, in `_SUFFIXES` order (the first that fits wins).
_SUFFIXES_BY_END = {end: tuple(s for s in _SUFFIXES if s[-1] == end) for end in {s[-1] for s in _SUFFIXES}}


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light English/code stemmer so that `redirects`, `redirected`, `redirecting` and `redirect` meet.

    Deliberately crude (suffix stripping only, never below 3 letters): it is used to compare query words
    with path and symbol parts, not to build the index.

    >>> [stem(w) for w in ("redirects", "following", "parsed", "parse", "handlers", "dispatches", "class")]
    ['redirect', 'follow', 'pars', 'pars', 'handler', 'dispatch', 'class']
    >>> [stem(w) for w in ("policy", "policies", "cookie", "cookies", "is")]
    ['polici', 'polici', 'cooki', 'cooki', 'is']
    """
    w = word.lower()
    # Only the suffixes ending in the word's last letter are tried: inflections stems ~25 candidate forms
    # per query word, and a new query's words miss the cache.
    for suffix in _SUFFIXES_BY_END.get(w[-1:], ()):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            if suffix == "s" and w.endswith("ss"):
                break
            if suffix == "es" and not w.endswith(("shes", "ches", "xes", "sses", "zes")):
                w = w[:-1]
            elif suffix == "ies":
                w = w[:-3] + "i"
            else:
                w = w[: -len(suffix)]
            break
    if len(w) > 4 and w[-1] in "ey":
        w = w[:-1] + ("i" if w[-1] == "y" else "")
    return w


# Endings tried on a word's stem to find its other inflections (`tasks` -> task, `scheduled` -> schedule,
# scheduling); only candidates with the word's own stem are kept.
_INFLECTION_ENDINGS = ("", "e", "s", "es", "ed", "d", "ing", "er", "ers", "ion", "ions", "y", "ies")


@functools.lru_cache(maxsize=1 << 14)
def inflections(word: str) -> tuple[str, ...]:
    """Other inflections of an English word that share its `stem`, as candidates to look up in a
    vocabulary (most will not occur): natural-language queries say "tasks" and "scheduled" where code
    says `task` and `schedule`. Words under 4 letters or with digits/underscores give none.

    >>> inflections("tasks")[:3]
    ('task', 'taske', 'tasked')
    >>> "schedule" in inflections("scheduled") and "scheduling" in inflections("scheduled")
    True
    >>> inflections("io"), inflections("utf8")
    ((), ())
    """
    if len(word) < 4 or not word.isalpha():
        return ()
    base = stem(word)
    roots = {base, word[:-1] if word.endswith("s") else word}
    found = {root + ending for root in roots for ending in _INFLECTION_ENDINGS}
    found.discard(word)
    return tuple(sorted(f for f in found if stem(f) == base))


def tokenize_counts(text: str) -> dict[str, int]:
    """Term frequencies of `tokenize(text)`, faster than counting its list (each distinct word is split once).

    >>> tokenize_counts("self.x = self.getX()")
    {'self': 2, 'x': 2, 'getx': 1, 'get': 1}
    """
    counts: dict[str, int] = {}
    get = counts.get
    for word, n in Counter(_WORD_FINDALL(_normalize(text))).items():
        for token in split_identifier(word):
            counts[token] = get(token, 0) + n
    return counts


def count_terms(tokens: Iterable[str]) -> tuple[list[str], list[int]]:
    """Distinct terms and their counts, in first-seen order (the shape the engine stores per chunk).

    >>> count_terms(["a", "b", "a"])
    (['a', 'b'], [2, 1])
    """
    counts = Counter(tokens)
    return list(counts), list(counts.values())
