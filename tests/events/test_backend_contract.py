"""One contract for every queue store: the same tests run against memory and Redis.

Redis runs at PALAVER_TEST_REDIS_URL (default redis://127.0.0.1:6379/0); each test uses
its own key prefix and deletes its keys afterwards. Without a reachable Redis the Redis
cases are skipped.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from palaver.events.memory_backend import MemoryQueueBackend
from palaver.events.queues import (
    BadEventQueueIdError,
    ClientDescriptor,
    EventsAlreadyPrunedError,
    QueueBackend,
    new_queue_id,
)
from tests import helpers
from tests.helpers import Clock, require_redis, until, wait_until

REDIS_URL = helpers.REDIS_URL
# Long enough that a loaded machine never mistakes a slow wake-up for a quiet queue.
HEARTBEAT = 5.0
# For the tests about heartbeats themselves.
SHORT_HEARTBEAT = 0.4
# Wake-ups must reach waiting requests within this.
PROMPT = 1.0
REALM = 1
HAMLET, OTHELLO = 10, 11

BackendFactory = Callable[..., QueueBackend]


def _redis_available() -> bool:
    try:
        import redis

        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:
        return False


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["memory", "redis"])
def make_backend(request: pytest.FixtureRequest, clock: Clock) -> Iterator[BackendFactory]:
    """Builds backends of one kind; Redis ones made by one test share their keys, as the
    processes of one server do. All of them read the test's clock."""
    made: list[QueueBackend] = []
    prefix = f"palaver-test:{uuid.uuid4().hex}:"
    if request.param == "redis":
        require_redis(REDIS_URL)

    def make(**kw: Any) -> QueueBackend:
        options: dict[str, Any] = {
            "idle_timeout_seconds": 600,
            "heartbeat_seconds": HEARTBEAT,
            "clock": clock,
            **kw,
        }
        backend: QueueBackend
        if request.param == "memory":
            backend = MemoryQueueBackend(**options)
        else:
            from palaver.events.redis_backend import RedisQueueBackend

            backend = RedisQueueBackend(REDIS_URL, key_prefix=prefix, **options)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        backend.close()
    if request.param == "redis":
        import redis

        client = redis.Redis.from_url(REDIS_URL)
        keys = list(client.scan_iter(match=prefix + "*"))
        if keys:
            client.delete(*keys)
        client.close()


@pytest.fixture
def backend(make_backend: BackendFactory) -> QueueBackend:
    return make_backend()


def register(
    backend: QueueBackend, user_id: int = HAMLET, *, realm_id: int = REALM, lifespan: int = 600, **kw: Any
) -> str:
    client = ClientDescriptor(
        queue_id=new_queue_id(), user_id=user_id, realm_id=realm_id, lifespan_seconds=lifespan, **kw
    )
    backend.create_queue(client)
    return client.queue_id


def settings_event(value: object = True, prop: str = "enter_sends") -> dict[str, Any]:
    return {"type": "user_settings", "op": "update", "property": prop, "value": value}


async def poll(
    backend: QueueBackend,
    queue_id: str,
    last_event_id: int | None = -1,
    *,
    user_id: int = HAMLET,
    block: bool = False,
) -> list[dict[str, Any]]:
    return await backend.get_events(
        user_id=user_id, queue_id=queue_id, last_event_id=last_event_id, dont_block=not block
    )


def publish_later(
    backend: QueueBackend, delay: float, event: dict[str, Any], user_ids: list[int]
) -> threading.Thread:
    """Publish from another thread, as a committing request does (``delay`` seconds later: the
    heartbeat race needs real thread timing)."""

    def run() -> None:
        if delay:
            time.sleep(delay)
        backend.publish(REALM, event, user_ids)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def publish_once_parked(
    waiting: QueueBackend, publisher: QueueBackend, event: dict[str, Any], user_ids: list[int]
) -> threading.Thread:
    """Publish from another thread once a long-poll waits in ``waiting``."""

    def run() -> None:
        wait_until(lambda: waiting.parked_polls >= 1)
        publisher.publish(REALM, event, user_ids)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


async def test_new_queue_is_empty_and_events_get_increasing_ids(backend: QueueBackend) -> None:
    queue_id = register(backend)
    assert await poll(backend, queue_id) == []
    backend.publish(REALM, settings_event(True), [HAMLET])
    backend.publish(REALM, settings_event(False), [HAMLET, OTHELLO])
    events = await poll(backend, queue_id)
    assert [e["id"] for e in events] == [0, 1]
    assert events[0] == {**settings_event(True), "id": 0}


