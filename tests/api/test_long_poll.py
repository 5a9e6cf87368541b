"""GET /events, one kind of route of the API application (api/pipeline.py): a poll by known
credentials (``known_view``, no database) answers as one authenticated in full, and a parked
poll holds neither the request nor its session."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session
from starlette.requests import Request

from palaver.api import pipeline
from palaver.api.context import Ctx
from palaver.api.known_credentials import KnownCredentials
from palaver.app import create_app
from palaver.models import Realm, UserProfile
from palaver.services import Services
from tests.client import TestClient
from tests.helpers import SeededRealm, basic_auth, encode_params, until

# Headers that differ between any two requests.
VOLATILE = {"x-request-id", "x-ratelimit-remaining", "x-ratelimit-reset", "content-length"}


def _register(client: TestClient, realm: SeededRealm) -> str:
    response = client.post(
        f"http://{realm.host}/api/v1/register",
        data={"event_types": '["message"]'},
        headers={"authorization": basic_auth(realm.hamlet)},
    )
    assert response.status_code == 200, response.text
    return str(response.json()["queue_id"])


def _answer(response: httpx.Response) -> tuple[int, object, dict[str, str]]:
    headers = {k: v for k, v in response.headers.items() if k not in VOLATILE}
    return response.status_code, response.json(), headers


@pytest.mark.parametrize(
    ("case", "query", "auth"),
    [
        ("events at once", {"last_event_id": "-1", "dont_block": "true"}, "hamlet"),
        ("bad queue", {"queue_id": "1:nope", "dont_block": "true"}, "hamlet"),
        ("invalid parameter", {"last_event_id": "many"}, "hamlet"),
        ("not logged in", {"dont_block": "true"}, None),
        ("wrong key", {"dont_block": "true"}, "wrong"),
    ],
)
def test_a_known_poll_answers_as_one_authenticated_in_full(
    client: TestClient,
    realm: SeededRealm,
    monkeypatch: pytest.MonkeyPatch,
    case: str,
    query: dict[str, str],
    auth: str | None,
) -> None:
    queue_id = _register(client, realm)
    known = client.app.state.known_credentials  # type: ignore[attr-defined]
    assert isinstance(known, KnownCredentials)
    # Authentications in full (a worker thread and the database), counted.
    full: list[str] = []
    prepare = pipeline.prepare_for_async_view

    def counted(*args: Any, **kwargs: Any) -> Any:
        full.append(case)
        return prepare(*args, **kwargs)

    monkeypatch.setattr(pipeline, "prepare_for_async_view", counted)
    headers = {}
    if auth == "hamlet":
        headers["authorization"] = basic_auth(realm.hamlet)
    elif auth == "wrong":
        headers["authorization"] = basic_auth(realm.hamlet).replace("Basic ", "Basic x")
    params = {"queue_id": queue_id, **query}
    url = f"http://{realm.host}/api/v1/events"
    # The registration taught the process hamlet's credentials: the known path, if any.
    by_known = client.get(url, params=params, headers=headers)
    assert len(full) == (0 if auth == "hamlet" else 1)
    known._entries.clear()
    in_full = client.get(url, params=params, headers=headers)
    assert len(full) == (1 if auth == "hamlet" else 2)
    assert _answer(by_known) == _answer(in_full), case


def test_malformed_query_string_is_a_400(client: TestClient, realm: SeededRealm) -> None:
    headers = {"authorization": basic_auth(realm.hamlet)}
    response = client.get(f"http://{realm.host}/api/v1/events?queue_id=%ff", headers=headers)
    assert response.status_code == 400
    assert response.json()["msg"] == "Malformed request body"


def test_a_poll_is_counted_under_its_route(client: TestClient, realm: SeededRealm) -> None:
    queue_id = _register(client, realm)
    headers = {"authorization": basic_auth(realm.hamlet)}
    params = {"queue_id": queue_id, "dont_block": "true"}
    assert client.get(f"http://{realm.host}/api/v1/events", params=params, headers=headers).status_code == 200
    assert (
        "x-request-id"
        in client.get(f"http://{realm.host}/api/v1/events", params=params, headers=headers).headers
    )
    metrics = client.get("/metrics").text
    assert any(
        line.startswith("palaver_http_requests_total")
        and 'route="/api/v1/events"' in line
        and 'method="GET"' in line
        for line in metrics.splitlines()
    )


def _starlettes(request: object) -> bool:
    """Whether ``request`` is the one Starlette's ExceptionMiddleware keeps for its handlers."""
    if not isinstance(request, Request):
        return False
    return any(
        getattr(referrer, "__qualname__", "").startswith("ExceptionMiddleware.__call__")
        or getattr(getattr(referrer, "cr_code", None), "co_qualname", "") == "ExceptionMiddleware.__call__"
        for referrer in gc.get_referrers(request)
    )


