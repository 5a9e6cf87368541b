"""Read-your-writes with a read replica: whose reads stay on the primary for a while.

A replica applies the primary's changes some time after they commit (milliseconds on a
healthy network, seconds or more when it falls behind). A user whose own write has just
committed must not read from it: their message would be missing from the history they
fetch, a topic they just muted would still look unmuted. So when a write transaction of a
user commits, the user is *fenced* for ``database_replica_fence_seconds``: during that
time every read of theirs goes to the primary.

The fence must hold on every process (a load balancer sends the next request anywhere):
with Redis it is one key per user with an expiry (one ``SET`` per committed write, one
``EXISTS`` per replica-eligible read, both only when a replica is configured); without
Redis there is one serving process and its memory is enough. A fence this process set
is answered from memory, without Redis. When Redis cannot answer, the read goes to the
primary: a slower read, never a stale one.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from palaver.config import redis_namespace

if TYPE_CHECKING:
    import redis

logger = logging.getLogger(__name__)

# Past this many local entries, expired ones are swept (a bound on memory, not a limit).
_SWEEP_AT = 10_000


def fence_key_prefix(database_url: str) -> str:
    """One prefix per database, so deployments sharing a Redis never fence each other."""
    return f"{redis_namespace(database_url)}read-fence:"


class _NoRedis(Exception):
    """Never raised: what ``WriteFence`` catches when it has no Redis client."""


class WriteFence:
    """Users who wrote within the last ``seconds``, on this process and (with Redis) on all."""

    def __init__(self, seconds: float, redis_url: str | None = None, key_prefix: str = "") -> None:
        self.seconds = seconds
        self._prefix = key_prefix
        self._local: dict[int, float] = {}
        self._lock = threading.Lock()
        self._client: redis.Redis | None = None
        # What a failing Redis raises; nothing is caught without a client.
        self._redis_error: type[Exception] = _NoRedis
        if redis_url:
            # redis-py (~6 MiB, ~40 ms to import) only in processes configured with Redis: every
            # process imports this module (through ``db``), and a single-process server has none.
            import redis  # noqa: PLC0415

            self._client = redis.Redis.from_url(redis_url, socket_connect_timeout=2, socket_timeout=5)
            self._redis_error = redis.RedisError
        self._failing = False

    def mark(self, user_id: int) -> None:
        """The user's write has committed: their reads stay on the primary for a while."""
        if self.seconds <= 0:
            return
        deadline = time.monotonic() + self.seconds
        with self._lock:
            if len(self._local) >= _SWEEP_AT:
                now = time.monotonic()
                self._local = {uid: until for uid, until in self._local.items() if until > now}
            self._local[user_id] = deadline
        if self._client is not None:
            try:
                self._client.set(f"{self._prefix}{user_id}", b"1", px=max(1, int(self.seconds * 1000)))
            except self._redis_error:
                # The write has committed; other processes may now serve this user's next
                # read from the replica. Said once per outage, not per write.
                self._report_failure("could not fence user %d's reads on other processes", user_id)
                return
            self._failing = False

    def holds(self, user_id: int) -> bool:
        """Whether the user's reads must go to the primary (a recent write, or Redis unsure)."""
        if self.seconds <= 0:
            return False
        until = self._local.get(user_id)
        if until is not None and until > time.monotonic():
            return True
        if self._client is None:
            return False
        try:
            fenced = bool(self._client.exists(f"{self._prefix}{user_id}"))
        except self._redis_error:
            self._report_failure("could not read user %d's fence; reading from the primary", user_id)
            return True
        self._failing = False
        return fenced

    def _report_failure(self, message: str, user_id: int) -> None:
        if not self._failing:
            self._failing = True
            logger.warning("Read replica fence: " + message, user_id, exc_info=True)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
