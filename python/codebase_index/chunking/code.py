"""The tree-sitter walker: one chunk per definition, leftovers grouped into blocks.

It walks only the nodes that can hold definitions (the root, class/impl/module bodies, namespaces,
`#ifdef`s and error nodes) and never looks inside function bodies, which is what keeps it fast.
Rules, in order of application:

* A definition's range starts at its wrapper (decorators, `export`, `template<>`) or at the
  comments/attributes directly above it (no blank line in between).
* A container (class, struct, impl, trait, module, ...) becomes a chunk of its header: from its
  start up to its first member definition (docstring, fields). Its member definitions get their
  own chunks with qualified symbols (`Outer.Inner.method`). A container whose first member starts
  on its own first line is kept whole.
* Lines no definition covers become `block` chunks: merged per scope, split under the budget, and
  labelled with the enclosing container's symbol or the names they declare (`MAX_RETRIES`).
  Leftovers made only of closing tokens (`}`, `end`) join the chunk right before them.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence

from tree_sitter import Node, Parser, Tree
from tree_sitter_language_pack import get_parser

from codebase_index.chunking.languages import CodeSpec
from codebase_index.chunking.resolvers import Def, node_text
from codebase_index.chunking.text import Piece, block_splits, materialize
from codebase_index.models import ChunkSpan

_local = threading.local()


def parser_for(grammar: str) -> Parser:
    """Parsers are cached per language and per thread (a Parser is not safe to share)."""
    cache: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if cache is None:
        cache = _local.parsers = {}
    parser = cache.get(grammar)
    if parser is None:
        parser = cache[grammar] = get_parser(grammar)  # type: ignore[arg-type]
    return parser


# Line breaks `str.splitlines()` honours but tree-sitter does not: mapped to "\n" before parsing so
# tree rows and our line numbers agree.
_EXOTIC_BREAKS = str.maketrans(dict.fromkeys("\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029", "\n"))
_EXOTIC_CHARS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# Leftover lines too thin to be chunks of their own: closers join the chunk before them,
# openers (`#ifdef X`, `#else`, Python's `if X:`/`else:`) the chunk after them.
_CLOSER_LINE = re.compile(
    r"^\s*(?:[\]\)\}>;,]+|end|fi|done|esac|#\s*endif\b.*)\s*[;,]?\s*(?://.*|#.*|--.*|/\*.*)?$"
)
_OPENER_LINE = re.compile(
    r"^\s*(?:#\s*(?:if|ifdef|ifndef|elif|else)\b.*|(?:if|elif|else|try|finally|except)\b[^:]*:\s*(?:#.*)?)$"
)
# A short run of comment-only lines between definitions (a section banner like `# -- locking --`) is a
# heading for what follows: it joins the next definition instead of becoming a one-line noise chunk.
_COMMENT_LINE = re.compile(r"^\s*(?:#(?!\s*(?:include|define|if|endif|else|elif|pragma)\b)|//|/\*|\*|--|;)")
_MAX_BANNER_LINES = 3
_MAX_SYMBOL_CHARS = 120
_MAX_DEPTH = 12


def parse_source(text: str) -> bytes:
    if any(c in text for c in _EXOTIC_CHARS):
        text = text.replace("\r\n", "\n").translate(_EXOTIC_BREAKS)
    return text.encode("utf-8", "surrogatepass")


def _end_row(node: Node) -> int:
    end = node.end_point
    if end[1] == 0 and end[0] > node.start_point[0]:
        return end[0] - 1
    return end[0]


# Siblings that belong to the definition after them: comments, and decorators/attributes that
# some grammars put next to (not inside) the definition they annotate.
_ATTACHED_TYPES = frozenset({"haddock", "decorator", "attribute_item", "annotation", "marker_annotation"})


def _is_attached(node_type: str) -> bool:
    return "comment" in node_type or node_type in _ATTACHED_TYPES


def _transparent_children(node: Node) -> list[Node]:
    """Children of a namespace/`#ifdef`/`if`, with its `body` field's children spliced in."""
    body = node.child_by_field_name("body") if node.type != "ERROR" else None
    if body is None:
        return node.children
    out: list[Node] = []
    for child in node.children:
        if child == body:
            out.extend(body.children)
        else:
            out.append(child)
    return out


def _settle(node: Node, end: int, comment_ends: dict[int, int]) -> int:
    """Where a leftover node really ends: some grammars park the comment that documents the next
    definition at the end of the node before it (Haskell imports, Python `if` blocks)."""
    count = node.named_child_count
    if count < 2:
        return end
    last = node.named_child(count - 1)
    before = node.named_child(count - 2)
    if last is None or before is None or not _is_attached(last.type):
        return end
    top = last.start_point[0]
    if top <= before.end_point[0]:
        return end  # a trailing comment on a code line
    comment_ends[_end_row(last)] = top
    return top - 1


