"""Events about messages: message, update_message, delete_message, flags, reactions, attachments,
submessages.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from palaver.events.types.base import Event, Payload, omit_none

# message, update_message_flags, delete_message ------------------------------------------


class DisplayRecipientUser(Payload):
    id: int
    email: str
    full_name: str
    is_mirror_dummy: bool


class TopicLink(Payload):
    text: str
    url: str


class ReactionPayload(Payload):
    emoji_name: str
    emoji_code: str
    reaction_type: str
    user_id: int


class EditHistoryEntry(Payload):
    user_id: int | None
    timestamp: int
    prev_content: str | None = omit_none()
    prev_rendered_content: str | None = omit_none()
    prev_stream: int | None = omit_none()
    stream: int | None = omit_none()
    prev_topic: str | None = omit_none()
    topic: str | None = omit_none()


class MessagePayload(Payload):
    """A message as clients receive it in a ``message`` event (no ``flags`` inside)."""

    id: int
    sender_id: int
    content: str
    content_type: Literal["text/html", "text/x-markdown"]
    recipient_id: int
    timestamp: int
    client: str
    subject: str
    topic_links: list[TopicLink]
    is_me_message: bool
    reactions: list[ReactionPayload]
    submessages: list[dict[str, Any]]
    sender_full_name: str
    sender_email: str
    sender_realm_str: str
    display_recipient: str | list[DisplayRecipientUser]
    type: Literal["stream", "private"]
    avatar_url: str | None
    stream_id: int | None = omit_none()
    edit_history: list[EditHistoryEntry] | None = omit_none()
    last_edit_timestamp: int | None = omit_none()
    last_moved_timestamp: int | None = omit_none()


class MessageEventInternal(Payload):
    """What the queue layer needs to tailor a message event per client; never sent on.

    ``content`` of the published event is the rendered HTML; clients registered without
    ``apply_markdown`` get ``raw_content``. ``local_message_id`` is for the queue named
    ``sender_queue_id`` only. Clients with ``client_gravatar`` get a null ``avatar_url``
    when ``avatar_computable``. One event per message is ``broadcast`` to clients of
    ``all_public_streams``, except users listed in ``skip_broadcast_user_ids``, who get
    their own copy (with their own flags) in another event.
    """

    raw_content: str
    sender_queue_id: str | None = None
    avatar_computable: bool = False
    broadcast: bool = False
    skip_broadcast_user_ids: list[int] = Field(default_factory=list)
    # Columns the message object lacks, for queues narrowed with has:link/image/attachment.
    has_link: bool | None = None
    has_image: bool | None = None
    has_attachment: bool | None = None


class MessageEvent(Event):
    """A new message; every recipient user of one event has the same ``flags``."""

    type: Literal["message"] = "message"
    message: MessagePayload
    flags: list[str]
    local_message_id: str | None = omit_none()
    internal: MessageEventInternal


class UnreadMessageDetails(Payload):
    type: Literal["stream", "private"]
    mentioned: bool | None = omit_none()
    user_ids: list[int] | None = omit_none()
    stream_id: int | None = omit_none()
    topic: str | None = omit_none()
    unmuted_stream_msg: bool | None = omit_none()


class UpdateMessageFlagsAdd(Event):
    type: Literal["update_message_flags"] = "update_message_flags"
    op: Literal["add"] = "add"
    # Deprecated name of ``op``, still read by older clients.
    operation: Literal["add"] = "add"
    flag: str
    messages: list[int]
    all: bool = False


class UpdateMessageFlagsRemove(Event):
    type: Literal["update_message_flags"] = "update_message_flags"
    op: Literal["remove"] = "remove"
    operation: Literal["remove"] = "remove"
    flag: str
    messages: list[int]
    all: bool = False
    # Only for the read flag: what clients need to count the messages as unread again.
    message_details: dict[str, UnreadMessageDetails] | None = omit_none()


class DeleteMessage(Event):
    """Carries both forms: ``message_ids`` (bulk_message_deletion clients) and ``message_id``."""

    type: Literal["delete_message"] = "delete_message"
    message_type: Literal["stream", "private"]
    message_ids: list[int]
    message_id: int | None = omit_none()
    stream_id: int | None = omit_none()
    topic: str | None = omit_none()


# reaction ------------------------------------------------------------------------------------


class ReactionUser(Payload):
    """Deprecated copy of the reacting user; clients should read ``user_id``."""

    user_id: int
    email: str
    full_name: str


class _ReactionBase(Event):
    """Adding and removing a reaction carry the same fields (not an event itself)."""

    type: Literal["reaction"] = "reaction"
    message_id: int
    emoji_name: str
    emoji_code: str
    reaction_type: Literal["unicode_emoji", "realm_emoji", "zulip_extra_emoji"]
    user_id: int
    user: ReactionUser


class ReactionAdd(_ReactionBase):
    op: Literal["add"] = "add"


class ReactionRemove(_ReactionBase):
    op: Literal["remove"] = "remove"


# update_message, attachment ------------------------------------------------------------------


class UpdateMessage(Event):
    """A content edit and/or a move; topic fields are tailored per client by the queue layer."""

    type: Literal["update_message"] = "update_message"
    user_id: int | None
    edit_timestamp: int
    message_id: int
    message_ids: list[int]
    flags: list[str]
    rendering_only: bool = False
    stream_name: str | None = omit_none()
    stream_id: int | None = omit_none()
    new_stream_id: int | None = omit_none()
    propagate_mode: Literal["change_one", "change_later", "change_all"] | None = omit_none()
    orig_subject: str | None = omit_none()
    subject: str | None = omit_none()
    topic_links: list[TopicLink] | None = omit_none()
    orig_content: str | None = omit_none()
    orig_rendered_content: str | None = omit_none()
    content: str | None = omit_none()
    rendered_content: str | None = omit_none()
    is_me_message: bool | None = omit_none()


class AttachmentPayload(Payload):
    id: int
    name: str
    path_id: str
    size: int
    create_time: int
    message_ids: list[int]


class AttachmentRef(Payload):
    id: int


class AttachmentAdd(Event):
    type: Literal["attachment"] = "attachment"
    op: Literal["add"] = "add"
    attachment: AttachmentPayload
    upload_space_used: int


class AttachmentUpdate(Event):
    type: Literal["attachment"] = "attachment"
    op: Literal["update"] = "update"
    attachment: AttachmentPayload
    upload_space_used: int


class AttachmentRemove(Event):
    type: Literal["attachment"] = "attachment"
    op: Literal["remove"] = "remove"
    attachment: AttachmentRef
    upload_space_used: int


# submessage -------------------------------------------------------------------------------


class SubmessageEvent(Event):
    """Widget data added to a message (a vote, an option, a task)."""

    type: Literal["submessage"] = "submessage"
    msg_type: str
    content: str
    message_id: int
    sender_id: int
    submessage_id: int
