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
import dataclasses
import functools
import logging
import secrets
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from anyio import to_thread

from palaver import FEATURE_LEVEL, SERVICE_VERSION
from palaver.events.bus import EventDict, Listener, Listeners
from palaver.events.tailoring import (
    presence_event_for_client,
    stream_event_for_client,
    update_message_event_for_client,
    user_group_event_for_client,
)
from palaver.lib import metrics
from palaver.lib.dependencies import dependency_of
from palaver.lib.exceptions import JsonableError
from palaver.lib.operational_errors import ServiceUnavailableError, TooManyLongPollsError
from palaver.models.narrow import MatchEnv, NarrowSyntaxError, NarrowTerm, parse_terms
from palaver.models.narrow_operators import message_matches
from palaver.models.topic_names import display_topic
from palaver.timeutil import Clock, epoch_seconds, utcnow

logger = logging.getLogger("palaver.events")

DEFAULT_MAX_QUEUES_PER_USER = 50

# Message columns a message event's ``internal`` part may carry for narrows (has:link...).
_MESSAGE_FACTS = ("has_link", "has_image", "has_attachment")

T = TypeVar("T")

# Clients use this as their HTTP timeout for GET /events; it must exceed the heartbeat.
LONGPOLL_TIMEOUT_SECONDS = 90
# A held long-poll keeps its queue alive for this long beyond the heartbeat interval.
_HOLD_SLACK_SECONDS = 30


class BadEventQueueIdError(JsonableError):
    """The queue is unknown, expired, or another user's.

    Clients recover (register a new queue) on this code, or, as zulip-terminal does, on a
    message starting with the lowercase "Bad event queue id:".
    """

    code = "BAD_EVENT_QUEUE_ID"

    def __init__(self, queue_id: str) -> None:
        super().__init__(f"Bad event queue id: {queue_id}", queue_id=queue_id)


class EventsAlreadyPrunedError(JsonableError):
    def __init__(self, last_event_id: int) -> None:
        super().__init__(f"An event newer than {last_event_id} has already been pruned!")


def new_queue_id() -> str:
    return str(uuid.uuid4())


@dataclass
class ClientDescriptor:
    """What a client asked for when it registered; fixed for the queue's life."""

    queue_id: str
    user_id: int
    realm_id: int
    # None means every event type.
    event_types: frozenset[str] | None = None
    apply_markdown: bool = False
    client_gravatar: bool = True
    slim_presence: bool = False
    all_public_streams: bool = False
    # Normalized terms: {"operator": str, "operand": Any, "negated": bool}.
    narrow: list[dict[str, Any]] = field(default_factory=list)
    client_capabilities: dict[str, bool] = field(default_factory=dict)
    lifespan_seconds: int = 600
    user_agent: str = ""
    created_at: float = field(default_factory=time.time)
    # Updated by the memory store on each request; the Redis store keeps it in Redis.
    last_access: float = field(default_factory=time.time)

    def has_capability(self, name: str) -> bool:
        return bool(self.client_capabilities.get(name, False))

    @functools.cached_property
    def _narrow_terms(self) -> list[NarrowTerm] | None:
        try:
            return parse_terms(self.narrow)
        except NarrowSyntaxError:
            return None  # a malformed narrow (registration refuses them) filters nothing

    def matches_narrow(
        self, message: Mapping[str, Any], flags: Sequence[str], internal: Mapping[str, Any]
    ) -> bool:
        """Whether a message passes the queue's narrow (``models/narrow.py``, in memory).

        ``internal`` may carry message columns the client's object lacks (has_link...).
        """
        terms = self._narrow_terms
        if terms is None:
            return True
        facts = {name: bool(internal[name]) for name in _MESSAGE_FACTS if internal.get(name) is not None}
        return message_matches(terms, message, MatchEnv(self.user_id, flags, facts=facts))

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue_id": self.queue_id,
            "user_id": self.user_id,
            "realm_id": self.realm_id,
            "event_types": sorted(self.event_types) if self.event_types is not None else None,
            "apply_markdown": self.apply_markdown,
            "client_gravatar": self.client_gravatar,
            "slim_presence": self.slim_presence,
            "all_public_streams": self.all_public_streams,
            "narrow": self.narrow,
            "client_capabilities": self.client_capabilities,
            "lifespan_seconds": self.lifespan_seconds,
            "user_agent": self.user_agent,
            "created_at": self.created_at,
            "last_access": self.last_access,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClientDescriptor:
        event_types = data.get("event_types")
        return cls(
            queue_id=str(data["queue_id"]),
            user_id=int(data["user_id"]),
            realm_id=int(data["realm_id"]),
            event_types=frozenset(event_types) if event_types is not None else None,
            apply_markdown=bool(data.get("apply_markdown", False)),
            client_gravatar=bool(data.get("client_gravatar", True)),
            slim_presence=bool(data.get("slim_presence", False)),
            all_public_streams=bool(data.get("all_public_streams", False)),
            narrow=list(data.get("narrow", [])),
            client_capabilities=dict(data.get("client_capabilities", {})),
            lifespan_seconds=int(data.get("lifespan_seconds", 600)),
            user_agent=str(data.get("user_agent", "")),
            created_at=float(data.get("created_at", time.time())),
            last_access=float(data.get("last_access", time.time())),
        )


