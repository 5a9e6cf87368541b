"""Reporting a message from the web client reaches the moderators' channel."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.web.browser.client import channel_id, send, topic_hash, unique
from tests.web.conftest import LiveServer, wait_for

AppPage = Callable[..., Any]


@pytest.fixture
def moderation_channel(live_server: LiveServer) -> Iterator[int]:
    name = unique("moderation")
    with live_server.api("iago") as api:
        me = api.get("/users/me")
        me.raise_for_status()
        data = {"name": name, "invite_only": "true", "subscribers": json.dumps([me.json()["user_id"]])}
        created = api.post("/channels/create", data=data)
        created.raise_for_status()
        stream_id = int(created.json()["id"])
        api.patch("/realm", data={"moderation_request_channel_id": str(stream_id)}).raise_for_status()
    yield stream_id
    with live_server.api("iago") as api:
        api.patch("/realm", data={"moderation_request_channel_id": "-1"}).raise_for_status()


def test_report_a_message(live_server: LiveServer, app_page: AppPage, moderation_channel: int) -> None:
    general = channel_id(live_server, "hamlet", "general")
    channel_id(live_server, "othello", "general")
    topic = unique("reports")
    page = app_page("hamlet", topic_hash(general, topic))
    text = unique("buy cheap pills")
    send(live_server, "othello", "general", topic, text)
    row = page.locator("article.message:not(.sending)", has_text=text)
    row.wait_for()
    row.click()
    row.get_by_role("button", name="More actions").click()
    page.get_by_role("menuitem", name="Report…").click()
    dialog = page.get_by_role("dialog", name="Report message")
    dialog.get_by_label("Reason").select_option("other")
    dialog.get_by_role("button", name="Report").click()
    # "Other" needs a description: the server's error is shown and the form stays.
    wait_for(page, "document.body.textContent.includes('An explanation is required.')")
    dialog.get_by_label("Description").fill("Selling things in #general")
    dialog.get_by_role("button", name="Report").click()
    wait_for(page, "!document.querySelector('.overlay form.dialog')")
    narrow = json.dumps([{"operator": "channel", "operand": moderation_channel}])
    with live_server.api("iago") as api:
        found = api.get(
            "/messages", params={"anchor": "newest", "num_before": "5", "num_after": "0", "narrow": narrow}
        )
        found.raise_for_status()
    [notice] = found.json()["messages"]
    assert notice["sender_full_name"] == "Notification Bot"
    assert "Selling things in #general" in notice["content"]
    assert text in notice["content"]
