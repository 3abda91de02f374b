"""Query styles: which kind of text a query is, from its shape alone (`query.parse_query` asks once).

Styles, most specific first: a relation question ("who calls X"), a path, one identifier, pasted code,
a pasted error or log line, a description (a question, or a sentence of `DESCRIPTION_WORDS` content
words or more) and a short phrase. The hard pair is an error message against a description: both are
English sentences, and "Returns true if `self` is a float" holds as many quotes and negations as
"n must be at least 1". `error_shape` separates them by what only pasted output carries (an exception
name before its message, a traceback, `file:line`, a panic, an exit status, an "error:" label, a quoted
message after a failure verb) and, for a bare message, by how the sentence opens: a message states what
went wrong, a description opens with what the code does ("Returns", "Yield", "Raised when") and a
change description (a commit subject) with what was done ("Fix", "Add").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# Query styles `parse_query` names (`ParsedQuery.style`): each fits some signals and not others, so the
# style is a feature of the scorer and a key of every quality report.
STYLES = ("identifier", "path", "snippet", "error", "relation", "description", "phrase")

DESCRIPTION_WORDS = 6  # content words from which a plain-words query is a description, not a phrase

# Pasted code: punctuation natural-language questions do not use (a qualified `Foo::bar` is an identifier).
CODE_SYNTAX = re.compile(r"[(){};=\[\]]|:=|=>|->|\n")
# The part of it a pasted error message does not hold either (a message wraps values in brackets:
# "Traceback (most recent call last)", "(exit status 1)", "index out of bounds [len 3]").
_STATEMENT_SYNTAX = re.compile(r"[{};=]|:=|=>|\n")

# A question or a how-to ("how tasks that are not Send run", "where is X validated") describes code, even
# when it uses error words; pasted messages do not open like that.
QUESTION_START = re.compile(r"\s*(how|what|where|why|which|when|who|does|do|is|are|can)\b", re.IGNORECASE)

# Words that name a failure: a question or note around a pasted message ("why does it fail with X",
# "exception X in the logs") carries one, a plain description of behaviour rarely does.
ERROR_WORDS = re.compile(
    r"\b(errors?|exceptions?|fail(s|ed|ing|ure)?|panic(s|ked)?|traceback|raised?|throw(s|n)?|crash(es|ed)?)\b",
    re.IGNORECASE,
)

# What only pasted program output carries; any one makes the text an error or log line. An exception or
# error type before its message (`ValueError: ...`, `CSVException "..."`) or opening the text: a type
# named inside a sentence is prose about it. A log line's level.
_EXCEPTION = r"[A-Z]\w*(?:Error|Exception)\b"
_CASED_MARKS = re.compile(
    rf"\b{_EXCEPTION}:|\b{_EXCEPTION}\s+[\"']|^\W*{_EXCEPTION}"
    r"|^\s*\[?(?:ERROR|FATAL|CRITICAL|SEVERE|WARN(?:ING)?)\]?[\s:]",
    re.MULTILINE,
)
# Python tracebacks, Go and Rust panics, rustc error codes, stack frames and file:line:col, exit
# statuses, a format verb left in a message (`%s`, `%,d`), a label saying output follows ("error: ...",
# "in the logs: ..."), a quoted message after a failure verb (`fails with "..."`, `got err "..."`).
_UNCASED_MARKS = re.compile(
    r"\bTraceback \(most recent call last\)|\bFile \"[^\"]+\", line \d+"
    r"|\bpanicked at\b|^\s*panic:|\berror\[E\d+\]"
    r"|\bat [\w./\\-]+\.\w+:\d+|\b[\w-]+\.[a-z]{1,5}:\d+:\d+"
    r"|\bexit (?:status|code) \d+|\berrno\b|%[-+ #0,]*\d*(?:\.\d+)?[sdvfuxqT]\b"
    r"|\b(?:error|failed|failure|fatal|panic|exception|unreachable|logs?|stderr|output)\s*:\s+\S"
    r"|\b(?:errors?|fail(?:s|ed)?|panic(?:s|ked)?|raise[sd]?|throw[sn]?|got(?: err)?|getting)"
    r"(?:\s+(?:with|saying))?\s+[\"'][^\"']{3,}",
    re.MULTILINE | re.IGNORECASE,
)

# The phrasing of runtime messages: what is wrong, missing or not allowed.
_MESSAGE_WORDS = re.compile(
    r"\b(cannot|\w+n't|could not|unable to|invalid|must|expected|unexpected|failed|unsupported"
    r"|missing|unknown|required|not allowed|not found|no such|does not|already|not supported"
    r"|not defined|undefined|illegal|too many|too few|out of range|should be|is not|are not)\b",
    re.IGNORECASE,
)
# The punctuation of runtime messages: a quoted value (an opening quote, not an apostrophe: "haven't",
# "map's"; the closing one may be cut off) and a "key: value" pair. Backticks are not among them: they
# mark code in docs.
_MESSAGE_PUNCT = re.compile(r"(?<![\w`])'\S|\"[^\"\n]+|\w: ")

# Verbs a description of behaviour or of a change opens with, in the imperative (PEP 257's "Return the
# ...", a commit's "Fix the ..."), the third person ("Returns the ...") or the past ("Added ..."): a
# sentence opening with one says what code does or what was done to it, not what went wrong.
_VERB_TEXT = """
    accept access acquire add allow append apply arrange ask assert attempt avoid build bump
    calculate call cast change check clarify clear clone close collect combine compare compute
    configure construct consume convert copy count create decide declare decode define delete
    deprecate describe detect determine disable disallow display document drop emit enable
    encapsulate encode enforce ensure enumerate execute expose extend extract fetch fill filter find
    fix flush format generate get guard handle hold honor ignore implement improve indicate
    initialize inject insert introduce invoke iterate join keep list load log look make map mark
    merge move normalize open override parse patch perform prepare prevent print process produce
    provide put raise read receive record refactor register release remove rename render replace
    report represent reset resolve retain retrieve return revert run save send serialize set
    signal simplify skip sort specify split start stop store strip support take tell test throw
    transform treat try unregister update validate visit wait walk wrap write yield
