"""What zulip-flutter's decoders require of a JSON value, checked against a real answer.

``zulip_flutter_models.json`` (written by ``zulip_flutter_extract.py`` from the app's
generated decoders, at the commit it names) describes each class the app decodes: every key,
its kind, whether null or absence is accepted, enums and whether an unknown value falls back.
The decoders the app writes by hand are described here (``CUSTOM``), after its own code at
that commit: group-setting values, messages by type, event dispatch, and the fields read
through a ``readValue`` function.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

MODELS: dict[str, Any] = json.loads((Path(__file__).with_name("zulip_flutter_models.json")).read_text())
CLASSES: dict[str, Any] = MODELS["classes"]
ENUMS: dict[str, list[Any]] = MODELS["enums"]
EVENTS: dict[str, str] = MODELS["events"]
APP_COMMIT: str = MODELS["app"]["commit"]

# What the app sends to POST /register (lib/api/route/events.dart): all event types and
# state, these capabilities and presentation options.
REGISTER_PARAMS: dict[str, str] = {
    "apply_markdown": "true",
    "client_gravatar": "false",
    "slim_presence": "true",
    "idle_queue_timeout": json.dumps("mobile"),
    "client_capabilities": json.dumps(
        {
            "notification_settings_null": True,
            "bulk_message_deletion": True,
            "user_avatar_url_field_optional": True,
            "stream_typing_notifications": True,
            "user_settings_object": True,
            "include_deactivated_groups": True,
            "empty_topic_name": True,
            "individual_emoji_changes": True,
        }
    ),
}


def _obj(**fields: Any) -> dict[str, Any]:
    return {"fields": fields}


def _list(of: dict[str, Any], nullable: bool = False) -> dict[str, Any]:
    return {"kind": "list", "of": of, "nullable": nullable}


_INT = {"kind": "int", "nullable": False}
_MESSAGE_FIELDS = {
    "reactions": _list({"kind": "object", "class": "Reaction", "nullable": False}),
    "flags": _list({"kind": "enum", "enum": "MessageFlag", "lenient": True, "nullable": False}),
    "edit_state": {"kind": "any", "nullable": True},  # from the edit history's timestamps
    "submessages": _list({"kind": "object", "class": "Submessage", "nullable": False}, True),
}
# Fields whose value the app's hand-written decoders read in their own way.
FIELD_OVERRIDES: dict[tuple[str, str], dict[str, Any]] = {
    **{("StreamMessage", k): v for k, v in _MESSAGE_FIELDS.items()},
    **{("DmMessage", k): v for k, v in _MESSAGE_FIELDS.items()},
    ("DmMessage", "display_recipient"): _list({"kind": "object", "class": "DmRecipient", "nullable": False}),
    ("GetMessagesResult", "messages"): _list({"kind": "object", "class": "Message", "nullable": False}),
    ("TypingEvent", "recipients"): _list(
        {"kind": "object", "class": "TypingRecipient", "nullable": False}, True
    ),
    ("UpdateMessageEvent", "move_data"): {"kind": "any", "nullable": True},
}
# Classes decoded by hand.
HAND_WRITTEN: dict[str, dict[str, Any]] = {
    "DmRecipient": _obj(id=_INT),
    "TypingRecipient": _obj(user_id=_INT),
    "RealmUserRemoveEvent": _obj(person={"kind": "object", "class": "RemovedPerson", "nullable": False}),
    "RemovedPerson": _obj(user_id=_INT),
    "UserStatusChange": _obj(
        status_text={"kind": "string", "nullable": True},
        emoji_name={"kind": "string", "nullable": True},
        emoji_code={"kind": "string", "nullable": True},
        reaction_type={"kind": "string", "nullable": True},
    ),
}


def _read_channel_ids(value: dict[str, Any], key: str) -> Any:
    if value.get("stream_ids") is not None:
        return value["stream_ids"]
    return [c["stream_id"] for c in value["streams"]]


def _read_color(value: dict[str, Any], key: str) -> Any:
    """The app turns ``#rrggbb`` into an integer and fails on anything else."""
    color = value.get(key)
    if isinstance(color, str) and len(color) == 7 and color.startswith("#"):
        return int(color[1:], 16)
    return color


