"""One identity: every way a request authenticates yields the same ``Requester``
(models/requester.py), and a change to the user or realm reaches the next request."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import event

from palaver.actions.users import do_regenerate_api_key
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.app import create_app
from palaver.config import Settings
from palaver.models import Role, UserProfile
from palaver.models.requester import Requester
from palaver.services import Services
from tests.client import TestClient
from tests.helpers import SeededRealm, basic_auth
from tests.helpers import TestUser as User
from tests.web.web_helpers import log_in

router = ApiRouter()


def _as_json(requester: Requester | None) -> dict[str, Any] | None:
    return None if requester is None else dataclasses.asdict(requester)


@router.get("/whoami")
def whoami(ctx: Ctx) -> JsonDict:
    return {"requester": _as_json(ctx.requester), "realm_id": ctx.realm_id}


@router.get("/whoami_optional", auth="optional")
def whoami_optional(ctx: Ctx) -> JsonDict:
    return {"requester": _as_json(ctx.requester_or_none), "realm_id": ctx.realm_id_or_none}


@pytest.fixture
def tclient(settings: Settings, services: Services, realm: SeededRealm) -> Iterator[TestClient]:
    """An app of the two routes above (changes are made through ``client``, the whole API,
    which shares these services). Not entered as a context manager: the lifespan belongs
    to the session's app."""
    test_client = TestClient(
        create_app(settings, services, routers=[router]), base_url=f"http://{realm.host}"
    )
    yield test_client
    test_client.close()


