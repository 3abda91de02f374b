"""Packing evidence into a hard token budget: pure functions, no I/O.

Evidence arrives best first (see `assemble`). Each piece is shown in the largest form that fits: the best
two in full when each costs at most a third of the budget, else condensed (signature, the head of its doc
comment, the lines that match the query or hold the call), else its signature and first matching lines.
One piece per file is placed first, in rank order; further pieces of a file follow once every file had
its turn, so the budget reaches as many places as it can before it deepens one.
No line of a file is shown twice: a piece overlapping what is already in the pack shows only its new
lines, and one with none left is dropped as a duplicate. The chosen pieces are then ordered for reading
(files in the order their best evidence ranked, lines in file order within a file) and whatever did not
fit is summarised in one line ("4 more: 3 in tests/, 1 in docs/").

The budget covers the whole rendered text; the final text is counted once more as a whole and trimmed
from the end until it fits, so `tokens <= max_tokens` holds whatever the counter does.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import msgspec

from ..display import shown_path
from ..tokens import stem, tokenize

# Only the best pieces are shown in full, and only while one costs at most this share of the budget: a
# pack of one long function answers less than the signatures and matching lines of four.
FULL_SHARE = 1 / 3
FULL_PIECES = 2
# Lines of context kept around each focus line in the condensed form.
FOCUS_CONTEXT = 0
# Lines a signature may span (multi-line parameter lists) and a doc comment may add.
SIGNATURE_LINES = 4
DOC_LINES = 3
# Most focus lines a condensed piece keeps (the first ones in file order).
MAX_FOCUS = 5
OMITTED_GROUPS = 3
OMITTED_LISTED = 20
GAP = "    ..."

_COMMENT_START = re.compile(r"\s*(#|//|/\*|\*|--|;|\"\"\"|'''|@|///|//!)")
_DOC_OPEN = re.compile(r"\s*[rRbBuU]?(\"\"\"|''')")
_SIGNATURE_END = re.compile(r"(:|\{|=>|->.*|\)|;|=)\s*(#.*|//.*)?$")


@dataclass(frozen=True)
class Evidence:
    """One candidate piece: lines `start_line`..`end_line` of `path` (their text in `lines`), why it is
    offered, and the line numbers that matter most (`focus`: matching lines, call sites)."""

    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    reason: str
    lines: tuple[str, ...]
    focus: frozenset[int] = frozenset()
    score: float = 0.0


class PackItem(msgspec.Struct):
    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    reason: str
    form: str  # "full", "condensed" or "signature"
    text: str


class OmittedItem(msgspec.Struct):
    path: str
    start_line: int
    end_line: int
    symbol: str
    reason: str


class Omitted(msgspec.Struct):
    count: int
    by_directory: dict[str, int]
    summary: str
    items: list[OmittedItem] = msgspec.field(default_factory=list)
    duplicates: int = 0


class Pack(msgspec.Struct):
    text: str
    tokens: int
    max_tokens: int
    items: list[PackItem]
    omitted: Omitted
    tokenizer: str


@dataclass
class _Chosen:
    evidence: Evidence
    rank: int
    form: str
    shown: list[int]  # absolute line numbers shown, ascending
    block: str
    tokens: int
    file_rank: int = field(default=0)


def query_terms(query: str) -> frozenset[str]:
    """Stems of the query's words and identifier parts, for finding the lines that match it."""
    return frozenset(stem(t) for t in tokenize(query) if len(t) > 1)


def matching_lines(lines: Sequence[str], start_line: int, terms: frozenset[str]) -> frozenset[int]:
    """Absolute numbers of the lines holding at least one query term (by stem)."""
    if not terms:
        return frozenset()
    out = set()
    for i, line in enumerate(lines):
        if any(stem(t) in terms for t in tokenize(line)):
            out.add(start_line + i)
    return frozenset(out)


