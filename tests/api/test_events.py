"""GET /events and DELETE /events: delivery, acknowledgement, long-polls, heartbeats, expiry."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from palaver.app import create_app
from palaver.events.memory_backend import MemoryQueueBackend
from palaver.events.types import validate_event
from palaver.services import Services, build_services
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import (
    Api,
    FrozenClock,
    SeededRealm,
    assert_json_error,
    assert_json_success,
    basic_auth,
    encode_params,
    require_redis,
    until,
    wait_until,
)
from tests.helpers import (
    TestUser as User,
)


def register(api: Api, user: User, **params: Any) -> dict[str, Any]:
    return assert_json_success(api.post(user, "register", params))


def get_events(api: Api, user: User, queue_id: str, last_event_id: int = -1, **params: Any) -> dict[str, Any]:
    params.setdefault("dont_block", True)
    return assert_json_success(
        api.get(user, "events", {"queue_id": queue_id, "last_event_id": last_event_id, **params})
    )


def assert_bad_queue(response: httpx.Response, queue_id: str) -> None:
    body = assert_json_error(response, f"Bad event queue id: {queue_id}", 400, "BAD_EVENT_QUEUE_ID")
    assert body["queue_id"] == queue_id


@contextmanager
def custom_server(
    database_url: str, data_dir: Path, **overrides: object
) -> Iterator[tuple[TestClient, Services]]:
    """An app with its own settings (and queues) on the shared test database."""
    settings = make_test_settings(database_url, data_dir, **overrides)
    services = build_services(settings)
    with TestClient(create_app(settings, services), base_url="http://palaver.test") as client:
        yield client, services


def test_events_arrive_in_order_with_ids(api: Api, realm: SeededRealm) -> None:
    queue = register(api, realm.hamlet)
    assert queue["last_event_id"] == -1
    body = get_events(api, realm.hamlet, queue["queue_id"])
    assert body["events"] == []
    assert body["queue_id"] == queue["queue_id"]

    assert_json_success(api.patch(realm.hamlet, "settings", {"twenty_four_hour_time": True}))
    assert_json_success(api.patch(realm.hamlet, "settings", {"default_language": "de"}))
    events = get_events(api, realm.hamlet, queue["queue_id"])["events"]
    assert events == [
        {
            "type": "user_settings",
            "op": "update",
            "property": "twenty_four_hour_time",
            "value": True,
            "id": 0,
        },
        {
            "type": "user_settings",
            "op": "update",
            "property": "default_language",
            "value": "de",
            "language_name": "German",
            "id": 1,
        },
    ]
    for event in events:
        validate_event(event)


def test_last_event_id_prunes_acknowledged_events(api: Api, realm: SeededRealm) -> None:
    queue_id = register(api, realm.hamlet)["queue_id"]
    for value in (True, False, True):
        assert_json_success(api.patch(realm.hamlet, "settings", {"enter_sends": value}))
    assert [e["id"] for e in get_events(api, realm.hamlet, queue_id, 0)["events"]] == [1, 2]
    assert [e["id"] for e in get_events(api, realm.hamlet, queue_id, 0)["events"]] == [1, 2]
    assert get_events(api, realm.hamlet, queue_id, 2)["events"] == []
    response = api.get(realm.hamlet, "events", {"queue_id": queue_id, "last_event_id": 1, "dont_block": True})
    assert_json_error(response, "An event newer than 1 has already been pruned!")


def test_event_types_filter_the_queue(api: Api, realm: SeededRealm) -> None:
    users_only = register(api, realm.hamlet, event_types=["realm_user"])["queue_id"]
    assert_json_success(
        api.patch(realm.hamlet, "settings", {"enter_sends": True, "full_name": "Prince Hamlet"})
    )
    events = get_events(api, realm.hamlet, users_only)["events"]
    assert [(e["type"], e["op"]) for e in events] == [("realm_user", "update")]
    assert events[0]["person"] == {"user_id": realm.hamlet.id, "full_name": "Prince Hamlet"}


def test_other_users_changes_reach_the_queue(api: Api, realm: SeededRealm) -> None:
    hamlet_queue = register(api, realm.hamlet)["queue_id"]
    othello_queue = register(api, realm.othello)["queue_id"]
    assert_json_success(api.patch(realm.othello, "settings", {"full_name": "The Moor", "enter_sends": True}))
    hamlet_events = get_events(api, realm.hamlet, hamlet_queue)["events"]
    othello_events = get_events(api, realm.othello, othello_queue)["events"]
    # Everyone hears of the name; only Othello of his own setting.
    assert [e["type"] for e in hamlet_events] == ["realm_user"]
    assert sorted(e["type"] for e in othello_events) == ["realm_user", "user_settings"]


def test_bad_event_queue_id(api: Api, realm: SeededRealm) -> None:
    queue_id = register(api, realm.hamlet)["queue_id"]
    assert_bad_queue(api.get(realm.hamlet, "events", {"queue_id": "nope", "last_event_id": -1}), "nope")
    # Another user's queue looks exactly like a missing one.
    assert_bad_queue(api.get(realm.othello, "events", {"queue_id": queue_id, "last_event_id": -1}), queue_id)
    assert_bad_queue(api.delete(realm.othello, "events", {"queue_id": queue_id}), queue_id)
    response = api.get(realm.hamlet, "events", {"queue_id": "nope", "last_event_id": -1})
    # zulip-terminal recognizes a lost queue by this lowercase prefix alone.
    assert response.json()["msg"].startswith("Bad event queue id:")


def test_delete_queue(api: Api, realm: SeededRealm, services: Services) -> None:
    queue_id = register(api, realm.hamlet)["queue_id"]
    assert services.bus.get_client(queue_id) is not None
    assert_json_success(api.delete(realm.hamlet, "events", {"queue_id": queue_id}))
    assert services.bus.get_client(queue_id) is None
    assert_bad_queue(api.get(realm.hamlet, "events", {"queue_id": queue_id, "last_event_id": -1}), queue_id)
    assert_bad_queue(api.delete(realm.hamlet, "events", {"queue_id": queue_id}), queue_id)
    assert_json_error(api.delete(realm.hamlet, "events", {}), "Missing 'queue_id' argument")


def test_get_events_without_queue_registers_one(api: Api, realm: SeededRealm, services: Services) -> None:
    body = assert_json_success(
        api.get(realm.hamlet, "events", {"dont_block": True, "event_types": ["user_settings"]})
    )
    assert body["events"] == []
    client = services.bus.get_client(body["queue_id"])
    assert client is not None and client.user_id == realm.hamlet.id
    assert client.event_types == frozenset({"user_settings"})
    assert_json_success(api.patch(realm.hamlet, "settings", {"enter_sends": True, "full_name": "H"}))
    events = get_events(api, realm.hamlet, body["queue_id"])["events"]
    assert [e["type"] for e in events] == ["user_settings"]


def test_register_options_are_kept_with_the_queue(api: Api, realm: SeededRealm, services: Services) -> None:
    queue_id = register(api, realm.hamlet)["queue_id"]
    client = services.bus.get_client(queue_id)
    assert client is not None
    # Bots read the raw Markdown, so rendered content is opt-in.
    assert client.apply_markdown is False
    assert client.client_gravatar is True
    assert client.event_types is None

    queue_id = register(
        api,
        realm.hamlet,
        apply_markdown=True,
        client_gravatar=False,
        event_types="null",
        narrow=[["channel", "Denmark"]],
        client_capabilities={"notification_settings_null": True},
        all_public_streams=True,
    )["queue_id"]
    client = services.bus.get_client(queue_id)
    assert client is not None
    assert (client.apply_markdown, client.client_gravatar, client.all_public_streams) == (True, False, True)
    assert client.event_types is None
    assert client.narrow == [{"operator": "channel", "operand": "Denmark", "negated": False}]
    assert client.client_capabilities == {"notification_settings_null": True}


def test_get_events_takes_the_register_parameters() -> None:
    """Both views read the POST /register parameters from one declaration."""
    from palaver.api import events as views
    from palaver.api.params import build_param_specs

    def by_name(view: Any) -> dict[str, Any]:
        return {s.request_name: (s.default, s.adapter.core_schema) for s in build_param_specs(view, set())}

    register_params = by_name(views.register)
    get_params = by_name(views.get_events)
    assert set(get_params) - set(register_params) == {"queue_id", "last_event_id", "dont_block"}
    assert {name: get_params[name] for name in register_params} == register_params
    assert {"apply_markdown", "client_gravatar", "event_types", "narrow", "client_capabilities"} <= set(
        register_params
    )


def test_implicit_registration_validates_like_register(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.get(realm.hamlet, "events", {"narrow": "[1]"}), "Invalid narrow")
    assert_json_error(
        api.get(realm.hamlet, "events", {"apply_markdown": "yes", "dont_block": "true"}),
        'Argument "apply_markdown" is not valid JSON.',
    )


def test_invalid_parameters(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.post(realm.hamlet, "register", {"narrow": [["channel"]]}), "Invalid narrow")
    assert_json_error(api.post(realm.hamlet, "register", {"narrow": "[1]"}), "Invalid narrow")
    assert_json_error(
        api.post(realm.hamlet, "register", {"event_types": "message"}),
        'Argument "event_types" is not valid JSON.',
    )
    assert_json_error(
        api.post(realm.hamlet, "register", {"apply_markdown": "yes"}),
        'Argument "apply_markdown" is not valid JSON.',
    )
    assert_json_error(
        api.post(realm.polonius, "register", {"all_public_streams": True}),
        "User not authorized for this query",
    )
    queue_id = register(api, realm.hamlet)["queue_id"]
    response = api.get(realm.hamlet, "events", {"queue_id": queue_id, "last_event_id": "x"})
    assert response.status_code == 400
    assert response.json()["result"] == "error"
    assert_json_error(
        api.get(None, "events", {"queue_id": queue_id}),
        "Not logged in: API authentication or user session required",
        401,
    )


def test_retries_with_dont_block_answer_at_once(api: Api, realm: SeededRealm) -> None:
    queue_id = register(api, realm.hamlet)["queue_id"]
    started = time.monotonic()
    body = get_events(api, realm.hamlet, queue_id, dont_block="true")
    assert body["events"] == []
    assert time.monotonic() - started < 1


async def test_long_poll_wakes_within_a_second(services: Services, realm: SeededRealm) -> None:
    """Another user's change answers a waiting GET /events at once."""
    app = create_app(services.settings, services)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=f"http://{realm.host}") as client:

        def auth(user: User) -> dict[str, str]:
            return {"authorization": basic_auth(user)}

        response = await client.post(
            "/api/v1/register",
            data=encode_params({"event_types": ["realm_user"]}),
            headers=auth(realm.hamlet),
        )
        queue_id = response.json()["queue_id"]
        poll = asyncio.create_task(
            client.get(
                "/api/v1/events",
                params={"queue_id": queue_id, "last_event_id": "-1"},
                headers=auth(realm.hamlet),
            )
        )
        await until(lambda: services.bus.parked_polls >= 1)
        assert not poll.done()
        assert services.bus.waiting_requests >= 1
        changed = await client.patch(
            "/api/v1/settings", data={"full_name": "Othello"}, headers=auth(realm.othello)
        )
        assert changed.status_code == 200
        started = time.monotonic()
        response = await asyncio.wait_for(poll, 1.0)
        assert time.monotonic() - started < 1.0
        events = response.json()["events"]
        assert events == [
            {
                "type": "realm_user",
                "op": "update",
                "person": {"user_id": realm.othello.id, "full_name": "Othello"},
                "id": 0,
            }
        ]


