"""POST /api/v1/external/<integration>: authentication, addressing, filters and errors."""

from __future__ import annotations

import base64
import logging

import pytest

from tests.api.test_messages_send import fetch
from tests.helpers import assert_json_error, assert_json_success
from tests.webhooks.conftest import Hook, fixture


def test_text_posts_the_body_to_the_channel_and_topic(hook: Hook) -> None:
    response = hook.post("text", "Backup **done**", content_type="text/plain", stream="dev", topic="backups")
    message = hook.message(response)
    assert message["display_recipient"] == "dev"
    assert message["subject"] == "backups"
    assert message["sender_id"] == hook.bot.id
    assert "<strong>done</strong>" in message["content"]
    assert message["client"] == "Webhook/text"


def test_text_form_content_field_and_default_topic(hook: Hook) -> None:
    response = hook.post(
        "text", "content=hello+there", content_type="application/x-www-form-urlencoded", stream="dev"
    )
    message = hook.message(response)
    assert message["subject"] == "notifications"
    assert message["content"] == "<p>hello there</p>"


def test_stream_by_id_and_legacy_subject(hook: Hook) -> None:
    streams = assert_json_success(hook.api.get(hook.realm.hamlet, "streams"))["streams"]
    [dev] = [s for s in streams if s["name"] == "dev"]
    response = hook.post("text", "by id", stream=str(dev["stream_id"]), subject="legacy")
    message = hook.message(response)
    assert (message["stream_id"], message["subject"]) == (dev["stream_id"], "legacy")


def test_without_stream_the_owner_gets_a_direct_message(hook: Hook) -> None:
    response = hook.post("text", "just for you")
    message = hook.message(response)
    assert message["type"] == "private"
    assert sorted(u["id"] for u in message["display_recipient"]) == sorted(
        [hook.bot.id, hook.realm.hamlet.id]
    )


def test_http_basic_auth_works_too(hook: Hook) -> None:
    token = base64.b64encode(f"{hook.bot.email}:{hook.bot.api_key}".encode()).decode()
    response = hook.api.client.post(
        "/api/v1/external/text?stream=dev",
        content=b"basic",
        headers={"host": hook.realm.host, "authorization": f"Basic {token}"},
    )
    assert hook.message(response)["content"] == "<p>basic</p>"


def test_authentication_errors(hook: Hook) -> None:
    # The api_key parameter's faults keep Zulip's INVALID_API_KEY code (only HTTP Basic
    # credentials answer UNAUTHORIZED).
    malformed = hook.post("text", "x", api_key="nope", stream="dev")
    assert_json_error(malformed, "Malformed API key", status=401, code="INVALID_API_KEY")
    wrong = hook.post("text", "x", api_key="x" * 32, stream="dev")
    assert_json_error(wrong, "Invalid API key", status=401, code="INVALID_API_KEY")
    response = hook.api.client.post("/api/v1/external/text", content=b"x", headers={"host": hook.realm.host})
    assert_json_error(response, "Missing 'api_key' argument", status=401)
    # A key of another realm's user does not post here.
    other = hook.api.client.post(
        f"/api/v1/external/text?api_key={hook.bot.api_key}",
        content=b"x",
        headers={"host": "elsewhere.palaver.test"},
    )
    assert other.status_code == 404


def test_deactivated_bot_is_refused(hook: Hook) -> None:
    assert_json_success(hook.api.delete(hook.realm.hamlet, f"bots/{hook.bot.id}"))
    assert_json_error(hook.post("text", "x", stream="dev"), "Account is deactivated", status=401)


def test_unknown_integration_and_missing_channel(hook: Hook) -> None:
    assert_json_error(hook.post("nosuch", "{}"), "No such integration: nosuch", status=404)
    assert_json_error(
        hook.post("text", "x", stream="nowhere"),
        "Channel 'nowhere' does not exist",
        code="STREAM_DOES_NOT_EXIST",
    )


