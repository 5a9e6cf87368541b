"""What a Zulip client does with each event it receives, applied to its ``/register`` state.

The semantics follow the reference (the ``GET /events`` event descriptions and Zulip's
own ``apply_event``): a client that registered, then applied every event of its queue, must
hold the same state as a fresh ``/register``. ``tests/events/test_apply_all_events.py``
checks that for every event type and op the server emits; the concurrency rule machine
(``tests/concurrency/test_stateful.py``) replays random sequences with it.

Clients keep unread messages per message, not in the summarised ``unread_msgs`` shape of the
register response (they need each message's conversation to move or mark it). The state
carries that per-message form under the private key ``__unread`` (built from
``unread_msgs`` on first use) and ``unread_msgs`` is recomputed from it after each event;
``comparable`` drops private keys.

A client cannot know some values without fetching: after the newest message is deleted, the
new ``max_message_id``; after a direct message is deleted, the conversation's new newest
message. Such keys are named in ``__unknowable`` and left out of the comparison.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from palaver.lib.state.realm import legacy_policy_fields
from palaver.models import Role

GRAVATAR = "https://secure.gravatar.com/"
State = dict[str, Any]
Event = dict[str, Any]

# Keys that differ between two registers however faithfully events were applied.
VOLATILE_KEYS = frozenset(
    {
        "queue_id",
        "last_event_id",
        "server_timestamp",
        # The newest presence row's ID: presence events do not carry it, clients use it only
        # to ask GET /users/me/presence for changes since.
        "presence_last_update_id",
    }
)


# users ---------------------------------------------------------------------------------


def _find_user(state: State, user_id: int) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    for key in ("realm_users", "realm_non_active_users"):
        for person in state.get(key, []):
            if person["user_id"] == user_id:
                return state[key], person
    return None


def _leave_every_group(state: State, user_id: int) -> None:
    """The reference: deactivated users belong to no group, the anonymous groups of
    permission settings included."""
    for group in state.get("realm_user_groups", []):
        if user_id in group["members"]:
            group["members"].remove(user_id)
        for value in group.values():
            if isinstance(value, dict) and user_id in value.get("direct_members", []):
                value["direct_members"].remove(user_id)


def _set_role(state: State, user: dict[str, Any], role: int) -> None:
    user.update(
        role=role,
        is_owner=role == Role.OWNER,
        is_admin=role in (Role.OWNER, Role.ADMINISTRATOR),
        is_guest=role == Role.GUEST,
    )
    if user["user_id"] == state.get("user_id"):
        state.update(
            role=role, is_owner=user["is_owner"], is_admin=user["is_admin"], is_guest=user["is_guest"]
        )
        state["is_moderator"] = role == Role.MODERATOR


def _apply_realm_user(state: State, event: Event, *, client_gravatar: bool) -> None:
    op = event["op"]
    if "realm_users" not in state:
        return
    if op == "add":
        person = copy.deepcopy(event["person"])
        if client_gravatar and (person["avatar_url"] or "").startswith(GRAVATAR):
            person["avatar_url"] = None
        found = _find_user(state, person["user_id"])
        if found:
            found[0].remove(found[1])
        state["realm_users" if person["is_active"] else "realm_non_active_users"].append(person)
        return
    if op == "remove":
        found = _find_user(state, event["person"]["user_id"])
        if found:
            found[0].remove(found[1])
        return
    person = dict(event["person"])
    user_id = person.pop("user_id")
    me = user_id == state.get("user_id")
    found = _find_user(state, user_id)
    assert found is not None, event
    where, user = found
    if "is_active" in person:
        where.remove(user)
        user["is_active"] = person["is_active"]
        state["realm_users" if person["is_active"] else "realm_non_active_users"].append(user)
        if not person["is_active"]:
            _leave_every_group(state, user_id)
    elif "new_email" in person:
        user["email"] = person["new_email"]
        if me:
            state["email"] = person["new_email"]
    elif "custom_profile_field" in person:
        field = person["custom_profile_field"]
        profile = user.setdefault("profile_data", {})
        if field["value"] is None:
            profile.pop(str(field["id"]), None)
        else:
            profile[str(field["id"])] = {k: v for k, v in field.items() if k in ("value", "rendered_value")}
    elif "role" in person:
        _set_role(state, user, person["role"])
    else:
        # As Zulip's apply_event: only the fields a User object has (avatar events also
        # carry avatar_source and avatar_url_medium, which belong to the own-user keys).
        user.update({k: v for k, v in person.items() if k in user})
        if me:
            state.update({k: v for k, v in person.items() if k in state})
    if me:
        _own_permissions(state)


def _apply_realm_bot(state: State, event: Event) -> None:
    if "realm_bots" not in state:
        return
    bots = state["realm_bots"]
    op, bot = event["op"], event["bot"]
    if op == "add":
        bots[:] = [b for b in bots if b["user_id"] != bot["user_id"]]
        bots.append(copy.deepcopy(bot))
    elif op in ("delete", "remove"):
        bots[:] = [b for b in bots if b["user_id"] != bot["user_id"]]
    else:
        for existing in bots:
            if existing["user_id"] == bot["user_id"]:
                existing.update(copy.deepcopy(bot))


# groups and permissions -------------------------------------------------------------------


def _groups(state: State) -> dict[int, dict[str, Any]]:
    return {g["id"]: g for g in state.get("realm_user_groups", [])}


def _holds(state: State, setting: Any, user_id: int) -> bool:
    """Whether a user is in a group setting's value (a group ID or an anonymous group)."""
    groups = _groups(state)
    if isinstance(setting, dict):
        members, start = set(setting["direct_members"]), list(setting["direct_subgroups"])
    else:
        members, start = set(), [setting]
    if user_id in members:
        return True
    seen: set[int] = set()
    while start:
        group_id = start.pop()
        if group_id in seen or group_id not in groups:
            continue
        seen.add(group_id)
        group = groups[group_id]
        if user_id in group["members"]:
            return True
        start.extend(group["direct_subgroup_ids"])
    return False


