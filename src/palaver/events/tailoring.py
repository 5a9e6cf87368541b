"""Per-client shapes of published events that depend only on how the client registered.

An event is published once, in every shape some client may need; each queue's copy is cut
from it here (``events/queues.event_for_client`` dispatches by type). These read nothing
but the event and the client's registration, so they live beside the queues rather than in
``lib/``, which the event layer does not import.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from palaver.models.topic_names import EMPTY_TOPIC_DISPLAY_NAME


class RegisteredClient(Protocol):
    """What tailoring needs to know of a queue's registration."""

    slim_presence: bool

    def has_capability(self, name: str) -> bool: ...


def update_message_event_for_client(client: RegisteredClient, event: Mapping[str, Any]) -> dict[str, Any]:
    """Clients without the empty_topic_name capability see the empty topic by its display name."""
    result = dict(event)
    if not client.has_capability("empty_topic_name"):
        for key in ("orig_subject", "subject"):
            if result.get(key) == "":
                result[key] = EMPTY_TOPIC_DISPLAY_NAME
    return result


def presence_event_for_client(client: RegisteredClient, event: Mapping[str, Any]) -> dict[str, Any]:
    """Presence events are published in both shapes; each client gets the one it reads.

    Clients with ``simplified_presence_events`` get the modern ``presences``; the others
    the legacy fields, without the redundant ``email`` when they registered slim_presence.
    """
    if client.has_capability("simplified_presence_events"):
        return {"type": "presence", "presences": event["presences"]}
    dropped = ("presences", "email") if client.slim_presence else ("presences",)
    return {k: v for k, v in event.items() if k not in dropped}


def user_group_event_for_client(client: RegisteredClient, event: Mapping[str, Any]) -> dict[str, Any] | None:
    """Tailor a user_group event to what the client knows of deactivated groups.

    A deactivation is published as an update with ``deactivated: true``; clients without
    the include_deactivated_groups capability know only active groups, and get Zulip's
    older remove event instead, and nothing of later edits to the deactivated group.
    """
    if event.get("op") != "update":
        return dict(event)
    aware = client.has_capability("include_deactivated_groups")
    if event.get("group_is_deactivated") is True and not aware:
        return None
    data = event.get("data")
    if isinstance(data, Mapping) and data.get("deactivated") is True and not aware:
        return {"type": "user_group", "op": "remove", "group_id": event["group_id"]}
    return {k: v for k, v in event.items() if k != "group_is_deactivated"}


def stream_event_for_client(client: RegisteredClient, event: Mapping[str, Any]) -> dict[str, Any] | None:
    """An archived channel is an ``is_archived`` update for clients with the
    ``archived_channels`` capability, which keep archived channels, and a deletion for the
    others; the internal ``archived`` marker is stripped.
    """
    keeps_archived = client.has_capability("archived_channels")
    if event.get("op") == "update" and event.get("property") == "is_archived":
        return dict(event) if keeps_archived else None
    if event.get("op") == "delete" and event.get("archived"):
        if keeps_archived:
            return None
        return {k: v for k, v in event.items() if k != "archived"}
    return dict(event)


def realm_emoji_event_for_client(client: RegisteredClient, event: Mapping[str, Any]) -> dict[str, Any] | None:
    """A change of custom emoji is published twice: the whole set (``update``) and the one
    emoji (``add``/``update_one``); each client gets the one its
    ``individual_emoji_changes`` capability asks for."""
    individual = client.has_capability("individual_emoji_changes")
    if (event.get("op") == "update") == individual:
        return None
    return dict(event)