def signature_span(lines: Sequence[str]) -> tuple[list[int], list[int]]:
    """(signature line offsets, doc line offsets) of a definition's lines: the last leading comment and
    decorator lines, the signature (first other line to the line that ends it), the head of a docstring."""
    leading: list[int] = []
    i = 0
    while i < len(lines) and (not lines[i].strip() or _COMMENT_START.match(lines[i])):
        if lines[i].strip():
            leading.append(i)
        i += 1
    if i >= len(lines):
        return leading[:1], []
    sig = [i]
    while len(sig) < SIGNATURE_LINES and not _SIGNATURE_END.search(lines[sig[-1]].rstrip()):
        if sig[-1] + 1 >= len(lines):
            break
        sig.append(sig[-1] + 1)
    docstring: list[int] = []
    nxt = sig[-1] + 1
    opened = _DOC_OPEN.match(lines[nxt]) if nxt < len(lines) else None
    if opened:  # a Python docstring after the signature
        quote = opened.group(1)
        for j in range(nxt, min(len(lines), nxt + DOC_LINES)):
            docstring.append(j)
            if lines[j].count(quote) >= (2 if j == nxt else 1):
                break
    return sig, leading[-DOC_LINES:] + docstring


def _forms(ev: Evidence) -> list[tuple[str, list[int]]]:
    """The candidate line sets of a piece, largest first: full, condensed, signature."""
    n = len(ev.lines)
    full = list(range(n))
    sig, doc = signature_span(ev.lines)
    focus = sorted(f - ev.start_line for f in ev.focus if 0 <= f - ev.start_line < n)[:MAX_FOCUS]
    around: set[int] = set()
    for f in focus:
        around.update(range(max(0, f - FOCUS_CONTEXT), min(n, f + FOCUS_CONTEXT + 1)))
    condensed = sorted(set(sig) | set(doc) | around)
    signature = sorted(set(sig) | set(focus[:3]))
    forms = [("full", full)]
    if condensed != full:
        forms.append(("condensed", condensed))
    if signature and signature != forms[-1][1]:
        forms.append(("signature", signature))
    return forms


def _header(ev: Evidence, shown: Sequence[int]) -> str:
    first, last = shown[0], shown[-1]
    label = f" {shown_path(ev.symbol)}" if ev.symbol else ""  # a Markdown heading can hold controls too
    kind = f" ({ev.kind})" if ev.kind and ev.kind != "block" else ""
    return f"{shown_path(ev.path)}:{first}-{last}{label}{kind} — {shown_path(ev.reason)}"


def _block(ev: Evidence, shown: Sequence[int]) -> str:
    out = [_header(ev, shown)]
    prev: int | None = None
    for line in shown:
        if prev is not None and line != prev + 1:
            out.append(GAP)
        out.append(ev.lines[line - ev.start_line].rstrip())
        prev = line
    return "\n".join(out)


def _group(path: str) -> str:
    """The folder a path is summarised under: its first directory, or `./` for root files."""
    head, sep, _ = path.partition("/")
    if not sep:
        return "./"
    if head.startswith("kb:"):
        rest = path[len(head) + 1 :]
        sub, sep2, _ = rest.partition("/")
        return f"{head}/{sub}/" if sep2 else f"{head}/"
    return f"{head}/"


def omitted_summary(paths: Iterable[str]) -> tuple[str, dict[str, int]]:
    """("5 more: 3 in tests/, 2 in docs/", counts per folder) for the pieces that did not fit."""
    counts = Counter(_group(p) for p in paths)
    total = sum(counts.values())
    if not total:
        return "", {}
    top = counts.most_common(OMITTED_GROUPS)
    parts = [f"{n} in {shown_path(g)}" for g, n in top]
    rest = total - sum(n for _, n in top)
    if rest:
        parts.append(f"{rest} elsewhere")
    return f"{total} more: {', '.join(parts)}", dict(counts.most_common())