def _own_permissions(state: State) -> None:
    """The own user's ``can_*`` flags, which follow the realm's group settings."""
    if "can_create_streams" not in state or "realm_can_create_public_channel_group" not in state:
        return
    if "realm_user_groups" not in state:
        return
    me = state["user_id"]
    public = _holds(state, state["realm_can_create_public_channel_group"], me)
    private = _holds(state, state["realm_can_create_private_channel_group"], me)
    web_public = state["can_create_web_public_streams"]
    state.update(
        can_create_streams=public or private or web_public,
        can_create_public_streams=public,
        can_create_private_streams=private,
        can_subscribe_other_users=_holds(state, state["realm_can_add_subscribers_group"], me),
        can_invite_others_to_realm=_holds(state, state["realm_can_invite_users_group"], me),
    )


def _apply_user_group(state: State, event: Event) -> None:
    if "realm_user_groups" not in state:
        return
    op = event["op"]
    groups = state["realm_user_groups"]
    if op == "add":
        groups.append(copy.deepcopy(event["group"]))
    elif op == "remove":
        groups[:] = [g for g in groups if g["id"] != event["group_id"]]
    else:
        group = _groups(state).get(event["group_id"])
        assert group is not None, event
        if op == "update":
            group.update(copy.deepcopy(event["data"]))
        elif op == "add_members":
            group["members"] = sorted(set(group["members"]) | set(event["user_ids"]))
        elif op == "remove_members":
            group["members"] = [u for u in group["members"] if u not in event["user_ids"]]
        elif op == "add_subgroups":
            group["direct_subgroup_ids"] = sorted(
                set(group["direct_subgroup_ids"]) | set(event["direct_subgroup_ids"])
            )
        elif op == "remove_subgroups":
            group["direct_subgroup_ids"] = [
                g for g in group["direct_subgroup_ids"] if g not in event["direct_subgroup_ids"]
            ]
    _own_permissions(state)


# realm ------------------------------------------------------------------------------------


def _apply_realm(state: State, event: Event) -> None:
    op = event["op"]
    if op == "update":
        key = f"realm_{event['property']}"
        if key in state:
            state[key] = event["value"]
    elif op == "update_dict":
        for name, value in event["data"].items():
            key = f"realm_{name}"
            if key in state:
                state[key] = copy.deepcopy(value)
        _legacy_policies(state)
    _own_permissions(state)


