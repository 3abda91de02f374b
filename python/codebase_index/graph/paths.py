"""Two walks over the stored call graph: the shortest call path between two symbols, and the impact of
a change (the symbols whose lines changed, their callers to a depth, and the tests that reach them).

Both follow resolved edges only (exact/import), like `call_graph`; sites matched by name only are
guesses and never walked.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Sequence

import msgspec

from ..display import shown_path
from .query import CallSite, GraphSymbol, _site, _symbol, rank_definitions
from .records import MODULE_CALLER
from .store import DefinitionRow, EdgeRow, GraphStore

MAX_PATH_HOPS = 8
MAX_PATH_NODES = 20_000  # symbols a path search visits at most (a huge graph answers "not found")
IMPACT_TEST_DEPTH = 4  # tests are looked for at least this many hops above a changed symbol
MAX_IMPACT_CALLERS = 500

_TEST_DIR = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "testdata", "e2e"})
_TEST_FILE = re.compile(
    r"(^test_.*\.py$|_test\.(py|go)$|^tests?\.rs$|\.(test|spec)\.[cm]?[jt]sx?$|Tests?\.(java|kt)$|_spec\.rb$"
    r"|^conftest\.py$)"
)
_TEST_NAME = re.compile(r"^(test|Test)([A-Z0-9_]|$)")

Symbol = tuple[str, str]  # (path, qualified)


def is_test(path: str, symbol: str = "") -> bool:
    """Test code: a test folder or file name, or a test function (`test_x`, `TestX`, `testX`)."""
    parts = path.lower().split("/")
    if any(p in _TEST_DIR for p in parts[:-1]) or _TEST_FILE.search(path.rsplit("/", 1)[-1]):
        return True
    parts = symbol.replace("::", ".").split(".")
    return bool(symbol) and (
        bool(_TEST_NAME.match(parts[-1])) or any(p in ("tests", "test") for p in parts[:-1])
    )


class CallPath(msgspec.Struct, rename="camel"):
    """`hops`: the calls from `source` to `target` in order (empty when none was found); `direction`
    says which way it runs ("forward": source calls towards target, "reverse": target calls source)."""

    source: str
    target: str
    found: bool
    direction: str
    hops: list[CallSite]
    sources: list[GraphSymbol]
    targets: list[GraphSymbol]
    visited: int
    incomplete: str | None = None


def _shortest(
    store: GraphStore, branch: str, starts: Sequence[DefinitionRow], goals: set[Symbol], max_hops: int
) -> tuple[list[EdgeRow] | None, int]:
    """Breadth-first over callees from `starts` to any of `goals`: the edges of the first path found."""
    parent: dict[Symbol, tuple[Symbol, EdgeRow] | None] = {(d.path, d.qualified): None for d in starts}
    queue: deque[tuple[Symbol, int]] = deque((s, 0) for s in parent)
    while queue and len(parent) < MAX_PATH_NODES:
        node, hops = queue.popleft()
        if node in goals and parent[node] is not None:
            break
        if hops >= max_hops:
            continue
        for e in store.edges_out_of(branch, *node):
            nxt = (e.callee_path, e.callee)
            if nxt in parent:
                continue
            parent[nxt] = (node, e)
            if nxt in goals:
                edges = []
                at: Symbol | None = nxt
                while at is not None and parent[at] is not None:
                    prev, edge = parent[at]  # type: ignore[misc]
                    edges.append(edge)
                    at = prev
                return edges[::-1], len(parent)
            queue.append((nxt, hops + 1))
    return None, len(parent)


def call_path(
    store: GraphStore, branch: str, source: str, target: str, *, max_hops: int = MAX_PATH_HOPS
) -> CallPath:
    """The shortest chain of resolved calls from `source` to `target` (names, `Class.method` or symbol
    ids); when there is none that way, the shortest from `target` to `source`."""
    if not 1 <= max_hops <= MAX_PATH_HOPS:
        raise ValueError(f"max hops must be 1..{MAX_PATH_HOPS}, not {max_hops}")
    sources = rank_definitions(store.definitions(branch, source.strip()), source, {})
    targets = rank_definitions(store.definitions(branch, target.strip()), target, {})
    result = CallPath(
        source,
        target,
        False,
        "forward",
        [],
        [_symbol(d) for d in sources[:20]],
        [_symbol(d) for d in targets[:20]],
        0,
    )
    if not sources or not targets:
        return result
    for direction, starts, ends in (("forward", sources, targets), ("reverse", targets, sources)):
        edges, visited = _shortest(store, branch, starts, {(d.path, d.qualified) for d in ends}, max_hops)
        result.visited += visited
        if edges:
            result.found, result.direction = True, direction
            result.hops = [_site(e, i + 1) for i, e in enumerate(edges)]
            return result
    return result


class ChangedSymbol(msgspec.Struct, rename="camel"):
    symbol_id: str
    name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    changed_lines: list[tuple[int, int]]


class AffectedTest(msgspec.Struct, rename="camel"):
    symbol: str
    path: str
    line: int
    reaches: str  # the changed symbol it reaches
    depth: int


class Impact(msgspec.Struct, rename="camel"):
    """A change's reach: the changed symbols, resolved callers to `depth` (breadth first), and the tests
    that reach a changed symbol (a test file or test function among the callers, up to
    max(depth, IMPACT_TEST_DEPTH) hops). `changed_files` lists every changed file, graph language or not."""

    range: str
    base: str
    depth: int
    changed_files: list[str]
    changed: list[ChangedSymbol]
    callers: list[CallSite]
    tests: list[AffectedTest]
    truncated: bool
    incomplete: str | None = None


def _innermost(defs: Sequence[DefinitionRow], ranges: Sequence[tuple[int, int]]) -> list[DefinitionRow]:
    """Definitions overlapping a changed range, leaving out one that only encloses another overlapping
    definition for that range (a class whose method changed)."""
    picked: dict[str, DefinitionRow] = {}
    for a, b in ranges:
        hit = [d for d in defs if d.start_line <= b and a <= d.end_line]
        for d in hit:
            inner = any(
                o is not d
                and d.start_line <= o.start_line
                and o.end_line <= d.end_line
                and (o.start_line, o.end_line) != (d.start_line, d.end_line)
                for o in hit
            )
            if not inner:
                picked.setdefault(d.symbol_id, d)
    return sorted(picked.values(), key=lambda d: (d.path, d.start_line))


def impact(
    store: GraphStore,
    branch: str,
    changed_lines: dict[str, list[tuple[int, int]]],
    *,
    range_: str = "",
    base: str = "",
    depth: int = 2,
    definitions_in: Callable[[str], Sequence[DefinitionRow]] | None = None,
) -> Impact:
    """The impact of the changed line ranges per path (new-side lines, as `changes.changed_lines` gives)."""
    if not 1 <= depth <= 5:
        raise ValueError(f"depth must be 1..5, not {depth}")
    in_file = definitions_in or (lambda path: store.definitions_in(branch, path))
    changed: list[ChangedSymbol] = []
    roots: list[DefinitionRow] = []
    for path in sorted(changed_lines):
        ranges = changed_lines[path]
        for d in _innermost(in_file(path), ranges):
            mine = [(a, min(b, d.end_line)) for a, b in ranges if a <= d.end_line and d.start_line <= b]
            mine = [(max(a, d.start_line), b) for a, b in mine]
            changed.append(
                ChangedSymbol(d.symbol_id, d.qualified, d.kind, d.path, d.start_line, d.end_line, mine)
            )
            roots.append(d)
    callers: list[CallSite] = []
    tests: dict[tuple[str, str], AffectedTest] = {}
    truncated = False
    reach: dict[Symbol, str] = {(d.path, d.qualified): d.qualified for d in roots}
    for d in roots:
        if is_test(d.path, d.qualified):
            tests.setdefault(
                (d.path, d.qualified), AffectedTest(d.qualified, d.path, d.start_line, d.qualified, 0)
            )
    frontier: list[Symbol] = list(reach)
    seen = set(frontier)
    for hop in range(1, max(depth, IMPACT_TEST_DEPTH) + 1):
        nxt: list[Symbol] = []
        for node in frontier:
            for e in store.edges_into(branch, *node):
                here = (e.caller_path, e.caller)
                origin = reach[node]
                if hop <= depth:
                    if len(callers) >= MAX_IMPACT_CALLERS:
                        truncated = True
                    else:
                        callers.append(_site(e, hop))
                if (is_test(e.caller_path, e.caller) and e.caller != MODULE_CALLER) or (
                    e.caller == MODULE_CALLER and is_test(e.caller_path)
                ):
                    tests.setdefault(here, AffectedTest(e.caller, e.caller_path, e.line, origin, hop))
                if e.caller != MODULE_CALLER and here not in seen:
                    seen.add(here)
                    reach[here] = origin
                    nxt.append(here)
        frontier = nxt
        if not frontier:
            break
    return Impact(
        range=range_,
        base=base,
        depth=depth,
        changed_files=sorted(changed_lines),
        changed=changed,
        callers=callers,
        tests=sorted(tests.values(), key=lambda t: (t.depth, t.path, t.line)),
        truncated=truncated,
    )


def format_path(p: CallPath) -> str:
    if not p.sources or not p.targets:
        missing = p.source if not p.sources else p.target
        return f"No definition named {missing!r} in the code graph."
    if not p.found:
        return (
            f"No call path between {p.source} and {p.target} (either way, up to {MAX_PATH_HOPS} resolved "
            f"calls; {p.visited} symbols visited)."
        )
    head, tail = (p.source, p.target) if p.direction == "forward" else (p.target, p.source)
    lines = [f"Call path {head} -> {tail} ({len(p.hops)} call(s)):"]
    if p.direction == "reverse":
        lines[0] += f"  ({p.source} does not reach {p.target}; the path runs the other way)"
    for s in p.hops:
        lines.append(
            f"  {s.caller} ({shown_path(s.caller_path)}:{s.line}) calls {s.callee} "
            f"({shown_path(s.callee_path)}:{s.callee_line})"
        )
    return "\n".join(lines)


def format_impact(i: Impact) -> str:
    what = i.range or "the working tree vs HEAD"
    if not i.changed_files:
        return f"No changes in {what}."
    lines = [f"Impact of {what}: {len(i.changed_files)} changed file(s), {len(i.changed)} changed symbol(s)"]
    if i.incomplete:
        lines.append(f"({i.incomplete})")
    for c in i.changed:
        spans = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in c.changed_lines)
        lines.append(f"  changed: {c.name} [{c.kind}] {shown_path(c.path)}:{c.start_line} (lines {spans})")
    if i.callers:
        lines.append(f"Callers (resolved, depth {i.depth}):")
        lines += [
            f"{'  ' * s.depth}{s.caller} ({shown_path(s.caller_path)}:{s.line}) calls {s.callee}"
            for s in i.callers
        ]
    else:
        lines.append("No resolved callers.")
    if i.truncated:
        lines.append(f"(callers truncated at {MAX_IMPACT_CALLERS})")
    if i.tests:
        lines.append("Tests that reach the change:")
        lines += [
            f"  {t.symbol} ({shown_path(t.path)}:{t.line}) reaches {t.reaches} in {t.depth} hop(s)"
            for t in i.tests
        ]
    else:
        lines.append("No test reaches the changed symbols through resolved calls.")
    return "\n".join(lines)