async def test_a_parked_poll_holds_no_request_session_or_orm_object(
    services: Services, realm: SeededRealm
) -> None:
    """Thousands of polls may be parked at once: what the pipeline could keep per parked
    poll (its Request, the closed session, the view's context) and the user and realm objects
    authentication loaded are all gone while it waits. One ``Request`` stays: the one
    Starlette's ExceptionMiddleware makes for its exception handlers, which every request
    passes (app.py); the pipeline makes none for a request without a body."""
    app = create_app(services.settings, services)
    transport = httpx.ASGITransport(app=app)
    headers = {"authorization": basic_auth(realm.hamlet)}

    def held() -> set[int]:
        gc.collect()
        kinds = Request | Session | Ctx | UserProfile | Realm
        return {id(o) for o in gc.get_objects() if isinstance(o, kinds) and not _starlettes(o)}

    async with httpx.AsyncClient(transport=transport, base_url=f"http://{realm.host}") as client:
        response = await client.post(
            "/api/v1/register", data=encode_params({"event_types": ["realm_user"]}), headers=headers
        )
        queue_id = response.json()["queue_id"]
        before = held()
        poll = asyncio.create_task(
            client.get(
                "/api/v1/events", params={"queue_id": queue_id, "last_event_id": "-1"}, headers=headers
            )
        )
        await until(lambda: services.bus.parked_polls == 1)
        # Seen process-wide: another thread's request may hold one for a moment (or one alive
        # before may be freed meanwhile). What the parked poll held would stay for as long as
        # it is parked, so waiting changes nothing.
        await until(lambda: held() <= before)
        assert (services.bus.parked_polls, services.bus.waiting_requests) == (1, 1)
        services.bus.append(queue_id, {"type": "heartbeat"})
        response = await asyncio.wait_for(poll, 5)
        assert response.status_code == 200
        assert response.json()["events"] == [{"type": "heartbeat", "id": 0}]


def test_a_connection_the_database_dropped_is_a_503(
    client: TestClient, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Closing the request's session rolls back; on a terminated connection that raises."""
    from sqlalchemy.exc import OperationalError

    from palaver.lib.dependencies import OutageMonitor

    queue_id = _register(client, realm)
    # A credential this process has not yet seen (registering taught it): the poll's
    # authentication goes to the database (api/known_credentials.py).
    client.app.state.known_credentials._entries.clear()  # type: ignore[attr-defined]
    monitor = OutageMonitor({})
    monkeypatch.setattr(services, "outages", monitor)

    def dropped(*args: object, **kwargs: object) -> None:
        raise OperationalError("ROLLBACK", {}, ConnectionResetError("terminating connection"))

    monkeypatch.setattr(pipeline, "prepare_for_async_view", dropped)
    url = f"http://{realm.host}/api/v1/events"
    params = {"queue_id": queue_id, "last_event_id": "-1", "dont_block": "true"}
    response = client.get(url, params=params, headers={"authorization": basic_auth(realm.hamlet)})
    monitor.close()
    assert response.status_code == 503, response.text
    assert response.json()["result"] == "error"
