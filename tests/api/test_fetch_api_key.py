"""POST /fetch_api_key: trading a password for the API key."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from palaver.app import create_app
from palaver.models import Realm, UserProfile
from palaver.services import Services, build_services
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import (
    PASSWORD,
    Api,
    EventRecorder,
    SeededRealm,
    assert_json_error,
    assert_json_success,
    seed_realm,
)
from tests.helpers import (
    TestUser as User,
)

WRONG = "Your username or password is incorrect"


def delivery_email(services: Services, user: User) -> str:
    with services.db.session() as session:
        profile = session.get(UserProfile, user.id)
        assert profile is not None
        return profile.delivery_email


def login(api: Api, username: str, password: str = PASSWORD) -> httpx.Response:
    return api.post(None, "fetch_api_key", {"username": username, "password": password})


def test_success_returns_key_email_and_id(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(login(api, realm.hamlet.email))
    assert set(body) == {"result", "msg", "api_key", "email", "user_id"}
    assert body["api_key"] == realm.hamlet.api_key
    assert body["email"] == realm.hamlet.email
    assert body["user_id"] == realm.hamlet.id


def test_returned_key_authenticates(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(login(api, realm.iago.email))
    user = User(body["user_id"], body["email"], body["api_key"], "Iago", realm.iago.role)
    assert assert_json_success(api.get(user, "users/me"))["user_id"] == realm.iago.id


def test_username_is_case_and_space_insensitive(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(login(api, f"  {realm.othello.email.upper()} "))
    assert body["user_id"] == realm.othello.id


def test_every_role_can_log_in(api: Api, realm: SeededRealm) -> None:
    for name in ("desdemona", "iago", "shiva", "cordelia", "polonius"):
        user = realm.users[name]
        assert assert_json_success(login(api, user.email))["user_id"] == user.id


def test_wrong_password(api: Api, realm: SeededRealm) -> None:
    assert_json_error(login(api, realm.hamlet.email, "not-the-password"), WRONG, 401, "AUTHENTICATION_FAILED")


def test_empty_password(api: Api, realm: SeededRealm) -> None:
    assert_json_error(login(api, realm.hamlet.email, ""), WRONG, 401, "AUTHENTICATION_FAILED")


def test_unknown_user_looks_like_a_wrong_password(api: Api, realm: SeededRealm) -> None:
    response = login(api, f"nobody@{realm.string_id}.example.com")
    assert_json_error(response, WRONG, 401, "AUTHENTICATION_FAILED")


def test_rejecting_an_unknown_user_costs_a_password_hash(
    api: Api, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Otherwise the response time would tell which accounts exist.
    hashed: list[str] = []
    real_hash = services.passwords.hash

    def counting_hash(password: str) -> str:
        hashed.append(password)
        return real_hash(password)

    monkeypatch.setattr(services.passwords, "hash", counting_hash)
    login(api, f"nobody@{realm.string_id}.example.com", "guess-1")
    login(api, realm.default_bot.email, "guess-2")
    assert hashed == ["guess-1", "guess-2"]


def test_bots_cannot_log_in_with_a_password(api: Api, realm: SeededRealm) -> None:
    assert_json_error(login(api, realm.default_bot.email, ""), WRONG, 401, "AUTHENTICATION_FAILED")
    assert_json_error(login(api, realm.default_bot.email), WRONG, 401, "AUTHENTICATION_FAILED")


def test_api_key_is_not_a_password(api: Api, realm: SeededRealm) -> None:
    response = login(api, realm.hamlet.email, realm.hamlet.api_key)
    assert_json_error(response, WRONG, 401, "AUTHENTICATION_FAILED")


def test_username_is_the_real_email_not_the_fake_one(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"email_address_visibility": 4}))
    real = delivery_email(services, realm.hamlet)
    body = assert_json_success(login(api, real))
    # The response carries the API email, which is now the fake one.
    assert body["email"] == f"user{realm.hamlet.id}@{realm.host}"
    assert body["email"] != real
    assert_json_error(login(api, body["email"]), WRONG, 401, "AUTHENTICATION_FAILED")


def test_deactivated_user(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.hamlet.id}"))
    body = assert_json_error(
        login(api, realm.hamlet.email), "Account is deactivated", 401, "USER_DEACTIVATED"
    )
    assert set(body) == {"result", "msg", "code"}


def test_deactivated_user_with_wrong_password_learns_nothing(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.hamlet.id}"))
    assert_json_error(login(api, realm.hamlet.email, "guess"), WRONG, 401, "AUTHENTICATION_FAILED")


def test_reactivated_user_can_log_in_again(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.hamlet.id}"))
    assert_json_success(api.post(realm.iago, f"users/{realm.hamlet.id}/reactivate"))
    assert assert_json_success(login(api, realm.hamlet.email))["user_id"] == realm.hamlet.id


def test_deactivated_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    with services.db.session() as session, session.begin():
        profile = session.get(Realm, realm.id)
        assert profile is not None
        profile.deactivated = True
    assert_json_error(
        login(api, realm.hamlet.email), "This organization is deactivated", 401, "REALM_DEACTIVATED"
    )


@pytest.mark.parametrize("missing", ["username", "password"])
def test_missing_argument(api: Api, realm: SeededRealm, missing: str) -> None:
    data = {"username": realm.hamlet.email, "password": PASSWORD}
    del data[missing]
    body = assert_json_error(
        api.post(None, "fetch_api_key", data),
        f"Missing '{missing}' argument",
        400,
        "REQUEST_VARIABLE_MISSING",
    )
    assert body["var_name"] == missing


def test_no_arguments_names_the_first_missing_one(api: Api, realm: SeededRealm) -> None:
    body = assert_json_error(
        api.post(None, "fetch_api_key"), "Missing 'username' argument", 400, "REQUEST_VARIABLE_MISSING"
    )
    assert body["var_name"] == "username"


def test_credentials_of_another_realm_do_not_work(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    # Hamlet of the other realm exists, but not under this realm's host.
    assert_json_error(login(api, other.hamlet.email), WRONG, 401, "AUTHENTICATION_FAILED")
    other_api = Api(api.client, other)
    assert assert_json_success(login(other_api, other.hamlet.email))["user_id"] == other.hamlet.id


def test_unknown_organization(api: Api, realm: SeededRealm) -> None:
    response = api.client.post(
        "/api/v1/fetch_api_key",
        data={"username": realm.hamlet.email, "password": PASSWORD},
        headers={"host": "no-such-org.palaver.test"},
    )
    assert_json_error(response, "There is no organization at this URL", 404)


def test_get_is_not_allowed(api: Api, realm: SeededRealm) -> None:
    response = api.get(None, "fetch_api_key", {"username": realm.hamlet.email, "password": PASSWORD})
    assert response.status_code == 405


def test_unknown_parameters_are_reported(api: Api, realm: SeededRealm) -> None:
    data = {"username": realm.hamlet.email, "password": PASSWORD, "mobile_flow_otp": "x"}
    body = assert_json_success(api.post(None, "fetch_api_key", data))
    assert body["ignored_parameters_unsupported"] == ["mobile_flow_otp"]


def test_password_change_takes_effect(api: Api, realm: SeededRealm) -> None:
    data = {"old_password": PASSWORD, "new_password": "a-brand-new-password"}
    assert_json_success(api.patch(realm.hamlet, "settings", data))
    assert_json_error(login(api, realm.hamlet.email), WRONG, 401, "AUTHENTICATION_FAILED")
    body = assert_json_success(login(api, realm.hamlet.email, "a-brand-new-password"))
    assert body["api_key"] == realm.hamlet.api_key


def _set_user(services: Services, user_id: int, **values: object) -> None:
    with services.db.session() as session, session.begin():
        profile = session.get(UserProfile, user_id)
        assert profile is not None
        for name, value in values.items():
            setattr(profile, name, value)


def _date_joined(api: Api, viewer: User, user_id: int) -> datetime:
    user = assert_json_success(api.get(viewer, f"users/{user_id}"))["user"]
    return datetime.fromisoformat(user["date_joined"])


def test_imported_stub_first_login(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    _set_user(services, realm.hamlet.id, is_imported_stub=True, date_joined=datetime(2020, 1, 1))
    user = assert_json_success(api.get(realm.iago, f"users/{realm.hamlet.id}"))["user"]
    assert user["is_imported_stub"] is True

    assert_json_success(login(api, realm.hamlet.email))

    updates = [e for e, _ in events.of_type("realm_user", "update") if "is_imported_stub" in e["person"]]
    assert len(updates) == 1
    event, recipients = next(
        (e, r) for e, r in events.of_type("realm_user", "update") if "is_imported_stub" in e["person"]
    )
    assert event["person"] == {"user_id": realm.hamlet.id, "is_imported_stub": False}
    assert realm.iago.id in recipients and realm.hamlet.id in recipients
    user = assert_json_success(api.get(realm.iago, f"users/{realm.hamlet.id}"))["user"]
    assert user["is_imported_stub"] is False
    # The first login becomes the join time.
    assert _date_joined(api, realm.iago, realm.hamlet.id).year > 2020

    events.clear()
    assert_json_success(login(api, realm.hamlet.email))
    assert events.of_type("realm_user") == []


def test_first_login_of_an_api_created_user_sets_date_joined(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    email = f"newbie@{realm.string_id}.example.com"
    body = assert_json_success(
        api.post(realm.desdemona, "users", {"email": email, "password": "newbie-pass", "full_name": "Newbie"})
    )
    user_id = body["user_id"]
    _set_user(services, user_id, date_joined=datetime(2021, 6, 1))
    assert _date_joined(api, realm.iago, user_id).year == 2021

    assert_json_success(login(api, email, "newbie-pass"))
    first = _date_joined(api, realm.iago, user_id)
    assert first.year > 2021

    # Only the first login counts.
    assert_json_success(login(api, email, "newbie-pass"))
    assert _date_joined(api, realm.iago, user_id) == first


# Rate limiting: an app of its own, with tight limits, on the same database.


def _limited_client(database_url: str, data_dir: Path, **limits: str) -> Iterator[TestClient]:
    settings = make_test_settings(database_url, data_dir, rate_limiting=True, **limits)
    services = build_services(settings)
    with TestClient(create_app(settings, services), base_url="http://palaver.test") as client:
        yield client


@pytest.fixture
def per_user_limited(database_url: str, tmp_path: Path) -> Iterator[TestClient]:
    # Windows are a day long so that the test never straddles a window boundary.
    yield from _limited_client(database_url, tmp_path, auth_rate_limit_per_username="3/86400")


@pytest.fixture
def per_ip_limited(database_url: str, tmp_path: Path) -> Iterator[TestClient]:
    yield from _limited_client(database_url, tmp_path, auth_rate_limit_per_ip="3/86400")


def _assert_rate_limited(response: httpx.Response) -> None:
    body = assert_json_error(response, "API usage exceeded rate limit", 429, "RATE_LIMIT_HIT")
    retry_after = int(response.headers["Retry-After"])
    assert 1 <= retry_after <= 86400
    assert 0 < body["retry-after"] <= 86400


def test_rate_limit_per_username(per_user_limited: TestClient, realm: SeededRealm) -> None:
    api = Api(per_user_limited, realm)
    for _ in range(3):
        assert_json_error(login(api, realm.hamlet.email, "guess"), WRONG, 401, "AUTHENTICATION_FAILED")
    _assert_rate_limited(login(api, realm.hamlet.email, "guess"))
    # Once limited, even the right password is refused...
    _assert_rate_limited(login(api, realm.hamlet.email))
    # ...however the username is spelled...
    _assert_rate_limited(login(api, realm.hamlet.email.upper()))
    # ...while other accounts are unaffected.
    assert assert_json_success(login(api, realm.othello.email))["user_id"] == realm.othello.id


def test_rate_limit_applies_to_unknown_usernames(per_user_limited: TestClient, realm: SeededRealm) -> None:
    api = Api(per_user_limited, realm)
    nobody = f"nobody@{realm.string_id}.example.com"
    for _ in range(3):
        assert_json_error(login(api, nobody), WRONG, 401, "AUTHENTICATION_FAILED")
    _assert_rate_limited(login(api, nobody))


def test_rate_limit_per_username_is_per_realm(
    per_user_limited: TestClient, realm: SeededRealm, services: Services
) -> None:
    other = seed_realm(services)
    api = Api(per_user_limited, realm)
    for _ in range(3):
        login(api, other.hamlet.email, "guess")
    _assert_rate_limited(login(api, other.hamlet.email))
    # The same username on its own realm is a different account.
    assert_json_success(login(Api(per_user_limited, other), other.hamlet.email))


def test_successful_login_resets_the_username_limit(per_user_limited: TestClient, realm: SeededRealm) -> None:
    api = Api(per_user_limited, realm)
    for _ in range(2):
        assert_json_error(login(api, realm.hamlet.email, "guess"), WRONG, 401, "AUTHENTICATION_FAILED")
    assert_json_success(login(api, realm.hamlet.email))
    # A user who logs in from several devices is not locked out by their own successes.
    for _ in range(2):
        assert_json_error(login(api, realm.hamlet.email, "guess"), WRONG, 401, "AUTHENTICATION_FAILED")
    assert_json_success(login(api, realm.hamlet.email))
    for _ in range(5):
        assert_json_success(login(api, realm.hamlet.email))


def test_rate_limit_per_ip(per_ip_limited: TestClient, realm: SeededRealm) -> None:
    api = Api(per_ip_limited, realm)
    for name in ("hamlet", "othello", "cordelia"):
        assert_json_success(login(api, realm.users[name].email))
    _assert_rate_limited(login(api, realm.iago.email))
