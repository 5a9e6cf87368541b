"""HTTP Basic authentication of API requests: the API email (or real email) and the API key."""

from __future__ import annotations

import base64
import re
from typing import Any

import httpx
import pytest
from sqlalchemy import event, update

from palaver.models import Realm, UserProfile
from palaver.services import Services
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success, seed_realm

NOT_LOGGED_IN = "Not logged in: API authentication or user session required"
BAD_HEADER = "Invalid authorization header for basic auth"


def basic(email: str, api_key: str) -> str:
    return "Basic " + base64.b64encode(f"{email}:{api_key}".encode()).decode()


def get_me(api: Api, authorization: str | None, host: str | None = None) -> httpx.Response:
    headers = {"host": host or api.realm.host}
    if authorization is not None:
        headers["authorization"] = authorization
    response: httpx.Response = api.client.get("/api/v1/users/me", headers=headers)
    return response


def assert_unauthorized(response: httpx.Response, msg: str, code: str) -> dict[str, Any]:
    body = assert_json_error(response, msg, 401, code=code)
    assert response.headers["www-authenticate"].startswith('Basic realm="')
    return body


def test_valid_credentials(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(get_me(api, basic(realm.hamlet.email, realm.hamlet.api_key)))
    assert body["user_id"] == realm.hamlet.id


def test_bots_authenticate_the_same_way(api: Api, realm: SeededRealm) -> None:
    bot = realm.default_bot
    body = assert_json_success(get_me(api, basic(bot.email, bot.api_key)))
    assert (body["user_id"], body["is_bot"]) == (bot.id, True)


def test_scheme_and_email_are_case_insensitive(api: Api, realm: SeededRealm) -> None:
    token = base64.b64encode(f"{realm.hamlet.email.upper()}:{realm.hamlet.api_key}".encode()).decode()
    assert_json_success(get_me(api, f"basic {token}"))
    assert_json_success(get_me(api, f"BASIC   {token} "))


def test_missing_authorization(api: Api) -> None:
    body = assert_unauthorized(get_me(api, None), NOT_LOGGED_IN, "UNAUTHORIZED")
    assert set(body) == {"result", "msg", "code"}


@pytest.mark.parametrize(
    "header",
    [
        "Basic !!!not-base64!!!",
        "Basic abc",  # bad padding
        "Basic",
        "Basic ",
        "Basic " + base64.b64encode(b"no-colon-here").decode(),
        "Basic " + base64.b64encode(b"\xff\xfe:\xfd").decode(),  # not UTF-8
    ],
)
def test_malformed_basic_credentials(api: Api, header: str) -> None:
    assert_unauthorized(get_me(api, header), BAD_HEADER, "UNAUTHORIZED")


@pytest.mark.parametrize("header", ["Bearer abcdef", "Digest username=x", "Token x:y", "garbage"])
def test_other_schemes(api: Api, header: str) -> None:
    assert_unauthorized(
        get_me(api, header), "This endpoint requires HTTP basic authentication.", "UNAUTHORIZED"
    )


def test_wrong_api_key(api: Api, realm: SeededRealm) -> None:
    # As Zulip's server answers HTTP Basic credentials (zerver/decorator.py turns every
    # failure of validate_api_key into a plain 401 UNAUTHORIZED): what cannot be a key is
    # "Malformed", a well-formed key that opens no account is "Invalid".
    for key in ["wrong", "", realm.hamlet.api_key[:-1], realm.hamlet.api_key + "x", "é" * 32]:
        assert_unauthorized(get_me(api, basic(realm.hamlet.email, key)), "Malformed API key", "UNAUTHORIZED")
    for key in ["x" * 32, realm.hamlet.api_key.swapcase()]:
        assert_unauthorized(get_me(api, basic(realm.hamlet.email, key)), "Invalid API key", "UNAUTHORIZED")
    # Surrounding whitespace is forgiven, as Zulip does.
    assert_json_success(get_me(api, basic(realm.hamlet.email, f" {realm.hamlet.api_key} ")))


def test_nul_in_api_key_is_just_a_malformed_key(api: Api, realm: SeededRealm) -> None:
    # PostgreSQL refuses NUL in text, even as a query parameter; this once was a 500.
    response = get_me(api, basic(realm.hamlet.email, realm.hamlet.api_key[:-1] + "\x00"))
    assert_unauthorized(response, "Malformed API key", "UNAUTHORIZED")


def test_email_must_belong_to_the_key(api: Api, realm: SeededRealm) -> None:
    for email in [realm.othello.email, "", "nobody@example.com"]:
        response = get_me(api, basic(email, realm.hamlet.api_key))
        assert_unauthorized(response, "Invalid API key", "UNAUTHORIZED")


def test_another_realms_credentials(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    response = get_me(api, basic(other.hamlet.email, other.hamlet.api_key))
    assert_unauthorized(response, "Account is not associated with this subdomain", "UNAUTHORIZED")
    # The root domain and unknown subdomains are other realms too.
    for host in ["palaver.test", "no-such-realm.palaver.test"]:
        response = get_me(api, basic(realm.hamlet.email, realm.hamlet.api_key), host=host)
        assert_unauthorized(response, "Account is not associated with this subdomain", "UNAUTHORIZED")


def test_deactivated_user(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.hamlet.id}"))
    response = get_me(api, basic(realm.hamlet.email, realm.hamlet.api_key))
    assert_unauthorized(response, "Account is deactivated", "USER_DEACTIVATED")
    # Deactivation is not a wrong key: the key still names the account.
    assert_unauthorized(api.get(realm.hamlet, "users"), "Account is deactivated", "USER_DEACTIVATED")


def test_deactivated_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    with services.db.session() as session:
        session.execute(update(Realm).where(Realm.id == realm.id).values(deactivated=True))
        session.commit()
    for user in (realm.hamlet, realm.desdemona, realm.default_bot):
        response = get_me(api, basic(user.email, user.api_key))
        assert_unauthorized(response, "This organization is deactivated", "REALM_DEACTIVATED")


def test_deactivated_realm_has_no_anonymous_access(api: Api, realm: SeededRealm, services: Services) -> None:
    with services.db.session() as session:
        session.execute(
            update(Realm).where(Realm.id == realm.id).values(deactivated=True, enable_spectator_access=True)
        )
        session.commit()
    assert_unauthorized(api.get(None, "users"), "This organization is deactivated", "REALM_DEACTIVATED")
    # Endpoints that need no login at all still answer (clients learn of the realm there).
    assert_json_success(api.get(None, "server_settings"))


def test_real_email_works_when_the_api_email_is_fake(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"email_address_visibility": 2}))
    with services.db.session() as session:
        user = session.get(UserProfile, realm.hamlet.id)
        assert user is not None
        api_email, delivery_email = user.email, user.delivery_email
    assert api_email != delivery_email
    assert delivery_email == realm.hamlet.email

    body = assert_json_success(get_me(api, basic(delivery_email, realm.hamlet.api_key)))
    assert body["email"] == api_email
    assert_json_success(get_me(api, basic(api_email, realm.hamlet.api_key)))
    # Someone else's real email does not unlock this key.
    response = get_me(api, basic(realm.othello.email, realm.hamlet.api_key))
    assert_unauthorized(response, "Invalid API key", "UNAUTHORIZED")