def test_heartbeat_after_quiet_period(database_url: str, tmp_path: Path, realm: SeededRealm) -> None:
    with custom_server(database_url, tmp_path, heartbeat_seconds=1) as (client, _):
        api = Api(client, realm)
        queue_id = register(api, realm.hamlet)["queue_id"]
        started = time.monotonic()
        body = assert_json_success(
            api.get(realm.hamlet, "events", {"queue_id": queue_id, "last_event_id": -1})
        )
        elapsed = time.monotonic() - started
        assert body["events"] == [{"type": "heartbeat", "id": 0}]
        assert 0.9 <= elapsed < 3
        validate_event(body["events"][0])


def test_idle_queues_are_garbage_collected(database_url: str, tmp_path: Path, realm: SeededRealm) -> None:
    # Frozen: with the real time flowing under it, a loaded machine taking 0.4 s between two
    # requests let the polled queue idle past its 1 s too (a flake on PostgreSQL under load).
    clock = FrozenClock()
    with custom_server(database_url, tmp_path, event_queue_idle_timeout_seconds=1) as (client, services):
        services.bus.clock = clock
        api = Api(client, realm)
        idle = register(api, realm.hamlet)["queue_id"]
        active = register(api, realm.hamlet)["queue_id"]
        for _ in range(2):
            # Polling one queue keeps it alive while the other one idles past its timeout.
            clock.advance(0.6)
            get_events(api, realm.hamlet, active)
        # Removed by the periodic collection (every 0.25 s of real time), not by the request
        # that looks for it.
        wait_until(lambda: services.bus.get_client(idle) is None)
        assert services.bus.get_client(active) is not None
        assert_bad_queue(api.get(realm.hamlet, "events", {"queue_id": idle, "last_event_id": -1}), idle)


