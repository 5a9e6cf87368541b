"""Narrow operators for search and views: search, has, in, mentions, with, near, group-pm-with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from palaver.lib.narrow import highlight, narrow_anchor
from palaver.models.narrow_operators import OPERATORS
from palaver.models.narrow_search import search_tokens
from tests.api.test_messages_send import create_channel, fetch_one, send_dm, send_stream
from tests.helpers import Api, SeededRealm, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def test_registry_has_every_operator() -> None:
    expected = {
        "channel", "channels", "topic", "dm", "dm-including", "group-pm-with", "is", "in", "sender",
        "id", "near", "with", "has", "mentions", "search",
    }  # fmt: skip
    assert expected <= set(OPERATORS)


def test_search_tokens() -> None:
    assert search_tokens('castle "the moat" -- ,, x') == ["castle", "the moat", "x"]
    assert search_tokens('"" ...') == []


def test_highlight_only_touches_text() -> None:
    html = '<p><a href="http://castle.example">Castles</a> &amp; castle-moat, amp</p>'
    assert highlight(html, ["castle", "amp"]) == (
        '<p><a href="http://castle.example"><span class="highlight">Castles</span></a> &amp; '
        '<span class="highlight">castle</span>-moat, <span class="highlight">amp</span></p>'
    )
    assert highlight("plain", []) == "plain"


def test_narrow_anchor() -> None:
    assert narrow_anchor([["near", "12"]]) == 12
    assert narrow_anchor([{"operator": "id", "operand": 7}]) == 7
    assert narrow_anchor([["near", "x"]]) is None
    assert narrow_anchor([["channel", 1]]) is None
    assert narrow_anchor([[1]]) is None


@pytest.fixture
def corpus(api: Api, realm: SeededRealm) -> dict[str, int]:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello, realm.cordelia])
    create_channel(api, realm.hamlet, "Verona", [realm.hamlet, realm.othello])
    ids = {
        "castle": send_stream(api, realm.hamlet, "Denmark", "Castle", "The ghost walks the ramparts"),
        "link": send_stream(api, realm.cordelia, "Denmark", "moat", "see https://example.com for ghosts"),
        "mention": send_stream(
            api, realm.hamlet, "Verona", "balcony", "@**Othello, the Moor of Venice** wherefore"
        ),
        "dm": send_dm(api, realm.hamlet, [realm.othello], "a quiet word"),
        "group_dm": send_dm(api, realm.cordelia, [realm.othello, realm.hamlet], "all of us"),
    }
    react = {"emoji_name": "octopus"}
    assert_json_success(api.post(realm.othello, f"messages/{ids['dm']}/reactions", react))
    return ids


def found(api: Api, user: TestUser, narrow: list[Any]) -> set[int]:
    body = assert_json_success(
        api.get(user, "messages", {"anchor": "newest", "num_before": 100, "num_after": 0, "narrow": narrow})
    )
    return {m["id"] for m in body["messages"]}


def test_operators(api: Api, realm: SeededRealm, corpus: dict[str, int]) -> None:
    o = realm.othello
    everything = set(corpus.values())

    def named(*names: str) -> set[int]:
        return {corpus[n] for n in names}

    cases: list[tuple[list[Any], set[int]]] = [
        ([["search", "ghost"]], named("castle", "link")),
        ([["search", "GHOSTS ramparts"]], named("castle")),
        ([["search", '"walks the ramparts"']], named("castle")),
        ([["search", '"ramparts walks"']], set()),
        ([["search", "castle"]], named("castle")),  # the topic is searched too
        ([{"operator": "search", "operand": "ghost", "negated": True}], everything - named("castle", "link")),
        ([["-search", "ghost"]], everything - named("castle", "link")),
        ([["search", '"); DROP TABLE message; -- NEAR(*']], set()),
        ([["search", "  "]], everything),
        ([["has", "link"]], named("link")),
        ([["has", "reaction"]], named("dm")),
        ([{"operator": "has", "operand": "reaction", "negated": True}], everything - named("dm")),
        ([["has", "image"]], set()),
        ([["has", "attachment"]], set()),
        ([["mentions", o.id]], named("mention")),
        ([["mentions", o.email]], named("mention")),
        ([["mentions", realm.hamlet.id]], set()),
        ([["group-pm-with", realm.cordelia.email]], named("group_dm")),
        ([["group-pm-with", realm.hamlet.id]], named("group_dm")),
        ([["dm-including", realm.hamlet.id]], named("dm", "group_dm")),
        ([["in", "all"]], everything),
        ([["in", "home"]], everything),
        ([["is", "muted"]], set()),
        ([["is", "followed"]], set()),
        ([["id", corpus["dm"]]], named("dm")),
        ([["near", corpus["dm"]]], everything),
        ([["with", str(corpus["castle"])]], named("castle")),
        ([["with", corpus["group_dm"]], ["channel", "Denmark"]], named("group_dm")),
        ([["with", corpus["link"]], ["search", "ghost"]], named("link")),
        ([["with", 99999999]], everything),
        ([["channel", "Denmark"], ["search", "ghost"], ["-has", "link"]], named("castle")),
    ]
    for narrow, expected in cases:
        assert found(api, o, narrow) == expected, narrow


def test_muted_and_followed(api: Api, realm: SeededRealm, corpus: dict[str, int]) -> None:
    o = realm.othello
    denmark = fetch_one(api, o, corpus["castle"])["stream_id"]
    verona = fetch_one(api, o, corpus["mention"])["stream_id"]
    subscription_data = [{"stream_id": denmark, "property": "is_muted", "value": True}]
    assert_json_success(
        api.post(o, "users/me/subscriptions/properties", {"subscription_data": subscription_data})
    )
    # Muted channel, but this topic unmuted; and a muted topic in an unmuted channel.
    for stream_id, topic, policy in ((denmark, "moat", 2), (verona, "balcony", 1), (denmark, "castle", 0)):
        data = {"stream_id": stream_id, "topic": topic, "visibility_policy": policy}
        assert_json_success(api.post(o, "user_topics", data))
    assert found(api, o, [["is", "muted"]]) == {corpus["castle"], corpus["mention"]}
    assert found(api, o, [["in", "home"]]) == {corpus["link"], corpus["dm"], corpus["group_dm"]}
    assert found(api, o, [["-in", "home"]]) == {corpus["castle"], corpus["mention"]}
    data = {"stream_id": denmark, "topic": "MOAT", "visibility_policy": 3}
    assert_json_success(api.post(o, "user_topics", data))
    assert found(api, o, [["is", "followed"]]) == {corpus["link"]}
    assert found(api, o, [["channel", "Denmark"], ["-is", "followed"]]) == {corpus["castle"]}


@pytest.mark.parametrize(
    "narrow",
    [
        [["has", "video"]],
        [["has", 3]],
        [["in", "nowhere"]],
        [["is", "sleeping"]],
        [["mentions", "nobody@example.com"]],
        [["mentions", 999999]],
        [["group-pm-with", "nobody@example.com"]],
        [["near", "soon"]],
        [["with", "x"]],
        [["with", 1], ["with", 2]],
        [{"operator": "with", "operand": 1, "negated": True}],
        [["search", 5]],
        [{"operator": "search", "operand": ["a"]}],
        [["frobnicate", "x"]],
    ],
)
def test_bad_operands(api: Api, realm: SeededRealm, narrow: list[Any]) -> None:
    response = api.get(
        realm.othello, "messages", {"anchor": "newest", "num_before": 5, "num_after": 0, "narrow": narrow}
    )
    body = response.json()
    assert response.status_code == 400 and body["result"] == "error" and body["code"] == "BAD_NARROW", body
    response = api.get(realm.othello, "messages/matches_narrow", {"msg_ids": [1], "narrow": narrow})
    assert response.status_code == 400 and response.json()["code"] == "BAD_NARROW"
