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
import contextlib
import hashlib
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
from redis.exceptions import NoScriptError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from palaver.events.backlog import DeliveryBacklog
from palaver.events.bus import EventDict
from palaver.events.queues import (
    BadEventQueueIdError,
    ClientDescriptor,
    EventsAlreadyPrunedError,
    FetchRequest,
    FetchResult,
    QueueBackend,
    Waiters,
    event_for_client,
    reaches_all_public_streams_clients,
)
from palaver.timeutil import Clock, utcnow

logger = logging.getLogger("palaver.events")

# Descriptors never change after registration, so each process remembers the ones it has
# read; this bounds that memory (entries of deleted queues are simply never used again).
_DESCRIPTOR_CACHE_SIZE = 50_000
# Connections each event loop uses for long-polls, and reads sent in one pipeline.
_ASYNC_CONNECTIONS = 16
_FETCH_BATCH = 500
# How long a long-poll waits for this process's subscription to (re)connect.
_SUBSCRIBE_WAIT_SECONDS = 1.0

# Keys outlive their queue's deadline by this much, then Redis deletes them itself: a
# deployment whose processes are all gone leaves nothing behind for ever.
KEY_EXPIRY_SLACK_SECONDS = 60

# Lua: make ``key`` live at least until ``until_s`` (client clock), never shortening it.
_EXTEND = """
local function extend(key, now, until_s)
  local wanted = math.ceil((until_s - now) * 1000)
  local left = redis.call('PTTL', key)
  if left == -1 or (left >= 0 and left < wanted) then
    redis.call('PEXPIRE', key, wanted)
  end
end
"""

# KEYS: q, ev, queues. ARGV: queue_id, user_id, last_event_id or "", token, claim, final,
# now, hold_seconds, channel, prefix, slack. Returns {"missing"}, {"pruned"}, or
# {"ok", done, events}.
_FETCH = (
    _EXTEND
    + """
local q, ev = KEYS[1], KEYS[2]
local queue_id, user_id, last, token = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local claim, final, now, hold, channel = ARGV[5], ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local info = redis.call('HMGET', q, 'user_id', 'deadline', 'pruned', 'poller', 'lifespan')
if not info[1] or info[1] ~= user_id or tonumber(info[2]) < now then
  return {'missing'}
end
if last ~= '' then
  local through = tonumber(last)
  if through < tonumber(info[3]) then
    return {'pruned'}
  end
  local newest = redis.call('ZREVRANGEBYSCORE', ev, through, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if #newest > 0 then
    redis.call('HSET', q, 'pruned', newest[2])
    redis.call('ZREMRANGEBYSCORE', ev, '-inf', through)
  end
end
local poller = info[4]
if claim == '1' then
  if poller and poller ~= token then
    redis.call('PUBLISH', channel, queue_id)
  end
  redis.call('HSET', q, 'poller', token)
  poller = token
end
local events = redis.call('ZRANGE', ev, 0, -1)
local lifespan = tonumber(info[5])
local done = final == '1' or #events > 0 or poller ~= token
local deadline
if done then
  if poller == token then
    redis.call('HDEL', q, 'poller')
  end
  deadline = now + lifespan
else
  deadline = now + math.max(lifespan, hold)
end
redis.call('HSET', q, 'deadline', deadline)
redis.call('ZADD', KEYS[3], deadline, queue_id)
local prefix, expires = ARGV[10], deadline + tonumber(ARGV[11])
for _, key in ipairs({q, ev, KEYS[3], prefix .. 'user:' .. info[1],
                      prefix .. 'public:' .. redis.call('HGET', q, 'realm_id')}) do
  extend(key, now, expires)
end
return {'ok', done and '1' or '0', events}
"""
)

# KEYS: q1, ev1, q2, ev2, ... ARGV: channel, queue_id1, event_json1, queue_id2, ...
# Each event's JSON arrives without its ID; the ID is spliced in as the first member.
_APPEND = """
local woken = {}
for i = 1, #KEYS / 2 do
  local q, ev = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.call('EXISTS', q) == 1 then
    local id = redis.call('HINCRBY', q, 'next_id', 1) - 1
    local body = ARGV[2 * i + 1]
    redis.call('ZADD', ev, id, '{"id":' .. id .. ',' .. string.sub(body, 2))
    -- The events expire with their queue (whose expiry each poll extends).
    local left = redis.call('PTTL', q)
    if left > 0 then
      redis.call('PEXPIRE', ev, left)
    end
    woken[#woken + 1] = ARGV[2 * i]
  end
end
if #woken > 0 then
  redis.call('PUBLISH', ARGV[1], table.concat(woken, ' '))
end
return #woken
"""

# KEYS: q, ev, queues. ARGV: queue_id, prefix, channel, mode, user_id, now.
# mode "delete": only the owner's, unexpired queue. mode "collect": only if expired at now.
_REMOVE = """
local q, ev, queues = KEYS[1], KEYS[2], KEYS[3]
local queue_id, prefix, channel, mode, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[6])
local info = redis.call('HMGET', q, 'user_id', 'realm_id', 'deadline')
local score = redis.call('ZSCORE', queues, queue_id)
if not score and not info[1] then
  return 0
end
local deadline = tonumber(score or info[3])
if mode == 'delete' then
  if not info[1] or info[1] ~= ARGV[5] or deadline < now then
    return 0
  end
elseif deadline > now then
  return 0
end
redis.call('DEL', q, ev)
redis.call('ZREM', queues, queue_id)
if info[1] then
  redis.call('SREM', prefix .. 'user:' .. info[1], queue_id)
  redis.call('SREM', prefix .. 'public:' .. info[2], queue_id)
end
redis.call('PUBLISH', channel, queue_id)
return 1
"""