def _legacy_policies(state: State) -> None:
    """The deprecated ``realm_*_policy`` integers follow their group settings; a client
    derives them from the system groups it holds, as the server does."""
    if "realm_wildcard_mention_policy" not in state or "realm_user_groups" not in state:
        return
    names = {g["id"]: g["name"] for g in state["realm_user_groups"] if g["is_system_group"]}
    settings = {
        key.removeprefix("realm_"): value
        for key, value in state.items()
        if key.startswith("realm_can_") and isinstance(value, int)
    }
    state.update(legacy_policy_fields(settings, names))


def _replace_item(items: list[dict[str, Any]], key: str, item: dict[str, Any]) -> None:
    items[:] = [copy.deepcopy(item) if i[key] == item[key] else i for i in items]


def _apply_realm_domains(state: State, event: Event) -> None:
    if "realm_domains" not in state:
        return
    domains = state["realm_domains"]
    if event["op"] == "add":
        domains.append(dict(event["realm_domain"]))
    elif event["op"] == "change":
        _replace_item(domains, "domain", event["realm_domain"])
    else:
        domains[:] = [d for d in domains if d["domain"] != event["domain"]]


# channels ----------------------------------------------------------------------------------

_CHANNEL_LISTS = ("subscriptions", "unsubscribed", "never_subscribed", "streams")


def _channel_entries(state: State, stream_id: int) -> Iterable[dict[str, Any]]:
    for key in _CHANNEL_LISTS:
        for item in state.get(key, []):
            if item["stream_id"] == stream_id:
                yield item


def _take_channel(state: State, stream_id: int, keys: Iterable[str]) -> dict[str, Any] | None:
    taken = None
    for key in keys:
        for item in list(state.get(key, [])):
            if item["stream_id"] == stream_id:
                state[key].remove(item)
                taken = item
    return taken


def _apply_stream(state: State, event: Event) -> None:
    op = event["op"]
    if op == "create":
        for stream in event["streams"]:
            if "streams" in state and not any(
                s["stream_id"] == stream["stream_id"] for s in state["streams"]
            ):
                state["streams"].append(copy.deepcopy(stream))
            known = any(
                s["stream_id"] == stream["stream_id"]
                for key in ("subscriptions", "unsubscribed", "never_subscribed")
                for s in state.get(key, [])
            )
            if "never_subscribed" in state and not known:
                item = copy.deepcopy(stream)
                if state.get("__include_subscribers"):
                    item["subscribers"] = []
                state["never_subscribed"].append(item)
    elif op == "delete":
        # As Zulip's apply_event: the channel leaves every list; its unread messages stay
        # (a fresh register lists them too).
        for stream_id in event["stream_ids"]:
            _take_channel(state, stream_id, _CHANNEL_LISTS)
    elif op == "update":
        for item in _channel_entries(state, event["stream_id"]):
            item[event["property"]] = copy.deepcopy(event["value"])
            for extra in ("rendered_description", "history_public_to_subscribers", "is_web_public"):
                if extra in event:
                    item[extra] = event[extra]
            if event["property"] == "stream_post_policy":
                item["is_announcement_only"] = event["value"] == 2