def test_malformed_json_is_a_400(hook: Hook) -> None:
    assert_json_error(hook.post("json", "{not json", stream="dev"), "Malformed JSON")
    assert_json_error(
        hook.post("github", "[1, 2]", headers={"X-GitHub-Event": "push"}, stream="dev"),
        "Malformed JSON: expected an object",
    )


def test_payload_missing_documented_fields_is_a_400_not_a_500(
    hook: Hook, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="palaver.webhooks"):
        response = hook.post("github", '{"ref": 5}', headers={"X-GitHub-Event": "push"}, stream="dev")
    assert_json_error(response, "Malformed payload for the GitHub webhook", code="MALFORMED_WEBHOOK_PAYLOAD")
    assert len([r for r in caplog.records if r.name == "palaver.webhooks"]) == 1


def test_unsupported_event_is_a_clear_400_with_one_log_line(
    hook: Hook, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="palaver.webhooks"):
        response = hook.post(
            "github", fixture("github_star.json"), headers={"X-GitHub-Event": "star"}, stream="dev"
        )
    assert_json_error(
        response,
        "The 'star' event isn't currently supported by the GitHub webhook",
        code="UNSUPPORTED_WEBHOOK_EVENT_TYPE",
    )
    assert len([r for r in caplog.records if r.name == "palaver.webhooks"]) == 1


def test_only_and_exclude_events(hook: Hook) -> None:
    push = fixture("github_push.json")
    headers = {"X-GitHub-Event": "push"}
    skipped = hook.post("github", push, headers=headers, stream="dev", only_events='["issues", "pull_*"]')
    assert assert_json_success(skipped)["message_ids"] == []
    skipped = hook.post("github", push, headers=headers, stream="dev", exclude_events="push,release")
    assert assert_json_success(skipped)["message_ids"] == []
    kept = hook.post("github", push, headers=headers, stream="dev", only_events='["pu*"]')
    assert len(assert_json_success(kept)["message_ids"]) == 1
    assert_json_error(
        hook.post("github", push, headers=headers, stream="dev", only_events="[1]"),
        "only_events is not a list of strings",
    )


def test_json_posts_the_payload_as_a_code_block(hook: Hook) -> None:
    response = hook.post("json", '{"b": [1, 2], "a": "x"}', stream="dev")
    message = hook.message(response)
    assert message["subject"] == "JSON"
    raw = assert_json_success(hook.api.get(hook.realm.hamlet, f"messages/{message['id']}"))["raw_content"]
    assert raw == '```json\n{\n  "b": [\n    1,\n    2\n  ],\n  "a": "x"\n}\n```'


def test_any_users_key_posts_as_that_user(hook: Hook) -> None:
    response = hook.post("text", "from a person", api_key=hook.realm.othello.api_key, stream="dev")
    assert hook.message(response)["sender_id"] == hook.realm.othello.id
    # Without a channel, a person without an owner hears from themselves.
    response = hook.post("text", "note to self", api_key=hook.realm.othello.api_key)
    assert len(assert_json_success(response)["message_ids"]) == 1
    latest = fetch(hook.api, hook.realm.othello)["messages"][-1]
    assert latest["content"] == "<p>note to self</p>"


def test_register_lists_the_integrations(hook: Hook) -> None:
    state = assert_json_success(
        hook.api.post(hook.realm.hamlet, "register", {"fetch_event_types": ["realm_incoming_webhook_bots"]})
    )
    bots = {b["name"]: b for b in state["realm_incoming_webhook_bots"]}
    assert {"github", "gitlab", "json", "slack_incoming", "alertmanager", "grafana", "sentry", "text"} <= set(
        bots
    )
    assert bots["github"]["display_name"] == "GitHub"
    assert "workflow_run" in bots["github"]["all_event_types"]
    assert bots["json"]["all_event_types"] is None
    assert bots["github"]["config_options"] == [
        {
            "key": "branches",
            "label": "Only pushes to these branches (comma-separated)",
            "validator": "check_string",
        }
    ]
