"""Search-time dependencies that may fail: the query embedding and the external reranker.

Search never waits on, or dies with, either: a failure falls back (keyword results, the deterministic
order) with a one-line note. A dependency that keeps failing is not called again for a cool-down (a
circuit breaker), so an agent's next queries answer at once instead of waiting through the same timeout.

The state is kept per index in `<index_dir>/dependencies.json`: one-shot CLI searches share it with the
sidecar, and `status` (any process) shows each dependency's last error and when it happened.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from .private_files import replace_private

STATE_FILE = "dependencies.json"
# Consecutive failures that open the breaker, and how long it stays open (doubling while it keeps failing).
FAILURES_TO_OPEN = 2
COOL_DOWN_SECONDS = 30.0
MAX_COOL_DOWN_SECONDS = 600.0

QUERY_EMBEDDING = "query embedding"
RERANKER = "reranker"


class DependencyHealth(msgspec.Struct, omit_defaults=True, rename="camel"):
    """The last failure of one search-time dependency (what `status` shows).

    `key` identifies the configured endpoint: a config change (another URL, model or key) starts afresh.
    `failures` counts consecutive failures; `cooling_until` is set while the breaker is open;
    `recovered_at` once a call succeeded after the failure."""

    name: str
    key: str
    error: str
    at: float
    failures: int = 1
    cooling_until: float | None = None
    recovered_at: float | None = None


def _when(timestamp: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(timestamp))


def describe(health: DependencyHealth, now: float | None = None) -> str:
    """One line for status: `reranker: failing (3 in a row, last 20:15:03: 500 from ...), cooling down
    until 20:15:33` or `query embedding: ok again since 20:16:00 (last failure 20:15:03: ...)`."""
    current = time.time() if now is None else now
    if health.recovered_at is not None:
        return (
            f"{health.name}: ok again since {_when(health.recovered_at)} "
            f"(last failure {_when(health.at)}: {health.error})"
        )
    text = f"{health.name}: failing ({health.failures} in a row, last {_when(health.at)}: {health.error})"
    if health.cooling_until is not None and health.cooling_until > current:
        text += f", not called until {_when(health.cooling_until)}"
    return text


class Breaker:
    """Consecutive-failure circuit breaker of one dependency, persisted in the index folder.

    `allow()` says whether to call now (None) or why not (the open breaker's state); `failure()` and
    `success()` record the outcome. After the cool-down one call goes through; if it fails the breaker
    opens again for twice as long (up to `MAX_COOL_DOWN_SECONDS`)."""

    def __init__(
        self,
        index_dir: Path,
        name: str,
        *,
        threshold: int = FAILURES_TO_OPEN,
        cool_down: float = COOL_DOWN_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.path = index_dir / STATE_FILE
        self.name = name
        self.threshold = max(1, threshold)
        self.cool_down = cool_down
        self._clock = clock
        self._lock = threading.Lock()

    def state(self, key: str | None = None) -> DependencyHealth | None:
        """The recorded failure (of `key`'s endpoint when given), or None."""
        found = read_all(self.path).get(self.name)
        if found is None or (key is not None and found.key != key):
            return None
        return found

    def allow(self, key: str) -> DependencyHealth | None:
        """None when the dependency may be called; its open-breaker state while it cools down."""
        found = self.state(key)
        if found is None or found.cooling_until is None or found.recovered_at is not None:
            return None
        return found if found.cooling_until > self._clock() else None

    def failure(self, key: str, error: str) -> DependencyHealth:
        now = self._clock()
        with self._lock:
            states = read_all(self.path)
            old = states.get(self.name)
            failures = 1
            if old is not None and old.key == key and old.recovered_at is None:
                failures = old.failures + 1
            cooling: float | None = None
            if failures >= self.threshold:
                doublings = failures - self.threshold
                cooling = now + min(MAX_COOL_DOWN_SECONDS, self.cool_down * (2.0 ** min(doublings, 16)))
            health = DependencyHealth(self.name, key, error, now, failures, cooling)
            states[self.name] = health
            _write_all(self.path, states)
        return health

    def success(self, key: str) -> None:
        """Mark a recorded failure of this endpoint as recovered (one write per failure, not per call)."""
        if not self.path.exists():
            return
        with self._lock:
            states = read_all(self.path)
            old = states.get(self.name)
            if old is None or old.recovered_at is not None:
                return
            if old.key != key:
                states.pop(self.name)
            else:
                now = self._clock()
                states[self.name] = msgspec.structs.replace(old, recovered_at=now, cooling_until=None)
            _write_all(self.path, states)


def read_all(path: Path) -> dict[str, DependencyHealth]:
    """Every recorded dependency state of an index folder; {} when none (or the file is unreadable)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return {}
    try:
        return msgspec.json.decode(raw, type=dict[str, DependencyHealth])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return {}


def _write_all(path: Path, states: dict[str, DependencyHealth]) -> None:
    """Atomic replace; a read-only or vanished index folder only loses the record, never the search."""
    if not path.parent.is_dir():
        return
    with contextlib.suppress(OSError):
        replace_private(path, msgspec.json.encode(states))


@functools.lru_cache(maxsize=64)
def endpoint_key(*parts: str | None) -> str:
    """A stable identity for a configured endpoint (never holding a secret in clear). Cached: every hybrid
    search asks for its embedding provider's before the model call, and every reranked search for its
    reranker's (the hash was ~0.04 ms)."""
    text = json.dumps([str(p) for p in parts])
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def cooling_down(health: DependencyHealth) -> str:
    """`is cooling down after 2 failures in a row (last: ...); not called again before 20:15:33`."""
    until = _when(health.cooling_until) if health.cooling_until is not None else "later"
    return (
        f"is cooling down after {health.failures} failures in a row (last: {health.error}); "
        f"not called again before {until}"
    )
