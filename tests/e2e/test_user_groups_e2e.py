"""User groups, alert words and organization settings through the ``zulip`` client."""

from __future__ import annotations

import pytest
import zulip

# The session's demo server and its owner's client, shared by the e2e modules (tests/e2e/demo.py).
from tests.e2e.demo import client, server, server_database_url  # noqa: F401

pytestmark = pytest.mark.e2e


def test_user_groups_and_alert_words(client: zulip.Client) -> None:  # noqa: F811
    members = {m["email"]: m["user_id"] for m in client.get_members()["members"]}
    alice, bob = members["alice@example.com"], members["bob@example.com"]
    created = client.create_user_group(
        {"name": "reviewers", "description": "Code review", "members": [alice]}
    )
    assert created["result"] == "success", created
    group_id = created["group_id"]

    result = client.update_user_group_members(group_id, {"add": [bob], "delete": [alice]})
    assert result["result"] == "success", result
    result = client.update_user_group({"group_id": group_id, "description": "Reviews"})
    assert result["result"] == "success", result
    groups = {g["name"]: g for g in client.get_user_groups()["user_groups"]}
    group = groups["reviewers"]
    assert (group["id"], group["description"], group["members"]) == (group_id, "Reviews", [bob])
    assert groups["role:owners"]["is_system_group"] is True

    invalid = client.create_user_group({"name": "x", "description": "", "members": [999999]})
    assert (invalid["code"], invalid["msg"]) == ("BAD_REQUEST", "Invalid user ID: 999999")

    added = client.add_alert_words(["deploy", "Outage"])
    assert added["result"] == "success", added
    assert client.get_alert_words()["alert_words"] == ["deploy", "Outage"]
    removed = client.remove_alert_words(["outage"])
    assert removed["alert_words"] == ["deploy"]

    result = client.call_endpoint("realm", method="PATCH", request={"description": "Reviewed daily"})
    assert result["result"] == "success", result
    state = client.register(fetch_event_types=["realm", "alert_words", "realm_user_groups"])
    assert state["realm_description"] == "Reviewed daily"
    assert state["alert_words"] == ["deploy"]
    assert group_id in {g["id"] for g in state["realm_user_groups"]}
