"""Plain-text renderings of call graphs and implementation lookups for models and the CLI."""

from __future__ import annotations

from ..display import shown_path
from ..vocabulary import TOOLS, Vocabulary
from .query import CallGraph, CallSite, ImplementationLookup


def _site_line(s: CallSite, upward: bool) -> str:
    indent = "  " * s.depth
    tag = s.confidence if s.candidates <= 1 else f"{s.confidence}, 1 of {s.candidates} candidates"
    if upward:
        return f"{indent}{s.caller} ({shown_path(s.caller_path)}:{s.line}) calls {s.callee} [{tag}]"
    if not s.callee_path:  # a name-only site: the candidates are every definition with that name
        where = f"by name: {s.candidates} candidate definitions"
        return f"{indent}{s.callee} ({where}) called at {shown_path(s.caller_path)}:{s.line}"
    callee, caller = shown_path(s.callee_path), shown_path(s.caller_path)
    return f"{indent}{s.callee} ({callee}:{s.callee_line}) called at {caller}:{s.line} [{tag}]"


def format_call_graph(g: CallGraph, words: Vocabulary = TOOLS) -> str:
    if not g.roots:
        text = (
            f"No definition named {g.query!r} in the code graph. Try {words.implementation} or "
            f"{words.search} to find the right name."
        )
        return f"{text}\n({g.incomplete})" if g.incomplete else text
    upward = g.direction == "callers"
    lines = [f"{g.direction.capitalize()} of {g.query} (depth {g.depth}):"]
    if g.incomplete:
        lines.append(f"({g.incomplete}; calls from files not extracted yet are missing)")
    lines += [
        f"  defined: {r.name} [{r.kind}] {shown_path(r.path)}:{r.start_line}  (id {shown_path(r.symbol_id)})"
        for r in g.roots
    ]
    if g.edges:
        lines.append("Resolved calls (through imports, the same file/package, or a known receiver type):")
        lines += [_site_line(s, upward) for s in g.edges]
    else:
        lines.append("No resolved calls.")
    if g.truncated:
        lines.append(f"(truncated: raise {words.limit} or lower {words.depth})")
    if g.name_matches:
        lines.append("Matched by name only (receiver type unknown; may be another class's method):")
        lines += [_site_line(s, upward) for s in g.name_matches]
    elif g.name_match_count:
        lines.append(
            f"{g.name_match_count} more call site(s) match by name only (unverified); "
            f"pass {words.name_matches} to list them."
        )
    return "\n".join(lines)


def format_implementation(r: ImplementationLookup) -> str:
    if not r.results:
        return f"Nothing found for {r.query!r}." + (f" ({r.incomplete})" if r.incomplete else "")
    head = "Definitions" if r.strategy == "definition" else "Search results (definitions first)"
    lines = [f"{head} for {r.query!r}:"]
    if r.incomplete:
        lines.append(f"({r.incomplete})")
    if r.notice:
        lines.append(f"({r.notice})")
    for hit in r.results:
        callers = f", {hit.callers} caller(s)" if hit.source == "definition" else ""
        where = f"{shown_path(hit.path)}:{hit.start_line}-{hit.end_line}"
        lines.append(f"\n{where} {hit.kind} {shown_path(hit.symbol)}{callers}")
        if hit.content:
            lines.append(hit.content.rstrip("\n"))
    return "\n".join(lines)
