"""PATCH /realm/user_settings_defaults: what new users start with."""

from __future__ import annotations

from typing import Any

import pytest

from palaver.actions.users import do_create_user
from palaver.lib.user_settings import realm_default_specs
from palaver.models import Realm
from palaver.services import Services
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success


def defaults(api: Api, realm: SeededRealm) -> dict[str, Any]:
    state = assert_json_success(
        api.post(realm.hamlet, "register", {"fetch_event_types": ["realm_user_settings_defaults"]})
    )
    values: dict[str, Any] = state["realm_user_settings_defaults"]
    return values


# One value of each table of the spec, different from the default.
CHANGES: list[tuple[str, Any]] = [
    ("left_side_userlist", True),
    ("enter_sends", True),
    ("hide_ai_features", True),
    ("web_inbox_show_channel_folders", False),
    ("color_scheme", 2),
    ("web_font_size_px", 18),
    ("email_address_visibility", 4),
    ("email_notifications_batching_period_seconds", 600),
    ("realm_name_in_email_notifications_policy", 2),
    ("web_home_view", "recent"),
    ("emojiset", "text"),
    ("web_animate_image_previews", "never"),
    ("notification_sound", "ding"),
]


@pytest.mark.parametrize(("name", "value"), CHANGES)
def test_update_one(api: Api, realm: SeededRealm, events: EventRecorder, name: str, value: Any) -> None:
    assert defaults(api, realm)[name] != value
    body = assert_json_success(api.patch(realm.iago, "realm/user_settings_defaults", {name: value}))
    assert "ignored_parameters_unsupported" not in body
    [(event, users)] = events.of_type("realm_user_settings_defaults", "update")
    assert event == {"type": "realm_user_settings_defaults", "op": "update", "property": name, "value": value}
    assert users == sorted(u.id for u in realm.users.values())
    assert defaults(api, realm)[name] == value


def test_existing_users_keep_settings_and_new_users_get_defaults(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    data = {"enter_sends": True, "emojiset": "text", "web_font_size_px": 20}
    assert_json_success(api.patch(realm.desdemona, "realm/user_settings_defaults", data))
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["user_settings"]}))
    assert state["user_settings"]["enter_sends"] is False
    assert state["user_settings"]["emojiset"] != "text"
    with services.db.session() as session:
        new_user = do_create_user(
            session,
            session.get_one(Realm, realm.id),
            email=f"new@{realm.string_id}.example.com",
            full_name="New Person",
            password_hash=None,
            email_host=realm.host,
        )
        assert (new_user.enter_sends, new_user.emojiset, new_user.web_font_size_px) == (True, "text", 20)


def test_unknown_parameters_are_listed(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(
        api.patch(
            realm.iago, "realm/user_settings_defaults", {"enter_sends": True, "bogus": 1, "timezone": "UTC"}
        )
    )
    assert body["ignored_parameters_unsupported"] == ["bogus", "timezone"]


def test_every_table_setting_is_accepted(api: Api, realm: SeededRealm) -> None:
    specs = realm_default_specs()
    for name in ("starred_message_counts", "web_channel_default_view", "automatically_follow_topics_policy"):
        assert name in specs
    current = defaults(api, realm)
    data = {name: current[name] for name in specs}
    body = assert_json_success(api.patch(realm.iago, "realm/user_settings_defaults", data))
    assert "ignored_parameters_unsupported" not in body


@pytest.mark.parametrize("user", ["shiva", "hamlet", "polonius", "default_bot"])
def test_administrators_only(api: Api, realm: SeededRealm, user: str) -> None:
    response = api.patch(realm.users[user], "realm/user_settings_defaults", {"enter_sends": True})
    assert_json_error(response, "Must be an organization administrator")


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        ({"color_scheme": 7}, "Invalid color_scheme"),
        ({"emojiset": "apple"}, "Invalid emojiset"),
        ({"web_home_view": "feed"}, "Invalid web_home_view"),
        ({"email_address_visibility": 6}, "Invalid email_address_visibility"),
        ({"enter_sends": "yes"}, 'Argument "enter_sends" is not valid JSON.'),
        ({"enter_sends": 1}, "enter_sends is not a boolean"),
        ({"web_font_size_px": "big"}, 'Argument "web_font_size_px" is not valid JSON.'),
    ],
)
def test_invalid_values(api: Api, realm: SeededRealm, data: dict[str, Any], msg: str) -> None:
    assert_json_error(api.patch(realm.iago, "realm/user_settings_defaults", data), msg)