def _apply_subscription(state: State, event: Event) -> None:
    op = event["op"]
    if op == "add":
        for sub in event["subscriptions"]:
            _take_channel(state, sub["stream_id"], ("subscriptions", "unsubscribed", "never_subscribed"))
            item = copy.deepcopy(sub)
            if not state.get("__include_subscribers"):
                item.pop("subscribers", None)
            state["subscriptions"].append(item)
            if "streams" in state:
                stream = {k: v for k, v in item.items() if k in _stream_keys(state, item)}
                state["streams"][:] = [s for s in state["streams"] if s["stream_id"] != sub["stream_id"]]
                state["streams"].append(stream)
    elif op == "remove":
        # As Zulip's apply_event: the user leaves the subscriber lists of those channels.
        me = state["user_id"]
        for sub in event["subscriptions"]:
            taken = _take_channel(state, sub["stream_id"], ("subscriptions",))
            if taken is not None:
                state["unsubscribed"].append(taken)
            for item in _channel_entries(state, sub["stream_id"]):
                if me in item.get("subscribers", [me]):
                    item["subscriber_count"] -= 1
                if "subscribers" in item:
                    item["subscribers"] = [u for u in item["subscribers"] if u != me]
    elif op == "update":
        for sub in state["subscriptions"]:
            if sub["stream_id"] == event["stream_id"]:
                sub[event["property"]] = event["value"]
                if event["property"] == "in_home_view":
                    sub["is_muted"] = not event["value"]
                elif event["property"] == "is_muted":
                    sub["in_home_view"] = not event["value"]
    elif op in ("peer_add", "peer_remove"):
        users = set(event["user_ids"])
        for stream_id in event["stream_ids"]:
            for item in _channel_entries(state, stream_id):
                if "subscribers" in item:
                    before = set(item["subscribers"])
                    after = before | users if op == "peer_add" else before - users
                    item["subscribers"] = sorted(after)
                    item["subscriber_count"] += len(after) - len(before)
                else:
                    item["subscriber_count"] += len(users) if op == "peer_add" else -len(users)
    _recount_unreads(state)


def _stream_keys(state: State, item: dict[str, Any]) -> set[str]:
    """The keys of a channel object (a subscription without its personal settings)."""
    for stream in state.get("streams", []):
        return set(stream)
    personal = {
        "color",
        "is_muted",
        "in_home_view",
        "pin_to_top",
        "desktop_notifications",
        "audible_notifications",
        "push_notifications",
        "email_notifications",
        "wildcard_mentions_notify",
        "subscribers",
    }
    return set(item) - personal


# unread messages --------------------------------------------------------------------------


def _unread(state: State) -> dict[int, dict[str, Any]] | None:
    """The per-message unread form, built from the register response on first use."""
    if "unread_msgs" not in state:
        return None
    if "__unread" in state:
        raw: dict[int, dict[str, Any]] = state["__unread"]
        return raw
    summary = state["unread_msgs"]
    raw = {}
    mentions = set(summary["mentions"])
    for item in summary["streams"]:
        for message_id in item["unread_message_ids"]:
            raw[message_id] = {"type": "stream", "stream_id": item["stream_id"], "topic": item["topic"]}
    for item in summary["pms"]:
        for message_id in item["unread_message_ids"]:
            raw[message_id] = {"type": "private", "other_user_id": item["other_user_id"]}
    for item in summary["huddles"]:
        for message_id in item["unread_message_ids"]:
            raw[message_id] = {"type": "huddle", "user_ids_string": item["user_ids_string"]}
    # The summary does not say which mentions are wildcards: they are taken as direct ones
    # (a client would read the flags of the messages it fetches).
    for message_id, details in raw.items():
        details["mentioned"] = message_id in mentions
        details["wildcard_mentioned"] = False
    state["__unread"] = raw
    return raw


def _is_muted(state: State, stream_id: int, topic: str) -> bool:
    policy = 0
    for entry in state.get("user_topics", []):
        if entry["stream_id"] == stream_id and entry["topic_name"].lower() == topic.lower():
            policy = entry["visibility_policy"]
    if policy == 1:
        return True
    if policy in (2, 3):
        return False
    subscribed = [s for s in state.get("subscriptions", []) if s["stream_id"] == stream_id]
    return bool(subscribed and subscribed[0]["is_muted"])


def _recount_unreads(state: State) -> None:
    raw = _unread(state)
    if raw is None:
        return
    count = 0
    mentions = []
    streams: dict[tuple[int, str], list[int]] = {}
    pms: dict[int, list[int]] = {}
    huddles: dict[str, list[int]] = {}
    for message_id in sorted(raw):
        details = raw[message_id]
        muted = details["type"] == "stream" and _is_muted(state, details["stream_id"], details["topic"])
        count += not muted
        if details["mentioned"] or (details["wildcard_mentioned"] and not muted):
            mentions.append(message_id)
        if details["type"] == "stream":
            streams.setdefault((details["stream_id"], details["topic"]), []).append(message_id)
        elif details["type"] == "private":
            pms.setdefault(details["other_user_id"], []).append(message_id)
        else:
            huddles.setdefault(details["user_ids_string"], []).append(message_id)
    state["unread_msgs"].update(
        count=count,
        mentions=mentions,
        streams=[
            {"stream_id": stream_id, "topic": topic, "unread_message_ids": ids}
            for (stream_id, topic), ids in sorted(streams.items())
        ],
        pms=[
            {"other_user_id": other, "sender_id": other, "unread_message_ids": ids}
            for other, ids in sorted(pms.items())
        ],
        huddles=[{"user_ids_string": key, "unread_message_ids": ids} for key, ids in sorted(huddles.items())],
    )


