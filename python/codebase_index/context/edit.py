"""Evidence before an edit: a symbol (or path:line) -> its definition, its callers with the line of each
call, what it calls, the tests that reach or name it, and similar code that may need the same change,
packed under the same hard token budget as `codebase_context`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..graph.paths import is_test
from ..search import Filters
from .assemble import CALLEE_LINES, MAX_TOKENS, MIN_TOKENS, ContextPack, _Gather
from .pack import pack
from .tokens import counter

if TYPE_CHECKING:
    from ..graph.query import CallSite
    from ..graph.store import DefinitionRow
    from ..service import Engine

_LOCATION = re.compile(r"^(?P<path>.+?):(?P<line>\d+)$")
CALLERS_FIRST = 8  # callers placed before tests and callees; the rest follow them
TESTS = 4
CALLEES = 6
SIMILAR = 3


def _target(engine: Engine, target: str) -> tuple[DefinitionRow | None, str]:
    """The definition a target names: `path:line` -> the innermost definition covering the line there;
    a name or symbol id -> its best definition. (None, why) when there is none."""
    m = _LOCATION.match(target)
    if m:
        path, line = m.group("path").removeprefix("./"), int(m.group("line"))
        inside = [d for d in engine.definitions_in(path) if d.start_line <= line <= d.end_line]
        if not inside:
            return None, f"no definition of {path} covers line {line} in the code graph"
        return min(inside, key=lambda d: d.end_line - d.start_line), ""
    found = engine.definitions(target, limit=1)
    if not found:
        return None, f"no definition named {target!r} in the code graph"
    return found[0], ""


def build_edit_context(engine: Engine, target: str, *, max_tokens: int = 1500) -> ContextPack:
    """The pre-edit pack for `target` (a name, `Class.method`, `path#qualified` or `path:line`)."""
    target = target.strip()
    if not target:
        raise ValueError("target is empty")
    if not MIN_TOKENS <= max_tokens <= MAX_TOKENS:
        raise ValueError(f"maxTokens must be {MIN_TOKENS}..{MAX_TOKENS}, not {max_tokens}")
    definition, why = _target(engine, target)
    gather = _Gather(engine, target, Filters(), None)
    notices: list[str] = []
    strategy = "graph"
    if definition is None:
        notices.append(f"{why}; search results instead")
        strategy, _ = gather.search(target)
    else:
        name = definition.qualified
        gather.terms = frozenset({name.rsplit(".", 1)[-1].lower()})
        gather.add(
            definition.path,
            definition.start_line,
            definition.end_line,
            name,
            definition.kind,
            f"definition of {name}",
        )

        def add_call_site(site: CallSite, reason: str) -> None:
            """A caller's lines from its definition's start down to the call, focused on both."""
            start = site.caller_line or site.line
            gather.add(
                site.caller_path, start, site.line + 1, site.caller, "", reason, focus=(start, site.line)
            )

        callers = engine.call_graph(definition.symbol_id, direction="callers", depth=3, limit=200)
        if callers.incomplete:
            notices.append(callers.incomplete)
        reach_tests = [s for s in callers.edges if is_test(s.caller_path, s.caller)]
        direct = [s for s in callers.edges if s.depth == 1 and s not in reach_tests]
        for site in direct[:CALLERS_FIRST]:
            add_call_site(site, f"calls {name}")
        for site in reach_tests[:TESTS]:
            via = "" if site.depth == 1 else f" (via {site.callee}, {site.depth} hops)"
            add_call_site(site, f"test reaching {name}{via}")
        if not reach_tests:  # tests that name it without a resolved call (fixtures, mocks, strings)
            short = name.rsplit(".", 1)[-1]
            for r in engine.search(short, top_k=30, mode="keyword").results:
                if (
                    is_test(r.path, r.symbol)
                    and len([e for e in gather.items if e.reason.startswith("test")]) < TESTS
                ):
                    gather.add_result(r, f"test naming {short}")
        callees = engine.call_graph(definition.symbol_id, direction="callees", depth=1, limit=CALLEES)
        for site in callees.edges[:CALLEES]:
            gather.add(
                site.callee_path,
                site.callee_line,
                site.callee_line + CALLEE_LINES - 1,
                site.callee,
                "",
                f"called by {name}",
                focus=(site.callee_line,),
            )
        for site in direct[CALLERS_FIRST:]:
            add_call_site(site, f"calls {name}")
        try:
            similar = engine.similar(at=(definition.path, definition.start_line), top_k=SIMILAR)
            for r in similar.results:
                gather.add_result(r, f"similar to {name} (may need the same change)")
        except Exception as exc:  # no embeddings yet, or the chunk is gone: the rest still answers
            notices.append(f"similar code left out: {exc}")
    tokens = counter()
    packed = pack(gather.items, max_tokens, tokens.count, tokenizer=tokens.name)
    return ContextPack(
        query=target,
        maxTokens=max_tokens,
        tokens=packed.tokens,
        route="edit",
        style="edit",
        strategy=strategy,
        items=packed.items,
        omitted=packed.omitted,
        tokenizer=packed.tokenizer,
        text=packed.text,
        notice="; ".join(notices) or None,
        files=list(dict.fromkeys(item.path for item in packed.items)),
    )
