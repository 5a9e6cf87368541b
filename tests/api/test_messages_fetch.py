"""GET /messages and friends: anchors, ranges, history, message objects, delete, render, topics."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import orjson
import pytest
from sqlalchemy import event

from palaver.models.messages import Message
from palaver.services import Services
from palaver.timeutil import utcnow
from tests.api.test_messages_send import (
    create_channel,
    fetch,
    fetch_one,
    send_dm,
    send_stream,
    set_realm,
    set_stream,
    set_user,
    subscribe,
    system_groups,
)
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser

MESSAGE_FIELDS = {
    "avatar_url",
    "client",
    "content",
    "content_type",
    "display_recipient",
    "flags",
    "id",
    "is_me_message",
    "reactions",
    "recipient_id",
    "sender_email",
    "sender_full_name",
    "sender_id",
    "sender_realm_str",
    "stream_id",
    "subject",
    "submessages",
    "timestamp",
    "topic_links",
    "type",
}


def get(api: Api, user: TestUser, **params: Any) -> dict[str, Any]:
    return assert_json_success(api.get(user, "messages", params))


def ids_of(body: dict[str, Any]) -> list[int]:
    return [m["id"] for m in body["messages"]]


def edit_message(services: Services, message_id: int, **values: Any) -> None:
    with services.db.session() as session:
        message = session.get(Message, message_id)
        assert message is not None
        for name, value in values.items():
            setattr(message, name, value)
        session.commit()


@pytest.fixture
def ten(api: Api, realm: SeededRealm) -> list[int]:
    """Ten messages in Denmark, to hamlet and othello."""
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    return [send_stream(api, realm.hamlet, "Denmark", f"topic {i % 2}", f"message {i}") for i in range(10)]


# Ranges ---------------------------------------------------------------------------------------


def test_anchor_ranges(api: Api, realm: SeededRealm, ten: list[int]) -> None:
    body = get(api, realm.othello, anchor=ten[5], num_before=2, num_after=2)
    assert ids_of(body) == ten[3:8]
    assert body["anchor"] == ten[5]
    assert (body["found_anchor"], body["found_oldest"], body["found_newest"]) == (True, False, False)
    assert body["history_limited"] is False

    assert_json_error(
        api.get(
            realm.othello,
            "messages",
            {"anchor": ten[5], "num_before": 2, "num_after": 2, "include_anchor": False},
        ),
        "The anchor can only be excluded at an end of the range",
    )
    body = get(api, realm.othello, anchor=ten[5], num_before=3, num_after=0, include_anchor=False)
    assert ids_of(body) == ten[2:5] and body["found_anchor"] is False

    body = get(api, realm.othello, anchor="oldest", num_before=5, num_after=3)
    assert ids_of(body) == ten[:3] and body["anchor"] == 0
    assert (body["found_oldest"], body["found_newest"]) == (True, False)

    body = get(api, realm.othello, anchor="newest", num_before=20, num_after=5)
    assert ids_of(body) == ten and body["anchor"] == 10_000_000_000_000_000
    assert (body["found_anchor"], body["found_oldest"], body["found_newest"]) == (False, True, True)

    body = get(api, realm.othello, anchor=str(ten[9]), num_before=0, num_after=3)
    assert ids_of(body) == [ten[9]] and body["found_newest"] is True and body["found_oldest"] is False

    # Out-of-range anchors clamp, as they always have.
    assert ids_of(get(api, realm.othello, anchor=-5, num_before=0, num_after=2)) == ten[:2]
    assert ids_of(get(api, realm.othello, anchor="10000000000000001", num_before=1, num_after=0)) == ten[9:]


def test_first_unread_anchor(api: Api, realm: SeededRealm, ten: list[int]) -> None:
    assert_json_success(
        api.post(realm.othello, "messages/flags", {"messages": ten[:4], "op": "add", "flag": "read"})
    )
    body = get(api, realm.othello, anchor="first_unread", num_before=1, num_after=1)
    assert body["anchor"] == ten[4] and ids_of(body) == ten[3:6]
    legacy = get(api, realm.othello, use_first_unread_anchor=True, num_before=1, num_after=1)
    assert legacy["anchor"] == ten[4]
    narrowed = get(
        api, realm.othello, anchor="first_unread", num_before=0, num_after=1, narrow=[["topic", "topic 1"]]
    )
    assert narrowed["anchor"] == ten[5]
    # Nothing unread: the anchor is the newest message.
    assert_json_success(api.post(realm.othello, "mark_all_as_read"))
    body = get(api, realm.othello, anchor="first_unread", num_before=2, num_after=2)
    assert body["anchor"] == 10_000_000_000_000_000 and ids_of(body) == ten[8:]


def test_first_unread_skips_muted_channels(api: Api, realm: SeededRealm, ten: list[int]) -> None:
    create_channel(api, realm.hamlet, "Verona", [realm.hamlet, realm.othello])
    later = send_stream(api, realm.hamlet, "Verona", "t", "x")
    stream_id = fetch_one(api, realm.othello, ten[0])["stream_id"]
    assert_json_success(
        api.post(
            realm.othello,
            "users/me/subscriptions/properties",
            {"subscription_data": [{"stream_id": stream_id, "property": "is_muted", "value": True}]},
        )
    )
    assert get(api, realm.othello, anchor="first_unread", num_before=0, num_after=0)["anchor"] == later
    narrowed = get(
        api, realm.othello, anchor="first_unread", num_before=0, num_after=0, narrow=[["channel", "Denmark"]]
    )
    assert narrowed["anchor"] == ten[0]


def test_message_ids(api: Api, realm: SeededRealm, ten: list[int]) -> None:
    body = get(api, realm.othello, message_ids=[ten[2], ten[0], 999999])
    assert ids_of(body) == [ten[0], ten[2]] and "anchor" not in body
    body = get(api, realm.othello, message_ids=ten, narrow=[{"operator": "topic", "operand": "topic 1"}])
    assert ids_of(body) == ten[1::2]
    assert_json_error(
        api.get(realm.othello, "messages", {"message_ids": [ten[0]], "anchor": "newest", "num_before": 1}),
        "Unsupported parameter combination: anchor, message_ids, num_before",
    )


@pytest.mark.parametrize(
    ("params", "msg"),
    [
        ({"num_before": 1, "num_after": 1}, "Missing 'anchor' argument."),
        ({"anchor": "newest", "num_after": 1}, "Missing 'num_before' argument"),
        ({"anchor": "newest", "num_before": 1}, "Missing 'num_after' argument"),
        ({"anchor": "latest", "num_before": 1, "num_after": 1}, "Invalid anchor"),
        (
            {"anchor": "newest", "num_before": 4000, "num_after": 1001},
            "Too many messages requested (maximum 5000).",
        ),
        ({"anchor": "newest", "num_before": -1, "num_after": 1}, "num_before is too small"),
        ({"anchor": "newest", "num_before": 1, "num_after": 1, "narrow": "[[1]]"}, "Invalid narrow"),
    ],
)
def test_fetch_errors(api: Api, realm: SeededRealm, params: dict[str, Any], msg: str) -> None:
    assert_json_error(api.get(realm.hamlet, "messages", params), msg)


# Message objects ------------------------------------------------------------------------------


def test_message_fields(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "Denmark", "see https://example.com/x", "**bold** /me")
    [message] = get(api, realm.othello, anchor=message_id, num_before=0, num_after=0)["messages"]
    assert set(message) == MESSAGE_FIELDS
    assert message["content"] == "<p><strong>bold</strong> /me</p>"
    assert message["content_type"] == "text/html"
    assert message["stream_id"] == stream_id and message["display_recipient"] == "Denmark"
    assert message["topic_links"] == [{"text": "https://example.com/x", "url": "https://example.com/x"}]
    assert message["is_me_message"] is False
    assert message["reactions"] == [] and message["submessages"] == []
    assert message["flags"] == []
    assert message["avatar_url"] is None  # Gravatar, computable by the client
    raw = get(
        api,
        realm.othello,
        anchor=message_id,
        num_before=0,
        num_after=0,
        apply_markdown=False,
        client_gravatar=False,
    )["messages"][0]
    assert raw["content"] == "**bold** /me" and raw["content_type"] == "text/x-markdown"
    assert raw["avatar_url"].startswith("https://secure.gravatar.com/avatar/")
    # A hidden real address cannot be hashed by the client, so the URL is given.
    set_user(services, realm.hamlet, email_address_visibility=4, email=f"user{realm.hamlet.id}@x.test")
    assert fetch_one(api, realm.othello, message_id)["sender_email"] == f"user{realm.hamlet.id}@x.test"
    hidden = get(api, realm.othello, anchor=message_id, num_before=0, num_after=0)["messages"][0]
    assert hidden["avatar_url"] is not None

    me = send_stream(api, realm.hamlet, "Denmark", "", "/me waves")
    message = fetch_one(api, realm.othello, me)
    assert message["is_me_message"] is True and message["subject"] == "general chat"
    body = get(api, realm.othello, anchor=me, num_before=0, num_after=0, allow_empty_topic_name=True)
    assert body["messages"][0]["subject"] == ""


@contextmanager
def extras_statements(services: Services) -> Iterator[list[str]]:
    """The reactions-and-widget-data statements requests run meanwhile, with their parameters."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_rest: Any) -> None:
        if "UNION ALL" in statement and re.search(r"\breaction\b", statement):
            seen.append(str(parameters))

    event.listen(services.db.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(services.db.engine, "before_cursor_execute", record)


def test_a_page_reads_reactions_and_widgets_only_of_messages_that_have_them(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    plain = send_stream(api, realm.hamlet, "Denmark", "t", "plain")
    poll = send_stream(api, realm.hamlet, "Denmark", "t", "/poll Where?\nCanteen\nPark")
    liked = send_stream(api, realm.hamlet, "Denmark", "t", "liked")
    assert_json_success(api.post(realm.othello, f"messages/{liked}/reactions", {"emoji_name": "smile"}))
    with extras_statements(services) as seen:
        [alone] = get(api, realm.othello, anchor=plain, num_before=0, num_after=0)["messages"]
    assert alone["reactions"] == [] and alone["submessages"] == []
    assert seen == []  # no message of the page has any: no statement for them
    with extras_statements(services) as seen:
        page = get(api, realm.othello, anchor=plain, num_before=0, num_after=5)["messages"]
    [parameters] = seen
    assert {int(n) for n in re.findall(r"\d+", parameters)} == {poll, liked}
    by_id = {m["id"]: m for m in page}
    assert by_id[plain]["reactions"] == [] and by_id[plain]["submessages"] == []
    assert [r["emoji_name"] for r in by_id[liked]["reactions"]] == ["smile"]
    assert by_id[liked]["submessages"] == []
    assert by_id[poll]["reactions"] == [] and len(by_id[poll]["submessages"]) == 1


def test_edited_and_moved_messages(api: Api, realm: SeededRealm, services: Services) -> None:
    create_channel(api, realm.hamlet, "Denmark")
    message_id = send_stream(api, realm.hamlet, "Denmark", "t", "x")
    assert "edit_history" not in fetch_one(api, realm.hamlet, message_id)
    edited = utcnow() - timedelta(minutes=5)
    history = [{"user_id": realm.hamlet.id, "timestamp": 1700000000, "prev_topic": "", "topic": "t"}]
    edit_message(
        services,
        message_id,
        last_edit_time=edited,
        last_moved_time=edited,
        edit_history=orjson.dumps(history).decode(),
    )
    message = fetch_one(api, realm.hamlet, message_id)
    assert message["last_edit_timestamp"] == message["last_moved_timestamp"]
    assert message["edit_history"] == [{**history[0], "prev_topic": "general chat"}]
    set_realm(services, realm, allow_edit_history=False)
    message = fetch_one(api, realm.hamlet, message_id)
    assert "edit_history" not in message and "last_edit_timestamp" in message


def test_direct_message_object(api: Api, realm: SeededRealm) -> None:
    message_id = send_dm(api, realm.hamlet, [realm.othello], "hi")
    message = fetch_one(api, realm.othello, message_id)
    assert set(message) == MESSAGE_FIELDS - {"stream_id"}
    assert message["type"] == "private" and message["subject"] == "" and message["topic_links"] == []
    assert message["display_recipient"] == [
        {
            "id": realm.hamlet.id,
            "email": realm.hamlet.email,
            "full_name": realm.hamlet.full_name,
            "is_mirror_dummy": False,
        },
        {
            "id": realm.othello.id,
            "email": realm.othello.email,
            "full_name": realm.othello.full_name,
            "is_mirror_dummy": False,
        },
    ]


def test_fetch_single_message(api: Api, realm: SeededRealm) -> None:
    message_id = send_dm(api, realm.hamlet, [realm.othello], "**hi**")
    body = assert_json_success(api.get(realm.othello, f"messages/{message_id}", {"apply_markdown": False}))
    assert body["raw_content"] == "**hi**"
    assert body["message"]["content"] == "**hi**" and body["message"]["flags"] == []
    for user, target in ((realm.cordelia, message_id), (realm.othello, 999999)):
        assert_json_error(api.get(user, f"messages/{target}"), "Invalid message(s)")


# History --------------------------------------------------------------------------------------


def test_shared_history_is_historical(api: Api, realm: SeededRealm, ten: list[int]) -> None:
    # Cordelia was not subscribed: her own history is empty, the channel's is open to her.
    assert ids_of(fetch(api, realm.cordelia)) == []
    body = get(
        api, realm.cordelia, anchor="newest", num_before=3, num_after=0, narrow=[["stream", "Denmark"]]
    )
    assert ids_of(body) == ten[7:]
    assert all(m["flags"] == ["read", "historical"] for m in body["messages"])
    assert fetch_one(api, realm.cordelia, ten[0])["flags"] == ["read", "historical"]
    # A narrow on flags searches only her own copies.
    unread = get(
        api,
        realm.cordelia,
        anchor="newest",
        num_before=3,
        num_after=0,
        narrow=[["stream", "Denmark"], ["is", "unread"]],
    )
    assert ids_of(unread) == []
    subscribe(api, realm.cordelia, "Denmark")
    new = send_stream(api, realm.hamlet, "Denmark", "t", "after")
    body = get(
        api, realm.cordelia, anchor="newest", num_before=2, num_after=0, narrow=[["stream", "Denmark"]]
    )
    assert [m["flags"] for m in body["messages"]] == [["read", "historical"], []]
    assert ids_of(fetch(api, realm.cordelia)) == [new]


def test_protected_history_and_guests(api: Api, realm: SeededRealm) -> None:
    create_channel(
        api, realm.hamlet, "secret", [realm.hamlet], invite_only=True, history_public_to_subscribers=False
    )
    old = send_stream(api, realm.hamlet, "secret", "t", "before")
    assert_json_success(
        api.post(
            realm.hamlet,
            "users/me/subscriptions",
            {"subscriptions": [{"name": "secret"}], "principals": [realm.othello.id]},
        )
    )
    new = send_stream(api, realm.hamlet, "secret", "t", "after")
    body = get(api, realm.othello, anchor="newest", num_before=5, num_after=0, narrow=[["channel", "secret"]])
    assert ids_of(body) == [new]
    assert_json_error(api.get(realm.othello, f"messages/{old}"), "Invalid message(s)")

    create_channel(api, realm.hamlet, "Denmark")
    public = send_stream(api, realm.hamlet, "Denmark", "t", "x")
    # Guests do not see unsubscribed channels at all, so the channel is unknown to them.
    assert_json_error(
        api.get(
            realm.polonius,
            "messages",
            {"anchor": "newest", "num_before": 1, "num_after": 0, "narrow": '[["channel", "Denmark"]]'},
        ),
        "Invalid narrow operator: unknown channel Denmark",
        code="BAD_NARROW",
    )
    assert_json_error(api.get(realm.polonius, f"messages/{public}"), "Invalid message(s)")
    assert_json_error(
        api.get(
            realm.othello,
            "messages",
            {"anchor": "newest", "num_before": 1, "num_after": 0, "narrow": '[["channel", "nowhere"]]'},
        ),
        "Invalid narrow operator: unknown channel nowhere",
        code="BAD_NARROW",
    )


# Deleting -------------------------------------------------------------------------------------


def test_delete_message(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "Denmark", "castle", "x")
    subscribe(api, realm.cordelia, "Denmark")
    assert_json_error(
        api.delete(realm.othello, f"messages/{message_id}"),
        "You don't have permission to delete this message",
    )
    events.clear()
    assert_json_success(api.delete(realm.hamlet, f"messages/{message_id}"))
    [(event, users)] = events.of_type("delete_message")
    assert event == {
        "type": "delete_message",
        "message_type": "stream",
        "message_ids": [message_id],
        "message_id": message_id,
        "stream_id": stream_id,
        "topic": "castle",
    }
    assert users == sorted([realm.hamlet.id, realm.othello.id, realm.cordelia.id])
    assert_json_error(api.get(realm.hamlet, f"messages/{message_id}"), "Invalid message(s)")
    assert_json_error(api.delete(realm.hamlet, f"messages/{message_id}"), "Invalid message(s)")

    dm = send_dm(api, realm.hamlet, [realm.othello], "x")
    events.clear()
    assert_json_success(
        api.delete(realm.iago, f"messages/{send_stream(api, realm.othello, 'Denmark', 't', 'x')}")
    )
    assert_json_error(api.delete(realm.iago, f"messages/{dm}"), "Invalid message(s)")
    assert_json_success(
        api.delete(realm.othello, f"messages/{send_dm(api, realm.othello, [realm.hamlet], 'y')}")
    )
    [(event, users)] = events.of_type("delete_message")[1:]
    assert event["message_type"] == "private" and "stream_id" not in event
    assert users == sorted([realm.hamlet.id, realm.othello.id])


def test_delete_permissions(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    groups = system_groups(services, realm)
    by_bot = send_stream(api, realm.default_bot, "Denmark", "t", "beep")
    assert_json_success(api.delete(realm.hamlet, f"messages/{by_bot}"))  # hamlet owns the bot

    set_realm(services, realm, can_delete_own_message_group=groups["role:nobody"])
    own = send_stream(api, realm.othello, "Denmark", "t", "x")
    assert_json_error(
        api.delete(realm.othello, f"messages/{own}"), "You don't have permission to delete this message"
    )
    set_stream(services, stream_id, can_delete_own_message_group=groups["role:members"])
    assert_json_success(api.delete(realm.othello, f"messages/{own}"))

    set_realm(
        services,
        realm,
        can_delete_own_message_group=groups["role:everyone"],
        message_content_delete_limit_seconds=60,
    )
    old = send_stream(api, realm.othello, "Denmark", "t", "x")
    edit_message(services, old, date_sent=utcnow() - timedelta(minutes=5))
    assert_json_error(
        api.delete(realm.othello, f"messages/{old}"), "The time limit for deleting this message has passed"
    )
    set_stream(services, stream_id, can_delete_any_message_group=groups["role:members"])
    assert_json_success(api.delete(realm.othello, f"messages/{old}"))


# Render, topics, matches_narrow ---------------------------------------------------------------


def test_render(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.post(realm.hamlet, "messages/render", {"content": "**foo** @**Iago**"}))
    assert body["rendered"].startswith('<p><strong>foo</strong> <span class="user-mention" data-user-id=')
    assert_json_error(api.post(realm.hamlet, "messages/render", {}), "Missing 'content' argument")


def test_topics(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    send_stream(api, realm.hamlet, "Denmark", "Old", "x")
    send_stream(api, realm.hamlet, "Denmark", "", "x")
    last = send_stream(api, realm.hamlet, "Denmark", "old", "x")
    body = assert_json_success(api.get(realm.othello, f"users/me/{stream_id}/topics"))
    assert body["topics"] == [{"max_id": last, "name": "old"}, {"max_id": last - 1, "name": "general chat"}]
    body = assert_json_success(
        api.get(realm.othello, f"users/me/{stream_id}/topics", {"allow_empty_topic_name": True})
    )
    assert body["topics"][1]["name"] == ""
    assert_json_error(api.get(realm.polonius, f"users/me/{stream_id}/topics"), "Invalid channel ID")
    assert_json_error(api.get(realm.othello, "users/me/999999/topics"), "Invalid channel ID")

    secret = create_channel(
        api, realm.hamlet, "secret", [realm.hamlet], invite_only=True, history_public_to_subscribers=False
    )
    send_stream(api, realm.hamlet, "secret", "before", "x")
    assert_json_success(
        api.post(
            realm.hamlet,
            "users/me/subscriptions",
            {"subscriptions": [{"name": "secret"}], "principals": [realm.othello.id]},
        )
    )
    after = send_stream(api, realm.hamlet, "secret", "after", "x")
    body = assert_json_success(api.get(realm.othello, f"users/me/{secret}/topics"))
    assert body["topics"] == [{"max_id": after, "name": "after"}]


def test_matches_narrow(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    a = send_stream(api, realm.hamlet, "Denmark", "<b>", "one")
    b = send_stream(api, realm.hamlet, "Denmark", "other", "two")
    body = assert_json_success(
        api.get(
            realm.othello,
            "messages/matches_narrow",
            {"msg_ids": [a, b, 999999], "narrow": [{"operator": "topic", "operand": "<B>"}]},
        )
    )
    assert body["messages"] == {str(a): {"match_content": "<p>one</p>", "match_subject": "&lt;b&gt;"}}
    assert_json_error(
        api.get(realm.othello, "messages/matches_narrow", {"msg_ids": [a]}), "Missing 'narrow' argument"
    )
