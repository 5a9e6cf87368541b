"""Requests by known credentials, authenticated without the database
(api/known_credentials.py), and never once what decided them has changed."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from palaver.actions.users import do_regenerate_api_key
from palaver.api.known_credentials import KnownCredentials
from palaver.cache import credentials, realm_users
from palaver.models import UserProfile
from palaver.services import Services
from palaver.workers.loop import in_background_round
from tests.client import TestClient
from tests.helpers import SeededRealm, basic_auth
from tests.helpers import TestUser as User


def _register(client: TestClient, realm: SeededRealm, user: User) -> str:
    response = client.post(
        f"http://{realm.host}/api/v1/register",
        data={"event_types": '["message"]'},
        headers={"authorization": basic_auth(user)},
    )
    assert response.status_code == 200, response.text
    return str(response.json()["queue_id"])


def _poll(client: TestClient, realm: SeededRealm, user: User, queue_id: str) -> httpx.Response:
    response: httpx.Response = client.get(
        f"http://{realm.host}/api/v1/events",
        params={"queue_id": queue_id, "last_event_id": "-1", "dont_block": "true"},
        headers={"authorization": basic_auth(user)},
    )
    return response


def _fetch(client: TestClient, realm: SeededRealm, user: User) -> httpx.Response:
    response: httpx.Response = client.get(
        f"http://{realm.host}/api/v1/messages",
        params={"anchor": "newest", "num_before": "5", "num_after": "0", "narrow": "[]"},
        headers={"authorization": basic_auth(user)},
    )
    return response


@contextmanager
def statements(services: Services) -> Iterator[list[str]]:
    """The SQL statements requests run meanwhile (on the event loop or a request's worker
    thread), not those of background workers' rounds, which run on the same threads."""
    seen: list[str] = []

    def record(*args: Any) -> None:
        if not in_background_round():
            seen.append(str(args[2]))

    event.listen(services.db.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(services.db.engine, "before_cursor_execute", record)


def _known_poll(client: TestClient, realm: SeededRealm, user: User, services: Services) -> str:
    """A queue whose polls by ``user`` no longer reach the database."""
    queue_id = _register(client, realm, user)
    # One full authentication makes the credential known.
    assert _poll(client, realm, user, queue_id).status_code == 200
    with statements(services) as seen:
        response = _poll(client, realm, user, queue_id)
    assert response.status_code == 200, response.text
    assert seen == []
    return queue_id


Request = Callable[[User], httpx.Response]


def _known_door(client: TestClient, realm: SeededRealm, user: User, services: Services, door: str) -> Request:
    """Requests by ``user`` (or another credential) through one door, once ``user``'s
    credential is known there: a long-poll, or a page of messages (a sync view)."""
    if door == "poll":
        queue_id = _known_poll(client, realm, user, services)
        return lambda who: _poll(client, realm, who, queue_id)
    assert _fetch(client, realm, user).status_code == 200
    with statements(services) as seen:
        assert _fetch(client, realm, user).status_code == 200
    assert not [sql for sql in seen if re.search(r"\buser_profile\b", sql)], seen
    return lambda who: _fetch(client, realm, who)


def _direct_message(client: TestClient, realm: SeededRealm, sender: User, to: User, content: str) -> int:
    sent = client.post(
        f"http://{realm.host}/api/v1/messages",
        data={"type": "direct", "to": f"[{to.id}]", "content": content},
        headers={"authorization": basic_auth(sender)},
    )
    assert sent.status_code == 200, sent.text
    return int(sent.json()["id"])


def test_a_known_fetch_answers_as_the_full_path_does_without_reading_the_user(
    client: TestClient, realm: SeededRealm, services: Services
) -> None:
    sent_id = _direct_message(client, realm, realm.othello, realm.hamlet, "hello")
    first = _fetch(client, realm, realm.hamlet)
    fetch = _known_door(client, realm, realm.hamlet, services, "fetch")
    known = fetch(realm.hamlet)
    assert known.json() == first.json()
    assert known.json()["messages"][-1]["id"] == sent_id
    assert list(known.headers.keys()) == list(first.headers.keys())
    # Another user's credential is still its own.
    assert fetch(realm.cordelia).json()["messages"] == []
    wrong = dataclasses.replace(realm.hamlet, email=realm.othello.email)
    assert fetch(wrong).status_code == 401


def test_a_known_credential_s_views_that_need_the_user_load_it(
    client: TestClient, realm: SeededRealm, services: Services
) -> None:
    headers = {"authorization": basic_auth(realm.hamlet)}
    first = client.get(f"http://{realm.host}/api/v1/users/me", headers=headers)
    _known_door(client, realm, realm.hamlet, services, "fetch")
    with statements(services) as seen:
        again = client.get(f"http://{realm.host}/api/v1/users/me", headers=headers)
    assert again.json() == first.json()
    # By its ID, not by the key: the credential was already known.
    assert not [sql for sql in seen if "api_key" in sql and "WHERE" in sql.split("api_key")[-1][:40]]
    sent_id = _direct_message(client, realm, realm.hamlet, realm.othello, "from a known key")
    newest = _fetch(client, realm, realm.hamlet).json()["messages"][-1]
    assert (newest["id"], newest["sender_id"]) == (sent_id, realm.hamlet.id)


def test_a_known_poll_answers_as_the_pipeline_does(
    client: TestClient, realm: SeededRealm, services: Services
) -> None:
    queue_id = _register(client, realm, realm.hamlet)
    first = _poll(client, realm, realm.hamlet, queue_id)
    _known_poll(client, realm, realm.hamlet, services)
    known = _poll(client, realm, realm.hamlet, queue_id)
    assert (known.status_code, known.json()) == (first.status_code, first.json())
    assert known.headers["x-ratelimit-limit"] == first.headers["x-ratelimit-limit"]
    # Parameters are still checked, and another user's queue is still refused.
    bad = client.get(
        f"http://{realm.host}/api/v1/events",
        params={"queue_id": queue_id, "last_event_id": "many"},
        headers={"authorization": basic_auth(realm.hamlet)},
    )
    assert bad.status_code == 400
    assert _poll(client, realm, realm.othello, queue_id).json()["code"] == "BAD_EVENT_QUEUE_ID"


def test_a_known_poll_has_the_pipelines_header_fields_in_order(
    client: TestClient, realm: SeededRealm, services: Services
) -> None:
    queue_id = _register(client, realm, realm.hamlet)
    params = {"queue_id": queue_id, "last_event_id": "-1", "dont_block": "true", "unknown": "1"}
    url = f"http://{realm.host}/api/v1/events"
    headers = {"authorization": basic_auth(realm.hamlet)}
    first = client.get(url, params=params, headers=headers)
    _known_poll(client, realm, realm.hamlet, services)
    with statements(services) as seen:
        known = client.get(url, params=params, headers=headers)
    assert seen == []
    assert known.json() == first.json()
    assert known.json()["ignored_parameters_unsupported"] == ["unknown"]
    assert list(known.headers.keys()) == list(first.headers.keys())
    assert known.headers["content-type"] == "application/json"
    assert int(known.headers["content-length"]) == len(known.content)


@pytest.mark.parametrize("door", ["poll", "fetch"])
def test_a_new_api_key_refuses_the_old_one_at_once(
    client: TestClient, realm: SeededRealm, services: Services, door: str
) -> None:
    request = _known_door(client, realm, realm.hamlet, services, door)
    with services.db.session() as session:
        user = session.get_one(UserProfile, realm.hamlet.id)
        new_key = do_regenerate_api_key(session, user)
    refused = request(realm.hamlet)
    assert refused.status_code == 401, refused.text
    renewed = dataclasses.replace(realm.hamlet, api_key=new_key)
    assert request(renewed).status_code == 200


@pytest.mark.parametrize("first", ["poll", "fetch"])
@pytest.mark.parametrize("moment", ["realm_users", "snapshots"])
def test_a_new_api_key_during_a_first_request_is_not_missed(
    client: TestClient,
    realm: SeededRealm,
    services: Services,
    monkeypatch: pytest.MonkeyPatch,
    moment: str,
    first: str,
) -> None:
    """A key changed while a credential's first request authenticates (after it looked its
    organization up; before the cached users are loaded, or before their snapshot is
    taken): the request itself may pass, the next one with the old key must not. Both
    doors: a long-poll (on the event loop) and any other request (on a worker thread)."""
    queue_id = _register(client, realm, realm.hamlet)
    app = client.app
    known = app.state.known_credentials  # type: ignore[attr-defined]
    assert isinstance(known, KnownCredentials)
    # As in a process that has not yet seen this credential (the registration taught this one).
    known._entries.clear()
    changed: list[str] = []

    def change_first(step: Any) -> Any:
        def changing(*args: Any) -> Any:
            if not changed:
                with services.db.session() as session:
                    user = session.get_one(UserProfile, realm.hamlet.id)
                    changed.append(do_regenerate_api_key(session, user))
            return step(*args)

        return changing

    def request(user: User) -> httpx.Response:
        return _poll(client, realm, user, queue_id) if first == "poll" else _fetch(client, realm, user)

    if moment == "realm_users":
        monkeypatch.setattr(credentials, "realm_users", change_first(realm_users))
    else:
        versions = known._versions
        monkeypatch.setattr(versions, "current", change_first(versions.current))
    request(realm.hamlet)
    monkeypatch.undo()
    assert changed
    assert request(realm.hamlet).status_code == 401
    renewed = dataclasses.replace(realm.hamlet, api_key=changed[0])
    assert request(renewed).status_code == 200


@pytest.mark.parametrize("door", ["poll", "fetch"])
def test_a_deactivated_user_is_refused_at_once(
    client: TestClient, realm: SeededRealm, services: Services, door: str
) -> None:
    request = _known_door(client, realm, realm.hamlet, services, door)
    deactivated = client.delete(
        f"http://{realm.host}/api/v1/users/{realm.hamlet.id}",
        headers={"authorization": basic_auth(realm.iago)},
    )
    assert deactivated.status_code == 200, deactivated.text
    refused = request(realm.hamlet)
    assert refused.status_code == 401
    assert refused.json()["code"] == "USER_DEACTIVATED"


@pytest.mark.parametrize("door", ["poll", "fetch"])
def test_a_deactivated_organization_is_refused_at_once(
    client: TestClient, realm: SeededRealm, services: Services, door: str
) -> None:
    request = _known_door(client, realm, realm.hamlet, services, door)
    closed = client.post(
        f"http://{realm.host}/api/v1/realm/deactivate", headers={"authorization": basic_auth(realm.desdemona)}
    )
    assert closed.status_code == 200, closed.text
    refused = request(realm.hamlet)
    assert refused.json()["code"] == "REALM_DEACTIVATED"


@pytest.mark.parametrize("door", ["poll", "fetch"])
def test_while_deaf_to_other_processes_every_request_is_authenticated(
    client: TestClient, realm: SeededRealm, services: Services, door: str
) -> None:
    request = _known_door(client, realm, realm.hamlet, services, door)
    store = services.db.realm_state
    store.accepting = False
    try:
        with statements(services) as seen:
            assert request(realm.hamlet).status_code == 200
    finally:
        store.accepting = True
    # The key looked up again, and nothing more: not the realm's users, whose snapshot
    # could not confirm an entry while deaf.
    assert [sql for sql in seen if "api_key" in sql]
    assert not [sql for sql in seen if "WHERE user_profile.realm_id" in sql], seen


def test_a_known_credential_marks_read_without_reading_the_user(
    client: TestClient, realm: SeededRealm, services: Services
) -> None:
    sent_id = _direct_message(client, realm, realm.othello, realm.hamlet, "unread")
    _known_door(client, realm, realm.hamlet, services, "fetch")
    with statements(services) as seen:
        marked = client.post(
            f"http://{realm.host}/api/v1/messages/flags",
            data={"messages": f"[{sent_id}]", "op": "add", "flag": "read"},
            headers={"authorization": basic_auth(realm.hamlet)},
        )
    assert marked.status_code == 200, marked.text
    assert marked.json()["messages"] == [sent_id]
    assert not [sql for sql in seen if re.search(r"\buser_profile\b", sql)], seen
    newest = _fetch(client, realm, realm.hamlet).json()["messages"][-1]
    assert "read" in newest["flags"]


def test_a_known_credential_sends_to_a_channel_without_loading_the_user(
    client: TestClient, realm: SeededRealm, services: Services
) -> None:
    headers = {"authorization": basic_auth(realm.hamlet)}
    created = client.post(
        f"http://{realm.host}/api/v1/users/me/subscriptions",
        data={"subscriptions": '[{"name": "known"}]'},
        headers=headers,
    )
    assert created.status_code == 200, created.text
    queue_id = _register(client, realm, realm.hamlet)
    _known_door(client, realm, realm.hamlet, services, "fetch")
    with statements(services) as seen:
        sent = client.post(
            f"http://{realm.host}/api/v1/messages",
            data={"type": "channel", "to": "known", "topic": "t", "content": "from the cache"},
            headers=headers,
        )
    assert sent.status_code == 200, sent.text
    # No load of the user's row (which would select every column, the key among them).
    assert not [sql for sql in seen if "user_profile.api_key" in sql], seen
    # The event and the fetched message show the sender as a full load would.
    event = next(
        e for e in _poll(client, realm, realm.hamlet, queue_id).json()["events"] if e["type"] == "message"
    )
    fetched = _fetch(client, realm, realm.hamlet).json()["messages"][-1]
    assert event["message"]["id"] == fetched["id"] == sent.json()["id"]
    for key in ("sender_id", "sender_full_name", "sender_email", "avatar_url", "sender_realm_str"):
        assert event["message"][key] == fetched[key], key


def _channel(client: TestClient, realm: SeededRealm, user: User, name: str) -> int:
    headers = {"authorization": basic_auth(user)}
    created = client.post(
        f"http://{realm.host}/api/v1/users/me/subscriptions",
        data={"subscriptions": f'[{{"name": "{name}"}}]'},
        headers=headers,
    )
    assert created.status_code == 200, created.text
    found = client.get(f"http://{realm.host}/api/v1/get_stream_id", params={"stream": name}, headers=headers)
    return int(found.json()["stream_id"])


def test_a_known_credential_types_and_pings_presence_without_loading_the_user(
    client: TestClient, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in an organization past the size where coming online is broadcast (a broadcast
    # computes who may see the user, from the loaded user).
    larger = services.db.settings.model_copy(update={"presence_update_events_max_users": 0})
    monkeypatch.setattr(services.db, "settings", larger)
    headers = {"authorization": basic_auth(realm.hamlet)}
    stream_id = _channel(client, realm, realm.hamlet, "typing")
    _known_door(client, realm, realm.hamlet, services, "fetch")
    with statements(services) as seen:
        typing = client.post(
            f"http://{realm.host}/api/v1/typing",
            data={"op": "start", "type": "channel", "stream_id": str(stream_id), "topic": "t"},
            headers=headers,
        )
        presence = client.post(
            f"http://{realm.host}/api/v1/users/me/presence", data={"status": "active"}, headers=headers
        )
    assert typing.status_code == 200, typing.text
    assert presence.status_code == 200, presence.text
    assert (
        str(realm.hamlet.id) in presence.json()["presences"]
        or realm.hamlet.email in presence.json()["presences"]
    )
    assert not [sql for sql in seen if "user_profile.api_key" in sql], seen


def test_a_settings_change_reaches_a_known_credentials_checks_at_once(
    client: TestClient, realm: SeededRealm, services: Services
) -> None:
    """The checks read the cached user; a change to the setting replaces it at commit."""
    headers = {"authorization": basic_auth(realm.hamlet)}
    stream_id = _channel(client, realm, realm.hamlet, "quiet")
    _known_door(client, realm, realm.hamlet, services, "fetch")
    changed = client.patch(
        f"http://{realm.host}/api/v1/settings",
        data={"send_stream_typing_notifications": "false"},
        headers=headers,
    )
    assert changed.status_code == 200, changed.text
    refused = client.post(
        f"http://{realm.host}/api/v1/typing",
        data={"op": "start", "type": "channel", "stream_id": str(stream_id), "topic": "t"},
        headers=headers,
    )
    assert refused.status_code == 400
    assert refused.json()["msg"] == "User has disabled typing notifications for channel messages"
