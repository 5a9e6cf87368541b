"""Channels and subscriptions through the ``zulip`` client's own methods against ``palaver serve``."""

from __future__ import annotations

from typing import Any

import pytest
import zulip

# The session's demo server and its owner's client, shared by the e2e modules (tests/e2e/demo.py).
from tests.e2e.demo import client, server, server_database_url  # noqa: F401

pytestmark = pytest.mark.e2e


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["result"] == "success", result
    return result


def test_channel_lifecycle(client: zulip.Client) -> None:  # noqa: F811
    me = client.get_profile()["user_id"]
    subscribed = ok(client.add_subscriptions([{"name": "e2e-channel", "description": "Made by *e2e*"}]))
    assert subscribed["subscribed"] == {str(me): ["e2e-channel"]}
    stream_id = ok(client.get_stream_id("e2e-channel"))["stream_id"]
    assert isinstance(stream_id, int)

    names = [s["name"] for s in ok(client.get_subscriptions())["subscriptions"]]
    assert "e2e-channel" in names
    streams = ok(client.get_streams(include_default=True))["streams"]
    [stream] = [s for s in streams if s["stream_id"] == stream_id]
    assert stream["rendered_description"] == "<p>Made by <em>e2e</em></p>"
    assert ok(client.get_subscribers(stream="e2e-channel"))["subscribers"] == [me]

    ok(client.update_stream({"stream_id": stream_id, "description": "Renamed", "new_name": "e2e-renamed"}))
    data = [{"stream_id": stream_id, "property": "pin_to_top", "value": True}]
    ok(client.update_subscription_settings(data))
    [sub] = [s for s in ok(client.get_subscriptions())["subscriptions"] if s["stream_id"] == stream_id]
    assert (sub["name"], sub["pin_to_top"], sub["description"]) == ("e2e-renamed", True, "Renamed")
    ok(client.add_default_stream(stream_id))

    removed = ok(client.remove_subscriptions(["e2e-renamed"]))
    assert removed["removed"] == ["e2e-renamed"]
    ok(client.delete_stream(stream_id))
    missing = client.get_stream_id("no-such-channel")
    assert (missing["result"], missing["msg"]) == ("error", "Invalid channel name 'no-such-channel'")