"""
_DOC_VERBS = frozenset(_VERB_TEXT.split())
# Words that show an opening verb form to be a noun instead, the subject of a message: "Return value must
# be an int", "Test class cannot be null".
_AUXILIARY_TEXT = (
    "must should shall can cannot could may might will would is are was were be has have had do does did not"
)
_AUXILIARIES = frozenset(_AUXILIARY_TEXT.split())
# Words that open a verb's object: after one, an opening "-s" word is a verb ("consumes a bool string",
# "allows only text nodes" is left alone), whatever the verb.
_DETERMINER_TEXT = (
    "a an the this that these those its their his her our your some any each every all no true false"
    " whether if how what which"
)
_DETERMINERS = frozenset(_DETERMINER_TEXT.split())
# The passive a description of an exception or callback opens with ("Raised when a token cannot be
# decoded", "Thrown if the key is missing", "Called by the loop when ...").
_PASSIVE_OPENING = re.compile(
    r"\W*(?:raised|thrown|returned|emitted|called|invoked|used|fired|triggered)\s+(?:when|if|by|on|after"
    r"|before|during|while|whenever|in case)\b",
    re.IGNORECASE,
)
# A scope label before a capitalised sentence ("IO-892: Add ...", "parser: Fix ..."); the lower-case
# message after a Go package prefix ("toml: cannot ...") or an error name keeps its label.
_LABEL = re.compile(r"^\s*[^:\s]+(?:\s+[^:\s]+){0,2}:\s+(?=[A-Z][a-z])")
# Documentation markup no runtime message holds: reST fields and roles (`:param x:`, :class:`X`),
# Javadoc tags and links (`@param`, `{@link X}`), HTML code tags.
_DOC_MARKUP = re.compile(
    r"(?:^|\s):(?:param|ivar|cvar|var|type|rtype|returns?|raises?|yields?|keyword|arg|argument)\b[^:]*:"
    r"|:(?:class|meth|func|attr|mod|obj|ref|exc|data|const|py:\w+):`|\{@(?:link|code)\b|(?:^|\s)@(?:param"
    r"|return|throws)\b|<code>"
)


def code_shape(text: str) -> bool:
    """Whether the text is pasted code: code punctuation, unless brackets are all it has and it carries a
    mark of program output (`output_marks`), which makes it a pasted error.

    >>> [code_shape(q) for q in ("if (x) { y(); }", "f(x)", "Error: bad size (exit status 1)")]
    [True, True, False]
    """
    text = text.strip()
    if not CODE_SYNTAX.search(text):
        return False
    return bool(_STATEMENT_SYNTAX.search(text)) or not output_marks(text)


def output_marks(text: str) -> bool:
    """Whether the text carries a mark only program output carries (an exception name before its
    message, a traceback, a panic, `file:line`, an exit status, an "error:" label, a format verb...)."""
    return not _DOC_MARKUP.search(text) and bool(_CASED_MARKS.search(text) or _UNCASED_MARKS.search(text))


def error_shape(text: str) -> bool:
    """Whether the text reads as a pasted error or log line: a mark only program output carries, or the
    phrasing of a message (what is wrong, a quoted value, "key: value") in a sentence that does not open
    like a description of behaviour or of a change. Documentation markup (`:param x:`) is never output.

    >>> [error_shape(q) for q in ("n must be at least 1", "ValueError: bad value", "x (exit status 1)")]
    [True, True, True]
    >>> error_shape("Returns true if `self` is an inline table")
    False
    >>> error_shape("Adds a key/policy pair to the registry if the key does not already exist")
    False
    >>> error_shape("Yield the items from iterable that haven't been seen recently")
    False
    """
    if _DOC_MARKUP.search(text):
        return False
    if output_marks(text):
        return True
    if not (_MESSAGE_WORDS.search(text) or _MESSAGE_PUNCT.search(text)):
        return False
    return not _describes_behaviour(text)


def message_phrasing(text: str) -> bool:
    """Whether the text uses the words of a runtime message ("cannot", "must", "not found"), in a pasted
    message or in a question about one."""
    return bool(_MESSAGE_WORDS.search(text))


def _describes_behaviour(text: str) -> bool:
    """Whether the sentence opens like a description of behaviour: with a verb of `_DOC_VERBS` (as an
    imperative, or in the third person rather than as a plural subject before its verb), with any "-s"
    verb before its object, or with the passive of a documented exception or callback.

    >>> [_describes_behaviour(q) for q in ("Returns the key", "Gets whether x", "Sets must be disjoint")]
    [True, True, False]
    >>> [_describes_behaviour(q) for q in ("consumes a bool", "Raised when x is not found", "Indices must")]
    [True, True, False]
    """
    if _PASSIVE_OPENING.match(text):
        return True
    words = [w.strip("`'\"*:,.()[]").lower() for w in _LABEL.sub("", text, count=1).split()[:4]]
    if not words or not words[0]:
        return False
    first, rest = words[0], words[1:]
    verb = first in _DOC_VERBS or _inflects(first, (("ies", "y"), ("es", ""), ("s", "")))
    # The past ("Added the option", "Fixed a crash") only before its object: a message opens with a
    # participle too ("called 'start' twice", "Attempted to acquire an already held lock").
    if rest and rest[0] in _DETERMINERS and _inflects(first, (("ied", "y"), ("ed", ""), ("d", ""))):
        return True
    if rest and rest[0] == "of":
        return False  # "List of Throwables must not be empty", "Count of bytes read ..."
    third_person = first.endswith("s") and not first.endswith(("ss", "us", "is"))
    for i, word in enumerate(rest):  # the object's determiner, or the verb of a subject the opening began
        if word in _DETERMINERS:
            return verb or (third_person and i == 0)
        if word in _AUXILIARIES:
            return False  # "Test class cannot be null", "Run variable 'x' has no value"
    return verb


def _inflects(word: str, endings: tuple[tuple[str, str], ...]) -> bool:
    """Whether the word is a verb of `_DOC_VERBS` with one of the (ending, stem ending) pairs."""
    return any(word.endswith(end) and word[: -len(end)] + base in _DOC_VERBS for end, base in endings)


@dataclass(frozen=True)
class Relation:
    """A relation question: which `kind` ("callers", "callees", "references") of symbol `name`."""

    kind: str
    name: str


# Relation questions: (pattern, relation). The named symbol is group "name"; "callers" wants the
# functions that call it, "callees" what it calls, "references" where it is used.
_NAME = r"[`'\"]?(?P<name>[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*)[`'\"]?(?:\(\))?"
_END = r"\s*\??\s*$"
_RELATIONS = (
    (
        re.compile(
            r"^\s*(?:(?:who|what|which(?:\s+\w+){0,2}?)\s+(?:calls?|invokes?)|(?:find\s+|list\s+|show\s+(?:me\s+)?)?"
            r"(?:the\s+|all\s+)?(?:callers|call[\s-]?sites)\s+(?:of|for))\s+" + _NAME + _END,
            re.IGNORECASE,
        ),
        "callers",
    ),
    (
        re.compile(r"^\s*where\s+(?:is|are)\s+" + _NAME + r"\s+(?:called|invoked)(?:\s+from)?" + _END, re.I),
        "callers",
    ),
    (
        re.compile(r"^\s*(?:what|which(?:\s+\w+){0,2}?)\s+(?:does|do)\s+" + _NAME + r"\s+call" + _END, re.I),
        "callees",
    ),
    (
        re.compile(
            r"^\s*(?:(?:who|what|which(?:\s+\w+){0,2}?)\s+uses|(?:find\s+|list\s+|show\s+(?:me\s+)?)?(?:the\s+|all\s+)?"
            r"(?:usages?|references?|uses)\s+(?:of|to))\s+" + _NAME + _END,
            re.IGNORECASE,
        ),
        "references",
    ),
    (
        re.compile(r"^\s*where\s+(?:is|are)\s+" + _NAME + r"\s+(?:used|referenced)" + _END, re.I),
        "references",
    ),
)


def relation_of(query: str) -> Relation | None:
    """The relation question the query asks, if it is one ("who calls parse_config", "where is X used").

    >>> relation_of("who calls refresh_token?")
    Relation(kind='callers', name='refresh_token')
    >>> relation_of("which function calls `Session.send`")
    Relation(kind='callers', name='Session.send')
    >>> relation_of("where is parseConfig used"), relation_of("where is the config parsed")
    (Relation(kind='references', name='parseConfig'), None)
    >>> relation_of("what does handle_request call")
    Relation(kind='callees', name='handle_request')
    >>> relation_of("show me the call sites of decodeFloat"), relation_of("show me the usages of Foo")
    (Relation(kind='callers', name='decodeFloat'), Relation(kind='references', name='Foo'))
    """
    for pattern, kind in _RELATIONS:
        m = pattern.match(query)
        if m is not None:
            return Relation(kind, m.group("name"))
    return None


# A change request or a commit subject opens with what to do, or what was done, to the code: "Fix --raw
# with --chunked", "Don't read symlinks in safe mode", "✨ Update `launch` ...", "fix(router): ...". The
# imperative and past forms only: "Adds a fallback strategy to the builder" describes what code does.
_CHANGE_VERB_TEXT = """
    add added allow allowed avoid bump change changed correct deprecate disable don't drop enable expose
    fix fixed implement improve introduce make move optimize prevent refactor reduce remove removed
    rename replace revert rewrite simplify skip support switch update updated upgrade use