async def test_events_reach_only_the_queues_of_their_recipients(backend: QueueBackend) -> None:
    hamlet_queue = register(backend, HAMLET)
    othello_queue = register(backend, OTHELLO)
    other_realm_queue = register(backend, HAMLET, realm_id=REALM + 1)
    backend.publish(REALM, settings_event(), [OTHELLO])
    assert await poll(backend, hamlet_queue) == []
    assert len(await poll(backend, othello_queue, user_id=OTHELLO)) == 1
    assert await poll(backend, other_realm_queue) == []


async def test_event_types_filter(backend: QueueBackend) -> None:
    only_users = register(backend, event_types=frozenset({"realm_user"}))
    everything = register(backend)
    backend.publish(REALM, settings_event(), [HAMLET])
    backend.publish(
        REALM, {"type": "realm_user", "op": "update", "person": {"user_id": 1, "full_name": "X"}}, [HAMLET]
    )
    assert [e["type"] for e in await poll(backend, only_users)] == ["realm_user"]
    assert [e["type"] for e in await poll(backend, everything)] == ["user_settings", "realm_user"]


async def test_last_event_id_acknowledges_and_prunes(backend: QueueBackend) -> None:
    queue_id = register(backend)
    for value in range(3):
        backend.publish(REALM, settings_event(value), [HAMLET])
    assert [e["id"] for e in await poll(backend, queue_id, 0)] == [1, 2]
    # Asking again from the same point (a retried request) returns the same events.
    assert [e["id"] for e in await poll(backend, queue_id, 0)] == [1, 2]
    assert await poll(backend, queue_id, 2) == []
    backend.publish(REALM, settings_event(9), [HAMLET])
    assert [e["id"] for e in await poll(backend, queue_id, 2)] == [3]
    # Without last_event_id nothing is acknowledged.
    assert [e["id"] for e in await poll(backend, queue_id, None)] == [3]


async def test_acknowledging_less_than_was_pruned_is_an_error(backend: QueueBackend) -> None:
    queue_id = register(backend)
    for value in range(3):
        backend.publish(REALM, settings_event(value), [HAMLET])
    await poll(backend, queue_id, 1)
    with pytest.raises(EventsAlreadyPrunedError, match="An event newer than 0 has already been pruned!"):
        await poll(backend, queue_id, 0)


async def test_unknown_or_foreign_queue(backend: QueueBackend) -> None:
    queue_id = register(backend, HAMLET)
    with pytest.raises(BadEventQueueIdError) as raised:
        await poll(backend, queue_id, user_id=OTHELLO)
    assert raised.value.to_dict() == {
        "result": "error",
        "msg": f"Bad event queue id: {queue_id}",
        "code": "BAD_EVENT_QUEUE_ID",
        "queue_id": queue_id,
    }
    with pytest.raises(BadEventQueueIdError):
        await poll(backend, "no-such-queue")
    with pytest.raises(BadEventQueueIdError):
        backend.delete_queue(OTHELLO, queue_id)


async def test_delete_queue(backend: QueueBackend) -> None:
    queue_id = register(backend)
    backend.delete_queue(HAMLET, queue_id)
    assert backend.get_client(queue_id) is None
    with pytest.raises(BadEventQueueIdError):
        await poll(backend, queue_id)
    with pytest.raises(BadEventQueueIdError):
        backend.delete_queue(HAMLET, queue_id)
    # Publishing to a user whose queue is gone is harmless.
    backend.publish(REALM, settings_event(), [HAMLET])


async def test_descriptor_round_trips(backend: QueueBackend) -> None:
    queue_id = register(
        backend,
        event_types=frozenset({"message", "user_settings"}),
        apply_markdown=True,
        narrow=[{"operator": "channel", "operand": "Denmark", "negated": False}],
        client_capabilities={"user_settings_object": True},
    )
    client = backend.get_client(queue_id)
    assert client is not None
    assert (client.user_id, client.realm_id, client.apply_markdown) == (HAMLET, REALM, True)
    assert client.event_types == frozenset({"message", "user_settings"})
    assert client.narrow == [{"operator": "channel", "operand": "Denmark", "negated": False}]
    assert client.has_capability("user_settings_object")


