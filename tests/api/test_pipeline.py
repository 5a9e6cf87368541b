"""The one request pipeline (api/pipeline.py): Starlette's middleware sees every request, and
every error answer, whatever its door, is the same envelope from the one mapping
(api/responses.py ``error_for``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.exc import OperationalError
from starlette.types import ASGIApp, Receive, Scope, Send

from palaver.api import discover_routers
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict
from palaver.app import create_app
from palaver.config import Settings
from palaver.lib.dependencies import OutageMonitor
from palaver.lib.exceptions import JsonableError
from palaver.services import Services
from tests.client import TestClient
from tests.helpers import SeededRealm, basic_auth

router = ApiRouter()


@router.get("/pipeline/boom", auth="none")
def boom(ctx: Ctx) -> JsonDict:
    raise RuntimeError("a bug")


@router.get("/pipeline/outage", auth="none")
def outage(ctx: Ctx) -> JsonDict:
    raise OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))


@router.get("/pipeline/refused", auth="none")
def refused(ctx: Ctx) -> JsonDict:
    raise JsonableError("No thanks", code="REFUSED", status=403)


@pytest.fixture
def app(settings: Settings, services: Services) -> Any:
    return create_app(settings, services, routers=[*discover_routers(), router])


@pytest.fixture
def outages(services: Services, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monitor = OutageMonitor({})
    monkeypatch.setattr(services, "outages", monitor)
    yield
    monitor.close()


class Seen:
    """A middleware added the Starlette way: it records the path of every request it sees."""

    paths: list[str] = []

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.paths.append(scope["path"])
        await self.app(scope, receive, send)


def _register(client: TestClient, realm: SeededRealm) -> str:
    response = client.post("/api/v1/register", data={"event_types": '["message"]'}, headers=_auth(realm))
    assert response.status_code == 200, response.text
    return str(response.json()["queue_id"])


def _auth(realm: SeededRealm) -> dict[str, str]:
    return {"host": realm.host, "authorization": basic_auth(realm.hamlet)}


def test_a_middleware_added_the_starlette_way_sees_every_request(app: Any, realm: SeededRealm) -> None:
    app.add_middleware(Seen)
    Seen.paths.clear()
    client = TestClient(app, base_url="http://palaver.test")
    queue_id = _register(client, realm)
    poll = client.get(
        "/api/v1/events", params={"queue_id": queue_id, "dont_block": "true"}, headers=_auth(realm)
    )
    assert poll.status_code == 200, poll.text
    assert client.get("/json/users/me", headers={"host": realm.host}).status_code == 401
    page = client.get("/accounts/login/", headers={"host": realm.host}, follow_redirects=False)
    assert page.status_code in (200, 302)
    assert client.get("/api/v1/nowhere", headers=_auth(realm)).status_code == 404
    assert Seen.paths == [
        "/api/v1/register",
        "/api/v1/events",
        "/json/users/me",
        "/accounts/login/",
        "/api/v1/nowhere",
    ]
    client.close()


def _envelope(response: httpx.Response, status: int) -> dict[str, Any]:
    """The error envelope: the same framing and fields, whatever answered."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "private, no-store"
    assert re.fullmatch(r"[0-9a-f]{16}", response.headers["x-request-id"])
    body = response.json()
    assert body["result"] == "error" and isinstance(body["msg"], str) and isinstance(body["code"], str)
    return dict(body)


@pytest.mark.parametrize("prefix", ["/api/v1", "/json"])
def test_every_error_is_the_one_envelope(app: Any, realm: SeededRealm, prefix: str, outages: None) -> None:
    client = TestClient(app, base_url="http://palaver.test", raise_server_exceptions=False)
    host = {"host": realm.host}
    bug = _envelope(client.get(f"{prefix}/pipeline/boom", headers=host), 500)
    assert bug == {"result": "error", "msg": "Internal server error", "code": "BAD_REQUEST"}
    down = _envelope(client.get(f"{prefix}/pipeline/outage", headers=host), 503)
    assert "retry-after" in down
    assert _envelope(client.get(f"{prefix}/pipeline/refused", headers=host), 403)["code"] == "REFUSED"
    assert _envelope(client.get(f"{prefix}/nowhere", headers=host), 404)["msg"] == "Not Found"
    wrong = client.put(f"{prefix}/pipeline/boom", headers=host)
    assert _envelope(wrong, 405)["msg"] == "Method Not Allowed"
    assert wrong.headers["allow"] == "GET, HEAD"
    # Outside the API: a path no route takes, a method a page does not take.
    assert _envelope(client.get("/no/such/page", headers=host), 404)["msg"] == "Not Found"
    assert _envelope(client.put("/accounts/login/", headers=host), 405)["msg"] == "Method Not Allowed"
    client.close()


