"""Every operation of the reference and the spec, through the real ``zulip`` client.

Zulip checks its API by running an example per documented endpoint through its python
bindings against a live server; this does the same against ``palaver serve``: each call
goes through ``zulip.Client`` (its wrapper where it has one, ``call_endpoint`` otherwise),
and each answer is checked against the reference's schema for it (a success against the
200 response, an error against one of the documented error responses), with the error
code named where a call is meant to fail. The test fails when an operation of the
reference or the spec has no call here.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zulip

from tests.e2e.demo import demo_server, empty_database
from tests.images import PNG
from tests.reference_fidelity import Operation, Reference, load_reference
from tests.servers import RunningServer

pytestmark = pytest.mark.e2e


def _reference() -> Reference:
    reference = load_reference()
    if reference is None:
        pytest.skip("the reference is not available")
    return reference


class Caller:
    """Calls through a ``zulip.Client``, checking each answer against the reference."""

    def __init__(self, zulip_client: zulip.Client, reference: Reference) -> None:
        self.client = zulip_client
        self.reference = reference
        self.problems: list[str] = []
        self.validated = [0]
        self.exercised: set[tuple[str, str]] = set()

    def as_client(self, zulip_client: zulip.Client) -> Caller:
        """Calls as another user, recorded and checked with this caller's."""
        other = Caller(zulip_client, self.reference)
        other.problems, other.validated, other.exercised = self.problems, self.validated, self.exercised
        return other

    def check(self, method: str, path: str, result: dict[str, Any], expect: str) -> dict[str, Any]:
        operation = self.reference.match(method, "/" + path)
        if operation is not None:  # else one of Palaver's own operations: the envelope alone
            self.exercised.add((operation.method, operation.path))
        assert result.get("result") in ("success", "error"), (method, path, result)
        if expect == "success":
            assert result["result"] == "success", (method, path, result)
        else:
            assert result["result"] == "error" and result.get("code") == expect, (method, path, result)
        if operation is not None:
            self._validate(operation, result)
        return result

    def _validate(self, operation: Operation, result: dict[str, Any]) -> None:
        if operation.source != "reference":
            return  # the spec's operations: the envelope checked above
        spec = self.reference.document["paths"][operation.path][operation.method.lower()]
        if result["result"] == "success":
            statuses = [200]
        else:
            statuses = [int(s) for s in spec.get("responses", {}) if str(s)[0] == "4"]
        checks = [c for c in (self.reference.validator(operation, s) for s in statuses) if c is not None]
        if not checks:
            return
        self.validated[0] += 1
        for check in checks:
            if not list(check.iter_errors(result)):
                return
        error = next(iter(checks[0].iter_errors(result)))
        self.problems.append(f"{operation.method} {operation.path}: {error.message[:300]}")

    def call(
        self, method: str, path: str, request: dict[str, Any] | None = None, expect: str = "success"
    ) -> dict[str, Any]:
        result = self.client.call_endpoint(path, method=method, request=request or {})
        return self.check(method, path, result, expect)


# A server of its own: its burst of calls as the owner spends the per-user API budget
# (api_rate_limit) that the e2e modules sharing the demo server would otherwise meet.
@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with empty_database(tmp_path_factory) as url, demo_server(tmp_path_factory, url) as running:
        yield running


@pytest.fixture
def client(server: RunningServer) -> zulip.Client:
    return zulip.Client(config_file=str(server.zuliprc))