"""
_CHANGE_VERBS = frozenset(_CHANGE_VERB_TEXT.split())
# What may precede the verb: gitmoji and other symbols, "[tag]" labels, a conventional-commit "type(scope):".
_CHANGE_PREFIX = re.compile(
    r"^(?:[^\w\s'`]+\s*|\[[^\]\n]*\]\s*|[a-z]+(?:\([^)\n]*\))?!?:\s*)+", re.IGNORECASE
)


# A conventional-commit subject names itself a change by its type ("fix: handle an empty body").
_CONVENTIONAL = re.compile(
    r"^(?:[^\w\s'`]+\s*)?(?:feat|fix|perf|refactor|revert|chore|build)(?:\([^)\n]*\))?!?:\s*\S", re.IGNORECASE
)


def change_shape(text: str) -> bool:
    """Whether a plain-words query reads as a change to make or a commit subject.

    >>> [change_shape(q) for q in ("Fix --raw with --chunked", "✨ Update `launch` to not print urls",
    ...     "feat(router): support regexp params", "fix: handle an empty body", "Adds a fallback strategy",
    ...     "how is a route added", "error: value too large")]
    [True, True, True, True, False, False, False]
    """
    stripped = text.strip()
    if _CONVENTIONAL.match(stripped):
        return True
    words = _CHANGE_PREFIX.sub("", stripped).split()
    return len(words) >= 2 and words[0].lower() in _CHANGE_VERBS


def classify(
    relation: Relation | None,
    paths: tuple[str, ...],
    raw_words: Sequence[str],
    symbol_query: bool,
    code_like: bool,
    error_like: bool,
    question: bool,
    words: Sequence[str],
) -> str:
    """The query's style (one of `STYLES`), most specific first."""
    if relation is not None:
        return "relation"
    if len(raw_words) == 1 and paths:
        return "path"
    if symbol_query:
        return "identifier"
    if code_like:
        return "snippet"
    if error_like:
        return "error"
    if question or len(words) >= DESCRIPTION_WORDS:
        return "description"
    return "phrase"
