"""Shared machinery for remote providers: token budgeting, pacing, retries with backoff.

Kept free of any one provider's wire format so embeddings and rerankers behave the same way
under rate limits and outages.
"""

from __future__ import annotations

import email.utils
import math
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import httpx
import msgspec

T = TypeVar("T")

FailureKind = Literal["status", "timeout", "connection", "garbage"]

# Words cost ~1 token per 4 characters; punctuation and other symbols are usually their own token.
# Counting both over-estimates prose a little and fits code (which is symbol-dense) much better
# than len/4, so truncation stays inside real context limits.
_TOKEN_PIECE = re.compile(r"\w+|[^\w\s]|\s*\n\s*|\s{2,}")
_RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 520, 522, 524, 529})
_EXCERPT_CHARS = 200


def estimate_tokens(text: str) -> int:
    """Cheap upper-leaning token estimate for budgeting batches without a tokenizer.

    >>> estimate_tokens("def add(a, b):")
    8
    >>> estimate_tokens("")
    0
    """
    total = 0
    for match in _TOKEN_PIECE.finditer(text):
        piece = match.group()
        total += math.ceil(len(piece) / 4) if piece[0].isalnum() or piece[0] == "_" else 1
    return total


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """Cut `text` where the estimate reaches `max_tokens`, so providers never reject over-long inputs.

    >>> truncate_to_tokens("a b c d", 2)
    'a b '
    """
    if max_tokens <= 0:
        return ""
    total = 0
    for match in _TOKEN_PIECE.finditer(text):
        piece = match.group()
        cost = math.ceil(len(piece) / 4) if piece[0].isalnum() or piece[0] == "_" else 1
        if total + cost > max_tokens:
            if piece[0].isalnum() or piece[0] == "_":
                keep = (max_tokens - total) * 4
                return text[: match.start() + keep]
            return text[: match.start()]
        total += cost
    return text


