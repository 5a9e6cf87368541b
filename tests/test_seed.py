"""``palaver seed-messages``: bulk messages that the API then serves like sent ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import Api, SeededRealm, assert_json_success
from tests.test_cli import Cli, cli, cli_env, expect_clean_failure  # noqa: F401


def test_seed_messages(cli: Cli, api: Api, realm: SeededRealm) -> None:  # noqa: F811
    result = cli(
        f"seed-messages --realm {realm.string_id} --messages 300 --subscribers 4 --channels 2 --topics 3"
    )
    assert result.code == 0, result
    assert "Seeded 300 messages" in result.out
    # The progress bar ends on its own line at 100%.
    assert result.err.startswith("\r[") and "] 100.0% 300/300 " in result.err and result.err.endswith("\n")

    # desdemona is the first human user, so she receives every channel message.
    body = assert_json_success(
        api.get(realm.desdemona, "messages", {"anchor": "newest", "num_before": 1000, "num_after": 0})
    )
    channel_messages = [m for m in body["messages"] if m["type"] == "stream"]
    assert len(channel_messages) > 200
    assert {m["display_recipient"] for m in channel_messages} == {"seed channel 0", "seed channel 1"}
    first = channel_messages[0]
    narrow = [["channel", first["display_recipient"]], ["topic", first["subject"]]]
    topic_ids = [
        m["id"]
        for m in assert_json_success(
            api.get(
                realm.desdemona,
                "messages",
                {"anchor": "newest", "num_before": 1000, "num_after": 0, "narrow": narrow},
            )
        )["messages"]
    ]
    assert first["id"] in topic_ids
    # The search index saw the bulk rows.
    word = first["content"].removeprefix("<p>").split()[0].strip("</p>")
    found = assert_json_success(
        api.get(
            realm.desdemona,
            "messages",
            {"anchor": "newest", "num_before": 1000, "num_after": 0, "narrow": [["search", word]]},
        )
    )
    assert first["id"] in [m["id"] for m in found["messages"]]
    # Sending still works after explicit IDs (the PostgreSQL sequence moved past them).
    data = {"type": "stream", "to": "seed channel 0", "topic": "after", "content": "new"}
    sent = assert_json_success(api.post(realm.desdemona, "messages", data))["id"]
    assert sent > max(m["id"] for m in body["messages"])


def test_seed_messages_rejects_bad_sizes(cli: Cli, realm: SeededRealm, tmp_path: Path) -> None:  # noqa: F811
    assert "--subscribers" in expect_clean_failure(
        cli(f"seed-messages --realm {realm.string_id} --subscribers 1")
    )
    assert "no organization" in expect_clean_failure(cli("seed-messages --realm nowhere-at-all --messages 1"))


pytestmark = pytest.mark.usefixtures("cli_env")
