"""The read side of the code graph: definitions, call edges and name-only call sites as the graph tools ask.

`GraphStore` (graph/store.py) inherits these queries; it owns the writes (contents, pending extraction,
edge refresh). The split keeps what the tools read apart from how the tables are filled.
"""

from __future__ import annotations

import sqlite3

import msgspec


class DefinitionRow(msgspec.Struct, frozen=True):
    """A definition as stored on one branch; `symbol_id` is `path#qualified`."""

    name: str
    qualified: str
    kind: str
    path: str
    start_line: int
    end_line: int
    language: str

    @property
    def symbol_id(self) -> str:
        return f"{self.path}#{self.qualified}"


class EdgeRow(msgspec.Struct, frozen=True):
    """A stored call edge: call site (caller, caller_path, line) -> callee definition."""

    caller: str
    caller_path: str
    caller_line: int
    line: int
    callee: str
    callee_path: str
    callee_line: int
    confidence: str
    candidates: int


class GraphReads:
    """Queries over the graph tables of an open index connection (mixed into `GraphStore`)."""

    conn: sqlite3.Connection

    def name_sites_into(self, branch: str, name: str, member: bool) -> list[EdgeRow]:
        """Call sites matched to `name` by name only (receiver of unknown type, no import to follow)."""
        rows = self.conn.execute(
            """SELECT caller, caller_path, caller_line, line, name, candidates FROM graph_name_sites
               WHERE branch = ? AND name = ? AND member = ?""",
            (branch, name, int(member)),
        )
        # Sorted here: an ORDER BY makes SQLite walk another index over the whole branch to skip a sort.
        out = [EdgeRow(c, cp, cl, ln, n, "", 0, "name", k) for c, cp, cl, ln, n, k in rows]
        return sorted(out, key=lambda e: (e.caller_path, e.line))

    def name_sites_out_of(self, branch: str, path: str, qualified: str) -> list[tuple[EdgeRow, bool]]:
        """Name-only call sites inside one definition, with whether each is a member call."""
        rows = self.conn.execute(
            """SELECT caller, caller_path, caller_line, line, name, candidates, member FROM graph_name_sites
               WHERE branch = ? AND caller_path = ? AND caller = ?""",
            (branch, path, qualified),
        )
        out = [(EdgeRow(c, cp, cl, ln, n, "", 0, "name", k), bool(m)) for c, cp, cl, ln, n, k, m in rows]
        return sorted(out, key=lambda pair: pair[0].line)

    # -- queries ------------------------------------------------------------------------------------

    def definitions(self, branch: str, name: str, *, limit: int = 200) -> list[DefinitionRow]:
        """Definitions on `branch` named `name`, or with that qualified name when it is dotted
        (`Foo.bar`, `Foo::bar`), or the one `path#qualified` symbol id."""
        # CROSS JOIN makes SQLite start from the name index, not from every file of the branch.
        base = """SELECT d.name, d.qualified, d.kind, f.path, d.start_line, d.end_line, f.language
                  FROM graph_defs d CROSS JOIN files f ON f.content_key = d.content_key
                  WHERE f.branch = ?"""
        if "#" in name:
            path, _, qualified = name.rpartition("#")
            rows = self.conn.execute(
                f"{base} AND f.path = ? AND d.qualified = ? LIMIT ?", (branch, path, qualified, limit)
            )
        else:
            qualified = name.replace("::", ".")
            last = qualified.rsplit(".", 1)[-1]
            if "." in qualified:
                rows = self.conn.execute(
                    f"{base} AND d.name = ? AND (d.qualified = ? OR d.qualified LIKE ? ESCAPE '\\') LIMIT ?",
                    (branch, last, qualified, "%." + _like_escape(qualified), limit),
                )
            else:
                rows = self.conn.execute(f"{base} AND d.name = ? LIMIT ?", (branch, last, limit))
        return [DefinitionRow(*r) for r in rows]

    def definitions_in(self, branch: str, path: str) -> list[DefinitionRow]:
        """Every definition of one file on `branch`, in line order."""
        rows = self.conn.execute(
            """SELECT d.name, d.qualified, d.kind, f.path, d.start_line, d.end_line, f.language
               FROM files f JOIN graph_defs d ON d.content_key = f.content_key
               WHERE f.branch = ? AND f.path = ? ORDER BY d.start_line""",
            (branch, path),
        )
        return [DefinitionRow(*r) for r in rows]

    def edges_into(self, branch: str, path: str, qualified: str) -> list[EdgeRow]:
        return self._edges("callee_path = ? AND callee = ?", (branch, path, qualified))

    def edges_out_of(self, branch: str, path: str, qualified: str) -> list[EdgeRow]:
        return self._edges("caller_path = ? AND caller = ?", (branch, path, qualified))

    def _edges(self, where: str, args: tuple[str, ...]) -> list[EdgeRow]:
        rows = self.conn.execute(
            f"""SELECT caller, caller_path, caller_line, line, callee, callee_path, callee_line, confidence,
                       candidates FROM graph_edges WHERE branch = ? AND {where}""",
            args,
        )
        # Sorted here: an ORDER BY makes SQLite walk another index over the whole branch to skip a sort.
        return sorted(
            (EdgeRow(*r) for r in rows), key=lambda e: (e.caller_path, e.line, e.callee_path, e.callee)
        )

    def counts(self, branch: str) -> dict[str, int]:
        defs = self.conn.execute(
            """SELECT COUNT(*) FROM files f JOIN graph_defs d ON d.content_key = f.content_key
               WHERE f.branch=?""",
            (branch,),
        ).fetchone()[0]
        by_conf = dict(
            self.conn.execute(
                "SELECT confidence, COUNT(*) FROM graph_edges WHERE branch=? GROUP BY confidence", (branch,)
            ).fetchall()
        )
        sites = self.conn.execute(
            "SELECT COUNT(*) FROM graph_name_sites WHERE branch=?", (branch,)
        ).fetchone()
        return {
            "definitions": int(defs),
            **{f"edges_{k}": int(v) for k, v in by_conf.items()},
            "name_only_sites": int(sites[0]),
        }


def _like_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
