"""Events about who is around: typing, typing_edit_message, presence, user_status."""

from __future__ import annotations

from typing import Literal

from palaver.events.types.base import Event, Payload, omit_none

# typing, typing_edit_message, presence, user_status -----------------------------------------


class TypingUser(Payload):
    user_id: int
    email: str


class _TypingBase(Event):
    """Direct messages name every recipient (the sender among them); channel messages
    name the channel and topic instead.
    """

    type: Literal["typing"] = "typing"
    message_type: Literal["direct", "stream"]
    sender: TypingUser
    recipients: list[TypingUser] | None = omit_none()
    stream_id: int | None = omit_none()
    topic: str | None = omit_none()


class TypingStart(_TypingBase):
    op: Literal["start"] = "start"


class TypingStop(_TypingBase):
    op: Literal["stop"] = "stop"


class TypingEditRecipient(Payload):
    type: Literal["direct", "channel"]
    channel_id: int | None = omit_none()
    topic: str | None = omit_none()
    user_ids: list[int] | None = omit_none()


class _TypingEditMessageBase(Event):
    type: Literal["typing_edit_message"] = "typing_edit_message"
    sender_id: int
    message_id: int
    recipient: TypingEditRecipient


class TypingEditMessageStart(_TypingEditMessageBase):
    op: Literal["start"] = "start"


class TypingEditMessageStop(_TypingEditMessageBase):
    op: Literal["stop"] = "stop"


class LegacyPresenceClient(Payload):
    client: str
    status: Literal["active", "idle"]
    timestamp: int
    pushable: bool


class ModernPresence(Payload):
    active_timestamp: int
    idle_timestamp: int


class PresenceEvent(Event):
    """Published with both the legacy fields and the modern ``presences``; the queue
    layer keeps the shape each client registered for (``lib/presence.py``).
    """

    type: Literal["presence"] = "presence"
    user_id: int | None = omit_none()
    email: str | None = omit_none()
    server_timestamp: float | None = omit_none()
    presence: dict[str, LegacyPresenceClient] | None = omit_none()
    presences: dict[str, ModernPresence] | None = omit_none()


class UserStatusEvent(Event):
    """Only the fields the request changed are present."""

    type: Literal["user_status"] = "user_status"
    user_id: int
    away: bool | None = omit_none()
    status_text: str | None = omit_none()
    emoji_name: str | None = omit_none()
    emoji_code: str | None = omit_none()
    reaction_type: str | None = omit_none()