def plan_batches(token_counts: Sequence[int], max_batch_tokens: int, max_batch_size: int) -> list[list[int]]:
    """Group consecutive indices so each group stays within both the token budget and the item cap.

    An input that alone exceeds the budget gets a batch of its own rather than being dropped.

    >>> plan_batches([5, 5, 5, 20, 1], max_batch_tokens=10, max_batch_size=8)
    [[0, 1], [2], [3], [4]]
    >>> plan_batches([1, 1, 1], max_batch_tokens=100, max_batch_size=2)
    [[0, 1], [2]]
    """
    batches: list[list[int]] = []
    current: list[int] = []
    used = 0
    for index, count in enumerate(token_counts):
        if current and (used + count > max_batch_tokens or len(current) >= max_batch_size):
            batches.append(current)
            current, used = [], 0
        current.append(index)
        used += count
    if current:
        batches.append(current)
    return batches


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta seconds or an HTTP date); None if absent/bad.

    >>> parse_retry_after("2")
    2.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0)
    10.0
    >>> parse_retry_after("soon") is None
    True
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            return None
        current = time.time() if now is None else now
        return max(0.0, when.timestamp() - current)
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to back off; delays are in seconds."""

    max_retries: int = 4
    base_delay: float = 0.5
    max_delay: float = 30.0

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Full jitter: uniform over [0, min(cap, base * 2^attempt)] spreads synchronized clients apart."""
        ceiling = min(self.max_delay, self.base_delay * (2.0**attempt))
        return rng.uniform(0.0, ceiling)

    def delay_for(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """The server's Retry-After wins over our own backoff, but never beyond the cap."""
        if retry_after is not None:
            return min(retry_after, self.max_delay)
        return self.backoff(attempt, rng)


class RateGate:
    """Spaces request starts at least `interval` seconds apart across all threads."""

    def __init__(
        self,
        interval: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._interval = max(0.0, interval)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._next_start: float | None = None

    def wait(self) -> None:
        """Reserve the next start slot under the lock, then sleep outside it so others can queue up."""
        if self._interval <= 0:
            return
        with self._lock:
            now = self._clock()
            start = now if self._next_start is None else max(now, self._next_start)
            self._next_start = start + self._interval
        if start > now:
            self._sleep(start - now)


class RequestFailure(Exception):
    """A request that failed for good; `excerpt` is already scrubbed of secrets."""

    def __init__(
        self, kind: FailureKind, excerpt: str, *, status: int | None = None, attempts: int = 1
    ) -> None:
        super().__init__(f"{kind} {status or ''}: {excerpt}".strip())
        self.kind: FailureKind = kind
        self.status = status
        self.excerpt = excerpt
        self.attempts = attempts

    @property
    def retryable_later(self) -> bool:
        """Whether trying again on a later run could succeed (rate limits, outages) or not (bad key)."""
        return self.kind in ("timeout", "connection") or self.status in _RETRYABLE_STATUSES


def redact(text: str, secrets: Iterable[str]) -> str:
    """Remove every secret (and its obvious variants) so keys never reach logs or error messages.

    >>> redact("bad key sk-123 given", ["sk-123"])
    'bad key *** given'
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def error_excerpt(body: bytes, secrets: Iterable[str]) -> str:
    """Pull the human-readable message out of the usual error envelopes, short and scrubbed."""
    text = body.decode("utf-8", errors="replace")
    message: str | None = None
    try:
        parsed = msgspec.json.decode(body)
    except msgspec.DecodeError:
        parsed = None
    if isinstance(parsed, dict):
        message = _message_from(parsed)
    if message is None:
        message = text
    message = " ".join(message.split())
    if len(message) > _EXCERPT_CHARS:
        message = message[: _EXCERPT_CHARS - 1] + "…"
    return redact(message, secrets) or "(empty body)"


def _message_from(payload: Mapping[str, Any]) -> str | None:
    # OpenAI/Google: {"error": {"message"}}, Ollama: {"error": "..."}, Cohere: {"message"}, Jina: {"detail"}.
    error = payload.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return str(error["message"])
    for key in ("error", "message", "detail"):
        value = payload.get(key)
        if isinstance(value, str):
            return value
    return None


def send_with_retry(
    client: httpx.Client,
    url: str,
    *,
    body: bytes,
    headers: Mapping[str, str],
    decode: Callable[[bytes], T],
    policy: RetryPolicy,
    gate: RateGate,
    secrets: Sequence[str] = (),
    rng: random.Random | None = None,
    sleep: Callable[[float], None] = time.sleep,
    timeout: float | None = None,
) -> T:
    """POST `body` and decode the answer, retrying only what a retry can fix.

    429/5xx, timeouts and connection errors back off (honouring Retry-After); other 4xx fail at once.
    A body `decode` cannot parse is a "garbage" failure: resending the same request rarely fixes it.
    `timeout` (seconds) overrides the client's own for this request (a query's short budget).
    """
    random_source = rng or random.Random()
    attempt = 0
    while True:
        gate.wait()
        retry_after: float | None = None
        try:
            if timeout is None:
                response = client.post(url, content=body, headers=dict(headers))
            else:
                response = client.post(url, content=body, headers=dict(headers), timeout=timeout)
        except httpx.TimeoutException as exc:
            failure = RequestFailure("timeout", redact(type(exc).__name__, secrets), attempts=attempt + 1)
        except httpx.TransportError as exc:
            failure = RequestFailure(
                "connection", redact(str(exc) or type(exc).__name__, secrets), attempts=attempt + 1
            )
        else:
            if response.is_success:
                try:
                    return decode(response.content)
                except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
                    raise RequestFailure(
                        "garbage",
                        redact(str(exc), secrets)[:_EXCERPT_CHARS],
                        status=response.status_code,
                        attempts=attempt + 1,
                    ) from None
            failure = RequestFailure(
                "status",
                error_excerpt(response.content, secrets),
                status=response.status_code,
                attempts=attempt + 1,
            )
            if not failure.retryable_later:
                raise failure
            retry_after = parse_retry_after(response.headers.get("retry-after"))
        if attempt >= policy.max_retries:
            raise failure
        sleep(policy.delay_for(attempt, retry_after, random_source))
        attempt += 1