class _Walker:
    def __init__(self, spec: CodeSpec, src: bytes, lines: Sequence[str]) -> None:
        self.spec = spec
        self.src = src
        self.lines = lines
        self.pieces: list[Piece] = []
        self.containers: list[tuple[int, int, str]] = []
        self.consts: list[tuple[int, str]] = []

    def _unwrap(self, node: Node) -> Node:
        wrappers = self.spec.wrappers
        defs = self.spec.defs
        for _ in range(6):
            if node.type not in wrappers:
                return node
            inner = None
            for child in node.named_children:
                if child.type in defs or child.type in wrappers:
                    inner = child
                    break
            if inner is None:
                return node
            node = inner
        return node

    def _attach(self, start: int, bound: int, comment_ends: dict[int, int]) -> int:
        """Extend `start` upwards over comment/attribute lines directly above (not past `bound`)."""
        prefixes = self.spec.attach
        lines = self.lines
        i = start
        while i - 1 > bound:
            j = i - 1
            top = comment_ends.get(j)
            if top is not None and top > bound:
                i = top
                continue
            stripped = lines[j].lstrip()
            if stripped and stripped.startswith(prefixes):
                i = j
                continue
            break
        return i

    def walk(
        self, children: list[Node], scope: tuple[str, ...], member_kind: str, bound: int, depth: int
    ) -> None:
        spec = self.spec
        src = self.src
        prev_end = bound
        last_def: Piece | None = None
        comment_ends: dict[int, int] = {}
        for node in children:
            if not node.is_named:
                continue
            ntype = node.type
            if _is_attached(ntype):
                comment_ends[_end_row(node)] = node.start_point[0]
                continue
            end = _end_row(node)
            if (ntype in spec.transparent or ntype == "ERROR") and depth < _MAX_DEPTH:
                self.walk(_transparent_children(node), scope, member_kind, prev_end, depth + 1)
                prev_end, last_def = _settle(node, end, comment_ends), None
                continue
            target = self._unwrap(node) if ntype in spec.wrappers else node
            resolver = spec.defs.get(target.type)
            found = resolver(target, src) if resolver is not None else None
            if found is None:
                if self.lines[node.start_point[0]].lstrip().startswith(spec.attach):
                    # Elixir `@doc`, stray annotations: they describe what follows, like comments.
                    comment_ends[end] = node.start_point[0]
                    continue
                if target.type in spec.consts and not member_kind:
                    self._record_consts(target)
                prev_end, last_def = _settle(node, end, comment_ends), None
                continue
            last_def = self._define(
                node, target, found, scope, member_kind, prev_end, comment_ends, last_def, depth
            )
            prev_end = end

    def _define(
        self,
        node: Node,
        target: Node,
        found: Def,
        scope: tuple[str, ...],
        member_kind: str,
        bound: int,
        comment_ends: dict[int, int],
        last_def: Piece | None,
        depth: int,
    ) -> Piece | None:
        kind = found.kind
        if kind == "function" and member_kind:
            kind = member_kind
        symbol = ".".join((*scope, found.name)) if found.name else ".".join(scope)
        end = _end_row(node)
        if (
            self.spec.merge_same_name
            and last_def is not None
            and last_def.symbol == symbol
            and last_def.kind == kind
            and found.body is None
        ):
            last_def.end = end
            return last_def
        head_row = target.start_point[0]
        start = self._attach(node.start_point[0], bound, comment_ends)
        sig = found.name_row if found.name_row >= 0 else head_row
        piece = Piece(start, end, kind, symbol, sig)
        self.pieces.append(piece)
        if found.body is None or depth >= _MAX_DEPTH:
            return piece
        n_pieces = len(self.pieces)
        n_containers = len(self.containers)
        self.containers.append((start, end, symbol))
        inner_scope = (*scope, found.scope or found.name) if (found.scope or found.name) else scope
        inner_kind = "function" if found.kind == "module" else "method"
        self.walk(found.body.children, inner_scope, inner_kind, head_row, depth + 1)
        members = self.pieces[n_pieces:]
        if members:
            first = min(p.start for p in members)
            if first <= head_row:
                # Members share the header line (`class A { void f() {} }`): keep the class whole.
                del self.pieces[n_pieces:]
                del self.containers[n_containers + 1 :]
            else:
                last = first - 1
                while last > start and not self.lines[last].strip():
                    last -= 1
                piece.end = last
        return None

    def _record_consts(self, node: Node) -> None:
        for name_node in _declared_names(node, 0):
            self.consts.append((name_node.start_point[0], node_text(name_node, self.src)))


_DECL_FIELDS = ("name", "left", "declarator", "pattern", "variable_type_function")
_IDENT_TYPES = frozenset(
    {
        "identifier",
        "constant",
        "name",
        "simple_identifier",
        "IDENTIFIER",
        "variable_name",
        "type_identifier",
        "field_identifier",
    }
)