async def test_long_poll_wakes_when_an_event_is_published(backend: QueueBackend) -> None:
    queue_id = register(backend)
    started = time.monotonic()
    thread = publish_once_parked(backend, backend, settings_event(), [HAMLET])
    events = await poll(backend, queue_id, block=True)
    thread.join()
    assert [e["type"] for e in events] == ["user_settings"]
    assert time.monotonic() - started < PROMPT


async def test_long_poll_returns_a_heartbeat_when_nothing_happens(make_backend: BackendFactory) -> None:
    backend = make_backend(heartbeat_seconds=SHORT_HEARTBEAT)
    queue_id = register(backend)
    started = time.monotonic()
    events = await poll(backend, queue_id, block=True)
    assert events == [{"type": "heartbeat", "id": 0}]
    assert SHORT_HEARTBEAT * 0.9 <= time.monotonic() - started < SHORT_HEARTBEAT + 2
    # The heartbeat is acknowledged like any event.
    assert await poll(backend, queue_id, 0) == []


async def test_a_new_request_replaces_a_waiting_one(backend: QueueBackend) -> None:
    queue_id = register(backend)
    first = asyncio.create_task(poll(backend, queue_id, block=True))
    await until(lambda: backend.parked_polls == 1)
    started = time.monotonic()
    second = asyncio.create_task(poll(backend, queue_id, block=True))
    # The replaced request answers at once (its client has gone or retried).
    assert await asyncio.wait_for(first, PROMPT) == []
    assert time.monotonic() - started < PROMPT
    backend.publish(REALM, settings_event(), [HAMLET])
    assert [e["type"] for e in await second] == ["user_settings"]


async def test_many_waiting_queues_wake_together(backend: QueueBackend) -> None:
    queues = [register(backend, HAMLET) for _ in range(20)]
    polls = [asyncio.create_task(poll(backend, q, block=True)) for q in queues]
    await until(lambda: backend.parked_polls == len(queues))
    thread = publish_later(backend, 0, settings_event(), [HAMLET])
    results = await asyncio.wait_for(asyncio.gather(*polls), PROMPT * 2)
    thread.join()
    assert [[e["type"] for e in r] for r in results] == [["user_settings"]] * 20


async def test_idle_queues_are_collected(backend: QueueBackend) -> None:
    idle = register(backend, lifespan=1)
    fresh = register(backend, lifespan=600)
    assert backend.collect_garbage() == []
    removed = backend.collect_garbage(now=backend.now() + 5)
    assert removed == [idle]
    assert backend.get_client(idle) is None
    assert backend.get_client(fresh) is not None
    with pytest.raises(BadEventQueueIdError):
        await poll(backend, idle)


async def test_an_expired_queue_is_gone_before_collection_runs(backend: QueueBackend, clock: Clock) -> None:
    queue_id = register(backend, lifespan=1)
    clock.advance(1.2)
    with pytest.raises(BadEventQueueIdError):
        await poll(backend, queue_id)


async def test_polling_keeps_a_queue_alive(backend: QueueBackend, clock: Clock) -> None:
    queue_id = register(backend, lifespan=1)
    for _ in range(3):
        clock.advance(0.5)
        await poll(backend, queue_id)
    assert backend.get_client(queue_id) is not None


async def test_a_waiting_request_keeps_its_queue_from_collection(make_backend: BackendFactory) -> None:
    backend = make_backend(heartbeat_seconds=SHORT_HEARTBEAT)
    queue_id = register(backend, lifespan=1)
    waiting = asyncio.create_task(poll(backend, queue_id, block=True))
    await until(lambda: backend.parked_polls == 1)
    assert backend.collect_garbage(now=backend.now() + 2) == []
    assert (await waiting)[0]["type"] == "heartbeat"


async def test_events_for_the_heartbeat_race_are_not_lost(backend: QueueBackend) -> None:
    """Events published while a request is between reads still reach that request."""
    queue_id = register(backend)
    for i in range(10):
        thread = publish_later(backend, 0.001 * i, settings_event(i), [HAMLET])
        events = await poll(backend, queue_id, i - 1, block=True)
        thread.join()
        assert [e["property"] for e in events if e["type"] == "user_settings"] == ["enter_sends"]
        assert events[-1]["id"] == i


