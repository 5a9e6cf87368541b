"""Custom profile field administration: POST/PATCH /realm/profile_fields, PATCH/DELETE by ID."""

from __future__ import annotations

from typing import Any

import pytest

from tests import helpers
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

CHOICES = {"vim": {"text": "Vim", "order": "1"}, "emacs": {"text": "Emacs", "order": "2"}}


def fields(api: Api, user: helpers.TestUser) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = assert_json_success(api.get(user, "realm/profile_fields"))["custom_fields"]
    return result


def create(api: Api, user: helpers.TestUser, **data: Any) -> int:
    field_id: int = assert_json_success(api.post(user, "realm/profile_fields", data))["id"]
    return field_id


def test_create_update_reorder_delete(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    everyone = sorted(u.id for u in realm.users.values())
    phone = create(api, realm.iago, name=" Phone ", hint="Work phone", field_type=1, required=True)
    editor = create(
        api, realm.desdemona, name="Editor", field_type=3, field_data=CHOICES, display_in_profile_summary=True
    )
    github = create(api, realm.iago, field_type=7, field_data={"subtype": "github"}, editable_by_user=False)
    listed = fields(api, realm.polonius)
    assert listed == [
        {
            "id": phone,
            "type": 1,
            "order": phone,
            "name": "Phone",
            "hint": "Work phone",
            "field_data": "",
            "required": True,
            "editable_by_user": True,
        },
        {
            "id": editor,
            "type": 3,
            "order": editor,
            "name": "Editor",
            "hint": "",
            "field_data": listed[1]["field_data"],
            "required": False,
            "editable_by_user": True,
            "display_in_profile_summary": True,
        },
        {
            "id": github,
            "type": 7,
            "order": github,
            "name": "GitHub",
            "hint": "Enter your GitHub username",
            "field_data": '{"subtype":"github"}',
            "required": False,
            "editable_by_user": False,
        },
    ]
    import json

    assert json.loads(listed[1]["field_data"]) == CHOICES
    event, users = events.of_type("custom_profile_fields")[-1]
    assert event["fields"] == listed
    assert users == everyone
    state = assert_json_success(
        api.post(realm.hamlet, "register", {"fetch_event_types": ["custom_profile_fields"]})
    )
    assert state["custom_profile_fields"] == listed

    events.clear()
    assert_json_success(
        api.patch(
            realm.iago, f"realm/profile_fields/{phone}", {"name": "Mobile", "hint": "", "required": False}
        )
    )
    [(event, _)] = events.of_type("custom_profile_fields")
    assert event["fields"][0]["name"] == "Mobile"
    assert event["fields"][0]["hint"] == ""
    assert event["fields"][0]["required"] is False
    assert_json_success(
        api.patch(
            realm.iago, f"realm/profile_fields/{editor}", {"field_data": {"x": {"text": "X", "order": "1"}}}
        )
    )
    assert json.loads(fields(api, realm.iago)[1]["field_data"]) == {"x": {"text": "X", "order": "1"}}
    assert_json_success(
        api.patch(realm.iago, f"realm/profile_fields/{editor}", {"display_in_profile_summary": False})
    )
    assert "display_in_profile_summary" not in fields(api, realm.iago)[1]

    events.clear()
    assert_json_success(api.patch(realm.iago, "realm/profile_fields", {"order": [github, editor, phone]}))
    assert [(f["id"], f["order"]) for f in fields(api, realm.iago)] == [(github, 0), (editor, 1), (phone, 2)]
    [(event, users)] = events.of_type("custom_profile_fields")
    assert [f["id"] for f in event["fields"]] == [github, editor, phone]
    assert users == everyone

    # Deleting a field deletes users' values of it.
    assert_json_success(
        api.patch(realm.iago, f"users/{realm.hamlet.id}", {"profile_data": [{"id": phone, "value": "555"}]})
    )
    events.clear()
    assert_json_success(api.delete(realm.iago, f"realm/profile_fields/{phone}"))
    assert [f["id"] for f in fields(api, realm.iago)] == [github, editor]
    [(event, _)] = events.of_type("custom_profile_fields")
    assert [f["id"] for f in event["fields"]] == [github, editor]
    me = assert_json_success(api.get(realm.hamlet, "users/me"))
    assert me["profile_data"] == {}


@pytest.mark.parametrize("user", ["shiva", "hamlet", "polonius", "default_bot"])
def test_only_admins(api: Api, realm: SeededRealm, events: EventRecorder, user: str) -> None:
    field_id = create(api, realm.iago, name="Phone", field_type=1)
    events.clear()
    actor = realm.users[user]
    msg = "Must be an organization administrator"
    assert_json_error(api.post(actor, "realm/profile_fields", {"name": "X", "field_type": 1}), msg)
    assert_json_error(api.patch(actor, f"realm/profile_fields/{field_id}", {"name": "Y"}), msg)
    assert_json_error(api.delete(actor, f"realm/profile_fields/{field_id}"), msg)
    assert_json_error(api.patch(actor, "realm/profile_fields", {"order": [field_id]}), msg)
    assert events.published == []


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        ({"name": "X", "field_type": 9}, "Invalid field type."),
        ({"name": "  ", "field_type": 1}, "Label cannot be blank."),
        ({"name": "n" * 41, "field_type": 1}, "name is too long (limit: 40 characters)"),
        ({"name": "X", "hint": "h" * 81, "field_type": 1}, "hint is too long (limit: 80 characters)"),
        ({"name": "X"}, "Missing 'field_type' argument"),
        ({"name": "X", "field_type": 3}, "Field must have at least one choice."),
        (
            {"name": "X", "field_type": 3, "field_data": {"a": {"text": "A"}}},
            'order key is missing from field_data["a"]',
        ),
        ({"name": "X", "field_type": 3, "field_data": {"a": "A"}}, 'field_data["a"] is not a dict'),
        (
            {"name": "X", "field_type": 3, "field_data": {"a": {"text": "", "order": "1"}}},
            'field_data["a"]["text"] cannot be blank.',
        ),
        (
            {"name": "X", "field_type": 3, "field_data": {" ": {"text": "A", "order": "1"}}},
            "'value' cannot be blank.",
        ),
        (
            {"name": "X", "field_type": 3, "field_data": {"a": {"text": "A", "order": "1", "x": 1}}},
            "Unexpected arguments: x",
        ),
        (
            {
                "name": "X",
                "field_type": 3,
                "field_data": {"a": {"text": "A", "order": "1"}, "b": {"text": "A", "order": "2"}},
            },
            "Field must not have duplicate choices.",
        ),
        (
            {"name": "X", "field_type": 7, "field_data": {"subtype": "myspace"}},
            "Invalid external account type",
        ),
        (
            {"name": "X", "field_type": 7, "field_data": {"subtype": "custom"}},
            "Custom external account must define URL pattern",
        ),
        ({"name": "X", "field_type": 7, "field_data": {}}, "subtype key is missing from field_data"),
        (
            {
                "name": "X",
                "field_type": 7,
                "field_data": {"subtype": "custom", "url_pattern": "https://x.com/"},
            },
            "Malformed URL pattern.",
        ),
        (
            {
                "name": "X",
                "field_type": 7,
                "field_data": {"subtype": "custom", "url_pattern": "x/%(username)s"},
            },
            "Malformed URL pattern.",
        ),
        (
            {"name": "X", "field_type": 2, "display_in_profile_summary": True},
            "Field type not supported for display in profile summary.",
        ),
        ({"name": "X", "field_type": 1, "field_data": "x"}, 'Argument "field_data" is not valid JSON.'),
    ],
)
def test_create_errors(
    api: Api, realm: SeededRealm, events: EventRecorder, data: dict[str, Any], msg: str
) -> None:
    assert_json_error(api.post(realm.iago, "realm/profile_fields", data), msg)
    assert fields(api, realm.iago) == []
    assert events.published == []


