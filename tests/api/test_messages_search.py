"""Search through GET /messages and GET /messages/matches_narrow: results, highlights, the index."""

from __future__ import annotations

from typing import Any

from tests.api.test_messages_send import create_channel, send_stream
from tests.helpers import Api, SeededRealm, assert_json_success

HIGHLIGHT = '<span class="highlight">'


def get(api: Api, realm: SeededRealm, **params: Any) -> dict[str, Any]:
    query = {"anchor": "newest", "num_before": 50, "num_after": 0, **params}
    return assert_json_success(api.get(realm.othello, "messages", query))


def test_search_results_carry_highlighted_matches(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    hit = send_stream(api, realm.hamlet, "Denmark", "Ghost stories", "A **ghost** & a <ghostly> castle")
    send_stream(api, realm.hamlet, "Denmark", "other", "nothing here")
    body = get(api, realm, narrow=[{"operator": "search", "operand": "ghost"}])
    [message] = body["messages"]
    assert message["id"] == hit
    assert message["match_subject"] == f"{HIGHLIGHT}Ghost</span> stories"
    assert f"<strong>{HIGHLIGHT}ghost</span></strong>" in message["match_content"]
    assert f"&lt;{HIGHLIGHT}ghostly</span>&gt;" in message["match_content"]
    assert "&amp;" in message["match_content"]
    # Only search narrows add the fields.
    plain = get(api, realm, narrow=[["channel", "Denmark"]])
    assert all("match_content" not in m and "match_subject" not in m for m in plain["messages"])
    # Negated search: fields present, nothing highlighted.
    [other] = get(api, realm, narrow=[["channel", "Denmark"], ["-search", "ghost"]])["messages"]
    assert other["match_content"] == "<p>nothing here</p>" and other["match_subject"] == "other"


def test_matches_narrow(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    hit = send_stream(api, realm.hamlet, "Denmark", "moat", "Drawbridge up")
    miss = send_stream(api, realm.hamlet, "Denmark", "moat", "nothing")
    params = {"msg_ids": [hit, miss, 99999999], "narrow": [["search", "drawbridge"]]}
    body = assert_json_success(api.get(realm.othello, "messages/matches_narrow", params))
    assert body["messages"] == {
        str(hit): {"match_content": f"<p>{HIGHLIGHT}Drawbridge</span> up</p>", "match_subject": "moat"}
    }
    params = {"msg_ids": [hit, miss], "narrow": [{"operator": "has", "operand": "link", "negated": True}]}
    body = assert_json_success(api.get(realm.othello, "messages/matches_narrow", params))
    assert body["messages"][str(miss)] == {"match_content": "<p>nothing</p>", "match_subject": "moat"}


def test_index_follows_edits_and_deletes(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    message_id = send_stream(api, realm.hamlet, "Denmark", "t", "original words")
    assert [m["id"] for m in get(api, realm, narrow=[["search", "original"]])["messages"]] == [message_id]
    assert_json_success(api.patch(realm.hamlet, f"messages/{message_id}", {"content": "replacement text"}))
    assert get(api, realm, narrow=[["search", "original"]])["messages"] == []
    assert [m["id"] for m in get(api, realm, narrow=[["search", "replacement"]])["messages"]] == [message_id]
    assert_json_success(api.patch(realm.hamlet, f"messages/{message_id}", {"topic": "renamed"}))
    # (The Notification Bot's notice of the move names the topic too.)
    assert message_id in [m["id"] for m in get(api, realm, narrow=[["search", "renamed"]])["messages"]]
    assert_json_success(api.delete(realm.iago, f"messages/{message_id}"))
    assert get(api, realm, narrow=[["search", "replacement"]])["messages"] == []


def test_search_in_channel_history(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet])
    early = send_stream(api, realm.hamlet, "Denmark", "t", "before othello joined")
    assert_json_success(
        api.post(realm.othello, "users/me/subscriptions", {"subscriptions": [{"name": "Denmark"}]})
    )
    [message] = get(api, realm, narrow=[["channel", "Denmark"], ["search", "joined"]])["messages"]
    assert message["id"] == early and "historical" in message["flags"]
    # Without the channel the search covers only othello's own messages.
    assert get(api, realm, narrow=[["search", "joined"]])["messages"] == []


def test_near_gives_the_anchor(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    ids = [send_stream(api, realm.hamlet, "Denmark", "t", f"m{i}") for i in range(5)]
    params = {"num_before": 1, "num_after": 1, "narrow": [["channel", "Denmark"], ["near", ids[2]]]}
    body = assert_json_success(api.get(realm.othello, "messages", params))
    assert body["anchor"] == ids[2] and [m["id"] for m in body["messages"]] == ids[1:4]
    # An explicit anchor wins.
    body = assert_json_success(api.get(realm.othello, "messages", {**params, "anchor": ids[0]}))
    assert [m["id"] for m in body["messages"]] == ids[0:2]


def test_with_follows_a_moved_message(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet, realm.othello])
    first = send_stream(api, realm.hamlet, "Denmark", "old", "one")
    second = send_stream(api, realm.hamlet, "Denmark", "old", "two")
    assert_json_success(
        api.patch(
            realm.hamlet,
            f"messages/{second}",
            {
                "topic": "new",
                "propagate_mode": "change_one",
                "send_notification_to_old_thread": "false",
                "send_notification_to_new_thread": "false",
            },
        )
    )
    body = get(api, realm, narrow=[["channel", "Denmark"], ["topic", "old"], ["with", second]])
    assert [m["id"] for m in body["messages"]] == [second]
    body = get(api, realm, narrow=[{"operator": "with", "operand": first}])
    assert [m["id"] for m in body["messages"]] == [first]


def test_search_pages_from_the_anchor_both_ways(api: Api, realm: SeededRealm) -> None:
    """A search is walked from the anchor outwards (the full-text index drives it on SQLite)."""
    create_channel(api, realm.hamlet, "Elsinore", [realm.hamlet, realm.othello])
    create_channel(api, realm.hamlet, "Private", [realm.hamlet])
    ghosts = []
    for i in range(8):
        ghosts.append(send_stream(api, realm.hamlet, "Elsinore", "walls", f"ghost {i} castle"))
        send_stream(api, realm.hamlet, "Elsinore", "walls", f"nothing {i}")
        # Matches the othello never received, between his: never counted towards a page.
        send_stream(api, realm.hamlet, "Private", "secret", f"ghost {i} castle")
    search = [{"operator": "search", "operand": "ghost"}]
    newest = get(api, realm, narrow=search, num_before=3)
    assert [m["id"] for m in newest["messages"]] == ghosts[-3:]
    assert not newest["found_oldest"] and newest["found_newest"]
    oldest = get(api, realm, narrow=search, anchor="oldest", num_before=0, num_after=3)
    assert [m["id"] for m in oldest["messages"]] == ghosts[:3]
    assert oldest["found_oldest"] and not oldest["found_newest"]
    around = get(api, realm, narrow=search, anchor=ghosts[4], num_before=2, num_after=2)
    assert [m["id"] for m in around["messages"]] == ghosts[2:7]
    assert around["found_anchor"]
    # Two search terms, and a search negated next to a positive one.
    both = [*search, {"operator": "search", "operand": "castle"}, ["channel", "Elsinore"]]
    assert [m["id"] for m in get(api, realm, narrow=both)["messages"]] == ghosts
    not_seven = [*search, {"operator": "search", "operand": "7", "negated": True}]
    assert [m["id"] for m in get(api, realm, narrow=not_seven)["messages"]] == ghosts[:-1]
    assert [m["id"] for m in get(api, realm, narrow=[["channel", "Elsinore"], *search])["messages"]] == ghosts