def _unknowable(state: State, key: str) -> None:
    state.setdefault("__unknowable", set()).add(key)


def _apply_message(state: State, event: Event) -> None:
    message, flags = event["message"], event["flags"]
    me = state["user_id"]
    if "max_message_id" in state:
        state["max_message_id"] = max(state["max_message_id"], message["id"])
    if "starred_messages" in state and "starred" in flags:
        state["starred_messages"] = sorted({*state["starred_messages"], message["id"]})
    others = []
    if message["type"] == "private":
        others = sorted(r["id"] for r in message["display_recipient"] if r["id"] != me)
        if "recent_private_conversations" in state:
            conversations = state["recent_private_conversations"]
            previous = [c for c in conversations if c["user_ids"] == others]
            newest = max([message["id"], *(c["max_message_id"] for c in previous)])
            conversations[:] = [c for c in conversations if c["user_ids"] != others]
            conversations.append({"max_message_id": newest, "user_ids": others})
            conversations.sort(key=lambda c: c["max_message_id"], reverse=True)
    raw = _unread(state)
    if raw is None or "read" in flags:
        return
    details: dict[str, Any]
    if message["type"] == "stream":
        details = {"type": "stream", "stream_id": message["stream_id"], "topic": message["subject"]}
    elif len(others) <= 1:
        details = {"type": "private", "other_user_id": others[0] if others else me}
    else:
        members = sorted([*others, me])
        details = {"type": "huddle", "user_ids_string": ",".join(str(u) for u in members)}
    details["mentioned"] = "mentioned" in flags
    details["wildcard_mentioned"] = bool(
        {"stream_wildcard_mentioned", "topic_wildcard_mentioned"} & set(flags)
    )
    raw[message["id"]] = details
    _recount_unreads(state)


def _apply_flags(state: State, event: Event) -> None:
    flag, op, ids = event["flag"], event["op"], event["messages"]
    if flag == "starred" and "starred_messages" in state:
        starred = set(state["starred_messages"])
        starred = starred | set(ids) if op == "add" else starred - set(ids)
        state["starred_messages"] = sorted(starred)
    if flag != "read":
        return
    raw = _unread(state)
    if raw is None:
        return
    if op == "add":
        if event.get("all"):
            raw.clear()
        for message_id in ids:
            raw.pop(message_id, None)
    else:
        me = state["user_id"]
        for key, info in (event.get("message_details") or {}).items():
            message_id = int(key)
            if info["type"] == "stream":
                details: dict[str, Any] = {
                    "type": "stream",
                    "stream_id": info["stream_id"],
                    "topic": info["topic"],
                }
            else:
                others = [u for u in info["user_ids"] if u != me]
                if len(others) <= 1:
                    details = {"type": "private", "other_user_id": others[0] if others else me}
                else:
                    members = sorted([*others, me])
                    details = {"type": "huddle", "user_ids_string": ",".join(str(u) for u in members)}
            details["mentioned"] = bool(info.get("mentioned"))
            details["wildcard_mentioned"] = False
            raw[message_id] = details
    _recount_unreads(state)


def _apply_update_message(state: State, event: Event) -> None:
    raw = _unread(state)
    if raw is None:
        return
    new_stream = event.get("new_stream_id")
    new_topic = event.get("subject")
    for message_id in event["message_ids"]:
        details = raw.get(message_id)
        if details is None or details["type"] != "stream":
            continue
        if new_stream is not None:
            details["stream_id"] = new_stream
        if new_topic is not None:
            details["topic"] = new_topic
    if event["message_id"] in raw and "content" in event:
        raw[event["message_id"]]["mentioned"] = "mentioned" in event["flags"]
        raw[event["message_id"]]["wildcard_mentioned"] = bool(
            {"stream_wildcard_mentioned", "topic_wildcard_mentioned"} & set(event["flags"])
        )
    _recount_unreads(state)