def test_other_errors(api: Api, realm: SeededRealm) -> None:
    first = create(api, realm.iago, name="A", field_type=1, display_in_profile_summary=True)
    second = create(api, realm.iago, name="B", field_type=1, display_in_profile_summary=True)
    third = create(api, realm.iago, name="C", field_type=1)
    github = create(api, realm.iago, field_type=7, field_data={"subtype": "github"})
    limit = "Only 2 custom profile fields can be displayed in the profile summary."
    assert_json_error(
        api.post(
            realm.iago,
            "realm/profile_fields",
            {"name": "D", "field_type": 1, "display_in_profile_summary": True},
        ),
        limit,
    )
    assert_json_error(
        api.patch(realm.iago, f"realm/profile_fields/{third}", {"display_in_profile_summary": True}), limit
    )
    # A field already in the summary may stay there.
    assert_json_success(
        api.patch(realm.iago, f"realm/profile_fields/{first}", {"display_in_profile_summary": True})
    )
    dup = "A field with that label already exists."
    assert_json_error(api.post(realm.iago, "realm/profile_fields", {"name": "A", "field_type": 2}), dup)
    assert_json_error(api.patch(realm.iago, f"realm/profile_fields/{second}", {"name": "A"}), dup)
    assert_json_error(
        api.patch(realm.iago, f"realm/profile_fields/{github}", {"name": "Hub"}),
        "Default custom field cannot be updated.",
    )
    for bad in (0, 999999, 2**31, 2**62):
        assert_json_error(
            api.patch(realm.iago, f"realm/profile_fields/{bad}", {"name": "Z"}), f"Field id {bad} not found."
        )
        assert_json_error(api.delete(realm.iago, f"realm/profile_fields/{bad}"), f"Field id {bad} not found.")
    assert_json_error(
        api.patch(realm.iago, "realm/profile_fields", {"order": [first, second]}), "Invalid order mapping."
    )
    assert_json_error(api.patch(realm.iago, "realm/profile_fields", {}), "Missing 'order' argument")
    assert [f["name"] for f in fields(api, realm.iago)] == ["A", "B", "C", "GitHub"]
