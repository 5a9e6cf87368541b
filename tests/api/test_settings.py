"""PATCH /settings and its legacy aliases /settings/display and /settings/notifications."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from palaver.app import create_app
from palaver.lib.user_settings import LANGUAGES, SettingSpec, setting_specs
from palaver.models import UserProfile
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
)
from tests.helpers import (
    TestUser as User,
)

PATHS = ["settings", "settings/display", "settings/notifications"]
SPECS = setting_specs()
# Settings whose change does more than one user_settings event; tested on their own below.
SPECIAL = {"email_address_visibility"}


def stored(services: Services, user: User, name: str) -> Any:
    with services.db.session() as session:
        profile = session.get(UserProfile, user.id)
        assert profile is not None
        return getattr(profile, name)


def other_value(spec: SettingSpec, current: Any) -> Any:
    """A valid value for the setting that differs from ``current``."""
    if spec.type is bool:
        return not current
    if spec.choices is not None:
        return sorted((c for c in spec.choices if c != current), key=str)[0]
    assert spec.minimum is not None and spec.maximum is not None
    return spec.maximum if current != spec.maximum else spec.minimum


def invalid_values(spec: SettingSpec) -> list[Any]:
    """Well-typed values the setting must refuse."""
    if spec.type is bool:
        return []
    if spec.type is str:
        return ["bogus", ""]
    if spec.choices is not None:
        return [0, max(c for c in spec.choices if isinstance(c, int)) + 1, -1]
    assert spec.minimum is not None and spec.maximum is not None
    return [spec.minimum - 1, spec.maximum + 1]


def settings_events(events: EventRecorder) -> list[tuple[dict[str, Any], list[int]]]:
    return events.of_type("user_settings", "update")


def login(api: Api, username: str, password: str) -> httpx.Response:
    return api.post(None, "fetch_api_key", {"username": username, "password": password})


# Every personal setting ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(set(SPECS) - SPECIAL))
def test_each_setting_changes_and_notifies(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder, name: str
) -> None:
    spec = SPECS[name]
    before = stored(services, realm.hamlet, name)
    value = other_value(spec, before)
    body = assert_json_success(api.patch(realm.hamlet, "settings", {name: value}))
    assert "ignored_parameters_unsupported" not in body
    assert stored(services, realm.hamlet, name) == value
    ((event, recipients),) = settings_events(events)
    expected = {"type": "user_settings", "op": "update", "property": name, "value": value}
    if name == "default_language":
        expected["language_name"] = LANGUAGES[value]
    assert event == expected
    # Only the user's own clients hear about personal settings.
    assert recipients == [realm.hamlet.id]
    # Nobody else's settings moved.
    assert stored(services, realm.othello, name) == before


@pytest.mark.parametrize("name", sorted(SPECS))
def test_unchanged_setting_sends_no_event(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder, name: str
) -> None:
    value = stored(services, realm.hamlet, name)
    assert_json_success(api.patch(realm.hamlet, "settings", {name: value}))
    assert events.published == []


@pytest.mark.parametrize(
    ("name", "value"),
    [(name, value) for name in sorted(SPECS) for value in invalid_values(SPECS[name])],
)
def test_invalid_setting_values(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder, name: str, value: Any
) -> None:
    before = stored(services, realm.hamlet, name)
    body = assert_json_error(
        api.patch(realm.hamlet, "settings", {name: value}), f"Invalid {name}", 400, "REQUEST_VARIABLE_INVALID"
    )
    assert body["var_name"] == name
    assert stored(services, realm.hamlet, name) == before
    assert events.published == []


@pytest.mark.parametrize("name", sorted(n for n, s in SPECS.items() if s.type is bool))
@pytest.mark.parametrize("value", ["1", "0", '"true"', "null", "[true]"])
def test_boolean_settings_take_only_booleans(
    api: Api, realm: SeededRealm, services: Services, name: str, value: str
) -> None:
    before = stored(services, realm.hamlet, name)
    response = api.patch(realm.hamlet, "settings", {name: value})
    if value == "null":
        # JSON null is "not given": nothing changes.
        assert_json_success(response)
    else:
        body = assert_json_error(response, f"{name} is not a boolean", 400, "REQUEST_VARIABLE_INVALID")
        assert body["var_name"] == name
    assert stored(services, realm.hamlet, name) == before


@pytest.mark.parametrize("name", sorted(n for n, s in SPECS.items() if s.type is int))
def test_integer_settings_take_only_integers(api: Api, realm: SeededRealm, name: str) -> None:
    for value in ("true", "1.5", '"2"', "[2]"):
        assert_json_error(
            api.patch(realm.hamlet, "settings", {name: value}),
            f"{name} is not an integer",
            400,
            "REQUEST_VARIABLE_INVALID",
        )
    assert_json_error(
        api.patch(realm.hamlet, "settings", {name: "two"}),
        f'Argument "{name}" is not valid JSON.',
        400,
        "INVALID_JSON",
    )


def test_boolean_accepts_json_text(api: Api, realm: SeededRealm, services: Services) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"enter_sends": "true"}))
    assert stored(services, realm.hamlet, "enter_sends") is True
    assert_json_success(api.patch(realm.hamlet, "settings", {"enter_sends": "false"}))
    assert stored(services, realm.hamlet, "enter_sends") is False


def test_string_settings_are_taken_as_text(api: Api, realm: SeededRealm, services: Services) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"emojiset": "twitter"}))
    assert stored(services, realm.hamlet, "emojiset") == "twitter"
    assert_json_success(api.patch(realm.hamlet, "settings", {"web_home_view": "recent"}))
    assert stored(services, realm.hamlet, "web_home_view") == "recent"


def test_range_limits_are_inclusive(api: Api, realm: SeededRealm, services: Services) -> None:
    for name in (
        "web_font_size_px",
        "web_line_height_percent",
        "email_notifications_batching_period_seconds",
    ):
        spec = SPECS[name]
        for value in (spec.minimum, spec.maximum):
            assert_json_success(api.patch(realm.hamlet, "settings", {name: value}))
            assert stored(services, realm.hamlet, name) == value


@pytest.mark.parametrize("path", PATHS)
def test_legacy_paths_take_every_setting(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder, path: str
) -> None:
    # Before feature level 80 display and notification settings had their own endpoints;
    # they are now aliases that accept any setting.
    params = {"twenty_four_hour_time": True, "enable_sounds": False, "emojiset": "text", "color_scheme": 2}
    assert_json_success(api.patch(realm.hamlet, path, params))
    for name, value in params.items():
        assert stored(services, realm.hamlet, name) == value
    assert sorted(e["property"] for e, _ in settings_events(events)) == sorted(params)


@pytest.mark.parametrize("path", PATHS)
def test_legacy_paths_validate_the_same_way(api: Api, realm: SeededRealm, path: str) -> None:
    assert_json_error(api.patch(realm.hamlet, path, {"emojiset": "wingdings"}), "Invalid emojiset", 400)
    assert_json_error(api.patch(realm.hamlet, path, {"enter_sends": 1}), "enter_sends is not a boolean", 400)


def test_several_settings_at_once(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    params = {"enter_sends": True, "web_font_size_px": 20, "emojiset": "twitter", "default_language": "de"}
    assert_json_success(api.patch(realm.hamlet, "settings", params))
    for name, value in params.items():
        assert stored(services, realm.hamlet, name) == value
    by_property = {e["property"]: e for e, _ in settings_events(events)}
    assert set(by_property) == set(params)
    assert by_property["default_language"]["language_name"] == "German"
    assert "language_name" not in by_property["emojiset"]


def test_one_invalid_setting_changes_nothing(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    params = {"enter_sends": True, "web_font_size_px": 20, "color_scheme": 9, "full_name": "Renamed"}
    assert_json_error(api.patch(realm.hamlet, "settings", params), "Invalid color_scheme", 400)
    assert stored(services, realm.hamlet, "enter_sends") is False
    assert stored(services, realm.hamlet, "web_font_size_px") == 16
    assert stored(services, realm.hamlet, "full_name") == "King Hamlet"
    assert events.published == []


def test_invalid_default_language(api: Api, realm: SeededRealm) -> None:
    assert_json_error(
        api.patch(realm.hamlet, "settings", {"default_language": "xx"}), "Invalid default_language", 400
    )


def test_unknown_parameters_are_reported(api: Api, realm: SeededRealm, services: Services) -> None:
    params = {"enter_sends": True, "dense_mode": True, "no_such_setting": "1"}
    body = assert_json_success(api.patch(realm.hamlet, "settings", params))
    assert body["ignored_parameters_unsupported"] == ["dense_mode", "no_such_setting"]
    assert stored(services, realm.hamlet, "enter_sends") is True


def test_nothing_to_change(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    body = assert_json_success(api.patch(realm.hamlet, "settings"))
    assert set(body) == {"result", "msg"}
    assert events.published == []


def test_settings_require_authentication(api: Api, realm: SeededRealm) -> None:
    assert_json_error(
        api.patch(None, "settings", {"enter_sends": True}),
        "Not logged in: API authentication or user session required",
        401,
    )


def test_bots_have_settings_too(api: Api, realm: SeededRealm, services: Services) -> None:
    assert_json_success(api.patch(realm.default_bot, "settings", {"enter_sends": True}))
    assert stored(services, realm.default_bot, "enter_sends") is True


def test_settings_are_per_user(api: Api, realm: SeededRealm, services: Services) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"color_scheme": 2}))
    assert stored(services, realm.othello, "color_scheme") == 1


# Full name -------------------------------------------------------------------------------


def test_change_full_name(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"full_name": " Prince Hamlet "}))
    assert stored(services, realm.hamlet, "full_name") == "Prince Hamlet"
    ((event, recipients),) = events.of_type("realm_user", "update")
    assert event["person"] == {"user_id": realm.hamlet.id, "full_name": "Prince Hamlet"}
    assert sorted(recipients) == sorted(u.id for u in realm.users.values())
    me = assert_json_success(api.get(realm.othello, f"users/{realm.hamlet.id}"))["user"]
    assert me["full_name"] == "Prince Hamlet"


@pytest.mark.parametrize(
    ("full_name", "message"),
    [
        ("", "Name too short!"),
        ("x" * 101, "Name too long!"),
        ("@hamlet", "Invalid characters in name!"),
        ("Right\u202eto left", "Invalid characters in name!"),
        ("Zero\u200bwidth", "Invalid characters in name!"),
        ("Tab\there", "Invalid characters in name!"),
        ("Hamlet|42", "Invalid format!"),
    ],
)
def test_invalid_full_name(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder, full_name: str, message: str
) -> None:
    assert_json_error(api.patch(realm.hamlet, "settings", {"full_name": full_name}), message, 400)
    assert stored(services, realm.hamlet, "full_name") == "King Hamlet"
    assert events.published == []


# Time zone -------------------------------------------------------------------------------


def test_change_timezone(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"timezone": "Europe/Copenhagen"}))
    assert stored(services, realm.hamlet, "timezone") == "Europe/Copenhagen"
    ((event, recipients),) = events.of_type("realm_user", "update")
    assert event["person"] == {
        "user_id": realm.hamlet.id,
        "email": realm.hamlet.email,
        "timezone": "Europe/Copenhagen",
    }
    assert sorted(recipients) == sorted(u.id for u in realm.users.values())
    # The time zone is a personal setting too, so the user's own clients hear of it as one.
    ((setting, setting_recipients),) = settings_events(events)
    assert (setting["property"], setting["value"]) == ("timezone", "Europe/Copenhagen")
    assert setting_recipients == [realm.hamlet.id]
    user = assert_json_success(api.get(realm.othello, f"users/{realm.hamlet.id}"))["user"]
    assert user["timezone"] == "Europe/Copenhagen"


def test_clear_timezone(api: Api, realm: SeededRealm, services: Services) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"timezone": "Asia/Kolkata"}))
    assert_json_success(api.patch(realm.hamlet, "settings", {"timezone": ""}))
    assert stored(services, realm.hamlet, "timezone") == ""


def test_unchanged_timezone_sends_nothing(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"timezone": ""}))
    assert events.published == []


@pytest.mark.parametrize("timezone", ["Mars/Olympus_Mons", "europe/copenhagen", "UTC+2", " "])
def test_invalid_timezone(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder, timezone: str
) -> None:
    response = api.patch(realm.hamlet, "settings", {"timezone": timezone, "enter_sends": True})
    assert_json_error(response, f"Invalid timezone '{timezone}'", 400)
    assert stored(services, realm.hamlet, "timezone") == ""
    assert stored(services, realm.hamlet, "enter_sends") is False
    assert events.published == []


# Password --------------------------------------------------------------------------------


def test_change_password(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    data = {"old_password": PASSWORD, "new_password": "hamlet-new-pass"}
    assert_json_success(api.patch(realm.hamlet, "settings", data))
    assert events.published == []
    assert_json_error(login(api, realm.hamlet.email, PASSWORD), "Your username or password is incorrect", 401)
    body = assert_json_success(login(api, realm.hamlet.email, "hamlet-new-pass"))
    # The API key stays the same.
    assert body["api_key"] == realm.hamlet.api_key
    assert_json_success(api.get(realm.hamlet, "users/me"))


def test_wrong_old_password(api: Api, realm: SeededRealm) -> None:
    data = {"old_password": "not-it", "new_password": "hamlet-new-pass"}
    assert_json_error(api.patch(realm.hamlet, "settings", data), "Wrong password!", 400)
    assert_json_success(login(api, realm.hamlet.email, PASSWORD))
    assert_json_error(
        login(api, realm.hamlet.email, "hamlet-new-pass"), "Your username or password is incorrect", 401
    )


def test_new_password_needs_the_old_one(api: Api, realm: SeededRealm) -> None:
    body = assert_json_error(
        api.patch(realm.hamlet, "settings", {"new_password": "hamlet-new-pass"}),
        "Missing 'old_password' argument",
        400,
        "REQUEST_VARIABLE_MISSING",
    )
    assert body["var_name"] == "old_password"


def test_weak_new_password(api: Api, realm: SeededRealm) -> None:
    data = {"old_password": PASSWORD, "new_password": "abc"}
    assert_json_error(api.patch(realm.hamlet, "settings", data), "New password is too weak!", 400)
    assert_json_success(login(api, realm.hamlet.email, PASSWORD))


def test_old_password_alone_changes_nothing(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"old_password": "anything"}))
    assert_json_success(login(api, realm.hamlet.email, PASSWORD))


def test_password_change_is_atomic_with_other_settings(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    data = {"old_password": PASSWORD, "new_password": "hamlet-new-pass", "emojiset": "wingdings"}
    assert_json_error(api.patch(realm.hamlet, "settings", data), "Invalid emojiset", 400)
    assert_json_success(login(api, realm.hamlet.email, PASSWORD))


# Email -----------------------------------------------------------------------------------


def test_email_change_waits_for_confirmation(api: Api, realm: SeededRealm) -> None:
    # The change applies when the link emailed to the new address is opened
    # (tests/api/test_account_emails.py follows the link).
    assert_json_success(api.patch(realm.hamlet, "settings", {"email": "new-hamlet@example.com"}))
    me = assert_json_success(api.get(realm.hamlet, "users/me"))
    assert me["delivery_email"] == realm.hamlet.email
    response = api.patch(realm.hamlet, "settings", {"email": realm.othello.email})
    assert_json_error(response, "Email is already in use.", 400)


def test_same_email_is_no_change(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"email": realm.hamlet.email.upper()}))
    assert events.published == []


# Email address visibility ----------------------------------------------------------------


def test_hiding_the_email(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    fake = f"user{realm.hamlet.id}@{realm.host}"
    everyone = sorted(u.id for u in realm.users.values())
    assert_json_success(api.patch(realm.hamlet, "settings", {"email_address_visibility": 3}))
    assert stored(services, realm.hamlet, "email_address_visibility") == 3

    ((setting, recipients),) = settings_events(events)
    assert (setting["property"], setting["value"], recipients) == (
        "email_address_visibility",
        3,
        [realm.hamlet.id],
    )

    ((new_email, recipients),) = [
        (e, r) for e, r in events.of_type("realm_user", "update") if "new_email" in e["person"]
    ]
    assert new_email["person"] == {"user_id": realm.hamlet.id, "new_email": fake}
    assert sorted(recipients) == everyone

    # Those who lose sight of the address are told, one by one; administrators are not.
    lost = {r[0] for e, r in events.of_type("realm_user", "update") if "delivery_email" in e["person"]}
    assert lost == {u.id for n, u in realm.users.items() if n not in ("desdemona", "iago", "hamlet")}
    for event, users in events.of_type("realm_user", "update"):
        if "delivery_email" in event["person"]:
            assert len(users) == 1
            assert event["person"] == {"user_id": realm.hamlet.id, "delivery_email": None}
    # They can no longer compute the Gravatar URL from the address, so they are sent it.
    avatars = [
        (e["person"], r) for e, r in events.of_type("realm_user", "update") if "avatar_url" in e["person"]
    ]
    assert {r[0] for _, r in avatars} == lost
    for person, users in avatars:
        assert len(users) == 1
        assert person["avatar_url"].startswith("https://secure.gravatar.com/avatar/")
        assert person["avatar_url_medium"].endswith("&s=500")

    me = assert_json_success(api.get(realm.hamlet, "users/me"))
    assert (me["email"], me["delivery_email"]) == (fake, realm.hamlet.email)
    seen_by_othello = assert_json_success(api.get(realm.othello, f"users/{realm.hamlet.id}"))["user"]
    assert (seen_by_othello["email"], seen_by_othello["delivery_email"]) == (fake, None)
    listed = {m["user_id"]: m for m in assert_json_success(api.get(realm.othello, "users"))["members"]}
    assert listed[realm.hamlet.id]["delivery_email"] is None
    seen_by_iago = assert_json_success(api.get(realm.iago, f"users/{realm.hamlet.id}"))["user"]
    assert (seen_by_iago["email"], seen_by_iago["delivery_email"]) == (fake, realm.hamlet.email)


def test_showing_the_email_again(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"email_address_visibility": 4}))
    events.clear()
    assert_json_success(api.patch(realm.hamlet, "settings", {"email_address_visibility": 1}))
    ((new_email, _),) = [
        (e, r) for e, r in events.of_type("realm_user", "update") if "new_email" in e["person"]
    ]
    assert new_email["person"]["new_email"] == realm.hamlet.email
    regained = {r[0] for e, r in events.of_type("realm_user", "update") if "delivery_email" in e["person"]}
    assert regained == {u.id for n, u in realm.users.items() if n != "hamlet"}
    for event, _ in events.of_type("realm_user", "update"):
        if "delivery_email" in event["person"]:
            assert event["person"]["delivery_email"] == realm.hamlet.email
    user = assert_json_success(api.get(realm.othello, f"users/{realm.hamlet.id}"))["user"]
    assert user["email"] == user["delivery_email"] == realm.hamlet.email


def test_narrowing_visibility_between_hidden_levels_keeps_the_email(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"email_address_visibility": 2}))
    events.clear()
    assert_json_success(api.patch(realm.hamlet, "settings", {"email_address_visibility": 5}))
    updates = events.of_type("realm_user", "update")
    # The API email was already the fake one; only the members losing access hear of it.
    assert not [e for e, _ in updates if "new_email" in e["person"]]
    lost = {r[0] for e, r in updates if "delivery_email" in e["person"]}
    assert lost == {realm.othello.id, realm.cordelia.id, realm.default_bot.id}


def test_hidden_email_still_authenticates(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.patch(realm.hamlet, "settings", {"email_address_visibility": 4}))
    # Clients keep working with the address they had...
    assert_json_success(api.get(realm.hamlet, "users/me"))
    # ...and with the new API email.
    fake = User(
        realm.hamlet.id, f"user{realm.hamlet.id}@{realm.host}", realm.hamlet.api_key, "King Hamlet", 400
    )
    assert assert_json_success(api.get(fake, "users/me"))["user_id"] == realm.hamlet.id


@pytest.mark.parametrize("value", [0, 6, -1])
def test_invalid_email_visibility(api: Api, realm: SeededRealm, events: EventRecorder, value: int) -> None:
    response = api.patch(realm.hamlet, "settings", {"email_address_visibility": value})
    assert_json_error(response, "Invalid email_address_visibility", 400, "REQUEST_VARIABLE_INVALID")
    assert events.published == []


# Password guessing through the settings endpoint is limited like logins -------------------


@pytest.fixture
def limited(database_url: str, tmp_path: Path) -> Iterator[TestClient]:
    # Day-long windows so that the test never straddles a window boundary.
    settings = make_test_settings(
        database_url, tmp_path, rate_limiting=True, auth_rate_limit_per_username="3/86400"
    )
    with TestClient(create_app(settings, build_services(settings)), base_url="http://palaver.test") as client:
        yield client


def test_old_password_guesses_are_limited(limited: TestClient, realm: SeededRealm) -> None:
    api = Api(limited, realm)
    guess = {"old_password": "guess", "new_password": "hamlet-new-pass"}
    for _ in range(3):
        assert_json_error(api.patch(realm.hamlet, "settings", guess), "Wrong password!", 400)
    body = api.patch(
        realm.hamlet, "settings", {"old_password": PASSWORD, "new_password": "hamlet-new-pass"}
    ).json()
    assert body["result"] == "error"
    assert body["msg"].startswith("You're making too many attempts! Try again in ")
    assert body["msg"].endswith(" seconds.")
    # The same count guards logins to the account.
    response = login(api, realm.hamlet.email, PASSWORD)
    assert_json_error(response, "API usage exceeded rate limit", 429, "RATE_LIMIT_HIT")
    # Other settings are not affected.
    assert_json_success(api.patch(realm.hamlet, "settings", {"enter_sends": True}))


def test_right_old_password_resets_the_limit(limited: TestClient, realm: SeededRealm) -> None:
    api = Api(limited, realm)
    guess = {"old_password": "guess", "new_password": "hamlet-new-pass"}
    for _ in range(2):
        assert_json_error(api.patch(realm.hamlet, "settings", guess), "Wrong password!", 400)
    assert_json_success(
        api.patch(realm.hamlet, "settings", {"old_password": PASSWORD, "new_password": "pass-two"})
    )
    for _ in range(2):
        assert_json_error(
            login(api, realm.hamlet.email, "guess"), "Your username or password is incorrect", 401
        )
    assert_json_success(login(api, realm.hamlet.email, "pass-two"))
