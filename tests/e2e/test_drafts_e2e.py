"""Drafts, saved snippets and devices through the ``zulip`` client against ``palaver serve``."""

from __future__ import annotations

import pytest
import zulip

# The session's demo server and its owner's client, shared by the e2e modules (tests/e2e/demo.py).
from tests.e2e.demo import client, server, server_database_url  # noqa: F401

pytestmark = pytest.mark.e2e


def test_drafts_snippets_and_devices(client: zulip.Client) -> None:  # noqa: F811
    me = client.get_profile()["user_id"]
    created = client.call_endpoint(
        "drafts",
        method="POST",
        request={"drafts": [{"type": "private", "to": [me], "topic": "", "content": "Note to self"}]},
    )
    assert created["result"] == "success", created
    (draft_id,) = created["ids"]
    edited = {"type": "", "to": [], "topic": "", "content": "Unaddressed now", "timestamp": 1595479019}
    result = client.call_endpoint(f"drafts/{draft_id}", method="PATCH", request={"draft": edited})
    assert result["result"] == "success", result
    fetched = client.call_endpoint("drafts", method="GET")
    assert fetched["drafts"] == [{"id": draft_id, **edited}]
    assert client.call_endpoint(f"drafts/{draft_id}", method="DELETE")["result"] == "success"
    missing = client.call_endpoint(f"drafts/{draft_id}", method="DELETE")
    assert (missing["code"], missing["msg"]) == ("BAD_REQUEST", "Draft does not exist")

    snippet = client.call_endpoint(
        "saved_snippets", method="POST", request={"title": "Hi", "content": "Hello!"}
    )
    snippet_id = snippet["saved_snippet_id"]
    result = client.call_endpoint(f"saved_snippets/{snippet_id}", method="PATCH", request={"content": "Hey!"})
    assert result["result"] == "success", result
    (stored,) = client.call_endpoint("saved_snippets", method="GET")["saved_snippets"]
    assert (stored["id"], stored["title"], stored["content"]) == (snippet_id, "Hi", "Hey!")

    device_id = client.call_endpoint("register_client_device", method="POST")["device_id"]
    # The demo server has no push relay.
    push = client.call_endpoint("mobile_push/register", method="POST", request={"device_id": device_id})
    assert push["code"] == "PUSH_SERVICE_NOT_CONFIGURED"
    removed = client.call_endpoint("remove_client_device", method="POST", request={"device_id": device_id})
    assert removed["result"] == "success", removed
