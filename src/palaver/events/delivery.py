"""What each client queue receives of a published event.

``event_for_client`` is the one place an event is adapted per client. A publish reaches
many queues whose registrations mostly look alike, so ``Tailoring`` calls it once per
distinct client shape (``ClientDescriptor.shape``) and hands every queue of that shape the
same ``SharedEvent``; only what depends on the queue itself (its narrow, the sender's own
queue, a broadcast copy the user gets elsewhere) is decided per queue.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from palaver import FEATURE_LEVEL, SERVICE_VERSION
from palaver.events.bus import EventDict
from palaver.events.descriptor import ClientDescriptor, ClientShape
from palaver.events.queue_state import SharedEvent
from palaver.events.tailoring import (
    presence_event_for_client,
    realm_emoji_event_for_client,
    stream_event_for_client,
    update_message_event_for_client,
    user_group_event_for_client,
)
from palaver.models.topic_names import display_topic


def event_for_client(client: ClientDescriptor, event: EventDict) -> EventDict | None:
    """What one client receives of a published event, or None when it does not want it.

    This is the one place an event is adapted per client; every backend calls it (through
    ``Tailoring``) for each queue of each recipient.
    """
    event_type = event.get("type")
    if client.event_types is not None:
        if event_type not in client.event_types:
            return None
        # user_topic replaces muted_topics; a client asking for both wants only the new one.
        if event_type == "muted_topics" and "user_topic" in client.event_types:
            return None
    if event_type in ("update_display_settings", "update_global_notifications") and (
        client.event_types is None or client.has_capability("user_settings_object")
    ):
        # Legacy copies of user_settings events: only for clients that name the legacy type
        # and do not understand the user_settings object.
        return None
    tailor = _TAILORED.get(str(event_type))
    if tailor is not None:
        return tailor(client, event)
    if (
        event_type == "typing"
        and "stream_id" in event
        and not client.has_capability("stream_typing_notifications")
    ):
        return None
    return event


def message_event_for_client(client: ClientDescriptor, event: Mapping[str, Any]) -> EventDict | None:
    """What one client queue receives of a published ``message`` event, or None.

    Message events carry per-client parts in ``internal`` (raw and rendered content, the
    sender's local ID, broadcast exclusions, columns narrows test): this applies the
    queue's narrow and options and strips ``internal``.
    """
    internal: Mapping[str, Any] = event.get("internal") or {}
    if internal.get("broadcast") and client.user_id in internal.get("skip_broadcast_user_ids", ()):
        return None  # this user gets the message, with their own flags, in another event
    message = dict(event["message"])
    flags = list(event.get("flags", []))
    if client.narrow and not client.matches_narrow(message, flags, internal):
        return None
    if not client.apply_markdown:
        message["content"] = internal.get("raw_content", message["content"])
        message["content_type"] = "text/x-markdown"
    if client.client_gravatar and internal.get("avatar_computable"):
        message["avatar_url"] = None
    if message.get("type") == "stream":
        message["subject"] = display_topic(message["subject"], client.has_capability("empty_topic_name"))
    result: dict[str, Any] = {k: v for k, v in event.items() if k not in ("internal", "local_message_id")}
    result["message"] = message
    if "local_message_id" in event and internal.get("sender_queue_id") == client.queue_id:
        result["local_message_id"] = event["local_message_id"]
    return result


def reaches_all_public_streams_clients(event: Mapping[str, Any]) -> bool:
    """Whether clients registered with ``all_public_streams`` get the event though it was
    not addressed to their user: the one ``broadcast`` copy of a message in a public channel.
    """
    internal = event.get("internal")
    return bool(
        event.get("type") == "message" and isinstance(internal, Mapping) and internal.get("broadcast")
    )


def heartbeat_event() -> EventDict:
    return {"type": "heartbeat"}


def restart_event(server_generation: int) -> EventDict:
    return {
        "type": "restart",
        "zulip_version": SERVICE_VERSION,
        "zulip_merge_base": "",
        "zulip_feature_level": FEATURE_LEVEL,
        "server_generation": server_generation,
    }


class Tailoring:
    """One published event, tailored for many queues: one copy per client shape.

    Not thread-safe; one publish uses one of these.
    """

    __slots__ = ("_by_shape", "_event", "_is_message", "_sender_queue_id", "_skip_user_ids")

    def __init__(self, event: EventDict) -> None:
        self._event = event
        self._by_shape: dict[ClientShape, SharedEvent | None] = {}
        self._is_message = event.get("type") == "message"
        internal = event.get("internal") if self._is_message else None
        if isinstance(internal, Mapping):
            has_local_id = "local_message_id" in event
            self._sender_queue_id: object = internal.get("sender_queue_id") if has_local_id else None
            broadcast = internal.get("broadcast")
            self._skip_user_ids: Any = internal.get("skip_broadcast_user_ids", ()) if broadcast else ()
        else:
            self._sender_queue_id = None
            self._skip_user_ids = ()

    @property
    def sender_queue_id(self) -> str | None:
        """The queue that gets the sender's ``local_message_id``, if any."""
        return str(self._sender_queue_id) if self._sender_queue_id is not None else None

    @property
    def skipped_user_ids(self) -> list[int]:
        """Users who get nothing of this copy (a broadcast they receive in another event)."""
        return [int(user_id) for user_id in self._skip_user_ids]

    def for_client(self, client: ClientDescriptor) -> SharedEvent | None:
        """The client's copy of the event, or None when it does not get one."""
        if self._is_message and (
            client.narrow
            or (self._sender_queue_id is not None and client.queue_id == self._sender_queue_id)
            or (self._skip_user_ids and client.user_id in self._skip_user_ids)
        ):
            # Depends on the queue itself, not only its shape.
            tailored = event_for_client(client, self._event)
            return SharedEvent(tailored) if tailored is not None else None
        shape = client.shape
        try:
            return self._by_shape[shape]
        except KeyError:
            tailored = event_for_client(client, self._event)
            shared = SharedEvent(tailored) if tailored is not None else None
            self._by_shape[shape] = shared
            return shared


# Event types whose copy depends on the client's registration, and the function that cuts it:
# message flags, Markdown and avatars; topic names (empty_topic_name); presence in the legacy,
# slim or modern shape; user groups' deactivation (include_deactivated_groups: a removal and
# nothing afterwards for the others, the internal marker stripped for all); archived channels;
# custom emoji as the whole set or one at a time (individual_emoji_changes).
_TAILORED: dict[str, Callable[[ClientDescriptor, Mapping[str, Any]], EventDict | None]] = {
    "message": message_event_for_client,
    "update_message": update_message_event_for_client,
    "presence": presence_event_for_client,
    "user_group": user_group_event_for_client,
    "stream": stream_event_for_client,
    "realm_emoji": realm_emoji_event_for_client,
}