def test_queues_survive_a_restart_with_a_restart_event(
    database_url: str, tmp_path: Path, realm: SeededRealm
) -> None:
    with custom_server(database_url, tmp_path) as (client, _):
        api = Api(client, realm)
        queue_id = register(api, realm.hamlet)["queue_id"]
        filtered = register(api, realm.hamlet, event_types=["realm_user"])["queue_id"]
        assert_json_success(api.patch(realm.hamlet, "settings", {"enter_sends": True}))
    assert (tmp_path / "event_queues.json").exists()

    with custom_server(database_url, tmp_path) as (client, services):
        assert isinstance(services.bus, MemoryQueueBackend)
        # Loaded once: a crash after this start must not bring the same queues back again.
        assert not (tmp_path / "event_queues.json").exists()
        api = Api(client, realm)
        events = get_events(api, realm.hamlet, queue_id)["events"]
        assert [e["type"] for e in events] == ["user_settings", "restart"]
        restart = events[1]
        assert restart["id"] == 1
        assert restart["server_generation"] == services.bus.server_generation
        assert isinstance(restart["zulip_feature_level"], int)
        assert restart["zulip_version"]
        validate_event(restart)
        # A client that did not ask for restart events does not get one.
        assert get_events(api, realm.hamlet, filtered)["events"] == []
        assert_json_success(api.patch(realm.hamlet, "settings", {"enter_sends": False}))
        assert [e["id"] for e in get_events(api, realm.hamlet, queue_id, 1)["events"]] == [2]


