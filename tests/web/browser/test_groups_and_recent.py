"""User groups browsed from the left sidebar, and Recent conversations by keyboard, in a
real Chromium."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.web.browser.client import channel_id, send, unique, wait_routed
from tests.web.conftest import LiveServer, wait_for

AppPage = Callable[..., Any]


@pytest.fixture(autouse=True, scope="module")
def leave_everything_read(live_server: LiveServer) -> Iterator[None]:
    yield
    for name in live_server.users:
        with live_server.api(name) as api:
            api.post("/mark_all_as_read").raise_for_status()


def user_id(live_server: LiveServer, name: str) -> int:
    with live_server.api(name) as api:
        return int(api.get("/users/me").json()["user_id"])


def test_groups_are_browsed_from_the_sidebar_with_their_members_and_mentions(
    live_server: LiveServer, app_page: AppPage
) -> None:
    name = unique("writers").replace(" ", "_")
    hamlet, othello, iago = (user_id(live_server, n) for n in ("hamlet", "othello", "iago"))
    with live_server.api("iago") as api:
        made = api.post(
            "/user_groups/create",
            data={"name": name, "description": "People who write", "members": json.dumps([hamlet, othello])},
        )
        made.raise_for_status()
        group = made.json()["group_id"]
    channel_id(live_server, "hamlet", "general")
    topic = unique("mentions")
    send(live_server, "othello", "general", topic, f"Please review, @*{name}*")
    send(live_server, "othello", "general", topic, "Nothing for the group here")
    page = app_page("hamlet")
    page.get_by_role("button", name="User groups").click()
    dialog = page.get_by_role("dialog", name="User groups")
    dialog.get_by_role("button", name=name).click()
    detail = dialog.get_by_role("region", name=f"Group {name}")
    detail.get_by_text("People who write").wait_for()
    members = detail.locator(".group-members")
    assert "King Hamlet" in members.inner_text() and "Othello, the Moor of Venice" in members.inner_text()
    # Live while open: a member added elsewhere shows.
    with live_server.api("iago") as api:
        api.post(f"/user_groups/{group}/members", data={"add": json.dumps([iago])}).raise_for_status()
    members.get_by_text("Iago", exact=True).wait_for()
    detail.get_by_text("3 members").wait_for()
    detail.get_by_role("link", name=f"View messages mentioning @{name}").click()
    dialog.wait_for(state="detached")
    feed = page.locator("#feed")
    wait_routed(page)
    feed.get_by_text("Please review").wait_for()
    assert feed.get_by_text("Nothing for the group here").count() == 0
    # A click on the mention in the message opens the group.
    feed.locator(".user-group-mention").first.click()
    page.get_by_role("dialog", name="User groups").get_by_role("region", name=f"Group {name}").wait_for()
    page.keyboard.press("Escape")
    page.get_by_role("dialog", name="User groups").wait_for(state="detached")


def test_recent_conversations_are_walked_with_the_keyboard(
    live_server: LiveServer, app_page: AppPage
) -> None:
    general = channel_id(live_server, "hamlet", "general")
    topics = [unique("walk first"), unique("walk second"), unique("walk third")]
    # Sent oldest first: Recent lists the newest conversation at the top.
    for topic in topics:
        send(live_server, "othello", "general", topic, f"About {topic}")
    page = app_page("hamlet", "#recent")
    table = page.locator(".recent-table")
    table.get_by_text(topics[2]).wait_for()

    def focused() -> str:
        return str(
            page.evaluate("() => document.activeElement.closest('tr')?.querySelector('a')?.textContent")
        )

    # Opening the view focuses the newest conversation.
    wait_for(page, "(t) => document.activeElement.closest('tr')?.textContent.includes(t)", topics[2])
    page.keyboard.press("j")
    assert focused() == topics[1]
    page.keyboard.press("ArrowDown")
    assert focused() == topics[0]
    page.keyboard.press("k")
    assert focused() == topics[1]
    page.keyboard.press("ArrowUp")
    page.keyboard.press("ArrowUp")
    assert focused() == topics[2]
    page.keyboard.press("ArrowDown")
    # A new message elsewhere refreshes the table; the focus stays on the same conversation.
    send(live_server, "iago", "general", unique("walk other"), "Refresh")
    page.wait_for_timeout(2500)
    wait_for(page, "(t) => document.activeElement.closest('tr')?.textContent.includes(t)", topics[1])
    page.keyboard.press("Enter")
    wait_for(page, "(id) => decodeURIComponent(location.hash).startsWith(`#narrow/channel/${id}`)", general)
    page.locator("#feed").get_by_text(f"About {topics[1]}").wait_for()
    assert "topic" in page.url
