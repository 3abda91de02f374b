"""Files that are indexed but not as well as they should be, kept per catalog so `status` and
`index --verbose` can name them after the run that met them: "chunk-fallback" (the file's chunker raised;
it is searchable as line windows) and "graph-error" (its code-graph extraction raised; chunks indexed, no
graph). Files that could not be indexed at all are skipped rows with reason "error" (store.skipped).

Stored as one JSON meta value per catalog (a few rows at most in practice, capped at MAX_ROWS): a run
replaces the rows of the paths it wrote or removed and keeps the others, whose files did not change.
"""

from __future__ import annotations

from collections.abc import Iterable

import msgspec

from .store import SkippedRow, Store

MAX_ROWS = 500
REASONS = ("chunk-fallback", "graph-error")


def _key(catalog: str) -> str:
    return f"problems:{catalog}"


def load(store: Store, catalog: str) -> list[SkippedRow]:
    raw = store.get_meta(_key(catalog))
    if not raw:
        return []
    try:
        rows = msgspec.json.decode(raw, type=list[tuple[str, str, str]])
    except msgspec.DecodeError:
        return []
    return [SkippedRow(*row) for row in rows]


def record(store: Store, catalog: str, touched: Iterable[str], rows: Iterable[SkippedRow]) -> None:
    """Replace the rows of `touched` paths with `rows` (call inside the run's write transaction)."""
    gone = set(touched)
    new = [r for r in load(store, catalog) if r.path not in gone]
    seen = {(r.path, r.reason) for r in new}
    for row in rows:
        if (row.path, row.reason) not in seen:
            seen.add((row.path, row.reason))
            new.append(row)
    new.sort(key=lambda r: (r.reason, r.path))
    if not new:
        store.conn.execute("DELETE FROM meta WHERE key=?", (_key(catalog),))
        return
    store.set_meta(
        _key(catalog), msgspec.json.encode([(r.path, r.reason, r.detail) for r in new[:MAX_ROWS]]).decode()
    )