def test_a_long_polls_errors_are_the_one_envelope(
    app: Any, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch, outages: None
) -> None:
    client = TestClient(app, base_url="http://palaver.test", raise_server_exceptions=False)
    queue_id = _register(client, realm)
    url = "/api/v1/events"
    bad = _envelope(client.get(url, params={"queue_id": "1:nope"}, headers=_auth(realm)), 400)
    assert bad["code"] == "BAD_EVENT_QUEUE_ID"
    # An overloaded server: no room for one more parked poll.
    monkeypatch.setattr(services.bus, "max_parked", 0)
    full = _envelope(client.get(url, params={"queue_id": queue_id}, headers=_auth(realm)), 503)
    assert "retry-after" in full
    monkeypatch.undo()
    monkeypatch.setattr(services, "outages", OutageMonitor({}))

    async def broken(**kwargs: object) -> list[str]:
        raise RuntimeError("a bug in the queue")

    monkeypatch.setattr(services.bus, "wait_for_events", broken)
    bug = _envelope(client.get(url, params={"queue_id": queue_id}, headers=_auth(realm)), 500)
    assert bug == {"result": "error", "msg": "Internal server error", "code": "BAD_REQUEST"}
    client.close()


def test_each_error_status_is_built_in_one_place() -> None:
    """The 500, the 503 of an outage and the 405 are made only by ``error_for`` (the 404 of
    an unknown path too: the API application raises Starlette's, as its router does)."""
    src = Path(__file__).resolve().parents[2] / "src" / "palaver"
    texts = {path: path.read_text() for path in src.rglob("*.py")}

    def makers(pattern: str) -> list[str]:
        return [str(p.relative_to(src)) for p, text in texts.items() if re.search(pattern, text)]

    assert makers(r"(?<!class )InternalServerError\(") == ["api/responses.py"]
    assert makers(r"(?<!class )MethodNotAllowedError\(") == ["api/responses.py"]
    assert makers(r"\.unavailable_error\(") == ["api/responses.py"]


def test_served_under_a_root_path(app: Any, realm: SeededRealm) -> None:
    """Behind a proxy that serves Palaver under a path prefix (uvicorn ``--root-path``): the
    scope's path keeps the prefix, and every door strips it as Starlette's mounts do."""
    client = TestClient(app, base_url="http://palaver.test", root_path="/chat")
    me = client.get("/chat/api/v1/users/me", headers=_auth(realm))
    assert me.status_code == 200, me.text
    assert me.json()["user_id"] == realm.hamlet.id
    assert _envelope(client.get("/chat/api/v1/nowhere", headers=_auth(realm)), 404)["msg"] == "Not Found"
    assert _envelope(client.get("/chat/json/users/me", headers={"host": realm.host}), 401)
    assert client.get("/chat/api/v1/openapi.json").status_code == 200
    client.close()


def _answers(client: TestClient, realm: SeededRealm, queue_id: str, root: str) -> list[tuple[Any, ...]]:
    host = {"host": realm.host}
    requests = [
        ("GET", "/api/v1/users/me", _auth(realm)),
        ("GET", "/json/users/me", host),
        ("GET", "/api/v1/nowhere", _auth(realm)),
        ("GET", "/json/nowhere", host),
        ("PUT", "/api/v1/pipeline/boom", host),
        ("DELETE", "/json/pipeline/boom", host),
        ("GET", "/api/v1/pipeline/boom", host),
        ("GET", "/json/pipeline/refused", host),
        ("GET", f"/api/v1/events?queue_id={queue_id}&dont_block=true", _auth(realm)),
        ("GET", "/api/v1/events?queue_id=nope&dont_block=true", _auth(realm)),
        ("GET", "/api/v1/openapi.json", host),
        ("GET", "/api/v1", host),
        ("GET", "/api/v1x/users/me", host),
        ("GET", "/no/such/page", host),
    ]
    answers = []
    for method, path, headers in requests:
        response = client.request(method, root + path, headers=headers, follow_redirects=False)
        framing = {k: response.headers.get(k) for k in ("content-type", "cache-control", "allow", "location")}
        answers.append((method, path, response.status_code, framing, response.content))
    return answers


@pytest.mark.parametrize("root", ["", "/chat"])
def test_the_api_dispatch_answers_as_the_mounts(
    app: Any, settings: Settings, services: Services, realm: SeededRealm, root: str
) -> None:
    """``ApiDispatch`` (api/dispatch.py) against the plain ``Mount``s: every answer the same."""
    mounts_only = create_app(settings, services, routers=[*discover_routers(), router], api_dispatch=False)
    dispatched = TestClient(
        app, base_url="http://palaver.test", raise_server_exceptions=False, root_path=root
    )
    mounted = TestClient(
        mounts_only, base_url="http://palaver.test", raise_server_exceptions=False, root_path=root
    )
    registered = dispatched.post(
        root + "/api/v1/register", data={"event_types": '["message"]'}, headers=_auth(realm)
    )
    queue_id = str(registered.json()["queue_id"])
    assert _answers(dispatched, realm, queue_id, root) == _answers(mounted, realm, queue_id, root)
    dispatched.close()
    mounted.close()
