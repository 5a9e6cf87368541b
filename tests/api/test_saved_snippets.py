"""Saved snippets: GET/POST /saved_snippets, PATCH/DELETE /saved_snippets/{id}."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests import helpers
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success


def create(api: Api, user: helpers.TestUser, title: str = "Welcome", content: str = "Hi there!") -> int:
    body = assert_json_success(api.post(user, "saved_snippets", {"title": title, "content": content}))
    snippet_id: int = body["saved_snippet_id"]
    return snippet_id


def fetch(api: Api, user: helpers.TestUser) -> list[dict[str, Any]]:
    snippets: list[dict[str, Any]] = assert_json_success(api.get(user, "saved_snippets"))["saved_snippets"]
    return snippets


def test_create_and_fetch(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    before = int(time.time())
    first = create(api, realm.hamlet, "  Welcome  ", "Welcome to **the** team.\n")
    second = create(api, realm.hamlet, "Bye", "See you")
    snippets = fetch(api, realm.hamlet)
    assert [s["id"] for s in snippets] == [first, second]
    assert snippets[0]["title"] == "Welcome"
    assert snippets[0]["content"] == "Welcome to **the** team.\n"
    assert before <= snippets[0]["date_created"] <= int(time.time())
    assert fetch(api, realm.othello) == []

    adds = events.of_type("saved_snippets", "add")
    assert [(e["saved_snippet"], users) for e, users in adds] == [
        (snippets[0], [realm.hamlet.id]),
        (snippets[1], [realm.hamlet.id]),
    ]


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        ({"title": "  ", "content": "x"}, "Title cannot be empty."),
        ({"title": "x", "content": " \n "}, "Content cannot be empty."),
        ({"title": "t" * 61, "content": "x"}, "title is too long (limit: 60 characters)"),
        ({"title": "x", "content": "c" * 10001}, "content is too long (limit: 10000 characters)"),
        ({"title": "x"}, "Missing 'content' argument"),
        ({"content": "x"}, "Missing 'title' argument"),
        ({"title": "a\x00b", "content": "x"}, "title contains a NUL character"),
    ],
)
def test_create_errors(
    api: Api, realm: SeededRealm, events: EventRecorder, data: dict[str, str], msg: str
) -> None:
    assert_json_error(api.post(realm.hamlet, "saved_snippets", data), msg)
    assert fetch(api, realm.hamlet) == []
    assert events.of_type("saved_snippets") == []


def test_edit(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    snippet_id = create(api, realm.hamlet, "Old title", "Old content")
    (created,) = fetch(api, realm.hamlet)
    events.clear()

    assert_json_success(api.patch(realm.hamlet, f"saved_snippets/{snippet_id}", {"title": "New title"}))
    assert fetch(api, realm.hamlet) == [{**created, "title": "New title"}]
    assert_json_success(api.patch(realm.hamlet, f"saved_snippets/{snippet_id}", {"content": "New content"}))
    assert_json_success(
        api.patch(realm.hamlet, f"saved_snippets/{snippet_id}", {"title": "Both", "content": "Changed"})
    )
    final = {**created, "title": "Both", "content": "Changed"}
    assert fetch(api, realm.hamlet) == [final]

    updates = events.of_type("saved_snippets", "update")
    assert [e["saved_snippet"]["title"] for e, _ in updates] == ["New title", "New title", "Both"]
    assert updates[-1][0]["saved_snippet"] == final
    assert all(users == [realm.hamlet.id] for _, users in updates)


def test_edit_errors(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    snippet_id = create(api, realm.hamlet, "Keep", "Keep")
    events.clear()
    path = f"saved_snippets/{snippet_id}"
    assert_json_error(api.patch(realm.hamlet, path, {}), "Either title or content must be given.")
    assert_json_error(api.patch(realm.hamlet, path, {"title": " "}), "Title cannot be empty.")
    assert_json_error(
        api.patch(realm.hamlet, path, {"title": "ok", "content": ""}), "Content cannot be empty."
    )
    missing = "Saved snippet does not exist."
    assert_json_error(
        api.patch(realm.hamlet, "saved_snippets/999999999", {"title": "x"}), missing, 404, "BAD_REQUEST"
    )
    # Another user's snippet is as good as missing.
    assert_json_error(api.patch(realm.othello, path, {"title": "x"}), missing, 404, "BAD_REQUEST")
    assert fetch(api, realm.hamlet)[0]["title"] == "Keep"
    assert events.of_type("saved_snippets") == []


def test_delete(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    first = create(api, realm.hamlet)
    second = create(api, realm.hamlet)
    events.clear()
    missing = "Saved snippet does not exist."
    assert_json_error(api.delete(realm.othello, f"saved_snippets/{first}"), missing, 404, "BAD_REQUEST")
    assert_json_success(api.delete(realm.hamlet, f"saved_snippets/{first}"))
    assert [s["id"] for s in fetch(api, realm.hamlet)] == [second]
    ((event, users),) = events.of_type("saved_snippets", "remove")
    assert event == {"type": "saved_snippets", "op": "remove", "saved_snippet_id": first}
    assert users == [realm.hamlet.id]
    assert_json_error(api.delete(realm.hamlet, f"saved_snippets/{first}"), missing, 404, "BAD_REQUEST")


def test_register_includes_saved_snippets(api: Api, realm: SeededRealm) -> None:
    create(api, realm.hamlet)
    body = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["saved_snippets"]}))
    assert body["saved_snippets"] == fetch(api, realm.hamlet)
