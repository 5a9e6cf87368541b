"""Drafts: GET/POST /drafts, PATCH/DELETE /drafts/{id}, and drafts synchronization off."""

from __future__ import annotations

import time
from typing import Any

import pytest

from palaver.services import Services
from tests import helpers
from tests.helpers import (
    Api,
    EventRecorder,
    SeededRealm,
    assert_json_error,
    assert_json_success,
    seed_realm,
)


@pytest.fixture
def other_realm(services: Services) -> SeededRealm:
    return seed_realm(services)


def create_channel(api: Api, realm: SeededRealm, name: str, **kw: Any) -> int:
    body = assert_json_success(
        api.post(realm.iago, "channels/create", {"name": name, "subscribers": [realm.iago.id], **kw})
    )
    channel_id: int = body["id"]
    return channel_id


def draft(type_: str = "private", to: list[int] | None = None, **kw: Any) -> dict[str, Any]:
    return {"type": type_, "to": to or [], "topic": "", "content": "Hello", **kw}


def create(api: Api, user: helpers.TestUser, *drafts: dict[str, Any]) -> list[int]:
    ids: list[int] = assert_json_success(api.post(user, "drafts", {"drafts": list(drafts)}))["ids"]
    return ids


def fetch(api: Api, user: helpers.TestUser) -> list[dict[str, Any]]:
    body = assert_json_success(api.get(user, "drafts"))
    assert body["count"] == len(body["drafts"])
    drafts: list[dict[str, Any]] = body["drafts"]
    return drafts


