"""Repeated polls authenticated without the database (api/poll_auth.py), and never once what
decided them has changed."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from palaver.actions.users import do_regenerate_api_key
from palaver.api import poll_auth
from palaver.api.long_poll import LongPollStarlette
from palaver.lib.realm_cache import realm_users
from palaver.models import UserProfile
from palaver.services import Services
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


@contextmanager
def statements(services: Services) -> Iterator[list[str]]:
    """The SQL statements requests run meanwhile (on the event loop or a request's worker
    thread; the session app's background workers run rounds in ``asyncio`` threads)."""
    seen: list[str] = []

    def record(*args: Any) -> None:
        if not threading.current_thread().name.startswith(("asyncio_", "palaver-")):
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


def test_a_new_api_key_refuses_the_old_one_at_once(
    client: TestClient, realm: SeededRealm, services: Services
) -> None:
    queue_id = _known_poll(client, realm, realm.hamlet, services)
    with services.db.session() as session:
        user = session.get_one(UserProfile, realm.hamlet.id)
        new_key = do_regenerate_api_key(session, user)
    refused = _poll(client, realm, realm.hamlet, queue_id)
    assert refused.status_code == 401, refused.text
    renewed = dataclasses.replace(realm.hamlet, api_key=new_key)
    assert _poll(client, realm, renewed, queue_id).status_code == 200


@pytest.mark.parametrize("moment", ["realm_users", "snapshots"])
def test_a_new_api_key_during_a_first_poll_is_not_missed(
    client: TestClient, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch, moment: str
) -> None:
    """A key changed while the first poll authenticates (after it looked its organization
    up; before the cached users are loaded, or before their snapshot is taken): the poll
    itself may pass, the next one with the old key must not."""
    queue_id = _register(client, realm, realm.hamlet)
    app = client.app
    assert isinstance(app, LongPollStarlette) and app.long_polls is not None
    known = app.long_polls.known
    changed: list[str] = []

    def change_first(step: Any) -> Any:
        def changing(*args: Any) -> Any:
            if not changed:
                with services.db.session() as session:
                    user = session.get_one(UserProfile, realm.hamlet.id)
                    changed.append(do_regenerate_api_key(session, user))
            return step(*args)

        return changing

    if moment == "realm_users":
        monkeypatch.setattr(poll_auth, "realm_users", change_first(realm_users))
    else:
        monkeypatch.setattr(known, "_snapshots", change_first(known._snapshots))
    _poll(client, realm, realm.hamlet, queue_id)
    monkeypatch.undo()
    assert changed
    assert _poll(client, realm, realm.hamlet, queue_id).status_code == 401
    renewed = dataclasses.replace(realm.hamlet, api_key=changed[0])
    assert _poll(client, realm, renewed, queue_id).status_code == 200


def test_a_deactivated_user_is_refused_at_once(
    client: TestClient, realm: SeededRealm, services: Services
) -> None:
    queue_id = _known_poll(client, realm, realm.hamlet, services)
    deactivated = client.delete(
        f"http://{realm.host}/api/v1/users/{realm.hamlet.id}",
        headers={"authorization": basic_auth(realm.iago)},
    )
    assert deactivated.status_code == 200, deactivated.text
    refused = _poll(client, realm, realm.hamlet, queue_id)
    assert refused.status_code == 401
    assert refused.json()["code"] == "USER_DEACTIVATED"


def test_a_deactivated_organization_is_refused_at_once(
    client: TestClient, realm: SeededRealm, services: Services
) -> None:
    queue_id = _known_poll(client, realm, realm.hamlet, services)
    closed = client.post(
        f"http://{realm.host}/api/v1/realm/deactivate", headers={"authorization": basic_auth(realm.desdemona)}
    )
    assert closed.status_code == 200, closed.text
    refused = _poll(client, realm, realm.hamlet, queue_id)
    assert refused.json()["code"] == "REALM_DEACTIVATED"


def test_while_deaf_to_other_processes_every_poll_is_authenticated(
    client: TestClient, realm: SeededRealm, services: Services
) -> None:
    queue_id = _known_poll(client, realm, realm.hamlet, services)
    store = services.db.realm_state
    store.accepting = False
    try:
        with statements(services) as seen:
            assert _poll(client, realm, realm.hamlet, queue_id).status_code == 200
    finally:
        store.accepting = True
    assert seen