# ``readValue`` functions: where the app finds a field's value.
READERS: dict[str, Callable[[dict[str, Any], str], Any]] = {
    "RealmUserUpdateEvent._readFromPerson": lambda v, k: v["person"].get(k),
    "ChannelDeleteEvent._readChannelIds": _read_channel_ids,
    "SubscriptionRemoveEvent._readChannelIds": lambda v, k: [s["stream_id"] for s in v["subscriptions"]],
    "TypingEvent._readSenderId": lambda v, k: v["sender"]["user_id"],
    "MessageEvent._readMessageValue": lambda v, k: {**v["message"], "flags": v["flags"]},
    "UserStatusEvent._readChange": lambda v, k: v,
    "UpdateMessageEvent._readMoveData": lambda v, k: v,
    "InitialSnapshot._readUsersIsActiveFallbackTrue": lambda v, k: v[k],
    "User._readProfileData": lambda v, k: v.get(k),
    "Subscription._readColor": _read_color,
    "StreamMessage._readConversation": lambda v, k: v,
    # Computed from the edit history's timestamps, with no failure of its own.
    "MessageEditState._readFromMessage": lambda v, k: None,
    # Submessages, an absent list read as empty (``_SUBMESSAGES`` checks the list).
    "Message._readPoll": lambda v, k: v.get(k),
    # A property's value, cast per property (checked with the event's property name).
    "ChannelUpdateEvent._readValue": lambda v, k: v.get("value"),
    "SubscriptionUpdateEvent._readValue": lambda v, k: v.get("value"),
    "UserSettingsUpdateEvent._readValue": lambda v, k: v.get("value"),
}
_NO_KEY = object()


def problems(value: Any, descriptor: dict[str, Any], path: str) -> list[str]:
    """Why the app's decoder would throw on ``value`` (an empty list: it would not)."""
    if value is None:
        return [] if descriptor.get("nullable") else [f"{path}: null or missing, the app requires it"]
    kind = descriptor["kind"]
    ok_types: dict[str, tuple[type, ...]] = {
        "string": (str,),
        "bool": (bool,),
        "list": (list,),
        "map": (dict,),
    }
    if kind in ("int", "num", "double"):
        numeric = (int,) if kind == "int" else (int, float)
        if isinstance(value, bool) or not isinstance(value, numeric):
            return [f"{path}: {value!r} is not {kind}"]
        return []
    if kind == "int_string":
        return [] if isinstance(value, str) and value.lstrip("-").isdigit() else [f"{path}: {value!r}"]
    if kind == "any":
        return []
    if kind == "enum":
        if descriptor.get("lenient") or value in ENUMS[descriptor["enum"]]:
            return []
        return [f"{path}: {value!r} is outside the app's {descriptor['enum']} {ENUMS[descriptor['enum']]}"]
    if kind == "object":
        return check_class(value, descriptor["class"], path)
    if not isinstance(value, ok_types[kind]):
        return [f"{path}: {type(value).__name__} where the app reads {kind}"]
    found: list[str] = []
    if isinstance(value, list) and "of" in descriptor:
        for i, item in enumerate(value):
            found += problems(item, descriptor["of"], f"{path}[{i}]")
    if isinstance(value, dict) and "of" in descriptor:
        for key, item in value.items():
            if descriptor.get("keys") == "int" and not str(key).lstrip("-").isdigit():
                found.append(f"{path}: key {key!r} is not an integer")
            found += problems(item, descriptor["of"], f"{path}[{key!r}]")
    return found


def check_class(value: Any, name: str, path: str = "") -> list[str]:
    """Why the app's ``<name>.fromJson`` would throw on ``value``."""
    path = path or name
    if name == "GroupSettingValue":
        if isinstance(value, int) and not isinstance(value, bool):
            return []
        return check_class(value, "GroupSettingValueNameless", path)
    if name == "Message":
        if not isinstance(value, dict):
            return [f"{path}: not an object"]
        return check_class(value, "StreamMessage" if value.get("type") == "stream" else "DmMessage", path)
    if name == "Event":
        return check_event(value, path)
    model = HAND_WRITTEN.get(name) or CLASSES.get(name)
    if model is None:
        raise KeyError(f"no description of the app's {name}")
    if not isinstance(value, dict):
        return [f"{path}: {type(value).__name__} where the app reads an object {name}"]
    found: list[str] = []
    for key, field in model["fields"].items():
        descriptor = FIELD_OVERRIDES.get((name, key), field)
        reader = READERS.get(field.get("read", ""))
        if field.get("read") and reader is None:
            raise KeyError(f"no reader for {field['read']}")
        item = reader(value, key) if reader is not None else value.get(key)
        found += problems(item, descriptor, f"{path}.{key}")
    return found


def event_class(event: dict[str, Any]) -> str | None:
    """The class the app decodes an event with, or None for one it ignores."""
    return EVENTS.get(f"{event.get('type')}/{event.get('op')}") or EVENTS.get(str(event.get("type")))


def check_event(event: dict[str, Any], path: str = "event") -> list[str]:
    name = event_class(event)
    if name is None:
        return []
    return check_class(event, name, f"{path}<{event['type']}/{event.get('op')}>")
