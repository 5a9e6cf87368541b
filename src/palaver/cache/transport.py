"""Carrying realm-state invalidations to every process.

After a write transaction commits, ``Database`` drops the components it wrote from its own
store (``cache/store.py``) and hands the same invalidation to its channel:

- ``LocalInvalidation`` (no Redis: one serving process) delivers nothing further;
- ``RedisInvalidation`` publishes it on one pub/sub channel per database. Each process
  subscribes on a thread of its own and applies what the others publish, so a permission
  revoked through one worker is honoured by the others within a Redis round trip (well
  under the 50 ms the tests allow).

A subscriber that is not connected cannot hear invalidations, so its store caches nothing
until the subscription is (re)established, and drops everything when it is: whatever it
held may have been invalidated meanwhile. A publish that fails (Redis down) is logged; the
other processes, whose subscriptions fail too, have stopped caching by then.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
from collections.abc import Iterable
from typing import Protocol

import orjson

from palaver.cache.store import RealmStateStore
from palaver.config import redis_namespace
from palaver.events.redis_subscription import keep_subscribed

logger = logging.getLogger("palaver.events")


class InvalidationChannel(Protocol):
    def publish(self, realm_ids: Iterable[int] | None, tables: Iterable[str]) -> None:
        """Tell the other processes (this one's store is done by the caller)."""

    def close(self) -> None: ...


class LocalInvalidation:
    """One process: its own store is all there is to invalidate."""

    def __init__(self, store: RealmStateStore) -> None:
        store.accepting = True

    def publish(self, _realm_ids: Iterable[int] | None, _tables: Iterable[str]) -> None:
        return None

    def close(self) -> None:
        return None


def channel_name(database_url: str) -> str:
    """One channel per database, so deployments sharing a Redis never mix invalidations."""
    return f"{redis_namespace(database_url)}realm-cache"


class RedisInvalidation:
    """Publishes this process's invalidations and applies the others'."""

    def __init__(self, url: str, channel: str, store: RealmStateStore) -> None:
        # redis-py (~6 MiB) only in servers configured with Redis.
        import redis  # noqa: PLC0415

        self._errors: type[Exception] = redis.RedisError
        self._client = redis.Redis.from_url(
            url, socket_connect_timeout=2, socket_timeout=10, health_check_interval=30
        )
        self._channel = channel
        self._store = store
        # Our own messages come back through the subscription; they were applied already.
        self._origin = secrets.token_hex(8)
        self._stop = threading.Event()
        self._publish_failing = False
        store.accepting = False
        self._thread = threading.Thread(target=self._run, name="palaver-cache-invalidation", daemon=True)
        self._thread.start()

    def wait_ready(self, timeout: float) -> bool:
        """Whether the subscription is up (tests and start-up; caching waits for it anyway)."""
        return self._store.wait_accepting(timeout)

    def publish(self, realm_ids: Iterable[int] | None, tables: Iterable[str]) -> None:
        written = sorted(tables)
        message = {
            "origin": self._origin,
            "realms": None if realm_ids is None else sorted(realm_ids),
            # Tables alone for a process of an earlier version (a rolling upgrade), which
            # would take a column name (``user_profile.full_name``) for a table nothing reads.
            "tables": sorted({name.partition(".")[0] for name in written}),
            "written": written,
        }
        try:
            self._client.publish(self._channel, orjson.dumps(message))
        except self._errors as error:
            # Redis is down: the other processes have lost their subscription as well, cache
            # nothing meanwhile and drop everything when it returns, so nothing stale outlives
            # this. One line per outage, not a traceback per committed write.
            if not self._publish_failing:
                self._publish_failing = True
                logger.warning(
                    "Could not publish realm-cache invalidations (%s); not logged again until one succeeds",
                    error,
                )
            return
        self._publish_failing = False

    def close(self) -> None:
        self._stop.set()
        # An empty message ends the subscriber's wait at once.
        with contextlib.suppress(self._errors):
            self._client.publish(self._channel, b"")
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=3)
        self._client.close()

    def _apply(self, data: bytes) -> None:
        if not data:
            return
        try:
            message = orjson.loads(data)
            if message["origin"] == self._origin:
                return
            self._store.invalidate(message["realms"], message.get("written", message["tables"]))
        except (orjson.JSONDecodeError, KeyError, TypeError):
            logger.warning("Ignored a malformed realm-cache invalidation: %r", data[:200])
            # Whatever it meant to drop, dropping everything is safe.
            self._store.clear()

    def _run(self) -> None:
        keep_subscribed(
            self._client,
            self._channel,
            self._stop,
            self,
            errors=self._errors,
            what="realm-cache invalidation subscription",
        )
        self._store.accepting = False

    # SubscriptionHandler (redis_subscription.py), called on the subscription's thread.

    def subscribed(self) -> None:
        # Anything published while we were not listening is unheard.
        self._store.clear()
        self._store.accepting = True

    def message(self, data: bytes) -> None:
        self._apply(data)

    def lost(self) -> None:
        self._store.accepting = False
        self._store.clear()