def test_create_and_fetch_every_type(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    channel_id = create_channel(api, realm, "Verona")
    hamlet = realm.hamlet
    before = int(time.time())
    ids = create(
        api,
        hamlet,
        draft("stream", [channel_id], topic="plans", content="Meet at noon", timestamp=1595479019),
        draft("private", [realm.othello.id, realm.cordelia.id, realm.othello.id], topic="ignored"),
        draft("", [realm.othello.id], topic="ignored", content="Unaddressed"),
    )
    assert len(ids) == 3 and ids == sorted(ids)

    drafts = {d["id"]: d for d in fetch(api, hamlet)}
    assert drafts[ids[0]] == {
        "id": ids[0],
        "type": "stream",
        "to": [channel_id],
        "topic": "plans",
        "content": "Meet at noon",
        "timestamp": 1595479019,
    }
    # Direct drafts lose the topic; the recipients are a set.
    assert drafts[ids[1]]["to"] == sorted([realm.othello.id, realm.cordelia.id])
    assert drafts[ids[1]]["topic"] == ""
    assert drafts[ids[1]]["timestamp"] >= before
    # Unaddressed drafts keep neither recipients nor topic.
    assert drafts[ids[2]]["to"] == [] and drafts[ids[2]]["topic"] == ""

    ((event, users),) = events.of_type("drafts", "add")
    assert users == [hamlet.id]
    assert [d["id"] for d in event["drafts"]] == ids
    assert event["drafts"][0] == drafts[ids[0]]


def test_fetch_orders_by_last_edit_newest_first(api: Api, realm: SeededRealm) -> None:
    hamlet = realm.hamlet
    old, new, middle = create(
        api, hamlet, draft(timestamp=1000), draft(timestamp=3000), draft(timestamp=2000)
    )
    assert [d["id"] for d in fetch(api, hamlet)] == [new, middle, old]
    # Users see only their own drafts.
    assert fetch(api, realm.othello) == []


def test_create_nothing(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert create(api, realm.hamlet) == []
    assert events.of_type("drafts") == []


def test_content_is_normalised_like_a_message(api: Api, realm: SeededRealm) -> None:
    (draft_id,) = create(api, realm.hamlet, draft(content="\n\nline one\n  indented  \n\n"))
    assert fetch(api, realm.hamlet)[0]["content"] == "line one\n  indented"
    assert draft_id


def test_long_topic_and_content_are_truncated(api: Api, realm: SeededRealm) -> None:
    channel_id = create_channel(api, realm, "Verona")
    create(api, realm.iago, draft("stream", [channel_id], topic="t" * 100, content="c" * 20000))
    (stored,) = fetch(api, realm.iago)
    assert len(stored["topic"]) == 60 and stored["topic"].endswith("...")
    assert len(stored["content"]) == 10000 and stored["content"].endswith("[message truncated]")


@pytest.mark.parametrize(
    ("bad", "msg"),
    [
        (draft("stream", []), "Must specify exactly 1 channel ID for channel messages"),
        (draft("stream", [1, 2]), "Must specify exactly 1 channel ID for channel messages"),
        (draft("stream", [999999999]), "Invalid channel ID"),
        (draft(content="   \n"), "Message must not be empty"),
        (draft(timestamp=-1), "Timestamp must not be negative."),
        (draft(timestamp=10**13), "Timestamp is too large."),
        (draft("private", [999999999]), "Invalid user ID 999999999"),
    ],
)
def test_invalid_drafts(
    api: Api, realm: SeededRealm, events: EventRecorder, bad: dict[str, Any], msg: str
) -> None:
    # One bad draft refuses the whole request: nothing is stored.
    response = api.post(realm.hamlet, "drafts", {"drafts": [draft(), bad]})
    assert_json_error(response, msg, code="BAD_REQUEST")
    assert fetch(api, realm.hamlet) == []
    assert events.of_type("drafts") == []


@pytest.mark.parametrize(
    ("drafts", "msg"),
    [
        ([draft(type_="channel")], 'Invalid drafts[0]["type"]'),
        ([{"type": "private", "to": [], "content": "x"}], 'Invalid drafts[0]["topic"]'),
        ([draft(extra=1)], 'Invalid drafts[0]["extra"]'),
        ([draft(to=["a"])], 'drafts[0]["to"][0] is not an integer'),  # type: ignore[list-item]  # on purpose
        ([draft(content="a\x00b")], 'drafts[0]["content"] contains a NUL character'),
        ([draft(topic="a\x00b")], 'drafts[0]["topic"] contains a NUL character'),
        ({"type": "private"}, "drafts is not a list"),
    ],
)
def test_malformed_drafts(api: Api, realm: SeededRealm, drafts: Any, msg: str) -> None:
    response = api.post(realm.hamlet, "drafts", {"drafts": drafts})
    assert_json_error(response, msg, code="REQUEST_VARIABLE_INVALID")


def test_drafts_parameter_is_required_json(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.post(realm.hamlet, "drafts", {}), "Missing 'drafts' argument")
    assert_json_error(
        api.post(realm.hamlet, "drafts", {"drafts": "[not json"}), 'Argument "drafts" is not valid JSON.'
    )


def test_channel_drafts_need_content_access(api: Api, realm: SeededRealm) -> None:
    private_id = create_channel(api, realm, "secret", invite_only=True)
    public_id = create_channel(api, realm, "public")
    assert_json_error(
        api.post(realm.hamlet, "drafts", {"drafts": [draft("stream", [private_id])]}), "Invalid channel ID"
    )
    # Guests reach only channels they are subscribed to.
    assert_json_error(
        api.post(realm.polonius, "drafts", {"drafts": [draft("stream", [public_id])]}), "Invalid channel ID"
    )
    create(api, realm.iago, draft("stream", [private_id]))
    create(api, realm.hamlet, draft("stream", [public_id]))


def test_direct_drafts_need_active_users_of_the_realm(
    api: Api, realm: SeededRealm, other_realm: SeededRealm
) -> None:
    stranger = other_realm.hamlet.id
    assert_json_error(
        api.post(realm.hamlet, "drafts", {"drafts": [draft("private", [stranger])]}),
        f"Invalid user ID {stranger}",
    )
    assert_json_success(api.delete(realm.iago, f"users/{realm.cordelia.id}"))
    assert_json_error(
        api.post(realm.hamlet, "drafts", {"drafts": [draft("private", [realm.cordelia.id])]}),
        f"Invalid user ID {realm.cordelia.id}",
    )
    # Bots and oneself are fine recipients.
    create(api, realm.hamlet, draft("private", [realm.default_bot.id, realm.hamlet.id]))


def test_fractional_timestamps_are_accepted(api: Api, realm: SeededRealm) -> None:
    create(api, realm.hamlet, draft(timestamp=1595479019.75))
    assert fetch(api, realm.hamlet)[0]["timestamp"] == 1595479019


def test_a_fetched_draft_may_be_sent_back(api: Api, realm: SeededRealm) -> None:
    (draft_id,) = create(api, realm.hamlet, draft())
    (stored,) = fetch(api, realm.hamlet)
    stored["content"] = "Edited"
    assert_json_success(api.patch(realm.hamlet, f"drafts/{draft_id}", {"draft": stored}))
    assert fetch(api, realm.hamlet)[0]["content"] == "Edited"


def test_edit_replaces_the_whole_draft(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    channel_id = create_channel(api, realm, "Verona")
    (draft_id,) = create(api, realm.iago, draft("stream", [channel_id], topic="old", timestamp=1000))
    events.clear()
    new = draft("private", [realm.othello.id], content="Now a DM", timestamp=2000)
    assert_json_success(api.patch(realm.iago, f"drafts/{draft_id}", {"draft": new}))
    expected = {
        "id": draft_id,
        "type": "private",
        "to": [realm.othello.id],
        "topic": "",
        "content": "Now a DM",
        "timestamp": 2000,
    }
    assert fetch(api, realm.iago) == [expected]
    ((event, users),) = events.of_type("drafts", "update")
    assert event["draft"] == expected
    assert users == [realm.iago.id]


def test_edit_without_timestamp_marks_it_edited_now(api: Api, realm: SeededRealm) -> None:
    (draft_id,) = create(api, realm.hamlet, draft(timestamp=1000))
    before = int(time.time())
    assert_json_success(api.patch(realm.hamlet, f"drafts/{draft_id}", {"draft": draft(content="New")}))
    assert fetch(api, realm.hamlet)[0]["timestamp"] >= before


def test_edit_errors(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    (draft_id,) = create(api, realm.hamlet, draft(content="Keep"))
    events.clear()
    for path in ("drafts/999999999", f"drafts/{draft_id}"):
        user = realm.hamlet if path == "drafts/999999999" else realm.othello
        response = api.patch(user, path, {"draft": draft(content="x")})
        assert_json_error(response, "Draft does not exist", status=404, code="BAD_REQUEST")
    assert_json_error(api.patch(realm.hamlet, f"drafts/{draft_id}", {}), "Missing 'draft' argument")
    assert_json_error(
        api.patch(realm.hamlet, f"drafts/{draft_id}", {"draft": draft("stream", [])}),
        "Must specify exactly 1 channel ID for channel messages",
    )
    assert_json_error(api.patch(realm.hamlet, f"drafts/{draft_id}", {"draft": [draft()]}), "Invalid draft")
    assert_json_error(
        api.patch(realm.hamlet, f"drafts/{2**64}", {"draft": draft()}),
        "draft_id is too large",
        code="REQUEST_VARIABLE_INVALID",
    )
    assert fetch(api, realm.hamlet)[0]["content"] == "Keep"
    assert events.of_type("drafts") == []


def test_delete(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    first, second = create(api, realm.hamlet, draft(), draft())
    events.clear()
    assert_json_error(
        api.delete(realm.othello, f"drafts/{first}"), "Draft does not exist", status=404, code="BAD_REQUEST"
    )
    assert_json_success(api.delete(realm.hamlet, f"drafts/{first}"))
    assert [d["id"] for d in fetch(api, realm.hamlet)] == [second]
    ((event, users),) = events.of_type("drafts", "remove")
    assert event == {"type": "drafts", "op": "remove", "draft_id": first}
    assert users == [realm.hamlet.id]
    assert_json_error(
        api.delete(realm.hamlet, f"drafts/{first}"), "Draft does not exist", status=404, code="BAD_REQUEST"
    )


def test_turning_synchronization_off_deletes_drafts_silently(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    hamlet = realm.hamlet
    create(api, hamlet, draft(), draft())
    (othello_draft,) = create(api, realm.othello, draft())
    events.clear()

    assert_json_success(api.patch(hamlet, "settings", {"enable_drafts_synchronization": False}))
    assert events.of_type("drafts") == []
    ((setting, users),) = events.of_type("user_settings", "update")
    assert setting["property"] == "enable_drafts_synchronization" and setting["value"] is False
    assert users == [hamlet.id]

    disabled = "User has disabled synchronizing drafts."
    assert_json_error(api.get(hamlet, "drafts"), disabled, code="BAD_REQUEST")
    assert_json_error(api.post(hamlet, "drafts", {"drafts": [draft()]}), disabled)
    assert_json_error(api.patch(hamlet, f"drafts/{othello_draft}", {"draft": draft()}), disabled)
    assert_json_error(api.delete(hamlet, f"drafts/{othello_draft}"), disabled)
    # Other users' drafts are untouched.
    assert [d["id"] for d in fetch(api, realm.othello)] == [othello_draft]

    # Turning it back on starts from nothing: the deleted drafts stay deleted.
    assert_json_success(api.patch(hamlet, "settings", {"enable_drafts_synchronization": True}))
    assert fetch(api, hamlet) == []
    create(api, hamlet, draft())
    assert len(fetch(api, hamlet)) == 1


def test_failed_settings_update_keeps_drafts(api: Api, realm: SeededRealm) -> None:
    create(api, realm.hamlet, draft())
    response = api.patch(
        realm.hamlet, "settings", {"enable_drafts_synchronization": False, "timezone": "Not/AZone"}
    )
    assert response.json()["result"] == "error"
    assert len(fetch(api, realm.hamlet)) == 1


def test_register_includes_drafts(api: Api, realm: SeededRealm) -> None:
    (draft_id,) = create(api, realm.hamlet, draft(timestamp=1000))
    body = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["drafts"]}))
    assert [d["id"] for d in body["drafts"]] == [draft_id]
    assert_json_success(api.patch(realm.hamlet, "settings", {"enable_drafts_synchronization": False}))
    body = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["drafts"]}))
    assert body["drafts"] == []


def test_a_deleted_newest_drafts_id_is_not_given_to_the_next(api: Api, realm: SeededRealm) -> None:
    """A device still holding the deleted draft's ID must not edit someone's next draft."""
    [first, newest] = create(api, realm.hamlet, draft(), draft())
    assert_json_success(api.delete(realm.hamlet, f"drafts/{newest}"))
    [following] = create(api, realm.hamlet, draft())
    assert following > newest > first
