"""Narrows: parsing both forms, each operator against the database, and in-memory matching."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from palaver.events.queues import ClientDescriptor, message_event_for_client
from palaver.events.queues import (
    reaches_all_public_streams_clients as message_event_reaches_all_public_streams,
)
from palaver.lib.exceptions import JsonableError
from palaver.lib.narrow import build_narrow_filter, normalize_narrow, parse_narrow
from palaver.models import UserProfile
from palaver.models.narrow import NarrowTerm
from palaver.models.narrow_operators import OPERATORS, message_matches_narrow
from palaver.models.requester import Requester
from palaver.services import Services
from tests.api.test_messages_send import create_channel, send_dm, send_stream
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def test_parse_both_forms_and_aliases() -> None:
    terms = parse_narrow(
        [
            ["stream", "Denmark"],
            {"operator": "subject", "operand": "castle", "negated": True},
            ["-is", "private"],
            {"operator": "pm-with", "operand": [1, 2]},
            {"operator": "id", "operand": 5},
        ]
    )
    assert terms == [
        NarrowTerm("channel", "Denmark"),
        NarrowTerm("topic", "castle", True),
        NarrowTerm("is", "dm", True),
        NarrowTerm("dm", [1, 2]),
        NarrowTerm("id", 5),
    ]
    assert parse_narrow(None) == [] and parse_narrow([]) == []


@pytest.mark.parametrize(
    "narrow",
    [
        [["channel"]],
        [["channel", "a", "b"]],
        [[1, "a"]],
        [{"operator": "channel"}],
        [{"operand": "x"}],
        [{"operator": "channel", "operand": "a", "negated": "yes"}],
        [{"operator": "channel", "operand": "a", "extra": 1}],
        [{"operator": "channel", "operand": {"a": 1}}],
        [{"operator": "channel", "operand": True}],
        ["channel:Denmark"],
        [None],
    ],
)
def test_parse_rejects_malformed_terms(narrow: list[Any]) -> None:
    with pytest.raises(JsonableError) as info:
        parse_narrow(narrow)
    assert info.value.code == "BAD_NARROW" and info.value.msg == "Invalid narrow"


# Operators against the database ---------------------------------------------------------------


@pytest.fixture
def corpus(api: Api, realm: SeededRealm) -> dict[str, int]:
    """A few messages othello received, each with something to find it by."""
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello, realm.cordelia])
    create_channel(api, realm.hamlet, "Verona", [realm.hamlet, realm.othello])
    ids = {
        "denmark_castle": send_stream(api, realm.hamlet, "Denmark", "Castle", "x"),
        "denmark_moat": send_stream(
            api, realm.cordelia, "Denmark", "moat", "@**Othello, the Moor of Venice**"
        ),
        "verona_castle": send_stream(api, realm.hamlet, "Verona", "castle", "x"),
        "dm": send_dm(api, realm.hamlet, [realm.othello], "x"),
        "group_dm": send_dm(api, realm.cordelia, [realm.othello, realm.hamlet], "x"),
        "self_dm": send_dm(api, realm.othello, [realm.othello], "x"),
    }
    assert_json_success(
        api.post(
            realm.othello,
            "messages/flags",
            {"messages": [ids["verona_castle"]], "op": "add", "flag": "starred"},
        )
    )
    assert_json_success(
        api.post(
            realm.othello,
            "messages/flags",
            {"messages": [ids["denmark_castle"]], "op": "add", "flag": "read"},
        )
    )
    return ids


def found(api: Api, user: TestUser, narrow: list[Any]) -> set[int]:
    body = assert_json_success(
        api.get(user, "messages", {"anchor": "newest", "num_before": 100, "num_after": 0, "narrow": narrow})
    )
    return {m["id"] for m in body["messages"]}


def named(corpus: dict[str, int], *names: str) -> set[int]:
    return {corpus[n] for n in names}


def test_operators(api: Api, realm: SeededRealm, corpus: dict[str, int]) -> None:
    everything = set(corpus.values())
    o = realm.othello
    cases: list[tuple[list[Any], set[int]]] = [
        ([], everything),
        ([["channel", "denmark"]], named(corpus, "denmark_castle", "denmark_moat")),
        (
            [{"operator": "stream", "operand": corpus and _stream_id(api, o, corpus["verona_castle"])}],
            named(corpus, "verona_castle"),
        ),
        ([["topic", "CASTLE"]], named(corpus, "denmark_castle", "verona_castle")),
        ([["channel", "Denmark"], ["topic", "castle"]], named(corpus, "denmark_castle")),
        ([["dm", realm.hamlet.email]], named(corpus, "dm")),
        ([{"operator": "dm", "operand": [realm.hamlet.id, realm.cordelia.id]}], named(corpus, "group_dm")),
        (
            [{"operator": "dm", "operand": f"{realm.cordelia.email},{realm.hamlet.email}"}],
            named(corpus, "group_dm"),
        ),
        ([["dm", o.email]], named(corpus, "self_dm")),
        ([["dm", realm.iago.email]], set()),
        ([{"operator": "dm-including", "operand": realm.cordelia.id}], named(corpus, "group_dm")),
        ([["is", "dm"]], named(corpus, "dm", "group_dm", "self_dm")),
        ([["is", "private"]], named(corpus, "dm", "group_dm", "self_dm")),
        ([["is", "starred"]], named(corpus, "verona_castle")),
        ([["is", "mentioned"]], named(corpus, "denmark_moat")),
        ([["is", "unread"]], everything - named(corpus, "denmark_castle", "self_dm")),
        ([["sender", realm.cordelia.email]], named(corpus, "denmark_moat", "group_dm")),
        ([{"operator": "sender", "operand": realm.cordelia.id}], named(corpus, "denmark_moat", "group_dm")),
        ([["sender", "me"]], named(corpus, "self_dm")),
        ([{"operator": "id", "operand": corpus["dm"]}], named(corpus, "dm")),
        ([["id", str(corpus["dm"])]], named(corpus, "dm")),
        (
            [{"operator": "is", "operand": "dm", "negated": True}],
            named(corpus, "denmark_castle", "denmark_moat", "verona_castle"),
        ),
        (
            [{"operator": "channel", "operand": "Denmark", "negated": True}, ["-is", "dm"]],
            named(corpus, "verona_castle"),
        ),
        (
            [{"operator": "topic", "operand": "castle", "negated": True}, ["channel", "Denmark"]],
            named(corpus, "denmark_moat"),
        ),
        ([["channels", "public"], ["topic", "moat"]], named(corpus, "denmark_moat")),
    ]
    for narrow, expected in cases:
        assert found(api, o, narrow) == expected, narrow


def _stream_id(api: Api, user: TestUser, message_id: int) -> int:
    body = assert_json_success(api.get(user, f"messages/{message_id}"))
    stream_id: int = body["message"]["stream_id"]
    return stream_id


@pytest.mark.parametrize(
    ("narrow", "msg"),
    [
        ([["frobnicate", "x"]], "Invalid narrow operator: unknown operator frobnicate"),
        ([["channel", "Nowhere"]], "Invalid narrow operator: unknown channel Nowhere"),
        ([["topic", 5]], "Invalid narrow operator: invalid topic"),
        ([["dm", "nobody@example.com"]], "Invalid narrow operator: unknown user in nobody@example.com"),
        ([{"operator": "dm", "operand": [999999]}], "Invalid narrow operator: unknown user in [999999]"),
        ([["sender", "nobody@example.com"]], "Invalid narrow operator: unknown user nobody@example.com"),
        ([["is", "shiny"]], "Invalid narrow operator: unknown 'is' operand shiny"),
        ([["id", "abc"]], "Invalid narrow operator: Invalid message ID"),
        ([["channels", "all"]], "Invalid narrow operator: unknown channels operand all"),
    ],
)
def test_bad_narrows(api: Api, realm: SeededRealm, narrow: list[Any], msg: str) -> None:
    response = api.get(
        realm.othello, "messages", {"anchor": "newest", "num_before": 1, "num_after": 0, "narrow": narrow}
    )
    assert_json_error(response, msg, code="BAD_NARROW")


def test_private_channel_is_unknown_to_outsiders(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "secret", [realm.hamlet], invite_only=True)
    response = api.get(
        realm.othello,
        "messages",
        {"anchor": "newest", "num_before": 1, "num_after": 0, "narrow": [["channel", "secret"]]},
    )
    assert_json_error(response, "Invalid narrow operator: unknown channel secret", code="BAD_NARROW")


def test_build_narrow_filter_directly(services: Services, realm: SeededRealm, api: Api) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet])
    with services.db.session() as session:
        user = session.get(UserProfile, realm.othello.id)
        assert user is not None
        nf = build_narrow_filter(session, Requester.of(user), [["channel", "Denmark"]])
        assert nf.include_history and nf.needs_message and nf.has_channel_term
        nf = build_narrow_filter(session, Requester.of(user), [["channel", "Denmark"], ["is", "starred"]])
        assert not nf.include_history
        nf = build_narrow_filter(session, Requester.of(user), [["is", "unread"]])
        assert not nf.needs_message and not nf.has_channel_term
    assert {"channel", "channels", "topic", "dm", "dm-including", "is", "sender", "id"} <= set(OPERATORS)


# In memory -------------------------------------------------------------------------------------

STREAM_MESSAGE = {
    "id": 7,
    "type": "stream",
    "stream_id": 3,
    "display_recipient": "Denmark",
    "subject": "Castle",
    "sender_id": 10,
    "sender_email": "hamlet@example.com",
}
DM_MESSAGE = {
    "id": 8,
    "type": "private",
    "subject": "",
    "sender_id": 10,
    "sender_email": "hamlet@example.com",
    "display_recipient": [
        {"id": 10, "email": "hamlet@example.com", "full_name": "Hamlet", "is_mirror_dummy": False},
        {"id": 11, "email": "othello@example.com", "full_name": "Othello", "is_mirror_dummy": False},
    ],
}


@pytest.mark.parametrize(
    ("narrow", "message", "flags", "expected"),
    [
        ([["stream", "denmark"]], STREAM_MESSAGE, [], True),
        ([{"operator": "channel", "operand": 3}], STREAM_MESSAGE, [], True),
        ([["channel", "Verona"]], STREAM_MESSAGE, [], False),
        ([["channel", "Denmark"], ["topic", "castle"]], STREAM_MESSAGE, [], True),
        ([["topic", "moat"]], STREAM_MESSAGE, [], False),
        ([["-topic", "moat"]], STREAM_MESSAGE, [], True),
        ([["is", "dm"]], DM_MESSAGE, [], True),
        ([["is", "private"]], STREAM_MESSAGE, [], False),
        ([["dm", "hamlet@example.com"]], DM_MESSAGE, [], True),
        ([{"operator": "dm", "operand": [10]}], DM_MESSAGE, [], True),
        ([["dm", "iago@example.com"]], DM_MESSAGE, [], False),
        ([["dm-including", "hamlet@example.com"]], DM_MESSAGE, [], True),
        ([["sender", "HAMLET@example.com"]], STREAM_MESSAGE, [], True),
        ([["sender", "me"]], STREAM_MESSAGE, [], False),
        ([["is", "mentioned"]], STREAM_MESSAGE, ["wildcard_mentioned"], True),
        ([["is", "unread"]], STREAM_MESSAGE, ["read"], False),
        ([["is", "starred"]], STREAM_MESSAGE, ["starred"], True),
        ([["id", "7"]], STREAM_MESSAGE, [], True),
        ([["search", "anything"]], STREAM_MESSAGE, [], True),
        ([{"operator": "search", "operand": "x", "negated": True}], STREAM_MESSAGE, [], True),
    ],
)
def test_message_matches_narrow(
    narrow: list[Any], message: dict[str, Any], flags: list[str], expected: bool
) -> None:
    assert message_matches_narrow(narrow, message, flags, user_id=11) is expected


# Tailoring message events per client -----------------------------------------------------------


def _client(user_id: int, **values: Any) -> ClientDescriptor:
    return ClientDescriptor(queue_id=values.pop("queue_id", "q"), user_id=user_id, realm_id=1, **values)


def test_message_event_for_client(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello, realm.cordelia])
    events.clear()
    send_stream(
        api,
        realm.hamlet,
        "Denmark",
        "",
        "**hi** @**Othello, the Moor of Venice**",
        local_id="1.5",
        queue_id="q-h",
    )
    sent = {tuple(users): event for event, users in events.of_type("message")}
    to_hamlet = sent[(realm.hamlet.id,)]
    to_othello = sent[(realm.othello.id,)]
    to_cordelia = sent[(realm.cordelia.id,)]

    bot = message_event_for_client(_client(realm.othello.id), to_othello)
    assert bot is not None and "internal" not in bot
    assert bot["message"]["content"] == "**hi** @**Othello, the Moor of Venice**"
    assert bot["message"]["content_type"] == "text/x-markdown"
    assert bot["flags"] == ["mentioned"] and bot["message"]["subject"] == "general chat"
    assert bot["message"]["avatar_url"] is None

    web = message_event_for_client(
        _client(
            realm.othello.id,
            apply_markdown=True,
            client_gravatar=False,
            client_capabilities={"empty_topic_name": True},
        ),
        to_othello,
    )
    assert web is not None
    assert web["message"]["content"].startswith("<p><strong>hi</strong>")
    assert web["message"]["avatar_url"] is not None and web["message"]["subject"] == ""

    echo = message_event_for_client(_client(realm.hamlet.id, queue_id="q-h"), to_hamlet)
    other_tab = message_event_for_client(_client(realm.hamlet.id, queue_id="q-other"), to_hamlet)
    assert echo is not None and echo["local_message_id"] == "1.5"
    assert other_tab is not None and "local_message_id" not in other_tab

    narrowed = _client(
        realm.othello.id, narrow=[{"operator": "channel", "operand": "Verona", "negated": False}]
    )
    assert message_event_for_client(narrowed, to_othello) is None

    # The broadcast copy reaches all_public_streams clients once: not those with their own copy.
    assert message_event_reaches_all_public_streams(to_cordelia)
    assert not message_event_reaches_all_public_streams(to_othello)
    assert message_event_for_client(_client(realm.othello.id, all_public_streams=True), to_cordelia) is None
    assert message_event_for_client(_client(realm.iago.id, all_public_streams=True), to_cordelia) is not None


# One parser for every form ------------------------------------------------------------------------


def test_parse_json_text_and_register_form() -> None:
    assert parse_narrow('[["stream", "Denmark"], {"operator": "is", "operand": "private"}]') == [
        NarrowTerm("channel", "Denmark"),
        NarrowTerm("is", "dm"),
    ]
    assert parse_narrow("null") == []
    for text in ("{", '{"operator": "is"}', "[1]"):
        with pytest.raises(JsonableError) as info:
            parse_narrow(text)
        assert info.value.code == "BAD_NARROW" and info.value.msg == "Invalid narrow"
    # Event queues keep the parsed terms as objects, under the operators' current names.
    assert normalize_narrow([["-subject", "castle"]]) == [
        {"operator": "topic", "operand": "castle", "negated": True}
    ]


def test_queue_narrow_uses_message_columns_from_internal() -> None:
    client = _client(11, narrow=[{"operator": "has", "operand": "link", "negated": False}])
    event = {"type": "message", "message": dict(STREAM_MESSAGE, content="x"), "flags": []}
    with_link = {**event, "internal": {"raw_content": "x", "has_link": True}}
    without_link = {**event, "internal": {"raw_content": "x", "has_link": False}}
    assert message_event_for_client(client, with_link) is not None
    assert message_event_for_client(client, without_link) is None
    # Events without the column (older senders) are let through, as before.
    assert message_event_for_client(client, event) is not None
