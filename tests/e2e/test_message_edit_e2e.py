"""Editing, moving and uploads through the ``zulip`` client's own methods against ``palaver serve``."""

from __future__ import annotations

import io
from typing import Any

import pytest
import zulip

# The session's demo server and its owner's client, shared by the e2e modules (tests/e2e/demo.py).
from tests.e2e.demo import client, server, server_database_url  # noqa: F401
from tests.servers import http_get

pytestmark = pytest.mark.e2e


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["result"] == "success", result
    return result


def test_edit_move_and_history(client: zulip.Client) -> None:  # noqa: F811
    ok(client.add_subscriptions([{"name": "e2e-edits"}]))
    message_id = ok(
        client.send_message({"type": "stream", "to": "e2e-edits", "topic": "draft", "content": "v1"})
    )["id"]
    result = ok(client.update_message({"message_id": message_id, "content": "v2"}))
    assert result["detached_uploads"] == []
    ok(client.update_message({"message_id": message_id, "topic": "final", "propagate_mode": "change_all"}))
    history = ok(client.get_message_history(message_id))["message_history"]
    assert [(h["content"], h["topic"]) for h in history] == [
        ("v1", "draft"),
        ("v2", "draft"),
        ("v2", "final"),
    ]
    message = ok(client.get_raw_message(message_id))["message"]
    assert message["subject"] == "final"
    assert "last_edit_timestamp" in message and "last_moved_timestamp" in message
    failed = client.update_message({"message_id": message_id, "topic": "x", "propagate_mode": "sideways"})
    assert (failed["result"], failed["msg"]) == ("error", "Invalid propagate_mode")


def test_upload_link_and_fetch(client: zulip.Client) -> None:  # noqa: F811
    upload = io.BytesIO(b"e2e file body")
    upload.name = "e2e notes.txt"
    result = ok(client.upload_file(upload))
    assert result["url"] == result["uri"]
    assert result["filename"] == "e2e-notes.txt"
    auth = (client.email, client.api_key)
    base = client.base_url.removesuffix("/api/").removesuffix("/api")
    response = http_get(base + result["url"], auth=auth)
    assert (response.status_code, response.content) == (200, b"e2e file body")
    assert http_get(base + result["url"]).status_code == 401

    path = result["url"].removeprefix("/user_uploads/")
    temporary = ok(client.call_endpoint(url=f"user_uploads/{path}", method="GET"))["url"]
    assert http_get(base + temporary).content == b"e2e file body"

    ok(client.add_subscriptions([{"name": "e2e-files"}]))
    content = f"[notes]({result['url']})"
    message_id = ok(
        client.send_message({"type": "stream", "to": "e2e-files", "topic": "t", "content": content})
    )["id"]
    [attachment] = [a for a in ok(client.get_attachments())["attachments"] if a["name"] == "e2e-notes.txt"]
    assert attachment["message_ids"] == [message_id]
    detached = ok(client.update_message({"message_id": message_id, "content": "gone"}))["detached_uploads"]
    assert [d["id"] for d in detached] == [attachment["id"]]
    ok(client.call_endpoint(url=f"attachments/{attachment['id']}", method="DELETE"))
    assert http_get(base + result["url"], auth=auth).status_code == 404