def _declared_names(node: Node, depth: int) -> list[Node]:
    """Identifiers a declaration introduces (`MAX = 5`, `const a = 1, b = 2`, `#define N 3`)."""
    if depth > 3:
        return []
    if node.type in _IDENT_TYPES:
        return [node]
    for field_name in _DECL_FIELDS:
        child = node.child_by_field_name(field_name)
        if child is not None:
            return _declared_names(child, depth + 1)
    out: list[Node] = []
    for child in node.named_children:
        ctype = child.type
        if ctype in _IDENT_TYPES and depth > 0:
            out.append(child)
            break
        if ctype.endswith(
            (
                "declarator",
                "_spec",
                "_element",
                "assignment",
                "declaration",
                "pattern",
                "_list",
                "_statement",
                "Decl",
            )
        ):
            out.extend(_declared_names(child, depth + 1))
    return out


def _gap_symbol(consts: list[tuple[int, str]], start: int, end: int) -> str:
    lo = bisect_left(consts, (start, ""))
    hi = bisect_right(consts, (end, "\uffff"))
    names: list[str] = []
    size = 0
    for _, name in consts[lo:hi]:
        if name in names:
            continue
        if size + len(name) > _MAX_SYMBOL_CHARS:
            break
        names.append(name)
        size += len(name) + 2
    return ", ".join(names)


def _fill_gaps(walker: _Walker, lines: Sequence[str], max_chars: int) -> list[Piece]:
    """Blocks for every non-blank line no definition covers, split per enclosing container."""
    n = len(lines)
    covered = bytearray(n)
    pieces = walker.pieces
    for p in pieces:
        covered[p.start : p.end + 1] = b"\x01" * (p.end - p.start + 1)
    owner = [-1] * n
    for idx, (s, e, _) in enumerate(walker.containers):
        owner[s : e + 1] = [idx] * (e - s + 1)
    pieces.sort(key=lambda p: (p.start, p.end))
    starts = [p.start for p in pieces]
    consts = sorted(walker.consts)
    gaps: list[Piece] = []
    pos = 0
    while True:
        a = covered.find(0, pos)
        if a < 0:
            break
        b = covered.find(1, a)
        b = n - 1 if b < 0 else b - 1
        pos = b + 1
        seg = a
        while seg <= b:
            who = owner[seg]
            seg_end = seg
            while seg_end < b and owner[seg_end + 1] == who:
                seg_end += 1
            _emit_gap(lines, seg, seg_end, who, walker, pieces, starts, consts, gaps, max_chars)
            seg = seg_end + 1
    return pieces + gaps


def _emit_gap(
    lines: Sequence[str],
    start: int,
    end: int,
    who: int,
    walker: _Walker,
    pieces: list[Piece],
    starts: list[int],
    consts: list[tuple[int, str]],
    gaps: list[Piece],
    max_chars: int,
) -> None:
    while start <= end and not lines[start].strip():
        start += 1
    while end >= start and not lines[end].strip():
        end -= 1
    if start > end:
        return
    content = [line for line in lines[start : end + 1] if line.strip()]
    if len(content) <= _MAX_BANNER_LINES and all(_COMMENT_LINE.match(line) for line in content):
        k = bisect_left(starts, start)
        after = pieces[k] if k < len(pieces) else None
        if after is not None and who >= 0 and walker.containers[who][1] >= after.start:
            after.start = min(after.start, start)
            return
    opener = False
    for i in range(start, end + 1):
        line = lines[i]
        if not line.strip() or _CLOSER_LINE.match(line):
            continue
        if _OPENER_LINE.match(line):
            opener = True
            continue
        break
    else:
        k = bisect_left(starts, start) - 1
        before = pieces[k] if k >= 0 else None
        if gaps and gaps[-1].end < start and (before is None or gaps[-1].end > before.end):
            before = gaps[-1]
        after = pieces[k + 1] if k + 1 < len(pieces) else None
        if opener and after is not None:
            after.start = min(after.start, start)
            return
        if before is not None:
            before.end = max(before.end, end)
            return
        if after is not None:
            after.start = min(after.start, start)
            return
    for a, b in block_splits(lines, start, end, max_chars):
        symbol = walker.containers[who][2] if who >= 0 else _gap_symbol(consts, a, b)
        gaps.append(Piece(a, b, "block", symbol))


def chunk_code(
    text: str,
    lines: list[str],
    spec: CodeSpec,
    max_chars: int,
    on_tree: Callable[[Tree], None] | None = None,
) -> list[ChunkSpan]:
    """Chunk one source file with its grammar; syntax errors only make more `block` chunks.

    `on_tree` receives the parsed tree, so the code graph extracts from the same parse.
    """
    src = parse_source(text)
    tree = parser_for(spec.grammar).parse(src)
    if on_tree is not None:
        on_tree(tree)
    walker = _Walker(spec, src, lines)
    walker.walk(tree.root_node.children, (), "", -1, 0)
    pieces = _fill_gaps(walker, lines, max_chars)
    return materialize(pieces, lines, max_chars)