def _apply_delete_message(state: State, event: Event) -> None:
    ids = event["message_ids"]
    if "max_message_id" in state and state["max_message_id"] in ids:
        _unknowable(state, "max_message_id")
    if "starred_messages" in state:
        state["starred_messages"] = [m for m in state["starred_messages"] if m not in ids]
    if event["message_type"] == "private" and "recent_private_conversations" in state:
        _unknowable(state, "recent_private_conversations")
    raw = _unread(state)
    if raw is not None:
        for message_id in ids:
            raw.pop(message_id, None)
        _recount_unreads(state)


# per-user lists ---------------------------------------------------------------------------


def _apply_user_topic(state: State, event: Event) -> None:
    if "user_topics" in state:
        topics = state["user_topics"]
        topics[:] = [
            t
            for t in topics
            if not (
                t["stream_id"] == event["stream_id"]
                and t["topic_name"].lower() == event["topic_name"].lower()
            )
        ]
        if event["visibility_policy"] != 0:
            topics.append(
                {k: event[k] for k in ("stream_id", "topic_name", "last_updated", "visibility_policy")}
            )
    _recount_unreads(state)


def _apply_user_status(state: State, event: Event) -> None:
    if "user_status" not in state:
        return
    key = str(event["user_id"])
    status = state["user_status"].setdefault(key, {})
    if "away" in event:
        if event["away"]:
            status["away"] = True
        else:
            status.pop("away", None)
    for name in ("status_text", "emoji_name", "emoji_code", "reaction_type"):
        if name in event:
            if event[name]:
                status[name] = event[name]
            else:
                status.pop(name, None)
    if not status:
        del state["user_status"][key]


def _apply_keyed(
    state: State, key: str, id_key: str, op: str, item: dict[str, Any] | None, item_id: Any
) -> None:
    if key not in state:
        return
    items = state[key]
    if op == "add" and item is not None:
        items.append(copy.deepcopy(item))
    elif op == "update" and item is not None:
        _replace_item(items, id_key, item)
    elif op == "remove":
        items[:] = [i for i in items if i[id_key] != item_id]


def _apply_navigation_view(state: State, event: Event) -> None:
    if "navigation_views" not in state:
        return
    views = state["navigation_views"]
    if event["op"] == "add":
        views.append(dict(event["navigation_view"]))
    elif event["op"] == "update":
        for view in views:
            if view["fragment"] == event["fragment"]:
                view.update(event["data"])
    else:
        views[:] = [v for v in views if v["fragment"] != event["fragment"]]


def _apply_device(state: State, event: Event) -> None:
    if "devices" not in state:
        return
    key = str(event["device_id"])
    if event["op"] == "remove":
        state["devices"].pop(key, None)
    else:
        state["devices"][key] = {k: v for k, v in event.items() if k not in ("type", "op", "id", "device_id")}


def _apply_scheduled(state: State, event: Event) -> None:
    if "scheduled_messages" not in state:
        return
    items = state["scheduled_messages"]
    if event["op"] == "add":
        items.extend(copy.deepcopy(event["scheduled_messages"]))
    elif event["op"] == "update":
        _replace_item(items, "scheduled_message_id", event["scheduled_message"])
    else:
        items[:] = [i for i in items if i["scheduled_message_id"] != event["scheduled_message_id"]]
    items.sort(key=lambda i: (i["scheduled_delivery_timestamp"], i["scheduled_message_id"]))


def _apply_reminders(state: State, event: Event) -> None:
    if "reminders" not in state:
        return
    items = state["reminders"]
    if event["op"] == "add":
        items.extend(copy.deepcopy(event["reminders"]))
    else:
        items[:] = [i for i in items if i["reminder_id"] != event["reminder_id"]]
    items.sort(key=lambda i: (i["scheduled_delivery_timestamp"], i["reminder_id"]))