def _encode(request: dict[str, Any]) -> dict[str, Any]:
    """Values as Zulip's clients send them: JSON for anything that is not a string."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in request.items()}


@pytest.fixture
def caller(client: zulip.Client) -> Iterator[Caller]:
    calls = Caller(client, _reference())
    yield calls
    assert calls.validated[0] > 100
    assert not calls.problems, "answers that do not match the reference:\n" + "\n".join(calls.problems)


def _user_client(caller: Caller, running: RunningServer, name: str) -> tuple[zulip.Client, int, str]:
    email = f"{name}-{uuid.uuid4().hex[:6]}@example.com"
    created = caller.call(
        "POST", "users", {"email": email, "password": "secret-pass-1", "full_name": name.title()}
    )
    fetched = caller.call("POST", "fetch_api_key", {"username": email, "password": "secret-pass-1"})
    return zulip.Client(email=email, api_key=fetched["api_key"], site=running.url), created["user_id"], email


def test_every_endpoint(caller: Caller, server: RunningServer, tmp_path: Path) -> None:  # noqa: PLR0915
    c = caller.call
    tag = uuid.uuid4().hex[:6]
    me = c("GET", "users/me")
    my_id = me["user_id"]
    other_client, other_id, other_email = _user_client(caller, server, "member")
    other = caller.as_client(other_client)
    # Off unless the server runs with development_auth.
    c("POST", "dev_fetch_api_key", {"username": me["email"]}, expect="BAD_REQUEST")
    c("GET", "server_settings")

    # Channels, subscriptions, messages.
    channel = f"every {tag}"
    created = c("POST", "channels/create", _encode({"name": channel, "subscribers": [my_id, other_id]}))
    stream_id = created["id"]
    c("GET", "get_stream_id", {"stream": channel})
    c("GET", "streams")
    c("GET", f"streams/{stream_id}")
    c("GET", f"streams/{stream_id}/members")
    # Without an email gateway configured: the documented error.
    c("GET", f"streams/{stream_id}/email_address", expect="BAD_REQUEST")
    c("PATCH", f"streams/{stream_id}", {"description": "Every endpoint"})
    c("GET", "users/me/subscriptions")
    c("POST", "users/me/subscriptions", _encode({"subscriptions": [{"name": f"second {tag}"}]}))
    c(
        "PATCH",
        "users/me/subscriptions",
        _encode({"add": [{"name": f"third {tag}"}], "delete": [f"second {tag}"]}),
    )
    c("DELETE", "users/me/subscriptions", _encode({"subscriptions": [f"third {tag}"]}))
    c(
        "POST",
        "users/me/subscriptions/properties",
        _encode({"subscription_data": [{"stream_id": stream_id, "property": "pin_to_top", "value": True}]}),
    )
    c("GET", f"users/{other_id}/subscriptions/{stream_id}")
    sent = caller.check(
        "POST",
        "messages",
        caller.client.send_message({"type": "stream", "to": channel, "topic": "t", "content": "hello"}),
        "success",
    )
    message_id = sent["id"]
    dm = c("POST", "messages", _encode({"type": "direct", "to": [other_id], "content": "psst"}))["id"]
    c(
        "GET",
        "messages",
        _encode(
            {
                "anchor": "newest",
                "num_before": 10,
                "num_after": 0,
                "narrow": [{"operator": "channel", "operand": stream_id}],
            }
        ),
    )
    c("GET", f"messages/{message_id}")
    c("PATCH", f"messages/{message_id}", {"content": "hello, edited"})
    c("GET", f"messages/{message_id}/history")
    c("POST", f"messages/{message_id}/reactions", {"emoji_name": "smile"})
    c("DELETE", f"messages/{message_id}/reactions", {"emoji_name": "smile"})
    c("POST", "messages/flags", _encode({"messages": [message_id], "op": "add", "flag": "starred"}))
    c(
        "POST",
        "messages/flags/narrow",
        _encode(
            {"anchor": "oldest", "num_before": 0, "num_after": 100, "narrow": [], "op": "add", "flag": "read"}
        ),
    )
    other.call("GET", f"messages/{message_id}/read_receipts")
    c(
        "GET",
        "messages/matches_narrow",
        _encode({"msg_ids": [message_id], "narrow": [{"operator": "channel", "operand": stream_id}]}),
    )
    c("POST", "messages/render", {"content": "**bold**"})
    c("POST", "typing", _encode({"op": "start", "type": "channel", "stream_id": stream_id, "topic": "t"}))
    c("POST", f"messages/{message_id}/typing", {"op": "start"})
    c("POST", "mark_topic_as_read", _encode({"stream_id": stream_id, "topic_name": "t"}))
    c("POST", "mark_stream_as_read", _encode({"stream_id": stream_id}))
    c("POST", "mark_all_as_read")
    c("GET", f"users/me/{stream_id}/topics")
    c(
        "PATCH",
        "users/me/subscriptions/muted_topics",
        _encode({"stream_id": stream_id, "topic": "t", "op": "add"}),
    )
    c("POST", "user_topics", _encode({"stream_id": stream_id, "topic": "t", "visibility_policy": 0}))
    c("POST", f"streams/{stream_id}/delete_topic", {"topic_name": "gone"})
    c("POST", "reminders", _encode({"message_id": message_id, "scheduled_delivery_timestamp": 4_000_000_000}))
    c("DELETE", f"messages/{dm}")

    # Uploads and attachments.
    upload_file = tmp_path / "dot.png"
    upload_file.write_bytes(PNG)
    with upload_file.open("rb") as fp:
        uploaded = caller.check("POST", "user_uploads", caller.client.upload_file(fp), "success")
    c("GET", uploaded["url"].removeprefix("/"))
    c(
        "POST",
        "messages",
        _encode(
            {"type": "stream", "to": stream_id, "topic": "files", "content": f"[dot]({uploaded['url']})"}
        ),
    )
    attachments = c("GET", "attachments")["attachments"]
    c("DELETE", f"attachments/{attachments[0]['id']}")

    # Drafts, snippets, scheduled messages.
    draft = c(
        "POST",
        "drafts",
        _encode(
            {
                "drafts": [
                    {
                        "type": "stream",
                        "to": [stream_id],
                        "topic": "d",
                        "content": "draft",
                        "timestamp": 1_700_000_000,
                    }
                ]
            }
        ),
    )["ids"][0]
    c("GET", "drafts")
    c(
        "PATCH",
        f"drafts/{draft}",
        _encode(
            {
                "draft": {
                    "type": "stream",
                    "to": [stream_id],
                    "topic": "d",
                    "content": "draft 2",
                    "timestamp": 1_700_000_001,
                }
            }
        ),
    )
    c("DELETE", f"drafts/{draft}")
    snippet = c("POST", "saved_snippets", {"title": "Hi", "content": "Hello"})["saved_snippet_id"]
    c("GET", "saved_snippets")
    c("PATCH", f"saved_snippets/{snippet}", {"title": "Hi!"})
    c("DELETE", f"saved_snippets/{snippet}")
    scheduled = c(
        "POST",
        "scheduled_messages",
        _encode(
            {
                "type": "stream",
                "to": stream_id,
                "topic": "later",
                "content": "later",
                "scheduled_delivery_timestamp": 4_000_000_000,
            }
        ),
    )["scheduled_message_id"]
    c("GET", "scheduled_messages")
    c("PATCH", f"scheduled_messages/{scheduled}", {"content": "later still"})
    c("DELETE", f"scheduled_messages/{scheduled}")

    # Users, presence, status, settings.
    c("GET", "users")
    c("GET", f"users/{other_id}")
    c("GET", f"users/{other_email}")
    c("PATCH", f"users/{other_id}", {"full_name": "Member Renamed"})
    c("PATCH", f"users/{other_email}", {"full_name": "Member Again"})
    other.call("POST", "users/me/presence", {"status": "active"})
    c("GET", f"users/{other_id}/presence")
    c("GET", "realm/presence")
    c("POST", "users/me/status", {"status_text": "testing"})
    c("GET", f"users/{my_id}/status")
    c("PATCH", "settings", {"twenty_four_hour_time": "true"})
    c("GET", "users/me/alert_words")
    c("POST", "users/me/alert_words", _encode({"alert_words": ["ping"]}))
    c("DELETE", "users/me/alert_words", _encode({"alert_words": ["ping"]}))
    c("POST", f"users/me/muted_users/{other_id}")
    c("DELETE", f"users/me/muted_users/{other_id}")
    leaving_client, leaving_id, _ = _user_client(caller, server, "leaver")
    caller.as_client(leaving_client).call("DELETE", "users/me")
    c("POST", f"users/{leaving_id}/reactivate")
    c("DELETE", f"users/{leaving_id}")

    # Groups.
    group = c(
        "POST",
        "user_groups/create",
        _encode({"name": f"group {tag}", "description": "d", "members": [my_id]}),
    )["group_id"]
    subgroup = c(
        "POST",
        "user_groups/create",
        _encode({"name": f"sub {tag}", "description": "d", "members": [other_id]}),
    )["group_id"]
    c("GET", "user_groups")
    c("PATCH", f"user_groups/{group}", {"description": "new"})
    c("POST", f"user_groups/{group}/members", _encode({"add": [other_id]}))
    c("GET", f"user_groups/{group}/members")
    c("GET", f"user_groups/{group}/members/{other_id}")
    c("POST", f"user_groups/{group}/subgroups", _encode({"add": [subgroup]}))
    c("GET", f"user_groups/{group}/subgroups")
    c("POST", f"user_groups/{subgroup}/deactivate")

    # Organization.
    c("GET", "realm/emoji")
    emoji_file = tmp_path / "emoji.png"
    emoji_file.write_bytes(PNG)
    emoji_name = f"tick_{tag}"
    with emoji_file.open("rb") as fp:
        caller.check(
            "POST", f"realm/emoji/{emoji_name}", caller.client.upload_custom_emoji(emoji_name, fp), "success"
        )
    c("DELETE", f"realm/emoji/{emoji_name}")
    c("GET", "realm/profile_fields")
    field = c("POST", "realm/profile_fields", {"name": f"Phone {tag}", "field_type": "1"})["id"]
    c(
        "PATCH",
        "realm/profile_fields",
        _encode({"order": [f["id"] for f in c("GET", "realm/profile_fields")["custom_fields"]]}),
    )
    assert field
    c("PATCH", "realm/user_settings_defaults", {"enter_sends": "true"})
    c("GET", "realm/linkifiers")
    linkifier = c(
        "POST",
        "realm/filters",
        {"pattern": f"#(?P<id>[0-9]+){tag}", "url_template": "https://tracker.example/{id}"},
    )["id"]
    c(
        "PATCH",
        f"realm/filters/{linkifier}",
        {"pattern": f"#(?P<id>[0-9]+)x{tag}", "url_template": "https://tracker.example/{id}"},
    )
    c("PATCH", "realm/linkifiers", _encode({"ordered_linkifier_ids": [linkifier]}))
    c("DELETE", f"realm/filters/{linkifier}")
    playground = c(
        "POST",
        "realm/playgrounds",
        {
            "name": f"Python {tag}",
            "pygments_language": "Python",
            "url_template": "https://play.example/?c={code}",
        },
    )["id"]
    c("DELETE", f"realm/playgrounds/{playground}")
    c("POST", "default_streams", _encode({"stream_id": stream_id}))
    c("DELETE", "default_streams", _encode({"stream_id": stream_id}))
    folder = caller.client.call_endpoint(
        "channel_folders/create", method="POST", request={"name": f"Folder {tag}"}
    )["channel_folder_id"]
    c("PATCH", f"channel_folders/{folder}", {"description": "folder"})
    caller.client.call_endpoint(
        "realm/domains", method="POST", request={"domain": f"{tag}.example.org", "allow_subdomains": "false"}
    )
    c("PATCH", f"realm/domains/{tag}.example.org", {"allow_subdomains": "true"})
    c("GET", "export/realm")
    c("POST", "export/realm")
    c("GET", "export/realm/consents")
    c("GET", "invites")
    c(
        "POST",
        "invites",
        _encode({"invitee_emails": f"invitee-{tag}@example.com", "stream_ids": [stream_id]}),
    )
    invites = c("GET", "invites")["invites"]
    email_invite = next(i["id"] for i in invites if not i.get("is_multiuse"))
    c("POST", f"invites/{email_invite}/resend")
    c("DELETE", f"invites/{email_invite}")
    c("POST", "invites/multiuse", _encode({"stream_ids": [stream_id]}))
    multiuse = next(i["id"] for i in c("GET", "invites")["invites"] if i.get("is_multiuse"))
    c("DELETE", f"invites/multiuse/{multiuse}")
    # Not configured here.
    c("GET", "calls/bigbluebutton/create", {"meeting_name": "standup"}, expect="BAD_REQUEST")

    # Push and devices: no push service is configured here, so its own operations answer the
    # documented PUSH_SERVICE_NOT_CONFIGURED; the legacy token routes store the token.
    device = c("POST", "register_client_device")
    c(
        "POST",
        "mobile_push/register",
        _encode({"device_id": device["device_id"], "push_key_id": 1, "push_key": "a" * 44}),
        expect="PUSH_SERVICE_NOT_CONFIGURED",
    )
    c("POST", "remove_client_device", _encode({"device_id": device["device_id"]}))
    c("POST", "mobile_push/test_notification", expect="PUSH_SERVICE_NOT_CONFIGURED")
    c("POST", "users/me/apns_device_token", {"token": "c0ffee" * 8, "appid": "org.zulip.Zulip"})
    c("DELETE", "users/me/apns_device_token", {"token": "c0ffee" * 8})
    c("POST", "users/me/android_gcm_reg_id", {"token": "fcm-token"})
    c("DELETE", "users/me/android_gcm_reg_id", {"token": "fcm-token"})

    # The event queue.
    queue = caller.check("POST", "register", caller.client.register(event_types=["message"]), "success")
    caller.check(
        "GET",
        "events",
        caller.client.get_events(queue_id=queue["queue_id"], last_event_id=-1, dont_block=True),
        "success",
    )
    caller.check("DELETE", "events", caller.client.deregister(queue["queue_id"]), "success")
    c(
        "GET",
        "events",
        {"queue_id": "no-such-queue", "last_event_id": "-1", "dont_block": "true"},
        expect="BAD_EVENT_QUEUE_ID",
    )

    # Documented errors.
    c("GET", "messages/999999999", expect="BAD_REQUEST")
    c("POST", "messages", {"type": "stream", "to": channel, "topic": "t"}, expect="REQUEST_VARIABLE_MISSING")
    c("DELETE", f"streams/{stream_id}")

    # Nothing of the reference or the spec is left without a call through the client.
    missing = sorted(
        f"{op.method} {op.path}"
        for op in caller.reference.operations
        if (op.method, op.path) not in caller.exercised
    )
    assert not missing, "operations no call through the zulip client exercised:\n" + "\n".join(missing)
