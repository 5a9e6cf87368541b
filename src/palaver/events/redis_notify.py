"""How long-polls of one process hear from the Redis queue store.

``Subscription``: the process's one pub/sub subscription (a thread), which wakes its own
waiting requests. ``AsyncScripts``: an asyncio client per event loop that runs the
long-poll reads, batched into pipelines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any

import redis
import redis.asyncio
from redis.exceptions import NoScriptError, RedisError

from palaver.events.redis_scripts import APPEND, FETCH
from palaver.events.redis_subscription import keep_subscribed
from palaver.events.waiters import Waiters

logger = logging.getLogger("palaver.events")

# Connections each event loop uses for long-polls, and reads sent in one pipeline.
_ASYNC_CONNECTIONS = 16
_FETCH_BATCH = 500


class Subscription:
    """This process's one subscription to ``notify``, on a thread of its own."""

    def __init__(self, client: redis.Redis, channel: str, waiters: Waiters) -> None:
        self._client = client
        self._channel = channel
        self._waiters = waiters
        self._ready = threading.Event()
        # Set once the thread's latest attempt to subscribe has ended, either way.
        self._attempted = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def ensure_started(self, timeout: float = 5.0, *, until_first_attempt: bool = False) -> None:
        """Start the thread if it is not running, then wait up to ``timeout`` for it to be
        subscribed; with ``until_first_attempt``, only until an attempt has failed (Redis
        refusing connections at start-up: the thread keeps retrying, and waiting out the
        timeout would only delay the start)."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._attempted.clear()
                self._thread = threading.Thread(target=self._run, name="palaver-event-notify", daemon=True)
                self._thread.start()
        (self._attempted if until_first_attempt else self._ready).wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            # An empty announcement (it names no queue) ends the thread's wait for the next
            # message at once, so closing does not wait out that wait's 1 s timeout.
            with contextlib.suppress(RedisError):
                self._client.publish(self._channel, "")
            thread.join(timeout=3)
        self._thread = None
        self._ready.clear()

    def _run(self) -> None:
        keep_subscribed(
            self._client, self._channel, self._stop, self, errors=RedisError, what="Redis event subscription"
        )

    # SubscriptionHandler (redis_subscription.py), called on the subscription's thread.

    def subscribed(self) -> None:
        self._ready.set()
        self._attempted.set()
        # Anything announced while we were not listening is unheard; every waiting request
        # reads its queue again.
        self._waiters.wake_all()

    def message(self, data: Any) -> None:
        self._waiters.wake(str(data).split())

    def lost(self) -> None:
        self._ready.clear()
        self._attempted.set()


class AsyncScripts:
    """An asyncio Redis client (bound to one event loop) running the long-poll scripts.

    Reads are batched: every read requested while the loop is busy goes out in one
    pipeline, so an event that wakes a thousand requests costs a few round trips.
    """

    def __init__(self, url: str) -> None:
        # A burst of wake-ups shares a few connections rather than opening one per request.
        pool = redis.asyncio.BlockingConnectionPool.from_url(
            url,
            decode_responses=True,
            health_check_interval=30,
            max_connections=_ASYNC_CONNECTIONS,
            timeout=30,
            socket_connect_timeout=2,
            socket_timeout=10,
        )
        self.client = redis.asyncio.Redis(connection_pool=pool)
        self.fetch_script = self.client.register_script(FETCH)
        self.append = self.client.register_script(APPEND)
        self._pending: list[tuple[list[str], list[Any], asyncio.Future[Any]]] = []
        self._flushing = False

    async def fetch(self, keys: list[str], args: list[Any]) -> Any:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((keys, args, future))
        if not self._flushing:
            self._flushing = True
            asyncio.get_running_loop().create_task(self._flush())
        return await future

    async def _flush(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending[:_FETCH_BATCH], self._pending[_FETCH_BATCH:]
                try:
                    results = await self._run(batch)
                except Exception as error:
                    results = [error] * len(batch)
                for (_, _, future), result in zip(batch, results, strict=True):
                    if future.done():
                        continue
                    if isinstance(result, Exception):
                        future.set_exception(result)
                    else:
                        future.set_result(result)
        finally:
            self._flushing = False

    async def _run(self, batch: list[tuple[list[str], list[Any], asyncio.Future[Any]]]) -> list[Any]:
        if len(batch) == 1:
            keys, args, _ = batch[0]
            return [await self.fetch_script(keys=keys, args=args)]
        pipe = self.client.pipeline(transaction=False)
        for keys, args, _ in batch:
            pipe.evalsha(self.fetch_script.sha, len(keys), *keys, *args)
        results: list[Any] = await pipe.execute(raise_on_error=False)
        if any(isinstance(r, NoScriptError) for r in results):
            # Redis lost its scripts (restarted or flushed): load them and run the batch again.
            await self.client.script_load(FETCH)
            return await self._run(batch)
        return results
