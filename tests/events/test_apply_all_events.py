"""Every event type and op the server emits, applied by clients and compared with /register.

For each case, viewers of different roles register (through the API, with every kind of
state), one or more actions run through the API as a client would make them, each viewer
reads its queue with ``GET /events``, applies the events with ``tests/events/apply.py`` and
must then hold the state a fresh ``/register`` returns. The list of event types and ops comes
from the typed models (``palaver.events.types``): a model with neither a case here nor a
reasoned entry in ``EXCLUDED`` fails ``test_every_event_type_has_a_case``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from palaver.actions.web_reload import do_reload_web_clients
from palaver.events.types import registered_event_models, validate_event
from palaver.models import Realm, Role
from palaver.services import Services
from tests.events.apply import apply_event, state_differences
from tests.helpers import Api, SeededRealm, assert_json_success
from tests.helpers import TestUser as User
from tests.images import PNG

Key = tuple[str, str | None]

# Modern clients: the capabilities of the current web and mobile apps.
MODERN_CAPABILITIES = {
    "notification_settings_null": True,
    "bulk_message_deletion": True,
    "user_avatar_url_field_optional": False,
    "stream_typing_notifications": True,
    "user_settings_object": True,
    "linkifier_url_template": True,
    "user_list_incomplete": False,
    "include_deactivated_groups": True,
    "archived_channels": True,
    "empty_topic_name": True,
    "simplified_presence_events": True,
    "individual_emoji_changes": True,
}
# Clients from before user_settings_object and user_topic read the legacy events.
LEGACY_CAPABILITIES = {**MODERN_CAPABILITIES, "user_settings_object": False}
# Legacy copies of settings events go only to clients that name them.
LEGACY_SETTINGS_TYPES = ("user_settings", "update_display_settings", "update_global_notifications")
# Clients that drop archived channels (they get a deletion where others get is_archived).
NO_ARCHIVED_CAPABILITIES = {**MODERN_CAPABILITIES, "archived_channels": False}
# Clients that hear of custom emoji changes as the whole set.
WHOLE_EMOJI_SET_CAPABILITIES = {**MODERN_CAPABILITIES, "individual_emoji_changes": False}

# Never sent by any action, or not observable by a client that can register afterwards.
EXCLUDED: dict[Key, str] = {
    # Made by the queue layer, not by actions; they carry no state (a heartbeat keeps the
    # long-poll alive, a restart tells clients to re-register). tests/api/test_events.py
    # covers both.
    ("heartbeat", None): "queue keep-alive, no state",
    ("restart", None): "sent when saved queues are restored; clients re-register",
    # The queues of a deactivated realm close: no fresh /register to compare with
    # (tests/api/test_realm.py covers the event).
    ("realm", "deactivated"): "the realm's queues close; nothing to register against",
    # Models of the reference kept for validation; this server never sends them.
    ("realm_bot", "remove"): "deprecated since feature level 222; realm_bot delete replaced it",
    ("realm_filters", None): "legacy, no longer sent since feature level 176 (realm_linkifiers)",
    ("has_zoom_token", None): "Zoom accounts cannot be linked on this server",
    ("user_group", "remove"): "deactivation sends user_group update deactivated=true instead",
}


@dataclass
class Ctx:
    api: Api
    realm: SeededRealm
    services: Services
    monkeypatch: pytest.MonkeyPatch
    saved: dict[str, Any] = field(default_factory=dict)

    def ok(self, method: str, actor: str, path: str, data: dict[str, Any] | None = None, **kw: Any) -> Any:
        return assert_json_success(self.api.request(method, self.realm.users[actor], path, data, **kw))

    def uid(self, name: str) -> int:
        return self.realm.users[name].id

    def channel(self, name: str, members: list[str], **extra: Any) -> int:
        principals = [self.uid(m) for m in members]
        self.ok(
            "POST",
            "iago",
            "users/me/subscriptions",
            {"subscriptions": [{"name": name}], "principals": principals, **extra},
        )
        stream_id: int = self.ok("GET", "iago", "get_stream_id", {"stream": name})["stream_id"]
        return stream_id

    def send(self, actor: str, channel: str, topic: str, content: str) -> int:
        body = {"type": "stream", "to": channel, "topic": topic, "content": content}
        message_id: int = self.ok("POST", actor, "messages", body)["id"]
        return message_id

    def direct(self, actor: str, to: list[str], content: str) -> int:
        body = {"type": "direct", "to": [self.uid(u) for u in to], "content": content}
        message_id: int = self.ok("POST", actor, "messages", body)["id"]
        return message_id

    def group(self, name: str, members: list[str]) -> int:
        body = {"name": name, "description": "", "members": [self.uid(m) for m in members]}
        group_id: int = self.ok("POST", "iago", "user_groups/create", body)["group_id"]
        return group_id


Step = Callable[[Ctx], None]


def _steps(*steps: Step) -> Step:
    """One step made of several, run in order."""

    def run(ctx: Ctx) -> None:
        for step in steps:
            step(ctx)

    return run


@dataclass(frozen=True)
class Case:
    run: Step
    setup: Step | None = None
    viewers: tuple[str, ...] = ("iago", "hamlet", "polonius")
    capabilities: dict[str, bool] = field(default_factory=lambda: MODERN_CAPABILITIES)
    # Event types the client names (None: every type).
    event_types: tuple[str, ...] | None = None


def _public_lounge(ctx: Ctx) -> None:
    ctx.saved["lounge"] = ctx.channel("lounge", ["iago", "hamlet", "othello", "polonius"])


def _later() -> int:
    return int(time.time()) + 3600


def _setup_messages(ctx: Ctx) -> None:
    _public_lounge(ctx)
    ctx.saved["message"] = ctx.send("othello", "lounge", "chat", "hello @**King Hamlet**")


# Steps by key -------------------------------------------------------------------------------


def _alert_words(ctx: Ctx) -> None:
    ctx.ok("POST", "hamlet", "users/me/alert_words", {"alert_words": ["spam"]})


def _upload(ctx: Ctx) -> None:
    body = ctx.ok("POST", "hamlet", "user_uploads", files={"file": ("notes.txt", b"hello", "text/plain")})
    ctx.saved["upload"] = body["url"]


def _attachment_id(ctx: Ctx) -> int:
    attachments = ctx.ok("GET", "hamlet", "attachments")["attachments"]
    attachment_id: int = attachments[0]["id"]
    return attachment_id


def _attachment_update(ctx: Ctx) -> None:
    ctx.send("hamlet", "lounge", "files", f"[notes]({ctx.saved['upload']})")


def _attachment_remove(ctx: Ctx) -> None:
    ctx.ok("DELETE", "hamlet", f"attachments/{_attachment_id(ctx)}")


def _setup_upload(ctx: Ctx) -> None:
    _public_lounge(ctx)
    _upload(ctx)


def _folder_add(ctx: Ctx) -> None:
    ctx.saved["folder"] = ctx.ok(
        "POST", "iago", "channel_folders/create", {"name": "Work", "description": "*Busy*"}
    )["channel_folder_id"]


def _folder_update(ctx: Ctx) -> None:
    folder = ctx.saved["folder"]
    ctx.ok("PATCH", "iago", f"channel_folders/{folder}", {"name": "Play", "description": "Fun"})
    ctx.ok("PATCH", "iago", f"channel_folders/{folder}", {"is_archived": True})


def _folders_reorder(ctx: Ctx) -> None:
    second = ctx.ok("POST", "iago", "channel_folders/create", {"name": "Home"})["channel_folder_id"]
    ctx.ok("PATCH", "iago", "channel_folders", {"order": json.dumps([second, ctx.saved["folder"]])})


def _profile_field(ctx: Ctx) -> None:
    created = ctx.ok(
        "POST", "iago", "realm/profile_fields", {"name": "Team", "field_type": 1, "hint": "Yours"}
    )
    profile = [{"id": created["id"], "value": "Blue"}]
    ctx.ok("PATCH", "iago", f"users/{ctx.uid('hamlet')}", {"profile_data": profile})


def _default_stream_groups(ctx: Ctx) -> None:
    body = {"group_name": "Starters", "description": "First", "stream_names": ["lounge"]}
    ctx.ok("POST", "iago", "default_stream_groups/create", body)


def _default_streams(ctx: Ctx) -> None:
    ctx.ok("POST", "iago", "default_streams", {"stream_id": ctx.saved["lounge"]})


def _delete_message(ctx: Ctx) -> None:
    older = ctx.send("othello", "lounge", "chat", "older")
    ctx.ok("POST", "hamlet", "messages/flags", {"messages": [older], "op": "add", "flag": "starred"})
    ctx.ok("DELETE", "iago", f"messages/{older}")
    direct = ctx.direct("othello", ["hamlet", "iago"], "a secret")
    ctx.ok("DELETE", "iago", f"messages/{direct}")


def _device_add(ctx: Ctx) -> None:
    ctx.saved["device"] = ctx.ok("POST", "hamlet", "register_client_device")["device_id"]


def _setup_push(ctx: Ctx) -> None:
    # Push registration needs a relay; the setting shows in /register, so it is set first.
    relay = {"push_relay_url": "http://127.0.0.1:9/relay"}
    ctx.monkeypatch.setattr(ctx.services, "settings", ctx.services.settings.model_copy(update=relay))
    _device_add(ctx)


def _device_update(ctx: Ctx) -> None:
    fields = {
        "device_id": ctx.saved["device"],
        "push_key_id": 5,
        "push_key": base64.b64encode(b"\x31" + b"k" * 32).decode(),
        "token_kind": "fcm",
        "token_id": base64.b64encode(b"12345678").decode(),
        "bouncer_public_key": base64.b64encode(b"p" * 32).decode(),
        "encrypted_push_registration": base64.b64encode(b"e" * 80).decode(),
    }
    ctx.ok("POST", "hamlet", "mobile_push/register", fields)


def _device_remove(ctx: Ctx) -> None:
    ctx.ok("POST", "hamlet", "remove_client_device", {"device_id": ctx.saved["device"]})


def _draft(stream_id: int, content: str) -> dict[str, Any]:
    return {
        "type": "stream",
        "to": [stream_id],
        "topic": "plans",
        "content": content,
        "timestamp": 1700000000,
    }


def _drafts_add(ctx: Ctx) -> None:
    ctx.saved["draft"] = ctx.ok(
        "POST", "hamlet", "drafts", {"drafts": [_draft(ctx.saved["lounge"], "first")]}
    )["ids"][0]


def _drafts_update(ctx: Ctx) -> None:
    ctx.ok(
        "PATCH", "hamlet", f"drafts/{ctx.saved['draft']}", {"draft": _draft(ctx.saved["lounge"], "second")}
    )


def _drafts_remove(ctx: Ctx) -> None:
    ctx.ok("DELETE", "hamlet", f"drafts/{ctx.saved['draft']}")


def _invites(ctx: Ctx) -> None:
    ctx.ok("POST", "iago", "invites", {"invitee_emails": "new@example.com", "stream_ids": []})


def _messages(ctx: Ctx) -> None:
    ctx.send("othello", "lounge", "chat", "hello @**King Hamlet**")
    ctx.send("othello", "lounge", "chat", "hello @**all**")
    ctx.send("hamlet", "lounge", "mine", "my own")
    ctx.direct("othello", ["hamlet"], "hi")
    ctx.direct("othello", ["hamlet", "iago", "polonius"], "hi all")
    ctx.direct("hamlet", ["hamlet"], "note to self")
    private = ctx.channel("secret", ["iago", "hamlet"], invite_only=True)
    ctx.send("iago", "secret", "hush", f"in {private}")


def _muted_users(ctx: Ctx) -> None:
    ctx.ok("POST", "hamlet", f"users/me/muted_users/{ctx.uid('othello')}")


def _topic(ctx: Ctx, actor: str, policy: int) -> None:
    body = {"stream_id": ctx.saved["lounge"], "topic": "chat", "visibility_policy": policy}
    ctx.ok("POST", actor, "user_topics", body)


def _user_topics(ctx: Ctx) -> None:
    for actor in ("iago", "hamlet", "polonius"):
        _topic(ctx, actor, 1)
    _topic(ctx, "hamlet", 0)
    _topic(ctx, "iago", 3)


def _navigation_add(ctx: Ctx) -> None:
    ctx.ok(
        "POST",
        "hamlet",
        "navigation_views",
        {"fragment": "narrow/is/alerted", "is_pinned": True, "name": "Alerts"},
    )


def _navigation_update(ctx: Ctx) -> None:
    ctx.ok("PATCH", "hamlet", "navigation_views/narrow/is/alerted", {"is_pinned": False, "name": "Pings"})


def _navigation_remove(ctx: Ctx) -> None:
    ctx.ok("DELETE", "hamlet", "navigation_views/narrow/is/alerted")


def _onboarding(ctx: Ctx) -> None:
    ctx.ok("POST", "hamlet", "users/me/onboarding_steps", {"onboarding_step": "visibility_policy_banner"})


def _presence(ctx: Ctx) -> None:
    for actor in ("hamlet", "othello", "polonius"):
        ctx.ok("POST", actor, "users/me/presence", {"status": "active", "new_user_input": True})
    ctx.ok("POST", "othello", "users/me/presence", {"status": "idle"})


def _reaction_add(ctx: Ctx) -> None:
    ctx.ok("POST", "hamlet", f"messages/{ctx.saved['message']}/reactions", {"emoji_name": "smile"})


def _reaction_remove(ctx: Ctx) -> None:
    ctx.ok("DELETE", "hamlet", f"messages/{ctx.saved['message']}/reactions", {"emoji_name": "smile"})


def _realm_update(ctx: Ctx) -> None:
    ctx.ok(
        "PATCH",
        "desdemona",
        "realm",
        {"name": "Renamed", "description": "About us", "waiting_period_threshold": 3},
    )
    ctx.ok("PATCH", "desdemona", "realm", {"new_stream_announcements_stream_id": ctx.saved["lounge"]})


def _system_group(ctx: Ctx, name: str) -> int:
    groups = ctx.ok("GET", "iago", "user_groups")["user_groups"]
    return next(int(g["id"]) for g in groups if g["name"] == name)


def _realm_update_dict(ctx: Ctx) -> None:
    admins = _system_group(ctx, "role:administrators")
    anonymous = {"direct_members": [ctx.uid("polonius")], "direct_subgroups": [admins]}
    ctx.ok(
        "PATCH",
        "desdemona",
        "realm",
        {
            "can_create_public_channel_group": json.dumps({"new": admins}),
            "can_add_subscribers_group": json.dumps({"new": anonymous}),
            "can_invite_users_group": json.dumps({"new": anonymous}),
        },
    )
    ctx.ok(
        "PATCH",
        "desdemona",
        "realm",
        {"allow_message_editing": False, "message_content_edit_limit_seconds": 120},
    )


def _bot_add(ctx: Ctx) -> None:
    body = {"full_name": "Helper Bot", "short_name": "helper"}
    ctx.saved["bot"] = ctx.ok("POST", "hamlet", "bots", body)["user_id"]


def _bot_update(ctx: Ctx) -> None:
    ctx.ok("PATCH", "hamlet", f"bots/{ctx.saved['bot']}", {"full_name": "Helper Two"})
    _bot_deactivate(ctx)


def _bot_delete(ctx: Ctx) -> None:
    # A bot's former owner stops managing it: a delete for him, an add for the new owner.
    ctx.ok("PATCH", "iago", f"bots/{ctx.saved['bot']}", {"bot_owner_id": ctx.uid("othello")})


def _bot_deactivate(ctx: Ctx) -> None:
    ctx.ok("DELETE", "hamlet", f"bots/{ctx.saved['bot']}")


def _domains_add(ctx: Ctx) -> None:
    ctx.ok("POST", "desdemona", "realm/domains", {"domain": "example.org", "allow_subdomains": False})


def _domains_change(ctx: Ctx) -> None:
    ctx.ok("PATCH", "desdemona", "realm/domains/example.org", {"allow_subdomains": True})


def _domains_remove(ctx: Ctx) -> None:
    ctx.ok("DELETE", "desdemona", "realm/domains/example.org")


def _emoji_add(ctx: Ctx) -> None:
    ctx.ok("POST", "hamlet", "realm/emoji/green_tick", files={"file": ("emoji.png", PNG, "image/png")})


def _emoji_deactivate(ctx: Ctx) -> None:
    ctx.ok("DELETE", "hamlet", "realm/emoji/green_tick")


def _emoji(ctx: Ctx) -> None:
    _emoji_add(ctx)
    _emoji_deactivate(ctx)


def _export(ctx: Ctx) -> None:
    ctx.ok("POST", "iago", "export/realm")


def _export_consent(ctx: Ctx) -> None:
    ctx.ok("PATCH", "hamlet", "settings", {"allow_private_data_export": True})


def _linkifiers(ctx: Ctx) -> None:
    body = {"pattern": "#(?P<id>[0-9]+)", "url_template": "https://example.com/issues/{id}"}
    ctx.ok("POST", "iago", "realm/filters", body)


def _playgrounds(ctx: Ctx) -> None:
    body = {
        "name": "Python",
        "pygments_language": "Python",
        "url_template": "https://python.example/?c={code}",
    }
    ctx.ok("POST", "iago", "realm/playgrounds", body)


def _user_add(ctx: Ctx) -> None:
    body = {"email": "newbie@example.com", "password": "pw-123456", "full_name": "Newbie"}
    ctx.ok("POST", "iago", "users", body)


def _limit_guest_access(ctx: Ctx) -> None:
    members = _system_group(ctx, "role:members")
    ctx.ok("PATCH", "desdemona", "realm", {"can_access_all_users_group": json.dumps({"new": members})})
    ctx.saved["lounge"] = ctx.channel("lounge", ["iago", "polonius", "othello"])


def _user_remove(ctx: Ctx) -> None:
    # Othello shares no channel with the guest any more: he becomes inaccessible to her.
    ctx.ok("DELETE", "othello", "users/me/subscriptions", {"subscriptions": ["lounge"]})


def _user_update(ctx: Ctx) -> None:
    ctx.ok("PATCH", "hamlet", "settings", {"full_name": "Renamed Hamlet", "timezone": "Europe/Paris"})
    ctx.ok("PATCH", "othello", "settings", {"email_address_visibility": 4})
    ctx.ok("PATCH", "desdemona", f"users/{ctx.uid('cordelia')}", {"role": Role.MODERATOR})
    ctx.ok("PATCH", "desdemona", f"users/{ctx.uid('hamlet')}", {"role": Role.ADMINISTRATOR})
    ctx.ok("DELETE", "iago", f"users/{ctx.uid('shiva')}")
    ctx.ok("POST", "iago", f"users/{ctx.uid('shiva')}/reactivate")
    ctx.ok("DELETE", "iago", f"users/{ctx.uid('cordelia')}")


def _defaults(ctx: Ctx) -> None:
    ctx.ok(
        "PATCH", "iago", "realm/user_settings_defaults", {"twenty_four_hour_time": True, "emojiset": "text"}
    )


def _reminder_add(ctx: Ctx) -> None:
    body = {"message_id": ctx.saved["message"], "scheduled_delivery_timestamp": _later(), "note": "look"}
    ctx.saved["reminder"] = ctx.ok("POST", "hamlet", "reminders", body)["reminder_id"]


def _reminder_remove(ctx: Ctx) -> None:
    ctx.ok("DELETE", "hamlet", f"reminders/{ctx.saved['reminder']}")


def _snippet_add(ctx: Ctx) -> None:
    ctx.saved["snippet"] = ctx.ok("POST", "hamlet", "saved_snippets", {"title": "Hi", "content": "Hello!"})[
        "saved_snippet_id"
    ]


def _snippet_update(ctx: Ctx) -> None:
    ctx.ok("PATCH", "hamlet", f"saved_snippets/{ctx.saved['snippet']}", {"content": "Hello again"})


def _snippet_remove(ctx: Ctx) -> None:
    ctx.ok("DELETE", "hamlet", f"saved_snippets/{ctx.saved['snippet']}")


def _scheduled_add(ctx: Ctx) -> None:
    body = {
        "type": "stream",
        "to": ctx.saved["lounge"],
        "topic": "later",
        "content": "see you",
        "scheduled_delivery_timestamp": _later(),
    }
    ctx.saved["scheduled"] = ctx.ok("POST", "hamlet", "scheduled_messages", body)["scheduled_message_id"]
    direct = {
        "type": "direct",
        "to": [ctx.uid("othello")],
        "content": "psst",
        "scheduled_delivery_timestamp": _later() - 60,
    }
    ctx.ok("POST", "hamlet", "scheduled_messages", direct)


def _scheduled_update(ctx: Ctx) -> None:
    ctx.ok("PATCH", "hamlet", f"scheduled_messages/{ctx.saved['scheduled']}", {"content": "see you soon"})


def _scheduled_remove(ctx: Ctx) -> None:
    ctx.ok("DELETE", "hamlet", f"scheduled_messages/{ctx.saved['scheduled']}")


def _stream_create(ctx: Ctx) -> None:
    ctx.channel("news", ["othello"])
    ctx.channel("hideout", ["othello", "hamlet"], invite_only=True)


def _stream_archive(ctx: Ctx) -> None:
    ctx.send("othello", "lounge", "chat", "unread soon archived")
    ctx.ok("DELETE", "iago", f"streams/{ctx.saved['lounge']}")


def _setup_hideout(ctx: Ctx) -> None:
    _setup_messages(ctx)
    ctx.saved["hideout"] = ctx.channel("hideout", ["iago", "hamlet", "othello"], invite_only=True)
    ctx.send("othello", "hideout", "plot", "unread in private")


def _stream_delete(ctx: Ctx) -> None:
    _stream_archive(ctx)
    # Losing access to a private channel deletes it from the client too.
    ctx.ok("DELETE", "hamlet", "users/me/subscriptions", {"subscriptions": ["hideout"]})


def _stream_update(ctx: Ctx) -> None:
    lounge = ctx.saved["lounge"]
    ctx.ok("PATCH", "iago", f"streams/{lounge}", {"description": "**Chat** here", "new_name": "salon"})
    ctx.ok("PATCH", "iago", f"streams/{lounge}", {"is_private": True, "history_public_to_subscribers": False})
    ctx.ok("PATCH", "desdemona", f"streams/{lounge}", {"message_retention_days": json.dumps(30)})


def _submessage(ctx: Ctx) -> None:
    poll = ctx.send("hamlet", "lounge", "vote", "/poll Where?\nCanteen\nPark")
    vote = {"type": "vote", "key": "canned,0", "vote": 1}
    ctx.ok(
        "POST",
        "othello",
        "submessage",
        {"message_id": poll, "msg_type": "widget", "content": json.dumps(vote)},
    )


def _sub_add(ctx: Ctx) -> None:
    ctx.ok(
        "POST",
        "iago",
        "users/me/subscriptions",
        {"subscriptions": [{"name": "lounge"}], "principals": [ctx.uid("cordelia")]},
    )
    ctx.ok("POST", "hamlet", "users/me/subscriptions", {"subscriptions": [{"name": "garden"}]})


def _sub_remove(ctx: Ctx) -> None:
    ctx.send("othello", "lounge", "chat", "unread before leaving")
    ctx.ok("DELETE", "hamlet", "users/me/subscriptions", {"subscriptions": ["lounge"]})
    ctx.ok(
        "DELETE",
        "iago",
        "users/me/subscriptions",
        {"subscriptions": ["lounge"], "principals": [ctx.uid("othello")]},
    )


def _sub_update(ctx: Ctx) -> None:
    ctx.send("othello", "lounge", "chat", "@**all** wake up")
    data = [
        {"stream_id": ctx.saved["lounge"], "property": "is_muted", "value": True},
        {"stream_id": ctx.saved["lounge"], "property": "color", "value": "#abcdef"},
        {"stream_id": ctx.saved["lounge"], "property": "push_notifications", "value": True},
    ]
    for actor in ("iago", "hamlet", "polonius"):
        ctx.ok("POST", actor, "users/me/subscriptions/properties", {"subscription_data": data})


def _typing(ctx: Ctx) -> None:
    for op in ("start", "stop"):
        ctx.ok(
            "POST",
            "othello",
            "typing",
            {"op": op, "type": "direct", "to": [ctx.uid("hamlet"), ctx.uid("iago")]},
        )
        ctx.ok(
            "POST",
            "othello",
            "typing",
            {"op": op, "type": "stream", "stream_id": ctx.saved["lounge"], "topic": "chat"},
        )


def _typing_edit(ctx: Ctx) -> None:
    for op in ("start", "stop"):
        ctx.ok("POST", "othello", f"messages/{ctx.saved['message']}/typing", {"op": op})


def _legacy_settings(ctx: Ctx) -> None:
    ctx.ok("PATCH", "hamlet", "settings", {"twenty_four_hour_time": True, "default_language": "fr"})
    ctx.ok("PATCH", "hamlet", "settings", {"enable_sounds": False, "enable_desktop_notifications": False})


def _update_message(ctx: Ctx) -> None:
    message = ctx.saved["message"]
    ctx.ok("PATCH", "othello", f"messages/{message}", {"content": "hello @**all**"})
    ctx.send("othello", "lounge", "chat", "second")
    ctx.ok("PATCH", "iago", f"messages/{message}", {"topic": "moved", "propagate_mode": "change_all"})
    garden = ctx.channel("garden", ["iago", "hamlet", "othello"])
    ctx.ok("PATCH", "iago", f"messages/{message}", {"stream_id": garden, "propagate_mode": "change_all"})


def _flags_add(ctx: Ctx) -> None:
    message = ctx.saved["message"]
    for actor in ("iago", "hamlet", "polonius"):
        ctx.ok("POST", actor, "messages/flags", {"messages": [message], "op": "add", "flag": "read"})
        ctx.ok("POST", actor, "messages/flags", {"messages": [message], "op": "add", "flag": "starred"})
    ctx.direct("othello", ["hamlet"], "unread")
    ctx.ok("POST", "hamlet", "mark_all_as_read")


def _flags_remove(ctx: Ctx) -> None:
    direct = ctx.direct("othello", ["hamlet", "iago"], "group chat")
    for actor in ("iago", "hamlet", "polonius"):
        messages = [ctx.saved["message"], direct] if actor != "polonius" else [ctx.saved["message"]]
        ctx.ok("POST", actor, "messages/flags", {"messages": messages, "op": "add", "flag": "read"})
        ctx.ok("POST", actor, "messages/flags", {"messages": messages, "op": "remove", "flag": "read"})
        ctx.ok("POST", actor, "messages/flags", {"messages": messages, "op": "add", "flag": "starred"})
        ctx.ok("POST", actor, "messages/flags", {"messages": messages, "op": "remove", "flag": "starred"})


def _group_add(ctx: Ctx) -> None:
    ctx.saved["group"] = ctx.group("crew", ["hamlet", "othello"])


def _group_update(ctx: Ctx) -> None:
    group = ctx.saved["group"]
    ctx.ok("PATCH", "iago", f"user_groups/{group}", {"name": "band", "description": "Music"})
    admins = _system_group(ctx, "role:administrators")
    ctx.ok("PATCH", "iago", f"user_groups/{group}", {"can_mention_group": json.dumps({"new": admins})})
    ctx.ok("POST", "iago", f"user_groups/{group}/deactivate")


def _group_members(ctx: Ctx, op: str) -> None:
    key = "add" if op == "add" else "delete"
    ctx.ok(
        "POST",
        "iago",
        f"user_groups/{ctx.saved['group']}/members",
        {key: [ctx.uid("polonius"), ctx.uid("iago")]},
    )


def _setup_group_members(ctx: Ctx) -> None:
    ctx.saved["group"] = ctx.group("crew", ["hamlet", "polonius", "iago"])
    admins = _system_group(ctx, "role:administrators")
    # The group is a permission: membership changes what the viewers may do.
    ctx.ok("PATCH", "desdemona", "realm", {"can_invite_users_group": json.dumps({"new": ctx.saved["group"]})})
    del admins


def _subgroups(ctx: Ctx, op: str) -> None:
    key = "add" if op == "add" else "delete"
    ctx.ok("POST", "iago", f"user_groups/{ctx.saved['group']}/subgroups", {key: [ctx.saved["sub"]]})


def _setup_subgroups(ctx: Ctx, *, linked: bool) -> None:
    ctx.saved["sub"] = ctx.group("inner", ["polonius"])
    ctx.saved["group"] = ctx.group("outer", ["othello"])
    ctx.ok(
        "PATCH", "desdemona", "realm", {"can_add_subscribers_group": json.dumps({"new": ctx.saved["group"]})}
    )
    if linked:
        _subgroups(ctx, "add")


def _user_settings(ctx: Ctx) -> None:
    for actor in ("iago", "hamlet", "polonius"):
        ctx.ok("PATCH", actor, "settings", {"twenty_four_hour_time": True, "default_language": "de"})
        ctx.ok("PATCH", actor, "settings", {"web_home_view": "recent", "enable_sounds": False})


def _user_status(ctx: Ctx) -> None:
    ctx.ok("POST", "hamlet", "users/me/status", {"status_text": "out", "emoji_name": "car", "away": True})
    ctx.ok("POST", "othello", "users/me/status", {"status_text": "busy"})
    ctx.ok("POST", "hamlet", "users/me/status", {"status_text": "", "away": False})


def _web_reload(ctx: Ctx) -> None:
    # Only the operator's command sends it (palaver reload-web-clients).
    with ctx.services.db.session() as session:
        realm = session.get(Realm, ctx.realm.id)
        assert realm is not None
        do_reload_web_clients(session, realm, immediate=True)


CASES: dict[Key, Case] = {
    ("alert_words", None): Case(_alert_words),
    ("attachment", "add"): Case(_upload, viewers=("hamlet",)),
    ("attachment", "update"): Case(_attachment_update, setup=_setup_upload, viewers=("hamlet",)),
    ("attachment", "remove"): Case(_attachment_remove, setup=_setup_upload, viewers=("hamlet",)),
    ("channel_folder", "add"): Case(_folder_add),
    ("channel_folder", "update"): Case(_folder_update, setup=_folder_add),
    ("channel_folder", "reorder"): Case(_folders_reorder, setup=_folder_add),
    ("custom_profile_fields", None): Case(_profile_field),
    ("default_stream_groups", None): Case(_default_stream_groups, setup=_public_lounge),
    ("default_streams", None): Case(_default_streams, setup=_public_lounge),
    ("delete_message", None): Case(_delete_message, setup=_setup_messages),
    ("device", "add"): Case(_device_add, viewers=("hamlet",)),
    ("device", "update"): Case(_device_update, setup=_setup_push, viewers=("hamlet",)),
    ("device", "remove"): Case(_device_remove, setup=_device_add, viewers=("hamlet",)),
    ("drafts", "add"): Case(_drafts_add, setup=_public_lounge, viewers=("hamlet",)),
    ("drafts", "update"): Case(
        _drafts_update,
        setup=_steps(_public_lounge, _drafts_add),
        viewers=("hamlet",),
    ),
    ("drafts", "remove"): Case(
        _drafts_remove,
        setup=_steps(_public_lounge, _drafts_add),
        viewers=("hamlet",),
    ),
    ("invites_changed", None): Case(_invites),
    ("message", None): Case(_messages, setup=_public_lounge),
    ("muted_topics", None): Case(_user_topics, setup=_setup_messages, capabilities=LEGACY_CAPABILITIES),
    ("muted_users", None): Case(_muted_users, viewers=("hamlet",)),
    ("navigation_view", "add"): Case(_navigation_add, viewers=("hamlet",)),
    ("navigation_view", "update"): Case(_navigation_update, setup=_navigation_add, viewers=("hamlet",)),
    ("navigation_view", "remove"): Case(_navigation_remove, setup=_navigation_add, viewers=("hamlet",)),
    ("onboarding_steps", None): Case(_onboarding, viewers=("hamlet",)),
    ("presence", None): Case(_presence),
    ("reaction", "add"): Case(_reaction_add, setup=_setup_messages),
    ("reaction", "remove"): Case(_reaction_remove, setup=_steps(_setup_messages, _reaction_add)),
    ("realm", "update"): Case(_realm_update, setup=_public_lounge),
    ("realm", "update_dict"): Case(_realm_update_dict),
    ("realm_bot", "add"): Case(_bot_add),
    ("realm_bot", "update"): Case(_bot_update, setup=_bot_add, viewers=("iago", "hamlet", "othello")),
    ("realm_bot", "delete"): Case(_bot_delete, setup=_bot_add, viewers=("iago", "hamlet", "othello")),
    ("realm_domains", "add"): Case(_domains_add),
    ("realm_domains", "change"): Case(_domains_change, setup=_domains_add),
    ("realm_domains", "remove"): Case(_domains_remove, setup=_domains_add),
    ("realm_emoji", "add"): Case(_emoji_add),
    ("realm_emoji", "update"): Case(_emoji, capabilities=WHOLE_EMOJI_SET_CAPABILITIES),
    ("realm_emoji", "update_one"): Case(_emoji_deactivate, setup=_emoji_add),
    ("realm_export", None): Case(_export, viewers=("iago",)),
    ("realm_export_consent", None): Case(_export_consent),
    ("realm_linkifiers", None): Case(_linkifiers),
    ("realm_playgrounds", None): Case(_playgrounds),
    ("realm_user", "add"): Case(_user_add),
    ("realm_user", "remove"): Case(_user_remove, setup=_limit_guest_access),
    ("realm_user", "update"): Case(_user_update),
    ("realm_user_settings_defaults", "update"): Case(_defaults),
    ("reminders", "add"): Case(_reminder_add, setup=_setup_messages, viewers=("hamlet",)),
    ("reminders", "remove"): Case(
        _reminder_remove,
        setup=_steps(_setup_messages, _reminder_add),
        viewers=("hamlet",),
    ),
    ("saved_snippets", "add"): Case(_snippet_add, viewers=("hamlet",)),
    ("saved_snippets", "update"): Case(_snippet_update, setup=_snippet_add, viewers=("hamlet",)),
    ("saved_snippets", "remove"): Case(_snippet_remove, setup=_snippet_add, viewers=("hamlet",)),
    ("scheduled_messages", "add"): Case(_scheduled_add, setup=_public_lounge, viewers=("hamlet",)),
    ("scheduled_messages", "update"): Case(
        _scheduled_update,
        setup=_steps(_public_lounge, _scheduled_add),
        viewers=("hamlet",),
    ),
    ("scheduled_messages", "remove"): Case(
        _scheduled_remove,
        setup=_steps(_public_lounge, _scheduled_add),
        viewers=("hamlet",),
    ),
    ("stream", "create"): Case(_stream_create),
    ("stream", "delete"): Case(_stream_delete, setup=_setup_hideout, capabilities=NO_ARCHIVED_CAPABILITIES),
    ("stream", "update"): Case(_stream_update, setup=_setup_messages),
    ("submessage", None): Case(_submessage, setup=_public_lounge),
    ("subscription", "add"): Case(_sub_add, setup=_public_lounge),
    ("subscription", "remove"): Case(_sub_remove, setup=_setup_messages),
    ("subscription", "update"): Case(_sub_update, setup=_setup_messages),
    ("subscription", "peer_add"): Case(_sub_add, setup=_public_lounge),
    ("subscription", "peer_remove"): Case(_sub_remove, setup=_setup_messages),
    ("typing", "start"): Case(_typing, setup=_public_lounge),
    ("typing", "stop"): Case(_typing, setup=_public_lounge),
    ("typing_edit_message", "start"): Case(_typing_edit, setup=_setup_messages),
    ("typing_edit_message", "stop"): Case(_typing_edit, setup=_setup_messages),
    ("update_display_settings", None): Case(
        _legacy_settings,
        viewers=("hamlet",),
        capabilities=LEGACY_CAPABILITIES,
        event_types=LEGACY_SETTINGS_TYPES,
    ),
    ("update_global_notifications", None): Case(
        _legacy_settings,
        viewers=("hamlet",),
        capabilities=LEGACY_CAPABILITIES,
        event_types=LEGACY_SETTINGS_TYPES,
    ),
    ("update_message", None): Case(_update_message, setup=_setup_messages),
    ("update_message_flags", "add"): Case(_flags_add, setup=_setup_messages),
    ("update_message_flags", "remove"): Case(_flags_remove, setup=_setup_messages),
    ("user_group", "add"): Case(_group_add),
    ("user_group", "update"): Case(_group_update, setup=_group_add),
    ("user_group", "add_members"): Case(lambda ctx: _group_members(ctx, "add"), setup=_group_add),
    ("user_group", "remove_members"): Case(
        lambda ctx: _group_members(ctx, "remove"), setup=_setup_group_members
    ),
    ("user_group", "add_subgroups"): Case(
        lambda ctx: _subgroups(ctx, "add"), setup=lambda ctx: _setup_subgroups(ctx, linked=False)
    ),
    ("user_group", "remove_subgroups"): Case(
        lambda ctx: _subgroups(ctx, "remove"), setup=lambda ctx: _setup_subgroups(ctx, linked=True)
    ),
    ("user_settings", "update"): Case(_user_settings),
    ("user_status", None): Case(_user_status),
    ("user_topic", None): Case(_user_topics, setup=_setup_messages),
    ("web_reload_client", None): Case(_web_reload),
}


# Further scenarios of a key already covered above.
VARIANTS: dict[str, tuple[Key, Case]] = {
    "stream-archived-kept": (("stream", "update"), Case(_stream_archive, setup=_setup_messages)),
    "stream-private-left": (("stream", "delete"), Case(_stream_delete, setup=_setup_hideout)),
}


def emitted_keys() -> set[Key]:
    """Every (type, op) with a typed model; abstract bases (``_TypingBase``) are not events."""
    return set(registered_event_models())


def test_every_event_type_has_a_case() -> None:
    keys = emitted_keys()
    missing = sorted(keys - set(CASES) - set(EXCLUDED), key=str)
    assert not missing, (
        f"event types with no apply-and-compare case (add one, or exclude with a reason): {missing}"
    )
    stale = sorted((set(CASES) | set(EXCLUDED)) - keys, key=str)
    assert not stale, f"cases for event types that have no model: {stale}"
    assert not set(CASES) & set(EXCLUDED)


REGISTER_OPTIONS: dict[str, Any] = {
    "apply_markdown": True,
    "client_gravatar": False,
    "include_subscribers": True,
    "slim_presence": True,
}


def _register(ctx: Ctx, viewer: User, case: Case) -> dict[str, Any]:
    options = {**REGISTER_OPTIONS, "client_capabilities": json.dumps(case.capabilities)}
    if case.event_types is not None:
        options["event_types"] = json.dumps(case.event_types)
    state: dict[str, Any] = ctx.ok("POST", _name(ctx, viewer), "register", options)
    state["__include_subscribers"] = True
    return state


def _name(ctx: Ctx, user: User) -> str:
    return next(name for name, u in ctx.realm.users.items() if u.id == user.id)


def _validate_delivered(event: dict[str, Any]) -> None:
    """An event as a client receives it matches its model too (the queue layer tailors
    events per client; message events lose their internal part, given back here)."""
    if event["type"] == "message":
        event = {**event, "internal": {"raw_content": event["message"]["content"]}}
    validate_event(event)


ALL_CASES = [
    pytest.param(key, case, id=f"{key[0]}-{key[1]}") for key, case in sorted(CASES.items(), key=str)
] + [pytest.param(key, case, id=name) for name, (key, case) in VARIANTS.items()]


@pytest.mark.parametrize(("key", "case"), ALL_CASES)
def test_applying_events_matches_a_fresh_register(
    api: Api, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch, key: Key, case: Case
) -> None:
    ctx = Ctx(api, realm, services, monkeypatch)
    if case.setup is not None:
        case.setup(ctx)
    states = {name: _register(ctx, realm.users[name], case) for name in case.viewers}
    case.run(ctx)
    received: set[Key] = set()
    problems = []
    for name, state in states.items():
        viewer = realm.users[name]
        body = {"queue_id": state["queue_id"], "last_event_id": -1, "dont_block": True}
        events = ctx.ok("GET", name, "events", body)["events"]
        for event in events:
            _validate_delivered(event)
            received.add((event["type"], event.get("op")))
            apply_event(state, event, client_gravatar=REGISTER_OPTIONS["client_gravatar"])
        fresh = _register(ctx, viewer, case)
        differences = state_differences(state, fresh)
        if differences:
            kinds = sorted({f"{e['type']}/{e.get('op')}" for e in events})
            problems.append(f"{name} (after {kinds}):\n  " + "\n  ".join(differences))
    assert not problems, "\n".join(problems)
    assert key in received, f"no viewer received {key}; received {sorted(received, key=str)}"
