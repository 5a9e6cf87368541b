"""Channel folders: administrators create and edit them, everyone lists them and hears of changes."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def create_folder(api: Api, user: TestUser, name: str, **extra: Any) -> int:
    body = assert_json_success(api.post(user, "channel_folders/create", {"name": name, **extra}))
    folder_id: int = body["channel_folder_id"]
    return folder_id


def everyone(realm: SeededRealm) -> list[int]:
    return sorted(u.id for u in realm.users.values())


def test_create_and_list(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    folder_id = create_folder(api, realm.iago, " Frontend ", description="All things *web*")
    second = create_folder(api, realm.desdemona, "Backend")
    [(event, users)] = events.of_type("channel_folder", "add")[:1]
    folder = event["channel_folder"]
    assert users == everyone(realm)
    assert folder["id"] == folder_id
    assert folder["name"] == "Frontend"
    assert folder["rendered_description"] == "<p>All things <em>web</em></p>"
    assert folder["creator_id"] == realm.iago.id
    assert folder["is_archived"] is False
    assert folder["order"] == 0

    body = assert_json_success(api.get(realm.polonius, "channel_folders"))
    assert [f["id"] for f in body["channel_folders"]] == [folder_id, second]
    assert body["channel_folders"][1]["order"] == 1
    assert body["channel_folders"][0] == folder


@pytest.mark.parametrize("user", ["shiva", "hamlet", "polonius"])
def test_only_administrators_create(api: Api, realm: SeededRealm, user: str) -> None:
    response = api.post(realm.users[user], "channel_folders/create", {"name": "Folder"})
    assert_json_error(response, "Must be an organization administrator")


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        ({"name": "  "}, "Channel folder name can't be empty."),
        ({"name": "x" * 61}, "Channel folder name too long (limit: 60 characters)."),
        ({"name": "bad\x07name"}, "Invalid character in channel folder name, at position 4."),
        (
            {"name": "ok", "description": "d" * 1025},
            "Channel folder description too long (limit: 1024 characters).",
        ),
    ],
)
def test_create_validation(api: Api, realm: SeededRealm, data: dict[str, Any], msg: str) -> None:
    assert_json_error(api.post(realm.iago, "channel_folders/create", data), msg)


def test_names_are_unique_regardless_of_case(api: Api, realm: SeededRealm) -> None:
    create_folder(api, realm.iago, "Design")
    response = api.post(realm.iago, "channel_folders/create", {"name": "design"})
    assert_json_error(response, "Channel folder name already in use")
    assert_json_error(api.post(realm.iago, "channel_folders/create"), "Missing 'name' argument")


def test_update_sends_only_what_changed(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    folder_id = create_folder(api, realm.iago, "Design", description="old")
    events.clear()
    assert_json_success(
        api.patch(realm.iago, f"channel_folders/{folder_id}", {"name": "UX", "description": "new **text**"})
    )
    [(event, users)] = events.of_type("channel_folder", "update")
    assert users == everyone(realm)
    assert event["channel_folder_id"] == folder_id
    assert event["data"] == {
        "name": "UX",
        "description": "new **text**",
        "rendered_description": "<p>new <strong>text</strong></p>",
    }

    events.clear()
    assert_json_success(api.patch(realm.iago, f"channel_folders/{folder_id}", {"name": "UX"}))
    assert events.published == []

    assert_json_success(api.patch(realm.desdemona, f"channel_folders/{folder_id}", {"is_archived": True}))
    [(event, _)] = events.of_type("channel_folder", "update")
    assert event["data"] == {"is_archived": True}
    listed = assert_json_success(api.get(realm.hamlet, "channel_folders"))["channel_folders"]
    assert listed == []
    listed = assert_json_success(api.get(realm.hamlet, "channel_folders", {"include_archived": True}))
    assert [f["is_archived"] for f in listed["channel_folders"]] == [True]

    assert_json_success(api.patch(realm.iago, f"channel_folders/{folder_id}", {"is_archived": False}))
    listed = assert_json_success(api.get(realm.hamlet, "channel_folders"))["channel_folders"]
    assert [f["id"] for f in listed] == [folder_id]


def test_update_errors(api: Api, realm: SeededRealm) -> None:
    folder_id = create_folder(api, realm.iago, "Design")
    create_folder(api, realm.iago, "Other")
    response = api.patch(realm.iago, "channel_folders/99999", {"name": "x"})
    assert_json_error(response, "Invalid channel folder ID", code="BAD_REQUEST")
    response = api.patch(realm.hamlet, f"channel_folders/{folder_id}", {"name": "x"})
    assert_json_error(response, "Must be an organization administrator")
    response = api.patch(realm.iago, f"channel_folders/{folder_id}", {"name": ""})
    assert_json_error(response, "Channel folder name can't be empty.")
    response = api.patch(realm.iago, f"channel_folders/{folder_id}", {"name": "OTHER"})
    assert_json_error(response, "Channel folder name already in use")
    response = api.patch(realm.iago, f"channel_folders/{folder_id}", {"description": "d" * 1025})
    assert_json_error(response, "Channel folder description too long (limit: 1024 characters).")
    response = api.patch(realm.iago, f"channel_folders/{folder_id}", {"is_archived": "maybe"})
    assert_json_error(response, 'Argument "is_archived" is not valid JSON.')


def test_folder_of_another_realm_is_invalid(api: Api, realm: SeededRealm, services: Any) -> None:
    from tests.helpers import seed_realm

    other = seed_realm(services)
    other_api = Api(api.client, other)
    folder_id = create_folder(other_api, other.iago, "Theirs")
    response = api.patch(realm.iago, f"channel_folders/{folder_id}", {"name": "Mine"})
    assert_json_error(response, "Invalid channel folder ID")


def test_archiving_a_folder_uncategorizes_its_channels(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    folder_id = create_folder(api, realm.iago, "Design")
    channel_ids = []
    for name in ("ux", "ui"):
        body = assert_json_success(
            api.post(realm.iago, "channels/create", {"name": name, "subscribers": [], "folder_id": folder_id})
        )
        channel_ids.append(body["id"])
    assert_json_success(api.delete(realm.iago, f"streams/{channel_ids[1]}"))
    events.clear()
    assert_json_success(api.patch(realm.iago, f"channel_folders/{folder_id}", {"is_archived": True}))
    updates = events.of_type("stream", "update")
    assert [(e["stream_id"], e["property"], e["value"]) for e, _ in updates] == [
        (channel_ids[0], "folder_id", None),
        (channel_ids[1], "folder_id", None),
    ]
    assert realm.hamlet.id in updates[0][1]
    [(folder_event, _)] = events.of_type("channel_folder", "update")
    assert folder_event["data"] == {"is_archived": True}
    stream = assert_json_success(api.get(realm.hamlet, f"streams/{channel_ids[0]}"))["stream"]
    assert stream["folder_id"] is None


def test_reorder(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    first, second, third = (create_folder(api, realm.iago, name) for name in ("one", "two", "three"))
    assert_json_success(api.patch(realm.iago, f"channel_folders/{third}", {"is_archived": True}))
    events.clear()
    order = [third, first, second]
    assert_json_success(api.patch(realm.iago, "channel_folders", {"order": json.dumps(order)}))
    [(event, users)] = events.of_type("channel_folder", "reorder")
    assert event == {"type": "channel_folder", "op": "reorder", "order": order}
    assert realm.hamlet.id in users
    listed = assert_json_success(api.get(realm.hamlet, "channel_folders", {"include_archived": "true"}))
    assert [(f["id"], f["order"]) for f in listed["channel_folders"]] == [(third, 0), (first, 1), (second, 2)]
    state = assert_json_success(
        api.post(realm.hamlet, "register", {"fetch_event_types": '["channel_folders"]'})
    )
    assert [f["id"] for f in state["channel_folders"]] == order

    # Every folder exactly once; administrators only.
    for bad in ([first, second], [first, second, third, third], [first, second, third, 999999]):
        assert_json_error(
            api.patch(realm.iago, "channel_folders", {"order": json.dumps(bad)}), "Invalid order mapping."
        )
    assert_json_error(
        api.patch(realm.iago, "channel_folders", {"order": "[1, "}), 'Argument "order" is not valid JSON.'
    )
    assert_json_error(api.patch(realm.iago, "channel_folders"), "Missing 'order' argument")
    assert_json_error(
        api.patch(realm.hamlet, "channel_folders", {"order": json.dumps(order)}),
        "Must be an organization administrator",
    )
    assert len(events.of_type("channel_folder", "reorder")) == 1
