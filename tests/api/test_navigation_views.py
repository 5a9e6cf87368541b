"""Navigation views: GET/POST /navigation_views, PATCH/DELETE /navigation_views/{fragment}."""

from __future__ import annotations

from typing import Any

import pytest

from tests import helpers
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

MISSING = "Navigation view does not exist."
DUPLICATE = "Navigation view already exists."


def add(
    api: Api, user: helpers.TestUser, fragment: str, is_pinned: bool = True, name: str | None = None
) -> None:
    data: dict[str, Any] = {"fragment": fragment, "is_pinned": is_pinned}
    if name is not None:
        data["name"] = name
    assert_json_success(api.post(user, "navigation_views", data))


def fetch(api: Api, user: helpers.TestUser) -> list[dict[str, Any]]:
    views: list[dict[str, Any]] = assert_json_success(api.get(user, "navigation_views"))["navigation_views"]
    return views


def test_add_and_fetch(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert fetch(api, realm.hamlet) == []
    add(api, realm.hamlet, "inbox", is_pinned=False)
    add(api, realm.hamlet, "  narrow/is/alerted ", name="  Alert words ")
    expected = [
        {"fragment": "inbox", "is_pinned": False, "name": None},
        {"fragment": "narrow/is/alerted", "is_pinned": True, "name": "Alert words"},
    ]
    assert fetch(api, realm.hamlet) == expected
    assert fetch(api, realm.othello) == []
    adds = events.of_type("navigation_view", "add")
    assert adds == [
        ({"type": "navigation_view", "op": "add", "navigation_view": view}, [realm.hamlet.id])
        for view in expected
    ]


def test_every_built_in_view_takes_no_name(api: Api, realm: SeededRealm) -> None:
    built_in = [
        "inbox",
        "recent",
        "feed",
        "drafts",
        "narrow/has/reaction/sender/me",
        "narrow/is/mentioned",
        "narrow/is/starred",
        "scheduled",
    ]
    for fragment in built_in:
        assert_json_error(
            api.post(
                realm.hamlet, "navigation_views", {"fragment": fragment, "is_pinned": True, "name": "x"}
            ),
            "Built-in views cannot have a custom name.",
        )
        add(api, realm.hamlet, fragment)
    assert [v["fragment"] for v in fetch(api, realm.hamlet)] == built_in


@pytest.mark.parametrize(
    ("data", "msg"),
    [
        (
            {"fragment": "recent", "is_pinned": "true", "name": "Recent"},
            "Built-in views cannot have a custom name.",
        ),
        ({"fragment": "", "is_pinned": "true"}, "fragment cannot be blank"),
        ({"fragment": "  ", "is_pinned": "true", "name": "x"}, "fragment cannot be blank"),
        ({"fragment": "narrow/view", "is_pinned": "true"}, "Custom views must have a valid name."),
        ({"fragment": "narrow/view", "is_pinned": "true", "name": " "}, "name cannot be blank"),
        (
            {"fragment": "f" * 601, "is_pinned": "true", "name": "x"},
            "fragment is too long (limit: 600 characters)",
        ),
        ({"fragment": "recent"}, "Missing 'is_pinned' argument"),
        ({"is_pinned": "true"}, "Missing 'fragment' argument"),
        ({"fragment": "recent", "is_pinned": "yes"}, 'Argument "is_pinned" is not valid JSON.'),
        ({"fragment": "recent", "is_pinned": "1"}, "is_pinned is not a boolean"),
    ],
)
def test_add_errors(
    api: Api, realm: SeededRealm, events: EventRecorder, data: dict[str, str], msg: str
) -> None:
    assert_json_error(api.post(realm.hamlet, "navigation_views", data), msg)
    assert fetch(api, realm.hamlet) == []
    assert events.of_type("navigation_view") == []


def test_add_duplicates(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    add(api, realm.hamlet, "recent")
    add(api, realm.hamlet, "narrow/view", name="foo")
    events.clear()
    for data in (
        {"fragment": "recent", "is_pinned": False},
        {"fragment": " narrow/view", "is_pinned": True, "name": "bar"},
        # A name is as unique as a fragment among one user's views.
        {"fragment": "narrow/is/attachment", "is_pinned": True, "name": "foo"},
    ):
        assert_json_error(api.post(realm.hamlet, "navigation_views", data), DUPLICATE)
    assert len(fetch(api, realm.hamlet)) == 2
    assert events.of_type("navigation_view") == []
    # Other users' views do not count.
    add(api, realm.othello, "recent")
    add(api, realm.othello, "narrow/is/attachment", name="foo")


def test_update(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    add(api, realm.hamlet, "inbox")
    add(api, realm.hamlet, "narrow/is/alerted", name="Alert words")
    events.clear()

    assert_json_success(api.patch(realm.hamlet, "navigation_views/inbox", {"is_pinned": False}))
    assert_json_success(
        api.patch(realm.hamlet, "navigation_views/narrow/is/alerted", {"is_pinned": False, "name": "Watched"})
    )
    assert_json_success(api.patch(realm.hamlet, "navigation_views/narrow/is/alerted", {"name": " Phrases "}))
    # Keeping its own name is no clash.
    assert_json_success(api.patch(realm.hamlet, "navigation_views/narrow/is/alerted", {"name": "Phrases"}))
    assert fetch(api, realm.hamlet) == [
        {"fragment": "inbox", "is_pinned": False, "name": None},
        {"fragment": "narrow/is/alerted", "is_pinned": False, "name": "Phrases"},
    ]
    updates = events.of_type("navigation_view", "update")
    assert [e for e, _ in updates] == [
        {"type": "navigation_view", "op": "update", "fragment": "inbox", "data": {"is_pinned": False}},
        {
            "type": "navigation_view",
            "op": "update",
            "fragment": "narrow/is/alerted",
            "data": {"is_pinned": False, "name": "Watched"},
        },
        {
            "type": "navigation_view",
            "op": "update",
            "fragment": "narrow/is/alerted",
            "data": {"name": "Phrases"},
        },
        {
            "type": "navigation_view",
            "op": "update",
            "fragment": "narrow/is/alerted",
            "data": {"name": "Phrases"},
        },
    ]
    assert all(users == [realm.hamlet.id] for _, users in updates)


def test_update_errors(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    add(api, realm.hamlet, "inbox")
    add(api, realm.hamlet, "narrow/is/alerted", name="Alert words")
    add(api, realm.hamlet, "narrow/is/attachment", name="Attachments")
    before = fetch(api, realm.hamlet)
    events.clear()

    assert_json_error(
        api.patch(realm.hamlet, "navigation_views/inbox", {"is_pinned": True, "name": "Inbox view"}),
        "Built-in views cannot have a custom name.",
    )
    assert_json_error(
        api.patch(realm.hamlet, "navigation_views/narrow/is/attachment", {"name": "Alert words"}), DUPLICATE
    )
    assert_json_error(
        api.patch(realm.hamlet, "navigation_views/narrow/is/attachment", {"name": ""}), "name cannot be blank"
    )
    assert_json_error(
        api.patch(realm.hamlet, "navigation_views/inbox", {"is_pinned": "maybe"}),
        'Argument "is_pinned" is not valid JSON.',
    )
    assert_json_error(
        api.patch(realm.hamlet, "navigation_views/nonexistent", {"name": "New view"}),
        MISSING,
        404,
        "BAD_REQUEST",
    )
    # Another user's view is as good as missing.
    assert_json_error(
        api.patch(realm.othello, "navigation_views/inbox", {"is_pinned": False}), MISSING, 404, "BAD_REQUEST"
    )
    assert fetch(api, realm.hamlet) == before
    assert events.of_type("navigation_view") == []


def test_remove(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    add(api, realm.hamlet, "recent")
    add(api, realm.hamlet, "narrow/channel/1-general", name="General")
    events.clear()

    assert_json_error(api.delete(realm.othello, "navigation_views/recent"), MISSING, 404, "BAD_REQUEST")
    assert_json_success(api.delete(realm.hamlet, "navigation_views/narrow/channel/1-general"))
    assert_json_success(api.delete(realm.hamlet, "navigation_views/recent"))
    assert fetch(api, realm.hamlet) == []
    removes = events.of_type("navigation_view", "remove")
    assert removes == [
        (
            {"type": "navigation_view", "op": "remove", "fragment": "narrow/channel/1-general"},
            [realm.hamlet.id],
        ),
        ({"type": "navigation_view", "op": "remove", "fragment": "recent"}, [realm.hamlet.id]),
    ]
    assert_json_error(api.delete(realm.hamlet, "navigation_views/recent"), MISSING, 404, "BAD_REQUEST")
    # A removed view's name is free again.
    add(api, realm.hamlet, "narrow/is/starred/near/1", name="General")


def test_register_includes_navigation_views(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(
        api.post(realm.hamlet, "register", {"fetch_event_types": ["navigation_views"]})
    )
    assert body["navigation_views"] == []
    add(api, realm.hamlet, "inbox", is_pinned=False)
    add(api, realm.hamlet, "narrow/is/alerted", name="Alert words")
    body = assert_json_success(
        api.post(realm.hamlet, "register", {"fetch_event_types": ["navigation_views"]})
    )
    assert body["navigation_views"] == fetch(api, realm.hamlet)
    assert len(body["navigation_views"]) == 2
    body = assert_json_success(api.post(realm.othello, "register", {}))
    assert body["navigation_views"] == []
