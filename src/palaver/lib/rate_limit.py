"""Sliding-window rate limiting, in memory for one process or in Redis for many.

A key may make ``count`` requests in any ``seconds``-long stretch of time, not merely per
clock-aligned window (where a burst at a window's end and another at the next one's start
let twice the limit through). Each key keeps the times of its allowed requests within the
last ``seconds`` (at most ``count`` of them); refused requests do not count. A slot frees
when the oldest of those times leaves the window: that is ``reset_at``, and what a refused
client is told to wait for. The Redis limiter keeps the same log in a sorted set, changed
by one Lua script, so every process shares it.
"""

from __future__ import annotations

import logging
import math
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from palaver.config import RateLimit
from palaver.lib.exceptions import RateLimitedError
from palaver.lib.metrics import RATE_LIMITED

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class RateLimitResult:
    allowed: bool
    limit: int
    remaining: int
    reset_at: float  # UNIX time the oldest counted request leaves the window

    @property
    def retry_after(self) -> float:
        return max(0.0, self.reset_at - time.time())


def raise_if_limited(result: RateLimitResult, name: str) -> None:
    """Refuse a request its limit ``name`` did not allow (counted under that name)."""
    if not result.allowed:
        RATE_LIMITED.labels(name).inc()
        raise RateLimitedError(result.retry_after, result.limit, reset_at=result.reset_at)


class RateLimiter(Protocol):
    def hit(self, key: str, rule: RateLimit) -> RateLimitResult: ...

    def clear(self, key: str, rule: RateLimit) -> None: ...


def _result(allowed: bool, rule: RateLimit, counted: int, oldest: float) -> RateLimitResult:
    return RateLimitResult(allowed, rule.count, max(0, rule.count - counted), oldest + rule.seconds)


class MemoryRateLimiter:
    def __init__(self, max_entries: int = 100_000) -> None:
        # Keyed by rule length too: one key may be limited by rules of different windows.
        self._logs: dict[tuple[str, int], deque[float]] = {}
        self._lock = threading.Lock()
        self._max_entries = max_entries
        self._sweep_at = max_entries

    def hit(self, key: str, rule: RateLimit) -> RateLimitResult:
        now = time.time()
        with self._lock:
            if len(self._logs) > self._sweep_at:
                self._sweep(now)
            log = self._logs.get((key, rule.seconds))
            if log is None:
                log = self._logs[(key, rule.seconds)] = deque()
            horizon = now - rule.seconds
            while log and log[0] <= horizon:
                log.popleft()
            allowed = len(log) < rule.count
            if allowed:
                log.append(now)
            return _result(allowed, rule, len(log), log[0])

    def clear(self, key: str, rule: RateLimit) -> None:
        with self._lock:
            self._logs.pop((key, rule.seconds), None)

    def _sweep(self, now: float) -> None:
        # Logs whose newest request has left its window are dead weight; drop them in bulk
        # rather than per request. Sweep again only once the table has doubled, so a table
        # full of live logs does not cost a sweep per request.
        self._logs = {k: log for k, log in self._logs.items() if log and log[-1] > now - k[1]}
        self._sweep_at = max(self._max_entries, 2 * len(self._logs))


# KEYS: the log. ARGV: now, window seconds, count, a unique member.
# Returns {allowed (0/1), requests counted, oldest counted time (string)}.
_SLIDING_WINDOW = """
local key, now, window, count = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local counted = redis.call('ZCARD', key)
local allowed = 0
if counted < count then
  redis.call('ZADD', key, now, ARGV[4])
  counted = counted + 1
  allowed = 1
end
-- The log outlives its newest request by one window, then Redis drops it.
redis.call('PEXPIRE', key, math.ceil(window * 1000) + 1000)
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
return {allowed, counted, oldest[2] or tostring(now)}
"""


class RedisRateLimiter:
    """Shares counts between worker processes; keys expire with their window.

    When Redis cannot be reached, each process falls back to counting in its own memory
    rather than refusing every request: an outage of the limiter's store should degrade
    the limits (per process instead of shared), not take the whole API down with it.
    """

    # Seconds between repeated warnings while Redis stays unreachable.
    WARN_INTERVAL = 60.0

    def __init__(self, url: str, *, timeout: float = 0.5) -> None:
        # redis-py (~6 MiB) only in servers configured with Redis.
        import redis  # noqa: PLC0415

        self._redis = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
        self._errors: tuple[type[Exception], ...] = (redis.RedisError, OSError)
        self._fallback = MemoryRateLimiter()
        self._script = self._redis.register_script(_SLIDING_WINDOW)
        self._warned_at = -math.inf

    def _name(self, key: str, rule: RateLimit) -> str:
        return f"palaver:ratelimit:{key}:{rule.seconds}"

    def hit(self, key: str, rule: RateLimit) -> RateLimitResult:
        now = time.time()
        try:
            allowed, counted, oldest = self._script(
                keys=[self._name(key, rule)],
                args=[repr(now), rule.seconds, rule.count, f"{now!r}:{secrets.token_hex(4)}"],
            )
        except self._errors as error:
            self._warn(error)
            return self._fallback.hit(key, rule)
        return _result(bool(allowed), rule, int(counted), float(oldest))

    def clear(self, key: str, rule: RateLimit) -> None:
        self._fallback.clear(key, rule)
        try:
            self._redis.delete(self._name(key, rule))
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