def test_unauthenticated_endpoints_ignore_credentials(api: Api) -> None:
    headers = {"host": api.realm.host, "authorization": "Bearer whatever"}
    assert_json_success(api.client.get("/api/v1/server_settings", headers=headers))


def test_optional_authentication_still_checks_credentials_given(api: Api, realm: SeededRealm) -> None:
    # GET /users allows anonymous access (in organizations that enable it), but credentials
    # that are sent must be valid.
    headers = {"host": realm.host, "authorization": basic(realm.hamlet.email, "wrong")}
    assert_unauthorized(api.client.get("/api/v1/users", headers=headers), "Malformed API key", "UNAUTHORIZED")
    assert_unauthorized(api.get(None, "users"), NOT_LOGGED_IN, "UNAUTHORIZED")
    assert_json_success(api.get(realm.hamlet, "users"))


def test_a_realm_deactivated_after_requests_is_refused_at_once(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    """Authentication reads the realm's row from the realm cache: the commit that deactivates
    it drops the cached row, so the very next request is refused."""
    assert_json_success(get_me(api, basic(realm.hamlet.email, realm.hamlet.api_key)))
    with services.db.session() as session:
        session.execute(update(Realm).where(Realm.id == realm.id).values(deactivated=True))
        session.commit()
    response = get_me(api, basic(realm.hamlet.email, realm.hamlet.api_key))
    assert_unauthorized(response, "This organization is deactivated", "REALM_DEACTIVATED")


def test_a_view_that_needs_no_realm_loads_none(api: Api, realm: SeededRealm, services: Services) -> None:
    """The realm's ORM object is loaded only for views that use it (``Ctx.realm``)."""
    statements: list[str] = []

    def on_execute(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        statements.append(statement)

    auth = basic(realm.hamlet.email, realm.hamlet.api_key)
    assert_json_success(get_me(api, auth))  # the realm's row is now cached
    event.listen(services.db.engine, "before_cursor_execute", on_execute)
    try:
        assert_json_success(get_me(api, auth))
        assert_json_success(api.get(realm.hamlet, "realm/linkifiers"))
    finally:
        event.remove(services.db.engine, "before_cursor_execute", on_execute)
    assert statements
    assert not [s for s in statements if re.search(r"\b(FROM|JOIN) realm\b", s)]