async def test_listeners_see_every_published_event(backend: QueueBackend) -> None:
    seen: list[tuple[int, dict[str, Any], list[int]]] = []

    def listener(realm_id: int, event: dict[str, Any], user_ids: Any) -> None:
        seen.append((realm_id, event, list(user_ids)))

    backend.add_listener(listener)
    backend.publish(REALM, settings_event(), [HAMLET])
    backend.remove_listener(listener)
    backend.publish(REALM, settings_event(), [HAMLET])
    assert seen == [(REALM, settings_event(), [HAMLET])]


# Several processes sharing one store (Redis) ------------------------------------------------


@pytest.fixture
def two_processes(make_backend: BackendFactory) -> tuple[QueueBackend, QueueBackend]:
    """Two backends on the same keys, as two server processes have."""
    first, second = make_backend(), make_backend()
    if isinstance(first, MemoryQueueBackend):
        pytest.skip("in-process queues belong to one process")
    return first, second


async def test_any_process_serves_any_queue(two_processes: tuple[QueueBackend, QueueBackend]) -> None:
    first, second = two_processes
    queue_id = register(first)
    assert second.get_client(queue_id) is not None
    first.publish(REALM, settings_event(1), [HAMLET])
    second.publish(REALM, settings_event(2), [HAMLET])
    assert [e["value"] for e in await poll(second, queue_id)] == [1, 2]
    assert [e["value"] for e in await poll(first, queue_id, 0)] == [2]


async def test_publishing_in_one_process_wakes_a_request_waiting_in_another(
    two_processes: tuple[QueueBackend, QueueBackend],
) -> None:
    first, second = two_processes
    queue_id = register(first)
    started = time.monotonic()
    thread = publish_once_parked(first, second, settings_event(), [HAMLET])
    events = await poll(first, queue_id, block=True)
    thread.join()
    assert [e["type"] for e in events] == ["user_settings"]
    assert time.monotonic() - started < PROMPT


async def test_a_request_in_another_process_replaces_a_waiting_one(
    two_processes: tuple[QueueBackend, QueueBackend],
) -> None:
    first, second = two_processes
    queue_id = register(first)
    waiting = asyncio.create_task(poll(first, queue_id, block=True))
    await until(lambda: first.parked_polls == 1)
    replacing = asyncio.create_task(poll(second, queue_id, block=True))
    assert await asyncio.wait_for(waiting, PROMPT) == []
    second.publish(REALM, settings_event(), [HAMLET])
    assert [e["type"] for e in await replacing] == ["user_settings"]


async def test_queues_outlive_the_process_that_made_them(make_backend: BackendFactory) -> None:
    first = make_backend()
    if isinstance(first, MemoryQueueBackend):
        pytest.skip("in-process queues belong to one process")
    queue_id = register(first)
    first.publish(REALM, settings_event(), [HAMLET])
    # Nothing is handed over: the first process just stops existing (as after kill -9).
    del first
    survivor = make_backend()
    survivor.publish(REALM, settings_event(False), [HAMLET])
    assert [e["id"] for e in await poll(survivor, queue_id)] == [0, 1]


async def test_processes_collecting_together_remove_each_queue_once(
    two_processes: tuple[QueueBackend, QueueBackend],
) -> None:
    first, second = two_processes
    idle = [register(first, lifespan=1) for _ in range(30)]
    kept = register(second, lifespan=600)
    later = first.now() + 5
    results: list[list[str]] = [[], []]

    def collect(index: int, backend: QueueBackend) -> None:
        results[index] = backend.collect_garbage(now=later)

    threads = [threading.Thread(target=collect, args=(i, b)) for i, b in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results[0] + results[1]) == sorted(idle)
    assert second.get_client(kept) is not None
    # Only one process per interval runs the periodic scan.
    assert [first.should_collect(), second.should_collect()].count(True) == 1


async def test_deleted_queues_leave_no_keys(make_backend: BackendFactory) -> None:
    backend = make_backend()
    if isinstance(backend, MemoryQueueBackend):
        pytest.skip("Redis keys only")
    from palaver.events.redis_backend import RedisQueueBackend

    assert isinstance(backend, RedisQueueBackend)
    queue_id = register(backend, all_public_streams=True)
    backend.publish(REALM, settings_event(), [HAMLET])
    backend.delete_queue(HAMLET, queue_id)
    expired = register(backend, lifespan=1)
    backend.publish(REALM, settings_event(), [HAMLET])
    backend.collect_garbage(now=backend.now() + 5)
    assert backend.get_client(expired) is None
    assert backend.keys() == []