class _Subscription:
    """This process's one subscription to ``notify``, on a thread of its own."""

    def __init__(self, client: redis.Redis, channel: str, waiters: Waiters) -> None:
        self._client = client
        self._channel = channel
        self._waiters = waiters
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._lost = False

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def ensure_started(self, timeout: float = 5.0) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="palaver-event-notify", daemon=True)
                self._thread.start()
        self._ready.wait(timeout)

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
        backoff = 0.1
        while not self._stop.is_set():
            # redis-py leaves pubsub() unannotated.
            pubsub = self._client.pubsub()  # type: ignore[no-untyped-call]
            try:
                pubsub.subscribe(self._channel)
                while not self._stop.is_set():
                    message = pubsub.get_message(timeout=1.0)
                    if message is None:
                        continue
                    if message["type"] == "subscribe":
                        self._ready.set()
                        if self._lost:
                            self._lost = False
                            logger.warning("Redis event subscription restored")
                        # Anything announced while we were not listening is unheard; every
                        # waiting request reads its queue again.
                        self._waiters.wake_all()
                        backoff = 0.1
                    elif message["type"] == "message":
                        self._waiters.wake(str(message["data"]).split())
            except RedisError as error:
                self._ready.clear()
                if not self._stop.is_set():
                    if not self._lost:
                        # Once per outage, not once per reconnection attempt.
                        self._lost = True
                        logger.warning("Lost the Redis event subscription (%s); reconnecting", error)
                    self._stop.wait(backoff)
                    backoff = min(backoff * 2, 5.0)
            finally:
                pubsub.close()


class _AsyncScripts:
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
        self.fetch_script = self.client.register_script(_FETCH)
        self.append = self.client.register_script(_APPEND)
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
            await self.client.script_load(_FETCH)
            return await self._run(batch)
        return results


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
        self._async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _AsyncScripts] = (
            weakref.WeakKeyDictionary()
        )
        self._channel = key_prefix + "notify"
        self._queues_key = key_prefix + "queues"
        self._fetch_script = self._client.register_script(_FETCH)
        self._append_script = self._client.register_script(_APPEND)
        self._remove_script = self._client.register_script(_REMOVE)
        self._subscription = _Subscription(self._client, self._channel, self._waiters)
        self._descriptors: dict[str, ClientDescriptor] = {}
        self._descriptor_lock = threading.Lock()
        self._closed = False

    @staticmethod
    def default_key_prefix(database_url: str) -> str:
        """A prefix per database, so deployments sharing one Redis never mix their queues."""
        digest = hashlib.sha256(database_url.encode()).hexdigest()[:12]
        return f"palaver:{digest}:events:"

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

    def deliver(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None:
        try:
            # Held in order while Redis is unreachable, delivered when it returns.
            self._backlog.deliver(realm_id, event, user_ids)
        except RedisError:
            # Not an outage (held above) but a failure of this event: the write is
            # committed, and failing the request now would misreport it.
            logger.exception("Could not deliver a %s event to Redis queues", event.get("type"))

    def _deliver_now(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None:
        sets = [self._user(user_id) for user_id in user_ids]
        if reaches_all_public_streams_clients(event):
            sets.append(self._public(realm_id))
        queue_ids = cast(set[str], self._client.sunion(sets)) if sets else set()
        keys: list[str] = []
        args: list[str] = [self._channel]
        for queue_id, client in sorted(self._descriptors_for(queue_ids).items()):
            if client.realm_id != realm_id:
                continue
            tailored = event_for_client(client, event)
            if tailored is not None:
                keys += [self._q(queue_id), self._ev(queue_id)]
                args += [queue_id, orjson.dumps(tailored).decode()]
        if keys:
            self._append_script(keys=keys, args=args)

    def append(self, queue_id: str, event: EventDict) -> None:
        self._append_script(
            keys=[self._q(queue_id), self._ev(queue_id)],
            args=[self._channel, queue_id, orjson.dumps(event).decode()],
        )

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
        return FetchResult([orjson.loads(raw) for raw in result[2]], result[1] == "1")

    def fetch(self, request: FetchRequest) -> FetchResult:
        keys, args = self._fetch_keys_and_args(request)
        return self._fetch_result(request, self._fetch_script(keys=keys, args=args))

    def _scripts_for_this_loop(self) -> _AsyncScripts:
        loop = asyncio.get_running_loop()
        scripts = self._async_clients.get(loop)
        if scripts is None:
            scripts = _AsyncScripts(self._url)
            self._async_clients[loop] = scripts
        return scripts

    async def afetch(self, request: FetchRequest) -> FetchResult:
        keys, args = self._fetch_keys_and_args(request)
        return self._fetch_result(request, await self._scripts_for_this_loop().fetch(keys=keys, args=args))

    async def aappend(self, queue_id: str, event: EventDict) -> None:
        await self._scripts_for_this_loop().append(
            keys=[self._q(queue_id), self._ev(queue_id)],
            args=[self._channel, queue_id, orjson.dumps(event).decode()],
        )

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
        await self.run_blocking(self._subscription.ensure_started)
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