class EventQueue:
    """One client's pending events, in increasing ID order."""

    def __init__(
        self, next_event_id: int = 0, newest_pruned_id: int = -1, events: Iterable[EventDict] = ()
    ) -> None:
        self.next_event_id = next_event_id
        self.newest_pruned_id = newest_pruned_id
        self.events: list[EventDict] = list(events)

    def push(self, event: EventDict) -> int:
        event_id = self.next_event_id
        self.next_event_id += 1
        self.events.append({**event, "id": event_id})
        return event_id

    def acknowledge(self, last_event_id: int) -> None:
        """Drop the events the client has confirmed it received.

        Acknowledging less than was already dropped means the client missed events it can
        no longer get, so that is an error rather than a silent gap.
        """
        if last_event_id < self.newest_pruned_id:
            raise EventsAlreadyPrunedError(last_event_id)
        keep = 0
        while keep < len(self.events) and self.events[keep]["id"] <= last_event_id:
            self.newest_pruned_id = self.events[keep]["id"]
            keep += 1
        del self.events[:keep]

    def contents(self) -> list[EventDict]:
        return list(self.events)

    def to_dict(self) -> dict[str, Any]:
        return {
            "next_event_id": self.next_event_id,
            "newest_pruned_id": self.newest_pruned_id,
            "events": self.events,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EventQueue:
        return cls(int(data["next_event_id"]), int(data["newest_pruned_id"]), list(data["events"]))


# Tailoring events per client ------------------------------------------------------------


def event_for_client(client: ClientDescriptor, event: EventDict) -> EventDict | None:
    """What one client receives of a published event, or None when it does not want it.

    This is the one place an event is adapted per client; every backend calls it for each
    queue of each recipient.
    """
    event_type = event.get("type")
    if client.event_types is not None:
        if event_type not in client.event_types:
            return None
        # user_topic replaces muted_topics; a client asking for both wants only the new one.
        if event_type == "muted_topics" and "user_topic" in client.event_types:
            return None
    if event_type in ("update_display_settings", "update_global_notifications") and (
        client.event_types is None or client.has_capability("user_settings_object")
    ):
        # Legacy copies of user_settings events: only for clients that name the legacy type
        # and do not understand the user_settings object.
        return None
    if event_type == "message":
        return message_event_for_client(client, event)
    if event_type == "update_message":
        # Topic names depend on the client's empty_topic_name capability.
        return update_message_event_for_client(client, event)
    if event_type == "presence":
        # Legacy, slim or modern shape, per the client's registration.
        return presence_event_for_client(client, event)
    if event_type == "user_group":
        # Clients without include_deactivated_groups hear of a deactivation as a removal and
        # of nothing done to the group afterwards; the internal marker is stripped for all.
        return user_group_event_for_client(client, event)
    if event_type == "stream":
        return stream_event_for_client(client, event)
    if (
        event_type == "typing"
        and "stream_id" in event
        and not client.has_capability("stream_typing_notifications")
    ):
        return None
    return event


def message_event_for_client(client: ClientDescriptor, event: Mapping[str, Any]) -> EventDict | None:
    """What one client queue receives of a published ``message`` event, or None.

    Message events carry per-client parts in ``internal`` (raw and rendered content, the
    sender's local ID, broadcast exclusions, columns narrows test): this applies the
    queue's narrow and options and strips ``internal``.
    """
    internal: Mapping[str, Any] = event.get("internal") or {}
    if internal.get("broadcast") and client.user_id in internal.get("skip_broadcast_user_ids", ()):
        return None  # this user gets the message, with their own flags, in another event
    message = dict(event["message"])
    flags = list(event.get("flags", []))
    if client.narrow and not client.matches_narrow(message, flags, internal):
        return None
    if not client.apply_markdown:
        message["content"] = internal.get("raw_content", message["content"])
        message["content_type"] = "text/x-markdown"
    if client.client_gravatar and internal.get("avatar_computable"):
        message["avatar_url"] = None
    if message.get("type") == "stream":
        message["subject"] = display_topic(message["subject"], client.has_capability("empty_topic_name"))
    result: dict[str, Any] = {k: v for k, v in event.items() if k not in ("internal", "local_message_id")}
    result["message"] = message
    if "local_message_id" in event and internal.get("sender_queue_id") == client.queue_id:
        result["local_message_id"] = event["local_message_id"]
    return result


def reaches_all_public_streams_clients(event: Mapping[str, Any]) -> bool:
    """Whether clients registered with ``all_public_streams`` get the event though it was
    not addressed to their user: the one ``broadcast`` copy of a message in a public channel.
    """
    internal = event.get("internal")
    return bool(
        event.get("type") == "message" and isinstance(internal, Mapping) and internal.get("broadcast")
    )


def heartbeat_event() -> EventDict:
    return {"type": "heartbeat"}


def restart_event(server_generation: int) -> EventDict:
    return {
        "type": "restart",
        "zulip_version": SERVICE_VERSION,
        "zulip_merge_base": "",
        "zulip_feature_level": FEATURE_LEVEL,
        "server_generation": server_generation,
    }


# Waking long-polls ----------------------------------------------------------------------


class _Waiter:
    """One waiting long-poll: a flag, plus a future only while it is actually suspended.

    Lighter than an ``asyncio.Event`` awaited through ``asyncio.wait_for`` (an event, its
    waiter deque, a future and a task per wait): thousands of these are parked at once.
    """

    __slots__ = ("future", "loop", "woken")

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.woken = False
        self.future: asyncio.Future[None] | None = None

    def set(self) -> None:
        """Wake the request (on its loop's thread)."""
        self.woken = True
        future = self.future
        if future is not None and not future.done():
            future.set_result(None)

    async def wait(self, timeout: float) -> bool:
        """Wait until woken or ``timeout`` seconds pass; whether it was woken (and clear it)."""
        if not self.woken:
            self.future = future = self.loop.create_future()
            timer = self.loop.call_later(timeout, _time_out, future)
            try:
                await future
            finally:
                timer.cancel()
                self.future = None
        woken, self.woken = self.woken, False
        return woken


def _time_out(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _set_all(waiters: list[_Waiter]) -> None:
    for waiter in waiters:
        waiter.set()


class Waiters:
    """Long-polls waiting in this process, by queue ID.

    ``wake`` may be called from any thread (publishing happens on whichever thread
    committed); it hands the wake-up to each waiter's own event loop, one call per loop,
    so a message to thousands of clients costs the publishing thread one hand-over.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # A list: most queues have one waiter, and a one-item list is a quarter of a set.
        self._by_queue: dict[str, list[_Waiter]] = {}

    def add(self, queue_id: str) -> _Waiter:
        waiter = _Waiter()
        with self._lock:
            self._by_queue.setdefault(queue_id, []).append(waiter)
        return waiter

    def remove(self, queue_id: str, waiter: _Waiter) -> None:
        with self._lock:
            waiters = self._by_queue.get(queue_id)
            if waiters is not None:
                with contextlib.suppress(ValueError):
                    waiters.remove(waiter)
                if not waiters:
                    del self._by_queue[queue_id]

    def wake(self, queue_ids: Iterable[str]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[_Waiter]] = {}
        with self._lock:
            for queue_id in set(queue_ids):
                for waiter in self._by_queue.get(queue_id, ()):
                    by_loop.setdefault(waiter.loop, []).append(waiter)
        for loop, waiters in by_loop.items():
            # RuntimeError: that loop has closed, and its requests are gone with it.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_set_all, waiters)

    def wake_all(self) -> None:
        with self._lock:
            queue_ids = list(self._by_queue)
        self.wake(queue_ids)

    def count(self) -> int:
        with self._lock:
            return sum(len(w) for w in self._by_queue.values())


# The backend interface --------------------------------------------------------------------


@dataclass(frozen=True)
class FetchRequest:
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


@dataclass(frozen=True)
class FetchResult:
    events: list[EventDict]
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
        """Answer GET /events: events at once, or wait for one, or a heartbeat."""
        if not dont_block:
            self._check_parked_limits(user_id)
        await self.prepare_to_wait()
        token = secrets.token_hex(8)
        hold = self.heartbeat_seconds + _HOLD_SLACK_SECONDS
        # Register before the first read, so an event published in between still wakes us.
        waiter = self._waiters.add(queue_id)
        parked = False
        try:
            request = FetchRequest(
                user_id, queue_id, last_event_id, token=token, claim=True, final=dont_block, hold_seconds=hold
            )
            result = await self.afetch(request)
            # Later reads only wait for news: nothing more to acknowledge or claim.
            request = dataclasses.replace(request, last_event_id=None, claim=False)
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
                result = await self.afetch(dataclasses.replace(request, final=final))
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