async def test_registering_past_the_per_user_cap_collects_the_least_recently_used(
    backend: QueueBackend, clock: Clock
) -> None:
    backend.max_queues_per_user = 3
    others = register(backend, OTHELLO)
    first, second, third = (register(backend) for _ in range(3))
    clock.advance(0.01)
    await poll(backend, first)  # used since: the least recently used is now ``second``
    fourth = register(backend)
    with pytest.raises(BadEventQueueIdError):
        await poll(backend, second)
    for queue_id in (first, third, fourth):
        await poll(backend, queue_id)
    await poll(backend, others, user_id=OTHELLO)


async def test_realm_deactivation_closes_the_recipients_queues(backend: QueueBackend) -> None:
    backend.realm_close_delay_seconds = 0.0
    hamlet_queues = [register(backend, HAMLET), register(backend, HAMLET)]
    othello_queue = register(backend, OTHELLO)
    assert sorted(backend.queue_ids_for_user(HAMLET)) == sorted(hamlet_queues)
    backend.publish(REALM, {"type": "realm", "op": "deactivated", "realm_id": REALM}, [HAMLET])
    await until(lambda: backend.queue_ids_for_user(HAMLET) == [])
    assert all(backend.get_client(q) is None for q in hamlet_queues)
    assert backend.get_client(othello_queue) is not None


async def test_every_key_expires_even_if_no_process_is_left(make_backend: BackendFactory) -> None:
    """Queues must not outlive their idle timeout in Redis when every server is gone."""
    backend = make_backend()
    if isinstance(backend, MemoryQueueBackend):
        pytest.skip("Redis keys only")
    from palaver.events.redis_backend import KEY_EXPIRY_SLACK_SECONDS, RedisQueueBackend

    assert isinstance(backend, RedisQueueBackend)
    queue_id = register(backend, all_public_streams=True, lifespan=300)
    backend.publish(REALM, settings_event(), [HAMLET])
    await poll(backend, queue_id, None)
    backend.publish(REALM, settings_event(False), [HAMLET])
    keys = backend.keys()
    assert len(keys) >= 5  # q, ev, user, public, queues
    client = backend._client
    for key in keys:
        ttl = client.ttl(key)
        assert 0 < ttl <= 300 + _HOLD + KEY_EXPIRY_SLACK_SECONDS, (key, ttl)


_HOLD = HEARTBEAT + 30


async def test_draining_answers_parked_polls_at_once(make_backend: BackendFactory) -> None:
    """On SIGTERM the server drains: a parked poll answers with a heartbeat, new ones do not park."""
    backend = make_backend(heartbeat_seconds=30)
    queue_id = register(backend)
    other = register(backend, OTHELLO)
    waiting = asyncio.ensure_future(poll(backend, queue_id, block=True))
    await until(lambda: backend.parked_polls == 1)
    assert not waiting.done()
    started = time.monotonic()
    backend.begin_draining()
    events = await asyncio.wait_for(waiting, PROMPT)
    assert [e["type"] for e in events] == ["heartbeat"]
    assert time.monotonic() - started < PROMPT
    # Arriving while the process stops: answered at once too.
    late = await asyncio.wait_for(poll(backend, other, user_id=OTHELLO, block=True), PROMPT)
    assert [e["type"] for e in late] == ["heartbeat"]


async def test_parked_polls_are_capped_per_user_and_per_process(make_backend: BackendFactory) -> None:
    from palaver.lib.operational_errors import ServiceUnavailableError, TooManyLongPollsError

    backend = make_backend(heartbeat_seconds=30)
    backend.max_parked_per_user = 2
    backend.max_parked = 3
    mine = [register(backend) for _ in range(3)]
    parked = [asyncio.ensure_future(poll(backend, q, block=True)) for q in mine[:2]]
    await until(lambda: backend.parked_polls == 2)
    with pytest.raises(TooManyLongPollsError):
        await poll(backend, mine[2], block=True)
    # Not blocking costs nothing to hold: always allowed.
    assert await poll(backend, mine[2]) == []
    theirs = [register(backend, OTHELLO) for _ in range(2)]
    parked.append(asyncio.ensure_future(poll(backend, theirs[0], user_id=OTHELLO, block=True)))
    await until(lambda: backend.parked_polls == 3)
    with pytest.raises(ServiceUnavailableError):
        await poll(backend, theirs[1], user_id=OTHELLO, block=True)
    assert backend.waiting_requests == 3
    backend.begin_draining()
    await asyncio.wait_for(asyncio.gather(*parked), PROMPT)
