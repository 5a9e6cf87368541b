"""Routing and the envelope: 404/405, HEAD, path precedence, and errors no view meant to raise."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy.exc import DataError, IntegrityError
from starlette.responses import PlainTextResponse, Response

from palaver.api import discover_routers, pipeline, responses
from palaver.api.context import Ctx
from palaver.api.routing import ApiRouter, JsonDict, PathRoute, RouteTable
from palaver.app import create_app
from palaver.cache import realm_settings
from palaver.config import Settings
from palaver.services import Services
from tests.client import TestClient
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success, basic_auth

# -- Against the real API --------------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/api/v1/no_such_endpoint", "/api/v1/users/me/nothing/here", "/api/v2/users"]
)
def test_unknown_path_is_a_404_envelope(api: Api, realm: SeededRealm, path: str) -> None:
    for method in ("GET", "POST", "PATCH", "DELETE"):
        response = api.request(method, realm.hamlet, path)
        assert response.headers["content-type"] == "application/json"
        assert_json_error(response, "Not Found", 404)


def test_unknown_path_needs_no_authentication(api: Api) -> None:
    assert_json_error(api.get(None, "no_such_endpoint"), "Not Found", 404)


def allow_header(response: Any) -> set[str]:
    return {m.strip() for m in response.headers["allow"].split(",")}


def test_wrong_method_is_a_405_envelope_with_allow(api: Api, realm: SeededRealm) -> None:
    response = api.put(realm.hamlet, "server_settings")
    assert_json_error(response, "Method Not Allowed", 405)
    assert allow_header(response) == {"GET", "HEAD"}

    response = api.post(realm.hamlet, "users/me")
    assert_json_error(response, "Method Not Allowed", 405)
    assert allow_header(response) == {"GET", "HEAD", "DELETE"}


def test_allow_names_every_route_that_serves_the_url(api: Api, realm: SeededRealm) -> None:
    # /users/5 is served by /users/{user_id:int} (PATCH, DELETE) and by the GET route that
    # takes an ID or an email.
    response = api.put(realm.hamlet, f"users/{realm.othello.id}")
    assert_json_error(response, "Method Not Allowed", 405)
    assert allow_header(response) == {"GET", "HEAD", "PATCH", "DELETE"}
    # An email matches the GET route and PATCH /users/{email}.
    response = api.delete(realm.hamlet, f"users/{realm.othello.email}")
    assert_json_error(response, "Method Not Allowed", 405)
    assert allow_header(response) == {"GET", "HEAD", "PATCH"}


def test_head_on_get_endpoints(api: Api, realm: SeededRealm) -> None:
    get = api.get(realm.hamlet, "users/me")
    head = api.request("HEAD", realm.hamlet, "users/me")
    assert head.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == "application/json"
    assert head.headers["content-length"] == get.headers["content-length"]
    assert "x-ratelimit-limit" in head.headers
    # HEAD is authenticated like GET.
    assert api.request("HEAD", None, "users/me").status_code == 401
    assert api.request("HEAD", None, "server_settings").status_code == 200


def test_head_on_endpoint_without_get_is_405(api: Api, realm: SeededRealm) -> None:
    response = api.request("HEAD", realm.hamlet, "settings")
    assert response.status_code == 405
    assert "HEAD" not in allow_header(response)
    assert "PATCH" in allow_header(response)


def test_users_me_and_users_by_id_and_by_email(api: Api, realm: SeededRealm) -> None:
    me = assert_json_success(api.get(realm.hamlet, "users/me"))
    assert me["user_id"] == realm.hamlet.id
    assert "user" not in me

    by_id = assert_json_success(api.get(realm.hamlet, f"users/{realm.othello.id}"))
    assert by_id["user"]["user_id"] == realm.othello.id

    by_email = assert_json_success(api.get(realm.hamlet, f"users/{realm.othello.email}"))
    assert by_email["user"]["user_id"] == realm.othello.id


def test_delete_users_me_is_not_delete_by_id(api: Api, realm: SeededRealm) -> None:
    # DELETE /users/{user_id:int} needs an admin; DELETE /users/me is the user leaving.
    assert_json_error(
        api.delete(realm.hamlet, f"users/{realm.hamlet.id}"), "Must be an organization administrator"
    )
    assert_json_success(api.delete(realm.hamlet, "users/me"))
    assert_json_error(api.get(realm.hamlet, "users/me"), "Account is deactivated", 401)


# -- A throwaway router ----------------------------------------------------------------------

router = ApiRouter()
calls: list[tuple[str, Any]] = []


# Registered in an order where first-come routing would go wrong: parameters before literals.
@router.get("/things/{name}")
def thing_by_name(ctx: Ctx, name: str) -> JsonDict:
    return {"route": "name", "value": name}


@router.get("/things/{thing_id:int}")
def thing_by_id(ctx: Ctx, thing_id: int) -> JsonDict:
    return {"route": "id", "value": thing_id}


@router.get("/things/special")
def special_thing(ctx: Ctx) -> JsonDict:
    return {"route": "special"}


@router.get("/things/{thing_id:int}/{part}")
def thing_part(ctx: Ctx, thing_id: int, part: str) -> JsonDict:
    return {"route": "part", "value": [thing_id, part]}


@router.get("/things/{name}/owner")
def thing_owner(ctx: Ctx, name: str) -> JsonDict:
    return {"route": "owner", "value": name}


@router.get("/boom")
def boom(ctx: Ctx) -> JsonDict:
    raise RuntimeError("secret internal detail")


@router.get("/boom_async")
async def boom_async(ctx: Ctx) -> JsonDict:
    raise RuntimeError("secret internal detail")


@router.get("/data_error")
def data_error(ctx: Ctx) -> JsonDict:
    raise DataError("SELECT 1", {}, Exception("integer out of range"))


@router.get("/integrity_error")
def integrity_error(ctx: Ctx) -> JsonDict:
    raise IntegrityError("INSERT", {}, Exception("UNIQUE constraint failed: user_group.name"))


@router.get("/plain", auth="none")
def plain(ctx: Ctx) -> Response:
    return PlainTextResponse("hello")


@router.get("/open", auth="none")
def open_endpoint(ctx: Ctx) -> JsonDict:
    realm_id = ctx.realm_id_or_none
    return {"realm": None if realm_id is None else realm_settings(ctx.session, realm_id).string_id}


@router.get("/async_echo")
async def async_echo(ctx: Ctx, n: int) -> JsonDict:
    return {"n": n, "user_id": ctx.requester.user_id}


@pytest.fixture
def test_app(settings: Settings, services: Services) -> Any:
    return create_app(settings, services, routers=[router])


@pytest.fixture
def tclient(test_app: Any) -> Iterator[TestClient]:
    # Not entered as a context manager: the app's lifespan belongs to the session's app,
    # which shares these services.
    test_client = TestClient(test_app, base_url="http://palaver.test")
    yield test_client
    test_client.close()


@pytest.fixture
def headers(realm: SeededRealm) -> dict[str, str]:
    return {"host": realm.host, "authorization": basic_auth(realm.hamlet)}


def test_literal_segments_win_over_parameters(tclient: TestClient, headers: dict[str, str]) -> None:
    def route(path: str) -> Any:
        body = assert_json_success(tclient.get(f"/api/v1/{path}", headers=headers))
        return body["route"], body.get("value")

    assert route("things/special") == ("special", None)
    assert route("things/42") == ("id", 42)
    assert route("things/x42") == ("name", "x42")
    assert route("things/42/owner") == ("part", [42, "owner"])
    assert route("things/abc/owner") == ("owner", "abc")


def test_exception_in_view_is_a_500_envelope(
    tclient: TestClient, headers: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    for path in ("boom", "boom_async"):
        with caplog.at_level(logging.ERROR, logger="palaver.api"):
            response = tclient.get(f"/api/v1/{path}", headers=headers)
        assert response.headers["content-type"] == "application/json"
        body = assert_json_error(response, "Internal server error", 500)
        assert "secret" not in response.text
        assert set(body) == {"result", "msg", "code"}
        assert "secret internal detail" in caplog.text
        caplog.clear()


def test_exception_outside_the_pipeline_is_a_500_envelope(
    test_app: Any, headers: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(*args: Any) -> Any:
        raise RuntimeError("body reader exploded")

    monkeypatch.setattr(pipeline, "read_request", broken)
    # Starlette re-raises after answering so servers can log it; the client sees the envelope.
    client = TestClient(test_app, base_url="http://palaver.test", raise_server_exceptions=False)
    response = client.get("/api/v1/things/special", headers=headers)
    assert response.headers["content-type"] == "application/json"
    assert_json_error(response, "Internal server error", 500)


def test_database_rejecting_input_is_a_400(
    tclient: TestClient, headers: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="palaver.api"):
        response = tclient.get("/api/v1/data_error", headers=headers)
    assert_json_error(response, "Invalid request data", 400)
    assert "integer out of range" in caplog.text


def test_a_conflicting_write_is_a_400(
    tclient: TestClient, headers: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="palaver.api"):
        response = tclient.get("/api/v1/integrity_error", headers=headers)
    assert_json_error(response, "The request conflicts with existing data; reload and try again", 400)
    assert "UNIQUE constraint failed" in caplog.text


def test_view_returning_a_response_keeps_it(tclient: TestClient, headers: dict[str, str]) -> None:
    response = tclient.get("/api/v1/plain", headers=headers)
    assert response.status_code == 200
    assert response.text == "hello"
    assert response.headers["content-type"].startswith("text/plain")
    assert "x-ratelimit-limit" in response.headers


def test_async_views_get_parsed_parameters(
    tclient: TestClient, headers: dict[str, str], realm: SeededRealm
) -> None:
    body = assert_json_success(
        tclient.get("/api/v1/async_echo", params={"n": "3", "x": "1"}, headers=headers)
    )
    assert (body["n"], body["user_id"], body["ignored_parameters_unsupported"]) == (3, realm.hamlet.id, ["x"])
    assert_json_error(tclient.get("/api/v1/async_echo", headers=headers), "Missing 'n' argument")
    assert_json_error(
        tclient.get("/api/v1/async_echo", params={"n": "3"}),
        "Not logged in: API authentication or user session required",
        401,
    )


def test_unauthenticated_endpoint_sees_the_realm_of_its_host(tclient: TestClient, realm: SeededRealm) -> None:
    body = assert_json_success(tclient.get("/api/v1/open", headers={"host": realm.host}))
    assert body["realm"] == realm.string_id
    body = assert_json_success(tclient.get("/api/v1/open", headers={"host": "nowhere.palaver.test"}))
    assert body["realm"] is None


def test_duplicate_endpoints_are_refused(settings: Settings, services: Services) -> None:
    other = ApiRouter()
    other.get("/things/special")(special_thing)
    with pytest.raises(RuntimeError, match="duplicate endpoint GET /things/special"):
        create_app(settings, services, routers=[router, other])


# -- The route index -------------------------------------------------------------------------

wild_router = ApiRouter()


# A first segment that is a parameter may match any path; the index must still try it.
@wild_router.get("/{anything}/wild")
def wild(ctx: Ctx, anything: str) -> JsonDict:
    return {"route": "wild"}


def _scan(table: RouteTable, method: str, path: str) -> tuple[PathRoute | None, list[str]]:
    """What a scan of every route in precedence order picks: the first route fitting the path
    that takes the method, else the methods of all that fit."""
    allowed: set[str] = set()
    wanted = "GET" if method == "HEAD" else method
    for route in table.routes:
        if route.match(path) is None:
            continue
        if wanted in route.endpoints:
            return route, []
        allowed |= set(route.endpoints)
    return None, sorted(allowed | ({"HEAD"} if "GET" in allowed else set()))


def _sample_paths(route_path: str) -> list[str]:
    """Concrete URLs for a route pattern: numbers, words and emails in each parameter."""

    def fill(value: str) -> str:
        return re.sub(r"{\w+(:\w+)?}", lambda m: "a/b" if m.group(1) == ":path" else value, route_path)

    return [fill(value) for value in ("5", "me", "x@example.com")]


def test_route_index_picks_what_a_scan_would() -> None:
    table = RouteTable.of(e for r in [*discover_routers(), router, wild_router] for e in r.endpoints)
    paths = {p for route in table.routes for p in _sample_paths(route.path)}
    paths |= {"", "/", "/users/", "/nope", "/x/wild", "/users/me"}
    # Under each literal first segment, a path only the route with a wild first segment takes.
    paths |= {"/" + path.split("/")[1] + "/wild" for path in list(paths) if path.count("/") > 1}
    for path in sorted(paths):
        for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):
            found = table.match(method, path)
            expected, allowed = _scan(table, method, path)
            if expected is None:
                assert found == allowed, (method, path)
            else:
                assert not isinstance(found, list), (method, path)
                assert found[0] is expected, (method, path)


def test_wild_first_segment_is_reachable(settings: Settings, services: Services, realm: SeededRealm) -> None:
    # Not entered, as in ``tclient``: the lifespan belongs to the session's app.
    tclient = TestClient(
        create_app(settings, services, routers=[router, wild_router]), base_url="http://palaver.test"
    )
    headers = {"host": realm.host, "authorization": basic_auth(realm.hamlet)}
    assert assert_json_success(tclient.get("/api/v1/zzz/wild", headers=headers))["route"] == "wild"
    # A literal first segment still wins where both match.
    assert assert_json_success(tclient.get("/api/v1/things/wild", headers=headers))["route"] == "name"
    tclient.close()


# -- Reading and answering ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        b"queue_id=1%3Aabc&last_event_id=5",
        b"queue_id=1:abc&last_event_id=5&dont_block=true",
        b"a=1&a=2&&b&c=&=d&e=f=g",
        b"a=x+y&b=%20",
        b"x=1#fragment&y=2",
        b"t=\tab\r\nc",
        "n=\u00e9".encode(),
    ],
)
def test_query_values_are_parse_qsls(query: bytes) -> None:
    from urllib.parse import parse_qsl

    text = query.decode().translate(str.maketrans("", "", "\t\r\n")).partition("#")[0]
    assert pipeline.query_values(query) == dict(parse_qsl(text, keep_blank_values=True, errors="strict"))


@pytest.mark.parametrize("status", [200, 400, 429, 204, 304, 101])
@pytest.mark.parametrize(
    "headers",
    [
        None,
        {},
        {"X-RateLimit-Limit": "200", "X-RateLimit-Remaining": "199", "Retry-After": "5"},
        {"WWW-Authenticate": 'Basic realm="zulip"'},
        {"Content-Type": "text/plain", "X-Other": "1"},
        {"content-length": "3"},
    ],
)
def test_json_response_is_starlettes(status: int, headers: dict[str, str] | None) -> None:
    ours = responses.json_response({"result": "success", "msg": ""}, status, headers)
    starlettes = Response(ours.body, status_code=status, media_type="application/json", headers=headers)
    # Plus the one field every API answer adds: no cache may keep it.
    assert (ours.status_code, ours.body, ours.raw_headers) == (
        starlettes.status_code,
        starlettes.body,
        [*starlettes.raw_headers, (b"cache-control", b"private, no-store")],
    )