@contextmanager
def user_queries(services: Services) -> Iterator[list[str]]:
    """The statements naming ``user_profile`` that requests run meanwhile."""
    seen: list[str] = []

    def record(*args: Any) -> None:
        if not threading.current_thread().name.startswith(("asyncio_", "palaver-")):
            sql = str(args[2])
            if re.search(r"\buser_profile\b", sql):
                seen.append(sql)

    event.listen(services.db.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(services.db.engine, "before_cursor_execute", record)


def _by_key(client: TestClient, user: User, path: str = "whoami") -> Any:
    response = client.get(f"/api/v1/{path}", headers={"authorization": basic_auth(user)})
    assert response.status_code == 200, response.text
    return response.json()


def _expected(services: Services, user_id: int) -> dict[str, Any]:
    with services.db.session() as session:
        row = dataclasses.asdict(Requester.of(session.get_one(UserProfile, user_id)))
    return row


def test_every_way_in_yields_the_same_requester(
    tclient: TestClient, realm: SeededRealm, services: Services
) -> None:
    expected = _expected(services, realm.hamlet.id)
    # An API key looked up in the database (the credential's first request here) ...
    looked_up = _by_key(tclient, realm.hamlet)
    # ... and the same key again, known to this process: no query about the user at all.
    with user_queries(services) as seen:
        known = _by_key(tclient, realm.hamlet)
    assert seen == []
    # The browser's session cookie on /json.
    log_in(tclient, realm.hamlet)
    by_cookie = tclient.get("/json/whoami")
    assert by_cookie.status_code == 200, by_cookie.text
    # An endpoint that takes anonymous requests, with and without the key.
    optional = _by_key(tclient, realm.hamlet, "whoami_optional")
    tclient.cookies.clear()
    anonymous = tclient.get("/api/v1/whoami_optional")
    assert anonymous.status_code == 200, anonymous.text

    for body in (looked_up, known, by_cookie.json(), optional):
        assert body["requester"] == expected
        assert body["realm_id"] == expected["realm_id"]
    assert anonymous.json()["requester"] is None
    assert anonymous.json()["realm_id"] == expected["realm_id"]


def test_a_role_change_reaches_the_next_known_request(
    client: TestClient, tclient: TestClient, realm: SeededRealm, services: Services
) -> None:
    _by_key(tclient, realm.hamlet)
    assert _by_key(tclient, realm.hamlet)["requester"]["role"] == Role.MEMBER
    changed = client.patch(
        f"http://{realm.host}/api/v1/users/{realm.hamlet.id}",
        data={"role": str(int(Role.MODERATOR))},
        headers={"authorization": basic_auth(realm.iago)},
    )
    assert changed.status_code == 200, changed.text
    after = _by_key(tclient, realm.hamlet)["requester"]
    assert after["role"] == Role.MODERATOR
    assert after == _expected(services, realm.hamlet.id)


def test_a_settings_change_reaches_the_next_known_request(
    client: TestClient, tclient: TestClient, realm: SeededRealm, services: Services
) -> None:
    _by_key(tclient, realm.hamlet)
    assert _by_key(tclient, realm.hamlet)["requester"]["presence_enabled"] is True
    changed = client.patch(
        f"http://{realm.host}/api/v1/settings",
        data={"presence_enabled": "false"},
        headers={"authorization": basic_auth(realm.hamlet)},
    )
    assert changed.status_code == 200, changed.text
    assert _by_key(tclient, realm.hamlet)["requester"]["presence_enabled"] is False


def test_a_regenerated_key_ends_the_known_one(
    tclient: TestClient, realm: SeededRealm, services: Services
) -> None:
    _by_key(tclient, realm.hamlet)
    _by_key(tclient, realm.hamlet)
    with services.db.session() as session:
        new_key = do_regenerate_api_key(session, session.get_one(UserProfile, realm.hamlet.id))
    old = tclient.get("/api/v1/whoami", headers={"authorization": basic_auth(realm.hamlet)})
    assert old.status_code == 401, old.text
    renewed = _by_key(tclient, dataclasses.replace(realm.hamlet, api_key=new_key))
    assert renewed["requester"] == _expected(services, realm.hamlet.id)


@pytest.mark.parametrize("door", ["key", "cookie"])
def test_a_deactivated_user_is_refused_on_the_next_request(
    client: TestClient, tclient: TestClient, realm: SeededRealm, door: str
) -> None:
    if door == "key":
        _by_key(tclient, realm.hamlet)
        _by_key(tclient, realm.hamlet)
    else:
        log_in(tclient, realm.hamlet)
        assert tclient.get("/json/whoami").status_code == 200
    deactivated = client.delete(
        f"http://{realm.host}/api/v1/users/{realm.hamlet.id}",
        headers={"authorization": basic_auth(realm.iago)},
    )
    assert deactivated.status_code == 200, deactivated.text
    if door == "key":
        refused = tclient.get("/api/v1/whoami", headers={"authorization": basic_auth(realm.hamlet)})
    else:
        refused = tclient.get("/json/whoami")
    assert refused.status_code == 401, refused.text
    # Deactivating someone also ends their browser sessions: the cookie names none.
    assert refused.json()["code"] == ("USER_DEACTIVATED" if door == "key" else "UNAUTHORIZED")


@pytest.mark.parametrize("door", ["key", "cookie"])
def test_a_deactivated_organization_is_refused_on_the_next_request(
    client: TestClient, tclient: TestClient, realm: SeededRealm, door: str
) -> None:
    if door == "key":
        _by_key(tclient, realm.hamlet)
        _by_key(tclient, realm.hamlet)
    else:
        log_in(tclient, realm.hamlet)
        assert tclient.get("/json/whoami").status_code == 200
    closed = client.post(
        f"http://{realm.host}/api/v1/realm/deactivate", headers={"authorization": basic_auth(realm.desdemona)}
    )
    assert closed.status_code == 200, closed.text
    if door == "key":
        refused = tclient.get("/api/v1/whoami", headers={"authorization": basic_auth(realm.hamlet)})
    else:
        refused = tclient.get("/json/whoami")
    # Closing the organization also ends its browser sessions: the cookie names none.
    assert refused.status_code == 401, refused.text
    assert refused.json()["code"] == ("REALM_DEACTIVATED" if door == "key" else "UNAUTHORIZED")
    anonymous = tclient.get("/api/v1/whoami_optional")
    assert anonymous.json()["code"] == "REALM_DEACTIVATED"
