"""Event queues in Redis: any server process answers any queue, and queues outlive processes.

Layout, under one key prefix per deployment:

- ``q:<queue>`` hash: owner, realm, descriptor JSON, next event ID, newest pruned ID,
  expiry deadline, lifespan, and the token of the request currently long-polling it;
- ``ev:<queue>`` sorted set: the queue's event JSON, scored by event ID;
- ``user:<user>`` and ``public:<realm>`` sets: the queues an event for a user (or, for
  all_public_streams clients, for a realm) goes to;
- ``queues`` sorted set: every queue, scored by its expiry deadline, for collection;
- ``notify`` channel: queue IDs that have something new.

Every change to a queue is one Lua script, so processes never see half an update:
publishing appends to all matching queues at once and announces them on ``notify``.
Each process holds one subscription (a thread), which wakes its own waiting requests.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import secrets
import threading
import weakref
from collections.abc import Iterable, Sequence
from typing import Any, cast

import orjson
import redis
import redis.asyncio
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from palaver.config import redis_namespace
from palaver.events.backlog import DeliveryBacklog
from palaver.events.bus import EventDict
from palaver.events.delivery import Tailoring, reaches_all_public_streams_clients
from palaver.events.descriptor import BadEventQueueIdError, ClientDescriptor, EventsAlreadyPrunedError
from palaver.events.queue_state import SharedEvent
from palaver.events.queues import FetchRequest, FetchResult, QueueBackend
from palaver.events.redis_notify import AsyncScripts, Subscription
from palaver.events.redis_scripts import APPEND, FETCH, KEY_EXPIRY_SLACK_SECONDS, PUBLISH, REMOVE
from palaver.events.redis_shapes import ShapeRegistry, shape_id
from palaver.timeutil import Clock, utcnow

logger = logging.getLogger("palaver.events")

# Descriptors never change after registration, so each process remembers the ones it has
# read; this bounds that memory (entries of deleted queues are simply never used again).
_DESCRIPTOR_CACHE_SIZE = 50_000
# How long a long-poll waits for this process's subscription to (re)connect.
_SUBSCRIBE_WAIT_SECONDS = 1.0

__all__ = ["KEY_EXPIRY_SLACK_SECONDS", "RedisQueueBackend"]


def _head(shared: SharedEvent | None) -> bytes:
    return shared.head() if shared is not None else b""


class RedisQueueBackend(QueueBackend):
    def __init__(
        self,
        url: str,
        *,
        idle_timeout_seconds: int,
        heartbeat_seconds: float,
        key_prefix: str = "palaver:events:",
        gc_interval_seconds: float | None = None,
        clock: Clock = utcnow,
    ) -> None:
        super().__init__(
            idle_timeout_seconds=idle_timeout_seconds,
            heartbeat_seconds=heartbeat_seconds,
            gc_interval_seconds=gc_interval_seconds,
            clock=clock,
        )
        self.prefix = key_prefix
        self._url = url
        # Timeouts, so a Redis that stops answering fails requests (503) instead of hanging them.
        self._client = redis.Redis.from_url(
            url, decode_responses=True, health_check_interval=30, socket_connect_timeout=2, socket_timeout=10
        )
        self._backlog = DeliveryBacklog(self._deliver_now, (RedisConnectionError, RedisTimeoutError))
        # Long-polls read their queues with a client of their own event loop, so a burst of
        # wake-ups never queues up for the worker threads that serve ordinary requests.
        self._async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncScripts] = (
            weakref.WeakKeyDictionary()
        )
        self._channel = key_prefix + "notify"
        self._queues_key = key_prefix + "queues"
        self._fetch_script = self._client.register_script(FETCH)
        self._append_script = self._client.register_script(APPEND)
        self._remove_script = self._client.register_script(REMOVE)
        self._publish_script = self._client.register_script(PUBLISH)
        self._shapes = ShapeRegistry()
        self._subscription = Subscription(self._client, self._channel, self._waiters)
        self._descriptors: dict[str, ClientDescriptor] = {}
        self._descriptor_lock = threading.Lock()
        self._closed = False

    @staticmethod
    def default_key_prefix(database_url: str) -> str:
        """A prefix per database, so deployments sharing one Redis never mix their queues."""
        return f"{redis_namespace(database_url)}events:"

    def _q(self, queue_id: str) -> str:
        return f"{self.prefix}q:{queue_id}"

    def _ev(self, queue_id: str) -> str:
        return f"{self.prefix}ev:{queue_id}"

    def _user(self, user_id: int) -> str:
        return f"{self.prefix}user:{user_id}"

    def _public(self, realm_id: int) -> str:
        return f"{self.prefix}public:{realm_id}"

    # Descriptors ------------------------------------------------------------------------

    def _remember(self, client: ClientDescriptor) -> None:
        with self._descriptor_lock:
            if len(self._descriptors) >= _DESCRIPTOR_CACHE_SIZE:
                self._descriptors.clear()
            self._descriptors[client.queue_id] = client

    def _descriptors_for(self, queue_ids: Iterable[str]) -> dict[str, ClientDescriptor]:
        found: dict[str, ClientDescriptor] = {}
        with self._descriptor_lock:
            missing = []
            for queue_id in queue_ids:
                cached = self._descriptors.get(queue_id)
                if cached is not None:
                    found[queue_id] = cached
                else:
                    missing.append(queue_id)
        if missing:
            pipe = self._client.pipeline(transaction=False)
            for queue_id in missing:
                pipe.hget(self._q(queue_id), "desc")
            for queue_id, raw in zip(missing, pipe.execute(), strict=True):
                if raw is not None:
                    client = ClientDescriptor.from_dict(orjson.loads(raw))
                    self._remember(client)
                    self._shapes.learn(client)
                    found[queue_id] = client
        return found

    def queue_ids_for_user(self, user_id: int) -> list[str]:
        return sorted(cast(set[str], self._client.smembers(self._user(user_id))))

    def get_client(self, queue_id: str) -> ClientDescriptor | None:
        raw = self._client.hget(self._q(queue_id), "desc")
        return ClientDescriptor.from_dict(orjson.loads(cast(str, raw))) if raw is not None else None

    # Primitives ----------------------------------------------------------------------------

    def create_queue(self, client: ClientDescriptor) -> None:
        now = self.now()
        client.last_access = now
        self._evict_least_recently_used(client.user_id, now)
        deadline = now + client.lifespan_seconds
        pipe = self._client.pipeline(transaction=True)
        pipe.hset(
            self._q(client.queue_id),
            mapping={
                "user_id": client.user_id,
                "realm_id": client.realm_id,
                "desc": orjson.dumps(client.to_dict()).decode(),
                "next_id": 0,
                "pruned": -1,
                "deadline": deadline,
                "lifespan": client.lifespan_seconds,
                "shape": shape_id(client),
            },
        )
        pipe.sadd(self._user(client.user_id), client.queue_id)
        if client.all_public_streams:
            pipe.sadd(self._public(client.realm_id), client.queue_id)
        pipe.zadd(self._queues_key, {client.queue_id: deadline})
        expires = client.lifespan_seconds + KEY_EXPIRY_SLACK_SECONDS
        pipe.expire(self._q(client.queue_id), expires)
        # Shared keys are only ever lengthened: here (GT, or NX for a key with no expiry
        # yet) and by every poll (_FETCH).
        for key in (self._user(client.user_id), self._public(client.realm_id), self._queues_key):
            pipe.expire(key, expires, nx=True)
            pipe.expire(key, expires, gt=True)
        pipe.execute()
        self._remember(client)
        self._shapes.learn(client)

    def deliver(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None:
        try:
            # Held in order while Redis is unreachable, delivered when it returns.
            self._backlog.deliver(realm_id, event, user_ids)
        except RedisError:
            # Not an outage (held above) but a failure of this event: the write is
            # committed, and failing the request now would misreport it.
            logger.exception("Could not deliver a %s event to Redis queues", event.get("type"))

    def _deliver_now(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None:
        """One round trip: the publish script finds the recipient queues and appends to
        those of the shapes sent along; any others are tailored here and appended after."""
        tailoring = Tailoring(event)
        sender = tailoring.sender_queue_id
        skipped = tailoring.skipped_user_ids
        shapes: list[str | bytes] = []
        for key, neutral in self._shapes.known():
            shapes.append(key)
            shapes.append(_head(tailoring.for_client(neutral)))
            if sender is None:
                shapes.append(b"")
            else:
                shapes.append(_head(tailoring.for_client(dataclasses.replace(neutral, queue_id=sender))))
        args: list[str | int | bytes] = [
            self._channel,
            self.prefix,
            realm_id,
            sender or "",
            "1" if reaches_all_public_streams_clients(event) else "0",
            len(user_ids),
            *user_ids,
            len(skipped),
            *skipped,
            len(shapes) // 3,
            *shapes,
        ]
        left = cast(list[str], self._publish_script(keys=[], args=args))
        if left:
            self._append_tailored(realm_id, tailoring, left)

    def _append_tailored(self, realm_id: int, tailoring: Tailoring, queue_ids: Iterable[str]) -> None:
        keys: list[str] = []
        targets: list[str | int] = []
        bodies: dict[int, int] = {}
        heads: list[bytes] = []
        for queue_id, client in sorted(self._descriptors_for(queue_ids).items()):
            if client.realm_id != realm_id:
                continue
            shared = tailoring.for_client(client)
            if shared is not None:
                index = bodies.get(id(shared))
                if index is None:
                    heads.append(shared.head())
                    index = bodies[id(shared)] = len(heads)
                keys += [self._q(queue_id), self._ev(queue_id)]
                targets += [queue_id, index]
        if keys:
            self._append_script(keys=keys, args=[self._channel, len(heads), *heads, *targets])

    def _append_one(self, queue_id: str, event: EventDict) -> tuple[list[str], list[Any]]:
        keys = [self._q(queue_id), self._ev(queue_id)]
        return keys, [self._channel, 1, SharedEvent(event).head(), queue_id, 1]

    def append(self, queue_id: str, event: EventDict) -> None:
        keys, args = self._append_one(queue_id, event)
        self._append_script(keys=keys, args=args)

    def _fetch_keys_and_args(self, request: FetchRequest) -> tuple[list[str], list[Any]]:
        queue_id = request.queue_id
        keys = [self._q(queue_id), self._ev(queue_id), self._queues_key]
        args = [
            queue_id,
            request.user_id,
            "" if request.last_event_id is None else request.last_event_id,
            request.token,
            "1" if request.claim else "0",
            "1" if request.final else "0",
            repr(self.now()),
            request.hold_seconds,
            self._channel,
            self.prefix,
            KEY_EXPIRY_SLACK_SECONDS,
        ]
        return keys, args

    @staticmethod
    def _fetch_result(request: FetchRequest, result: Any) -> FetchResult:
        status = result[0]
        if status == "missing":
            raise BadEventQueueIdError(request.queue_id)
        if status == "pruned":
            assert request.last_event_id is not None
            raise EventsAlreadyPrunedError(request.last_event_id)
        # Spliced into the response as they are: no parsing.
        return FetchResult(result[2], result[1] == "1")

    def fetch(self, request: FetchRequest) -> FetchResult:
        keys, args = self._fetch_keys_and_args(request)
        return self._fetch_result(request, self._fetch_script(keys=keys, args=args))

    def _scripts_for_this_loop(self) -> AsyncScripts:
        loop = asyncio.get_running_loop()
        scripts = self._async_clients.get(loop)
        if scripts is None:
            scripts = AsyncScripts(self._url)
            self._async_clients[loop] = scripts
        return scripts

    async def afetch(self, request: FetchRequest) -> FetchResult:
        keys, args = self._fetch_keys_and_args(request)
        return self._fetch_result(request, await self._scripts_for_this_loop().fetch(keys=keys, args=args))

    async def aappend(self, queue_id: str, event: EventDict) -> None:
        keys, args = self._append_one(queue_id, event)
        await self._scripts_for_this_loop().append(keys=keys, args=args)

    def _remove(self, queue_id: str, mode: str, user_id: int | None, now: float) -> bool:
        removed = self._remove_script(
            keys=[self._q(queue_id), self._ev(queue_id), self._queues_key],
            args=[queue_id, self.prefix, self._channel, mode, "" if user_id is None else user_id, repr(now)],
        )
        return bool(removed)

    def _evict_least_recently_used(self, user_id: int, now: float) -> None:
        """Make room for one more queue of the user: their queues' deadlines order them by
        last use. Each removal is the atomic delete script, so racing registrations at most
        evict one queue more than needed, never corrupt one."""
        mine = sorted(cast(set[str], self._client.smembers(self._user(user_id))))
        excess = len(mine) + 1 - self.max_queues_per_user
        if excess <= 0:
            return
        deadlines = self._client.zmscore(self._queues_key, mine)
        by_age = sorted(zip(mine, deadlines, strict=True), key=lambda pair: pair[1] or 0.0)
        for queue_id, _deadline in by_age[:excess]:
            self._remove(queue_id, "delete", user_id, now)

    def delete_queue(self, user_id: int, queue_id: str) -> None:
        if not self._remove(queue_id, "delete", user_id, self.now()):
            raise BadEventQueueIdError(queue_id)

    def collect_garbage(self, now: float | None = None) -> list[str]:
        now = self.now() if now is None else now
        removed: list[str] = []
        while True:
            batch = cast(
                list[str], self._client.zrangebyscore(self._queues_key, "-inf", now, start=0, num=500)
            )
            # Each removal re-checks the deadline atomically: a queue polled meanwhile (by
            # any process) survives, and two processes collecting at once do no harm.
            removed += [queue_id for queue_id in batch if self._remove(queue_id, "collect", None, now)]
            if len(batch) < 500:
                return removed

    def queue_count_for_metrics(self) -> int:
        return int(self._client.zcard(self._queues_key))

    def should_collect(self) -> bool:
        """One process per interval does the scan; the others skip it."""
        lock = self._client.set(
            self.prefix + "gc-lock", secrets.token_hex(4), nx=True, px=int(self.gc_interval_seconds * 900)
        )
        return bool(lock)

    # Waiting ---------------------------------------------------------------------------

    async def prepare_to_wait(self) -> None:
        if not self._subscription.ready:
            # Briefly: during an outage every poll would otherwise hold a worker thread for
            # the full wait. Waiting less is safe, as a new subscription wakes every waiter.
            await self.run_blocking(self._subscription.ensure_started, _SUBSCRIBE_WAIT_SECONDS)

    async def start(self) -> None:
        # Redis down at start-up fails the first attempt at once (connection refused); the
        # subscription keeps retrying and /health/ready says so meanwhile.
        await self.run_blocking(
            functools.partial(self._subscription.ensure_started, until_first_attempt=True)
        )
        await super().start()

    async def stop(self) -> None:
        await super().stop()
        scripts = self._async_clients.pop(asyncio.get_running_loop(), None)
        if scripts is not None:
            await scripts.client.aclose()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._backlog.close()
        self._subscription.stop()
        self._client.close()

    def keys(self) -> list[str]:
        """Every key of this deployment's queues (for tests and operators)."""
        return [str(key) for key in self._client.scan_iter(match=self.prefix + "*")]

    def delete_everything(self) -> None:
        """Remove every queue of this deployment (tests; operators resetting state)."""
        keys = self.keys()
        if keys:
            self._client.delete(*keys)
