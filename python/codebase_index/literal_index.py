"""The storage side of the exact-literal index: an FTS5 trigram table over chunk text that answers
"which chunks hold this text verbatim" for the literal retriever (`literal.py`), kept in step with the
`chunks` table by triggers, built once for an index made before it existed, checked and rebuilt by repair.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .store import Store

# An FTS5 trigram index over chunk text. External content (the
# text stays in `chunks` only) and detail=none (no positions: substring queries go through LIKE, which the
# trigram tokenizer answers from the index and SQLite then checks against the row): +14% database size on
# the py validation corpus where detail=full cost +64%, at the same query time. Triggers keep it in step
# with every write to `chunks` (index runs, purges, repair), so no code path can forget it.
LITERAL_TABLE = "chunks_literal"
LITERAL_TOKENIZER = "trigram"
_LITERAL_TRIGGERS = ("chunks_literal_ai", "chunks_literal_ad", "chunks_literal_au")


def schema(tokenizer: str) -> list[str]:
    t = LITERAL_TABLE
    return [
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {t} USING fts5(text, content='chunks', content_rowid='id', "
        f"tokenize='{tokenizer}', detail=none)",
        f"CREATE TRIGGER IF NOT EXISTS chunks_literal_ai AFTER INSERT ON chunks BEGIN "
        f"INSERT INTO {t} (rowid, text) VALUES (new.id, new.text); END",
        f"CREATE TRIGGER IF NOT EXISTS chunks_literal_ad AFTER DELETE ON chunks BEGIN "
        f"INSERT INTO {t} ({t}, rowid, text) VALUES ('delete', old.id, old.text); END",
        f"CREATE TRIGGER IF NOT EXISTS chunks_literal_au AFTER UPDATE OF text ON chunks BEGIN "
        f"INSERT INTO {t} ({t}, rowid, text) VALUES ('delete', old.id, old.text); "
        f"INSERT INTO {t} (rowid, text) VALUES (new.id, new.text); END",
    ]


_LITERAL_SUPPORT: dict[str, str | None] = {}
LITERAL_LONG = 16  # from this many characters a literal is looked up by `_distinctive_trigrams`
_LITERAL_WORD = re.compile(r"[^\W_]{3,}")


def _distinctive_trigrams(folded: str, most: int = 4) -> list[str]:
    """Trigrams of the longest words of a (lower-case) literal, side by side, at most `most`: every
    chunk holding the literal holds them, and long words' trigrams are rare ones. Four read fewer
    posting lists than eight and still leave few candidates to check: windows of 5 pasted messages on
    click / zod / tokio 2.3 / 4.2 / 5.9 ms with 8, 1.9 / 3.5 / 5.0 with 4, 1.8 / 4.2 / 5.1 with 3.

    >>> _distinctive_trigrams("unsupported compression method")
    ['com', 'pre', 'ssi', 'uns']
    """
    out: list[str] = []
    for word in sorted(set(_LITERAL_WORD.findall(folded)), key=lambda w: (-len(w), w)):
        out.extend(word[i : i + 3] for i in range(0, len(word) - 2, 3))
        if len(out) >= most:
            break
    return list(dict.fromkeys(out))[:most]


def unsupported(tokenizer: str | None = None) -> str | None:
    """Why this SQLite cannot hold the exact-literal index (no FTS5, or no trigram tokenizer: SQLite
    older than 3.34, as in some Python 3.10 builds), or None when it can. Asked once per process by
    creating the table in a scratch in-memory database."""
    name = tokenizer or LITERAL_TOKENIZER
    if name not in _LITERAL_SUPPORT:
        conn = sqlite3.connect(":memory:")
        try:
            conn.execute(f"CREATE VIRTUAL TABLE probe USING fts5(text, tokenize='{name}', detail=none)")
            _LITERAL_SUPPORT[name] = None
        except sqlite3.Error as exc:
            _LITERAL_SUPPORT[name] = f"SQLite {sqlite3.sqlite_version} has no FTS5 {name} tokenizer ({exc})"
        finally:
            conn.close()
    return _LITERAL_SUPPORT[name]


def status(store: Store) -> str | None:
    """None when the exact-literal index answers; else why not (the status line says it once)."""
    reason = unsupported()
    if reason is not None:
        return reason
    if store.get_meta("literal_index") != "ready":
        return "the exact-literal index is not built yet (the next index run builds it)"
    return None


def ensure(store: Store, *, locked: bool = False) -> bool:
    """Build the exact-literal index once where it is missing (an index made before it existed, or by
    a SQLite without the trigram tokenizer), from the chunks already stored: nothing is re-chunked
    or re-embedded. Where this SQLite cannot hold it, the triggers are dropped so writes keep working
    and the index is marked stale (rebuilt when a capable SQLite opens it). `locked`: the caller holds
    the writer lock already; otherwise it is taken without waiting (IndexLockedError if busy).
    Returns whether the index answers."""
    supported = unsupported() is None
    state = store.get_meta("literal_index")
    if supported and state == "ready":
        return True
    has_triggers = store.conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='trigger' AND name=?", (_LITERAL_TRIGGERS[0],)
    ).fetchone()
    if not supported and not has_triggers and state == "stale":
        return False
    lock = contextlib.nullcontext() if locked else store.write_lock(timeout=0)
    with lock, store.transaction():
        if supported:
            for statement in schema(LITERAL_TOKENIZER):
                store.conn.execute(statement)
            store.conn.execute(f"INSERT INTO {LITERAL_TABLE} ({LITERAL_TABLE}) VALUES ('rebuild')")
            store.set_meta("literal_index", "ready")
        else:
            for trigger in _LITERAL_TRIGGERS:
                store.conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            store.set_meta("literal_index", "stale")
    return supported


def disagreement(store: Store) -> str | None:
    """Why the exact-literal index does not match the chunks it indexes (FTS5's own integrity check),
    or None when it matches or is not in use. Reads every chunk: for `repair`, not for searches."""
    if not ready(store):
        return None
    try:
        # rank 1: check the index against the content table too (its external content).
        store.conn.execute(
            f"INSERT INTO {LITERAL_TABLE} ({LITERAL_TABLE}, rank) VALUES ('integrity-check', 1)"
        )
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return None


def rebuild(store: Store) -> None:
    """Rebuild the exact-literal index from the chunks (inside the caller's transaction)."""
    store.conn.execute(f"INSERT INTO {LITERAL_TABLE} ({LITERAL_TABLE}) VALUES ('rebuild')")


def ready(store: Store) -> bool:
    """Whether the exact-literal index answers (asked once per search: another process may build it)."""
    return unsupported() is None and store.get_meta("literal_index") == "ready"


def chunks(store: Store, fragment: str, limit: int) -> list[tuple[int, str]]:
    """(chunk id, text) of up to `limit` chunks whose text holds `fragment` (ASCII case folded), from
    the trigram index (callers check `ready` first). A fragment shorter than 3 characters has
    no trigram: empty. A long fragment is looked up by its most distinctive trigrams (those of its
    longest words: 0.2-0.3 ms on 21k chunks where LIKE over every trigram took 1.4-2.6 ms), then the
    text is checked in SQL; a short one by LIKE (its few trigrams), checked here (`_` is a wildcard)."""
    if len(fragment) < 3:
        return []
    folded = fragment.lower()
    grams = _distinctive_trigrams(folded) if len(fragment) >= LITERAL_LONG and folded.isascii() else []
    if grams:
        match = " AND ".join(f'"{g}"' for g in grams)
        rows = store.conn.execute(
            f"SELECT rowid, text FROM {LITERAL_TABLE} WHERE {LITERAL_TABLE} MATCH ? "
            "AND instr(lower(text), ?) > 0 LIMIT ?",
            (match, folded, limit),
        ).fetchall()
        return [(int(r[0]), str(r[1])) for r in rows]
    rows = store.conn.execute(
        f"SELECT rowid, text FROM {LITERAL_TABLE} WHERE text LIKE ? LIMIT ?", (f"%{fragment}%", limit)
    ).fetchall()
    if "_" in fragment or "%" in fragment or not folded.isascii():
        rows = [r for r in rows if folded in str(r[1]).lower()]
    return [(int(r[0]), str(r[1])) for r in rows]