def _apply_channel_folder(state: State, event: Event) -> None:
    if "channel_folders" not in state:
        return
    if event["op"] == "add":
        state["channel_folders"].append(dict(event["channel_folder"]))
    elif event["op"] == "reorder":
        position = {folder_id: i for i, folder_id in enumerate(event["order"])}
        for folder in state["channel_folders"]:
            folder["order"] = position[folder["id"]]
        state["channel_folders"].sort(key=lambda folder: (folder["order"], folder["id"]))
    else:
        for folder in state["channel_folders"]:
            if folder["id"] == event["channel_folder_id"]:
                folder.update(event["data"])


def _set_key(key: str, field: str) -> Callable[[State, Event], None]:
    def apply(state: State, event: Event) -> None:
        if key in state:
            state[key] = copy.deepcopy(event[field])

    return apply


def _apply_realm_emoji(state: State, event: Event) -> None:
    if "realm_emoji" not in state:
        return
    op = event["op"]
    if op == "update":
        state["realm_emoji"] = copy.deepcopy(event["realm_emoji"])
    elif op == "add":
        state["realm_emoji"][event["emoji"]["id"]] = copy.deepcopy(event["emoji"])
    elif op == "update_one":
        state["realm_emoji"][event["emoji_id"]].update(event["data"])


def _apply_user_settings(state: State, event: Event) -> None:
    if "user_settings" in state:
        state["user_settings"][event["property"]] = event["value"]
    # Clients without the user_settings_object keep the legacy top-level copy current.
    if event["property"] in state:
        state[event["property"]] = event["value"]


def _apply_legacy_setting(name_key: str) -> Callable[[State, Event], None]:
    def apply(state: State, event: Event) -> None:
        if event[name_key] in state:
            state[event[name_key]] = event["setting"]

    return apply


def _apply_drafts(state: State, event: Event) -> None:
    if "drafts" not in state:
        return
    if event["op"] == "add":
        state["drafts"].extend(copy.deepcopy(event["drafts"]))
    elif event["op"] == "update":
        _replace_item(state["drafts"], "id", event["draft"])
    else:
        state["drafts"][:] = [d for d in state["drafts"] if d["id"] != event["draft_id"]]


def _apply_saved_snippets(state: State, event: Event) -> None:
    op = event["op"]
    snippet = event.get("saved_snippet")
    _apply_keyed(state, "saved_snippets", "id", op, snippet, event.get("saved_snippet_id"))


def _apply_defaults(state: State, event: Event) -> None:
    if "realm_user_settings_defaults" in state:
        state["realm_user_settings_defaults"][event["property"]] = event["value"]


def _apply_presence(state: State, event: Event) -> None:
    if "presences" not in state:
        return
    if "presences" in event:
        state["presences"].update(copy.deepcopy(event["presences"]))
    else:
        key = str(event["user_id"]) if "email" not in event else event["email"]
        state["presences"].setdefault(key, {}).update(copy.deepcopy(event["presence"]))


def _ignore(state: State, event: Event) -> None:
    """Events that change nothing a client keeps from ``/register`` (see the harness's
    ``NO_REGISTER_STATE``)."""


