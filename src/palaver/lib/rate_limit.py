"""Fixed-window rate limiting, in memory for one process or in Redis for many."""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Protocol

from palaver.config import RateLimit

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RateLimitResult:
    allowed: bool
    limit: int
    remaining: int
    reset_at: float  # UNIX time the window ends

    @property
    def retry_after(self) -> float:
        return max(0.0, self.reset_at - time.time())


class RateLimiter(Protocol):
    def hit(self, key: str, rule: RateLimit) -> RateLimitResult: ...

    def clear(self, key: str, rule: RateLimit) -> None: ...


def _window(rule: RateLimit, now: float) -> tuple[int, float]:
    start = math.floor(now / rule.seconds) * rule.seconds
    return start, start + rule.seconds


class MemoryRateLimiter:
    def __init__(self, max_entries: int = 100_000) -> None:
        # Keyed by rule length too: one key may be limited by rules of different windows.
        self._counts: dict[tuple[str, int, int], int] = {}
        self._lock = threading.Lock()
        self._max_entries = max_entries
        self._sweep_at = max_entries

    def hit(self, key: str, rule: RateLimit) -> RateLimitResult:
        now = time.time()
        start, end = _window(rule, now)
        with self._lock:
            if len(self._counts) > self._sweep_at:
                self._sweep(now)
            count = self._counts.get((key, rule.seconds, start), 0) + 1
            self._counts[(key, rule.seconds, start)] = count
        return RateLimitResult(count <= rule.count, rule.count, max(0, rule.count - count), end)

    def clear(self, key: str, rule: RateLimit) -> None:
        start, _ = _window(rule, time.time())
        with self._lock:
            self._counts.pop((key, rule.seconds, start), None)

    def _sweep(self, now: float) -> None:
        # Ended windows are dead weight; drop them in bulk rather than per request, each by
        # its own rule's length. Sweep again only once the table has doubled, so a table full
        # of live windows does not cost a sweep per request.
        self._counts = {k: v for k, v in self._counts.items() if k[2] + k[1] > now}
        self._sweep_at = max(self._max_entries, 2 * len(self._counts))


class RedisRateLimiter:
    """Shares counts between worker processes; keys expire with their window.

    When Redis cannot be reached, each process falls back to counting in its own memory
    rather than refusing every request: an outage of the limiter's store should degrade
    the limits (per process instead of shared), not take the whole API down with it.
    """

    # Seconds between repeated warnings while Redis stays unreachable.
    WARN_INTERVAL = 60.0

    def __init__(self, url: str, *, timeout: float = 0.5) -> None:
        import redis

        self._redis = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        self._errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)
        self._fallback = MemoryRateLimiter()
        self._warned_at = -math.inf

    def hit(self, key: str, rule: RateLimit) -> RateLimitResult:
        start, end = _window(rule, time.time())
        name = f"palaver:ratelimit:{key}:{rule.seconds}:{start}"
        try:
            pipe = self._redis.pipeline()
            pipe.incr(name)
            pipe.expire(name, rule.seconds + 1)
            count = int(pipe.execute()[0])
        except self._errors as error:
            self._warn(error)
            return self._fallback.hit(key, rule)
        return RateLimitResult(count <= rule.count, rule.count, max(0, rule.count - count), end)

    def clear(self, key: str, rule: RateLimit) -> None:
        start, _ = _window(rule, time.time())
        self._fallback.clear(key, rule)
        try:
            self._redis.delete(f"palaver:ratelimit:{key}:{rule.seconds}:{start}")
        except self._errors as error:
            self._warn(error)

    def _warn(self, error: Exception) -> None:
        now = time.time()
        if now - self._warned_at >= self.WARN_INTERVAL:
            self._warned_at = now
            logger.warning("rate limiter: Redis unavailable (%s); counting per process", error)


class NoRateLimiter:
    def hit(self, key: str, rule: RateLimit) -> RateLimitResult:
        return RateLimitResult(True, rule.count, rule.count, time.time() + rule.seconds)

    def clear(self, key: str, rule: RateLimit) -> None:
        return None