def omitted_line(summary: str, budget: str = "maxTokens") -> str:
    """The pack's last line when something was left out; `budget` is how the face spells the cap."""
    return f"omitted: {summary} (raise {budget} or narrow the query)"


def pack(
    evidence: Sequence[Evidence],
    max_tokens: int,
    count: Callable[[str], int],
    *,
    title: str = "",
    tokenizer: str = "",
) -> Pack:
    """The pack of `evidence` (best first) within `max_tokens` as `count` measures the rendered text."""
    title_tokens = count(title) + 2 if title else 0
    reserve = 48  # the omitted line, at most
    budget = max(0, max_tokens - title_tokens - reserve)
    covered: dict[str, set[int]] = {}
    chosen: list[_Chosen] = []
    left_out: list[Evidence] = []
    duplicates = 0
    used = 0
    lead: list[tuple[int, Evidence]] = []
    later: list[tuple[int, Evidence]] = []
    files: set[str] = set()
    for rank, ev in enumerate(evidence):
        (later if ev.path in files else lead).append((rank, ev))
        files.add(ev.path)
    placed = 0
    for rank, ev in lead + later:
        if not ev.lines:
            continue
        seen = covered.get(ev.path, set())
        picked: _Chosen | None = None
        fresh_any = False
        forms = _forms(ev)
        for form, offsets in forms:
            shown = [ev.start_line + o for o in offsets if ev.start_line + o not in seen]
            if not shown:
                continue
            fresh_any = True
            block = _block(ev, shown)
            cost = count(block) + (2 if chosen else 0)
            if form == "full" and len(forms) > 1 and (placed >= FULL_PIECES or cost > budget * FULL_SHARE):
                continue
            if used + cost <= budget:
                picked = _Chosen(ev, rank, form, shown, block, cost)
                break
        if not fresh_any:
            duplicates += 1
            continue
        if picked is None:
            left_out.append(ev)
            continue
        chosen.append(picked)
        placed += 1
        used += picked.tokens
        covered.setdefault(ev.path, set()).update(picked.shown)
    while True:
        result = _render(chosen, left_out, duplicates, max_tokens, count, title, tokenizer)
        if result.tokens <= max_tokens:
            return result
        if chosen:
            left_out.insert(0, chosen.pop().evidence)
        elif title:
            title = ""
        else:  # nothing but the omitted line, and even that is too long: say nothing
            return Pack("", 0, max_tokens, [], result.omitted, tokenizer)


def _render(
    chosen: Sequence[_Chosen],
    left_out: Sequence[Evidence],
    duplicates: int,
    max_tokens: int,
    count: Callable[[str], int],
    title: str,
    tokenizer: str,
) -> Pack:
    file_rank: dict[str, int] = {}
    for c in sorted(chosen, key=lambda c: c.rank):
        file_rank.setdefault(c.evidence.path, len(file_rank))
    ordered = sorted(chosen, key=lambda c: (file_rank[c.evidence.path], c.shown[0]))
    summary, by_dir = omitted_summary(e.path for e in left_out)
    omitted = Omitted(
        count=len(left_out),
        by_directory=by_dir,
        summary=summary,
        items=[OmittedItem(e.path, e.start_line, e.end_line, e.symbol, e.reason) for e in left_out][
            :OMITTED_LISTED
        ],
        duplicates=duplicates,
    )
    parts = [title] if title else []
    parts += [c.block for c in ordered]
    if summary:
        parts.append(omitted_line(summary))
    text = "\n\n".join(parts)
    items = [
        PackItem(
            path=c.evidence.path,
            start_line=c.shown[0],
            end_line=c.shown[-1],
            symbol=c.evidence.symbol,
            kind=c.evidence.kind,
            reason=c.evidence.reason,
            form=c.form,
            text="\n".join(c.block.split("\n")[1:]),
        )
        for c in ordered
    ]
    return Pack(text, count(text), max_tokens, items, omitted, tokenizer)
