"""Per-client event queues and the backend interface every queue store implements.

A client registers a queue (``POST /register``), then long-polls it (``GET /events``).
Each published event is tailored per client by ``event_for_client`` and appended to the
queue with the next integer ID; a request's ``last_event_id`` acknowledges (prunes) every
event up to it. A queue nobody has polled for its lifespan is garbage-collected.

``QueueBackend`` holds what is common to every store: the bus interface, and the
long-poll loop, which waits on a future on the event loop rather than a thread, so thousands of
idle clients cost no threads or database connections. Stores implement a handful of
synchronous primitives (create, fetch, append, delete, collect) with the same semantics:
``memory_backend.py`` for one process, ``redis_backend.py`` for several.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

import orjson
from anyio import to_thread

from palaver.events.bus import EventDict, Listener, Listeners
from palaver.events.delivery import (
    event_for_client,
    heartbeat_event,
    message_event_for_client,
    reaches_all_public_streams_clients,
)
from palaver.events.descriptor import (
    BadEventQueueIdError,
    ClientDescriptor,
    EventsAlreadyPrunedError,
    new_queue_id,
)
from palaver.events.queue_state import JsonText
from palaver.events.waiters import Waiters
from palaver.lib import metrics
from palaver.lib.dependencies import dependency_of
from palaver.lib.operational_errors import ServiceUnavailableError, TooManyLongPollsError
from palaver.timeutil import Clock, epoch_seconds, utcnow

# Callers outside the event layer know the queues by this module.
__all__ = [
    "LONGPOLL_TIMEOUT_SECONDS",
    "BadEventQueueIdError",
    "ClientDescriptor",
    "EventsAlreadyPrunedError",
    "FetchRequest",
    "FetchResult",
    "QueueBackend",
    "event_for_client",
    "message_event_for_client",
    "new_queue_id",
    "reaches_all_public_streams_clients",
]

logger = logging.getLogger("palaver.events")

DEFAULT_MAX_QUEUES_PER_USER = 50

T = TypeVar("T")

# Clients use this as their HTTP timeout for GET /events; it must exceed the heartbeat.
LONGPOLL_TIMEOUT_SECONDS = 90
# A held long-poll keeps its queue alive for this long beyond the heartbeat interval.
_HOLD_SLACK_SECONDS = 30


# The backend interface --------------------------------------------------------------------


# Named tuples, not frozen dataclasses: two are built per long-poll answered, and a frozen
# dataclass sets each field through ``object.__setattr__``.
class FetchRequest(NamedTuple):
    """One read of a queue on behalf of a GET /events request (see ``QueueBackend.fetch``)."""

    user_id: int
    queue_id: str
    # Acknowledge events through this ID first; None acknowledges nothing.
    last_event_id: int | None
    # Identifies the request, so a newer request for the same queue can take over.
    token: str
    claim: bool
    final: bool
    hold_seconds: float


class FetchResult(NamedTuple):
    # Each event's JSON, its ``id`` included.
    events: list[JsonText]
    # Whether the request should answer now: it has events, it may not block, or a newer
    # request for the same queue has taken over.
    done: bool


class QueueBackend(ABC):
    """Event queues plus the event bus; ``services.bus`` is one of these."""

    def __init__(
        self,
        *,
        idle_timeout_seconds: int,
        heartbeat_seconds: float,
        gc_interval_seconds: float | None = None,
        clock: Clock = utcnow,
    ) -> None:
        self.idle_timeout_seconds = idle_timeout_seconds
        self.heartbeat_seconds = heartbeat_seconds
        self.gc_interval_seconds = gc_interval_seconds or min(60.0, max(0.25, idle_timeout_seconds / 4))
        # Queue expiry reads this clock (tests move it); waits for events and heartbeats are
        # the event loop's own timeouts.
        self.clock = clock
        self.server_generation = int(self.now())
        self._listeners = Listeners()
        self._waiters = Waiters()
        self._gc_task: asyncio.Task[None] | None = None
        # Queues one user may hold; registering past it collects their least recently used
        # ones first, so abandoned queues (a client that re-registers on every page load)
        # cannot pile up until idle collection.
        self.max_queues_per_user = DEFAULT_MAX_QUEUES_PER_USER
        # Set when the process is told to stop: parked long-polls answer at once.
        self.draining = False
        # Parked long-polls allowed at once, per user and in this process (each holds a
        # socket and a task); the app sets them from settings.
        self.max_parked_per_user = 20
        self.max_parked = 10_000
        self._parked_by_user: dict[int, int] = {}
        self._parked = 0

    def now(self) -> float:
        """The clock's time as UNIX seconds: queue deadlines and last-access times use it."""
        if self.clock is utcnow:
            return time.time()  # the same instant, without building a datetime per read
        return epoch_seconds(self.clock())

    # The bus ------------------------------------------------------------------------------

    def publish(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None:
        self._listeners.notify(realm_id, event, user_ids)
        self.deliver(realm_id, event, user_ids)
        if event.get("type") == "realm" and event.get("op") == "deactivated":
            self._close_queues_later(user_ids)

    # Seconds between telling a deactivated realm's clients and closing their queues, so
    # long-polls already waiting hand the event over first (later requests get a 401).
    realm_close_delay_seconds: float = 5.0

    def _close_queues_later(self, user_ids: Sequence[int]) -> None:
        timer = threading.Timer(
            self.realm_close_delay_seconds, self.close_user_queues, args=(list(user_ids),)
        )
        timer.daemon = True
        timer.start()

    def close_user_queues(self, user_ids: Sequence[int]) -> None:
        for user_id in user_ids:
            for queue_id in self.queue_ids_for_user(user_id):
                # It may have expired or been deleted in the meantime.
                with contextlib.suppress(BadEventQueueIdError):
                    self.delete_queue(user_id, queue_id)

    def queue_ids_for_user(self, user_id: int) -> list[str]:
        """The user's queues (stores override this; the default knows of none)."""
        return []

    def add_listener(self, listener: Listener) -> None:
        self._listeners.add(listener)

    def remove_listener(self, listener: Listener) -> None:
        self._listeners.remove(listener)

    # What each store implements (synchronous; may block on I/O) ----------------------------

    @abstractmethod
    def deliver(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None:
        """Append the event, tailored by ``event_for_client``, to each matching queue."""

    @abstractmethod
    def create_queue(self, client: ClientDescriptor) -> None: ...

    @abstractmethod
    def fetch(self, request: FetchRequest) -> FetchResult:
        """Acknowledge through ``last_event_id`` and read the queue's events.

        ``claim`` makes this request the queue's current long-poll (``token``), waking the
        one it replaces. Unless the result is ``done``, the queue is kept alive for
        ``hold_seconds`` while the caller waits; once done, the claim is released and the
        idle clock restarts. Raises ``BadEventQueueIdError`` for a missing, expired or
        foreign queue.
        """

    @abstractmethod
    def append(self, queue_id: str, event: EventDict) -> None:
        """Add an event to one queue directly (heartbeats), bypassing the filters."""

    @abstractmethod
    def delete_queue(self, user_id: int, queue_id: str) -> None: ...

    @abstractmethod
    def collect_garbage(self, now: float | None = None) -> list[str]:
        """Delete queues idle past their lifespan; returns their IDs."""

    @abstractmethod
    def get_client(self, queue_id: str) -> ClientDescriptor | None: ...

    def close(self) -> None:  # noqa: B027 (most stores hold nothing to release)
        """Release connections (called when the services close; may be called twice)."""

    # Hooks for stores that run code off the event loop ---------------------------------------

    async def run_blocking(self, func: Callable[..., T], *args: Any) -> T:
        """Run a store primitive from the event loop (in a worker thread if it does I/O)."""
        return await to_thread.run_sync(func, *args)

    async def prepare_to_wait(self) -> None:  # noqa: B027 (only cross-process stores need it)
        """Make sure wake-ups will reach this process before a long-poll starts waiting."""

    # Long-polling ------------------------------------------------------------------------

    async def afetch(self, request: FetchRequest) -> FetchResult:
        """``fetch`` from the event loop; stores with an async client override this."""
        return await self.run_blocking(self.fetch, request)

    async def aappend(self, queue_id: str, event: EventDict) -> None:
        await self.run_blocking(self.append, queue_id, event)

    async def get_events(
        self, *, user_id: int, queue_id: str, last_event_id: int | None, dont_block: bool
    ) -> list[EventDict]:
        """Answer GET /events as event dicts (tests and in-process callers)."""
        texts = await self.wait_for_events(
            user_id=user_id, queue_id=queue_id, last_event_id=last_event_id, dont_block=dont_block
        )
        return [orjson.loads(text) for text in texts]

    async def wait_for_events(
        self, *, user_id: int, queue_id: str, last_event_id: int | None, dont_block: bool
    ) -> list[JsonText]:
        """Events at once, or wait for one, or a heartbeat; each event's JSON text."""
        if not dont_block:
            self._check_parked_limits(user_id)
        await self.prepare_to_wait()
        token = secrets.token_hex(8)
        hold = self.heartbeat_seconds + _HOLD_SLACK_SECONDS
        # Register before the first read, so an event published in between still wakes us.
        waiter = self._waiters.add(queue_id)
        parked = False
        try:
            result = await self.afetch(
                FetchRequest(user_id, queue_id, last_event_id, token, True, dont_block, hold)
            )
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.heartbeat_seconds
            if not result.done:
                parked = self._park(user_id)
            while not result.done:
                remaining = deadline - loop.time()
                if remaining > 0 and not self.draining:
                    # Cleared as it returns, before reading: a later wake-up is not lost.
                    if not await waiter.wait(remaining):
                        continue
                    final = False
                else:
                    # Nothing happened (or the process is stopping, and the client must be
                    # answered before its connection closes): a heartbeat keeps proxies from
                    # closing an idle request, and tells a client all is well.
                    await self.aappend(queue_id, heartbeat_event())
                    final = True
                # Later reads only wait for news: nothing more to acknowledge or claim.
                result = await self.afetch(FetchRequest(user_id, queue_id, None, token, False, final, hold))
            metrics.EVENTS_DELIVERED.inc(len(result.events))
            return result.events
        finally:
            self._waiters.remove(queue_id, waiter)
            if parked:
                self._unpark(user_id)

    def _check_parked_limits(self, user_id: int) -> None:
        if self._parked >= self.max_parked:
            raise ServiceUnavailableError("Too many clients waiting for events; retry shortly", retry_after=5)
        if self._parked_by_user.get(user_id, 0) >= self.max_parked_per_user:
            raise TooManyLongPollsError(retry_after=5)

    def _park(self, user_id: int) -> bool:
        # Only ever called on the event loop's thread: plain counters suffice.
        self._parked += 1
        self._parked_by_user[user_id] = self._parked_by_user.get(user_id, 0) + 1
        metrics.PARKED_POLLS.inc()
        return True

    def _unpark(self, user_id: int) -> None:
        self._parked -= 1
        left = self._parked_by_user[user_id] - 1
        if left:
            self._parked_by_user[user_id] = left
        else:
            del self._parked_by_user[user_id]
        metrics.PARKED_POLLS.dec()

    def queue_count_for_metrics(self) -> int:
        """How many queues exist (for /metrics); stores override it."""
        return 0

    # Lifecycle (the app's lifespan) -------------------------------------------------------

    def begin_draining(self) -> None:
        """Answer every parked long-poll now, and park no new ones (the process is stopping).

        Safe to call from any thread; the answers are heartbeats or the events waiting, so a
        client simply polls again, reaching the next process or the restarted one.
        """
        self.draining = True
        self._waiters.wake_all()

    async def start(self) -> None:
        """Begin serving: restore saved queues (memory store) and collect garbage regularly."""
        if self._gc_task is None:
            self._gc_task = asyncio.create_task(self._collect_periodically())

    async def stop(self) -> None:
        if self._gc_task is not None:
            self._gc_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._gc_task
            self._gc_task = None

    def should_collect(self) -> bool:
        """Whether this process collects garbage now (stores shared by processes take turns)."""
        return True

    async def _collect_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.gc_interval_seconds)
            try:
                if not await self.run_blocking(self.should_collect):
                    continue
                removed = await self.run_blocking(self.collect_garbage)
                if removed:
                    logger.info("Collected %d idle event queue(s)", len(removed))
            except Exception as error:
                if dependency_of(error) is None:
                    logger.exception("Event queue garbage collection failed")
                # Else an outage, logged once where requests meet it; the next round retries.

    @property
    def parked_polls(self) -> int:
        """Long-polls of this process that have read their queue and wait for news."""
        return self._parked

    @property
    def waiting_requests(self) -> int:
        """Long-polls currently waiting in this process."""
        return self._waiters.count()