_APPLIERS: dict[str, Callable[[State, Event], None]] = {
    "realm_bot": _apply_realm_bot,
    "user_group": _apply_user_group,
    "realm": _apply_realm,
    "realm_domains": _apply_realm_domains,
    "stream": _apply_stream,
    "subscription": _apply_subscription,
    "message": _apply_message,
    "update_message_flags": _apply_flags,
    "update_message": _apply_update_message,
    "delete_message": _apply_delete_message,
    "user_topic": _apply_user_topic,
    "user_status": _apply_user_status,
    "navigation_view": _apply_navigation_view,
    "device": _apply_device,
    "scheduled_messages": _apply_scheduled,
    "reminders": _apply_reminders,
    "channel_folder": _apply_channel_folder,
    "user_settings": _apply_user_settings,
    "update_display_settings": _apply_legacy_setting("setting_name"),
    "update_global_notifications": _apply_legacy_setting("notification_name"),
    "drafts": _apply_drafts,
    "saved_snippets": _apply_saved_snippets,
    "realm_user_settings_defaults": _apply_defaults,
    "presence": _apply_presence,
    "default_streams": _set_key("realm_default_streams", "default_streams"),
    "default_stream_groups": _set_key("realm_default_stream_groups", "default_stream_groups"),
    "alert_words": _set_key("alert_words", "alert_words"),
    "muted_users": _set_key("muted_users", "muted_users"),
    "muted_topics": _set_key("muted_topics", "muted_topics"),
    "realm_playgrounds": _set_key("realm_playgrounds", "realm_playgrounds"),
    "realm_linkifiers": _set_key("realm_linkifiers", "realm_linkifiers"),
    "realm_filters": _set_key("realm_filters", "realm_filters"),
    "realm_emoji": _apply_realm_emoji,
    "custom_profile_fields": _set_key("custom_profile_fields", "fields"),
    "onboarding_steps": _set_key("onboarding_steps", "onboarding_steps"),
    "has_zoom_token": _set_key("has_zoom_token", "value"),
    # No /register state: reactions and widgets live on messages (fetched, not registered),
    # typing and reload requests are transient, attachments, exports and invitations are
    # fetched from their own endpoints when shown.
    "reaction": _ignore,
    "submessage": _ignore,
    "typing": _ignore,
    "typing_edit_message": _ignore,
    "attachment": _ignore,
    "realm_export": _ignore,
    "realm_export_consent": _ignore,
    "invites_changed": _ignore,
    "web_reload_client": _ignore,
    "heartbeat": _ignore,
    "restart": _ignore,
}


def apply_event(state: State, event: Event, *, client_gravatar: bool) -> None:
    """Apply one received event to a client's ``/register`` state, in place."""
    kind = event["type"]
    if kind == "realm_user":
        _apply_realm_user(state, event, client_gravatar=client_gravatar)
        return
    applier = _APPLIERS.get(kind)
    if applier is None:
        raise AssertionError(f"no client handling for event {event}")
    applier(state, event)


def apply_events(state: State, events: Iterable[Event], *, client_gravatar: bool) -> None:
    for event in events:
        apply_event(state, event, client_gravatar=client_gravatar)


_UNORDERED_LISTS = {
    "realm_users": "user_id",
    "realm_non_active_users": "user_id",
    "realm_bots": "user_id",
    "realm_user_groups": "id",
    "subscriptions": "stream_id",
    "unsubscribed": "stream_id",
    "never_subscribed": "stream_id",
    "streams": "stream_id",
    "drafts": "id",
    "saved_snippets": "id",
    "channel_folders": "id",
    "custom_profile_fields": "id",
    "realm_playgrounds": "id",
    "realm_domains": "domain",
    "navigation_views": "fragment",
}


def comparable(state: State) -> State:
    """The state without volatile, private and unknowable keys, in a canonical order."""
    unknowable = state.get("__unknowable", set())
    result = {
        k: copy.deepcopy(v)
        for k, v in state.items()
        if k not in VOLATILE_KEYS and not k.startswith("__") and k not in unknowable
    }
    for key, id_key in _UNORDERED_LISTS.items():
        if key in result:
            result[key] = sorted(result[key], key=lambda x: x[id_key])
    for group in result.get("realm_user_groups", []):
        group["members"] = sorted(group["members"])
        group["direct_subgroup_ids"] = sorted(group["direct_subgroup_ids"])
    for key in ("subscriptions", "unsubscribed", "never_subscribed"):
        for sub in result.get(key, []):
            if "subscribers" in sub:
                sub["subscribers"] = sorted(sub["subscribers"])
    if "user_topics" in result:
        result["user_topics"] = sorted(result["user_topics"], key=lambda t: (t["stream_id"], t["topic_name"]))
    return result


def state_differences(applied: State, fresh: State) -> list[str]:
    left, right = comparable(applied), comparable(fresh)
    for key in applied.get("__unknowable", set()):
        right.pop(key, None)
    return [
        f"{key}: applied {left.get(key)!r} != fresh {right.get(key)!r}"
        for key in sorted(set(left) | set(right))
        if left.get(key) != right.get(key)
    ]


def assert_same_state(applied: State, fresh: State) -> None:
    differences = state_differences(applied, fresh)
    assert not differences, "\n".join(differences)
