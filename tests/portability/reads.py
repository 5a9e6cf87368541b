"""Everything a client can read about a realm, per user, to compare two servers."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers import Api, TestUser, assert_json_success

# Keys of /register that differ between two servers by nature, not by content.
VOLATILE = {"queue_id", "last_event_id", "server_generation", "zulip_merge_base", "server_timestamp"}

REGISTER_TYPES = [
    "realm",
    "realm_user",
    "realm_bot",
    "subscription",
    "user_groups",
    "realm_emoji",
    "custom_profile_fields",
    "alert_words",
    "muted_users",
    "user_topic",
    "drafts",
    "user_settings",
    "realm_user_settings_defaults",
    "default_streams",
    "recent_private_conversations",
    "message",
    "update_message_flags",
    "stream",
]


def reads(api: Api, user: TestUser) -> dict[str, Any]:
    out: dict[str, Any] = {}
    reads: list[tuple[str, dict[str, Any]]] = [
        ("users", {"include_custom_profile_fields": "true"}),
        ("users/me", {}),
        ("streams", {"include_all": "true"}),
        ("users/me/subscriptions", {"include_subscribers": "true"}),
        ("user_groups", {}),
        ("attachments", {}),
        ("realm/emoji", {}),
        ("realm/profile_fields", {}),
        ("users/me/alert_words", {}),
        ("drafts", {}),
        ("realm/logins", {}),  # administrators only: the others' error must match too
        ("messages", {"anchor": "oldest", "num_before": 0, "num_after": 1000, "apply_markdown": "true"}),
        ("messages", {"anchor": "oldest", "num_before": 0, "num_after": 1000, "apply_markdown": "false"}),
    ]
    for path, params in reads:
        response = api.get(user, path, params)  # errors (a guest's) must match too
        out[f"{path} {json.dumps(params, sort_keys=True)}"] = (response.status_code, response.json())
    for message in out[next(k for k in out if k.startswith("messages") and '"true"' in k)][1]["messages"]:
        history = api.get(user, f"messages/{message['id']}/history")
        out[f"history {message['id']}"] = history.json()
    state = assert_json_success(
        api.post(
            user, "register", {"fetch_event_types": json.dumps(REGISTER_TYPES), "client_gravatar": "false"}
        )
    )
    out["register"] = {k: v for k, v in state.items() if k not in VOLATILE}
    return out
