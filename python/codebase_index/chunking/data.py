"""JSON, YAML and TOML: top-level keys (TOML tables) as `block` chunks labelled with the key.

Small neighbouring keys are packed into one chunk up to the budget (a `package.json` is a couple of
chunks, not thirty one-liners); a key too large for one chunk is split into windows that repeat its
key line. Lines between keys (comments, `---` document markers) stay with the key above them,
except comments directly above a key, which go with that key.
"""

from __future__ import annotations

from collections.abc import Sequence

from tree_sitter import Node

from codebase_index.chunking.code import parse_source, parser_for
from codebase_index.chunking.resolvers import node_text
from codebase_index.chunking.text import Piece, chunk_windows, materialize
from codebase_index.models import ChunkSpan

_MAX_SYMBOL_CHARS = 120
_COMMENT_PREFIXES = ("#", "//")


def _key_text(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    text = node_text(node, src).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1]
    return text


def _items(root: Node, language: str, src: bytes) -> list[tuple[int, int, str]]:
    """(start row, end row, key) of each top-level entry."""
    out: list[tuple[int, int, str]] = []

    def add(node: Node, key: str) -> None:
        end = node.end_point
        end_row = end[0] - 1 if end[1] == 0 and end[0] > node.start_point[0] else end[0]
        out.append((node.start_point[0], end_row, key))

    if language == "json":
        for value in root.named_children:
            if value.type == "object":
                for pair in value.named_children:
                    if pair.type == "pair":
                        add(pair, _key_text(pair.child_by_field_name("key"), src))
    elif language == "yaml":
        for doc in root.named_children:
            for block in doc.named_children:
                for coll in block.named_children:
                    for entry in coll.named_children:
                        if entry.type in ("block_mapping_pair", "flow_pair"):
                            add(entry, _key_text(entry.child_by_field_name("key"), src))
                        elif entry.type == "block_sequence_item":
                            add(entry, "")
    else:
        for entry in root.named_children:
            if entry.type in ("pair", "table", "table_array_element"):
                key = next((c for c in entry.named_children if "key" in c.type), None)
                add(entry, _key_text(key, src))
    return out


def _label(keys: list[str]) -> str:
    names: list[str] = []
    size = 0
    for key in keys:
        if not key or key in names:
            continue
        if size + len(key) > _MAX_SYMBOL_CHARS:
            break
        names.append(key)
        size += len(key) + 2
    return ", ".join(names)


def _attach_comments(lines: Sequence[str], start: int, floor: int) -> int:
    while start - 1 > floor and lines[start - 1].lstrip().startswith(_COMMENT_PREFIXES):
        start -= 1
    return start


def chunk_data(text: str, lines: list[str], language: str, max_chars: int) -> list[ChunkSpan]:
    src = parse_source(text)
    tree = parser_for(language).parse(src)
    items = _items(tree.root_node, language, src)
    if not items:
        return chunk_windows(lines, max_chars)
    last = len(lines) - 1
    # Regions partition the file: each key owns the lines up to the next key's comments. Keys that
    # start on the line of the key before them (one-line or minified JSON, flow mappings) share its
    # region, so there are never more regions than lines. Rows are clamped to the line list:
    # tree-sitter counts only "\n" as a line break, `str.splitlines` a few more characters.
    regions: list[tuple[int, int, int, list[str]]] = []  # start line, key line, end line, keys
    keys: list[list[str]] = []
    prev_row = -1
    for row, _end, key in items:
        row = min(row, last)
        if regions and row <= prev_row:
            keys[-1].append(key)
            continue
        # Floor at the previous key's first line: grammars may file the comment under that key.
        start = _attach_comments(lines, row, prev_row) if regions else 0
        if regions:
            start = max(start, regions[-1][0] + 1)
        regions.append((start, row, last, []))
        keys.append([key])
        prev_row = row
    regions = [
        (start, row, (regions[k + 1][0] - 1) if k + 1 < len(regions) else last, keys[k])
        for k, (start, row, _, _) in enumerate(regions)
    ]
    pieces: list[Piece] = []
    group: list[tuple[int, int, int, list[str]]] = []
    size = 0
    for region in regions:
        rsize = sum(len(lines[i]) + 1 for i in range(region[0], region[2] + 1))
        if group and size + rsize > max_chars:
            pieces.append(_piece(group))
            group, size = [], 0
        group.append(region)
        size += rsize
    if group:
        pieces.append(_piece(group))
    return materialize(pieces, lines, max_chars)


def _piece(group: list[tuple[int, int, int, list[str]]]) -> Piece:
    """One chunk from consecutive regions (start, key line, end, keys)."""
    return Piece(group[0][0], group[-1][2], "block", _label([k for g in group for k in g[3]]), group[0][1])
