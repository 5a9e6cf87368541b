"""Messages through the ``zulip`` client against ``palaver serve``: send, narrow, search, react, flags."""

from __future__ import annotations

from typing import Any

import pytest
import zulip

from tests.e2e.demo import client, server, server_database_url  # noqa: F401

pytestmark = pytest.mark.e2e


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["result"] == "success", result
    return result


def test_message_round_trip(client: zulip.Client) -> None:  # noqa: F811
    ok(client.add_subscriptions([{"name": "e2e-messages"}]))
    stream_id = ok(client.get_stream_id("e2e-messages"))["stream_id"]
    sent = ok(
        client.send_message(
            {
                "type": "stream",
                "to": "e2e-messages",
                "topic": "lighthouse",
                "content": "The **beacon** is lit",
            }
        )
    )["id"]
    ok(client.send_message({"type": "stream", "to": "e2e-messages", "topic": "harbour", "content": "boats"}))

    request = {
        "anchor": "newest",
        "num_before": 10,
        "num_after": 0,
        "narrow": [
            {"operator": "channel", "operand": "e2e-messages"},
            {"operator": "topic", "operand": "lighthouse"},
        ],
    }
    [message] = ok(client.get_messages(request))["messages"]
    assert message["id"] == sent and message["content"] == "<p>The <strong>beacon</strong> is lit</p>"

    request["narrow"] = [
        {"operator": "channel", "operand": stream_id},
        {"operator": "search", "operand": "beacon"},
    ]
    [found] = ok(client.get_messages(request))["messages"]
    assert found["id"] == sent
    assert (
        found["match_content"] == '<p>The <strong><span class="highlight">beacon</span></strong> is lit</p>'
    )
    assert found["match_subject"] == "lighthouse"

    ok(client.add_reaction({"message_id": sent, "emoji_name": "octopus"}))
    request["narrow"] = [
        {"operator": "has", "operand": "reaction"},
        {"operator": "channel", "operand": stream_id},
    ]
    [reacted] = ok(client.get_messages(request))["messages"]
    assert [r["emoji_name"] for r in reacted["reactions"]] == ["octopus"]

    ok(client.update_message_flags({"messages": [sent], "op": "add", "flag": "starred"}))
    request["narrow"] = [{"operator": "is", "operand": "starred"}]
    assert sent in [m["id"] for m in ok(client.get_messages(request))["messages"]]

    topics = ok(client.get_stream_topics(stream_id))["topics"]
    assert [t["name"] for t in topics] == ["harbour", "lighthouse"]