def test_unreadable_saved_queues_are_ignored(database_url: str, tmp_path: Path, realm: SeededRealm) -> None:
    (tmp_path / "event_queues.json").write_text("{not json")
    with custom_server(database_url, tmp_path) as (client, services):
        assert isinstance(services.bus, MemoryQueueBackend)
        assert services.bus.queue_count() == 0
        assert_json_success(Api(client, realm).post(realm.hamlet, "register", {}))


@pytest.mark.parametrize("user_name", ["hamlet", "default_bot"])
def test_bots_and_people_alike(api: Api, realm: SeededRealm, user_name: str) -> None:
    user = realm.users[user_name]
    queue_id = register(api, user)["queue_id"]
    assert get_events(api, user, queue_id)["events"] == []


def test_redis_backed_server(database_url: str, tmp_path: Path, realm: SeededRealm) -> None:
    """With redis_url set, the same API runs on queues in Redis."""

    from palaver.events.redis_backend import RedisQueueBackend

    url = require_redis()
    with custom_server(database_url, tmp_path, redis_url=url, heartbeat_seconds=1) as (client, services):
        backend = services.bus
        assert isinstance(backend, RedisQueueBackend)
        try:
            api = Api(client, realm)
            queue_id = register(api, realm.hamlet, event_types=["realm_user"])["queue_id"]
            assert_json_success(api.patch(realm.othello, "settings", {"full_name": "Othello R"}))
            events = get_events(api, realm.hamlet, queue_id, dont_block=False)["events"]
            assert [e["person"] for e in events] == [{"user_id": realm.othello.id, "full_name": "Othello R"}]
            heartbeat = get_events(api, realm.hamlet, queue_id, 0, dont_block=False)["events"]
            assert heartbeat == [{"type": "heartbeat", "id": 1}]
            assert_json_success(api.delete(realm.hamlet, "events", {"queue_id": queue_id}))
            assert_bad_queue(
                api.get(realm.hamlet, "events", {"queue_id": queue_id, "last_event_id": 1}), queue_id
            )
        finally:
            backend.delete_everything()


def test_message_events_are_tailored_per_client(api: Api, realm: SeededRealm) -> None:
    raw = register(api, realm.othello, event_types=["message"])["queue_id"]
    rendered = register(api, realm.othello, event_types=["message"], apply_markdown=True)["queue_id"]
    elsewhere = register(api, realm.othello, event_types=["message"], narrow=[["channel", "Denmark"]])[
        "queue_id"
    ]
    sent = assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "**hi**"})
    )
    (raw_event,) = get_events(api, realm.othello, raw)["events"]
    (rendered_event,) = get_events(api, realm.othello, rendered)["events"]
    assert get_events(api, realm.othello, elsewhere)["events"] == []
    for event in (raw_event, rendered_event):
        assert event["type"] == "message"
        assert event["message"]["id"] == sent["id"]
        assert event["flags"] == []
        assert "internal" not in event
    # Bots read Markdown unless they ask for HTML.
    assert raw_event["message"]["content"] == "**hi**"
    assert raw_event["message"]["content_type"] == "text/x-markdown"
    assert "<strong>hi</strong>" in rendered_event["message"]["content"]
    assert rendered_event["message"]["content_type"] == "text/html"


def test_unwritable_data_dir_does_not_break_shutdown(
    database_url: str, tmp_path: Path, realm: SeededRealm, caplog: pytest.LogCaptureFixture
) -> None:
    with custom_server(database_url, tmp_path) as (client, services):
        assert isinstance(services.bus, MemoryQueueBackend)
        register(Api(client, realm), realm.hamlet)
        # A directory where the file should go makes the save fail.
        (tmp_path / "event_queues.json").mkdir()
    assert "Could not save event queues" in caplog.text
