"""What an edit asks for (``MessageEdit``, ``EditContext``) and its validation into a plan: who may edit
or move the message, the new content rendered, the target topic and channel.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from palaver.actions.message_mentions import check_mentions
from palaver.cache import realm_settings
from palaver.lib.channels import Viewer, access_stream_by_id
from palaver.lib.conversations import stream_for_message
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import is_storable_id
from palaver.lib.markdown.contract import RenderResult
from palaver.lib.message_edit import (
    NO_PERMISSION_TO_EDIT,
    can_move_out_of_channel,
    can_move_within_channel,
    can_resolve_topics,
    check_content_edit_allowed,
    check_topic_allowed,
    is_resolve_toggle,
    marks_empty_topic_resolved,
    sha256_hex,
)
from palaver.lib.message_render import render_content
from palaver.lib.message_send import normalize_content, normalize_topic
from palaver.lib.topics import topic_exists, topic_participant_ids
from palaver.models.channels import Stream
from palaver.models.messages import Message
from palaver.models.requester import Requester


@dataclass(frozen=True)
class MessageEdit:
    """What PATCH /messages/{id} asks for; None leaves a part unchanged."""

    topic: str | None = None
    stream_id: int | None = None
    content: str | None = None
    propagate_mode: str = "change_one"
    send_notification_to_old_thread: bool = False
    send_notification_to_new_thread: bool = True
    prev_content_sha256: str | None = None


@dataclass(frozen=True)
class EditContext:
    realm_url: str
    email_host: str


@dataclass
class EditPlan:
    """A validated edit of a channel message (DMs use only the content parts)."""

    message: Message
    orig_stream: Stream | None
    target_stream: Stream | None
    orig_topic: str
    target_topic: str
    topic_edited: bool
    stream_edited: bool
    resolved: bool
    unresolved: bool
    content: str | None
    rendered: RenderResult | None

    @property
    def moved(self) -> bool:
        return self.topic_edited or self.stream_edited

    @property
    def resolve_only(self) -> bool:
        return self.topic_edited and not self.stream_edited and (self.resolved or self.unresolved)


# Validation -----------------------------------------------------------------------------------


def plan_edit(
    session: Session,
    user: Requester,
    viewer: Viewer,
    message: Message,
    edit: MessageEdit,
    realm_url: str,
) -> EditPlan:
    """Check an edit against the message, the user's permissions and the realm's limits, and
    work out what it changes; raises ``JsonableError`` before anything is written."""
    if edit.content is not None:
        check_content_edit_allowed(viewer, message)
    topic = edit.topic
    if topic is not None:
        topic = normalize_topic(topic)
        if message.is_channel_message and topic == message.subject:
            topic = None
    orig_stream = stream_for_message(session, message) if message.is_channel_message else None
    stream_id = edit.stream_id
    if stream_id is not None and orig_stream is not None and stream_id == orig_stream.id:
        stream_id = None

    if topic is None and edit.content is None and stream_id is None:
        raise JsonableError("Nothing to change")
    if not message.is_channel_message:
        if edit.stream_id is not None:
            raise JsonableError("Direct messages cannot be moved to channels.")
        if edit.topic is not None:
            raise JsonableError("Direct messages cannot have topics.")
    if edit.propagate_mode != "change_one" and topic is None and stream_id is None:
        raise JsonableError("Invalid propagate_mode without topic edit")
    if topic is not None and marks_empty_topic_resolved(topic):
        raise JsonableError("General chat cannot be marked as resolved")
    if stream_id is not None and edit.content is not None:
        raise JsonableError("Cannot change message content while changing channel")
    if edit.prev_content_sha256 is not None and edit.prev_content_sha256 != sha256_hex(message.content):
        raise JsonableError(
            "'prev_content_sha256' value does not match the expected value.", code="EXPECTATION_MISMATCH"
        )

    target_stream = orig_stream
    if stream_id is not None:
        if not is_storable_id(stream_id):
            raise JsonableError("Invalid channel ID")
        target_stream = access_stream_by_id(session, user, stream_id, require_content_access=True)
    orig_topic = message.subject
    target_topic = topic if topic is not None else orig_topic
    resolved, unresolved = (
        is_resolve_toggle(orig_topic, target_topic) if topic is not None else (False, False)
    )
    plan = EditPlan(
        message=message,
        orig_stream=orig_stream,
        target_stream=target_stream,
        orig_topic=orig_topic,
        target_topic=target_topic,
        topic_edited=topic is not None,
        stream_edited=stream_id is not None,
        resolved=resolved,
        unresolved=unresolved,
        content=None,
        rendered=None,
    )
    if plan.moved:
        assert target_stream is not None
        check_topic_allowed(realm_settings(session, user.realm_id), target_stream, target_topic)

    if plan.topic_edited:
        assert orig_stream is not None
        if resolved or unresolved:
            if not can_resolve_topics(viewer, orig_stream):
                raise JsonableError("You don't have permission to resolve topics in this channel.")
        elif not can_move_within_channel(viewer, orig_stream):
            raise JsonableError(NO_PERMISSION_TO_EDIT)

    if edit.content is not None:
        _render_edit(session, user, viewer, plan, edit.content, realm_url)

    if plan.stream_edited:
        assert orig_stream is not None and target_stream is not None
        if not can_move_out_of_channel(viewer, orig_stream):
            raise JsonableError("You don't have permission to move this message")
        if target_stream.can_send_message_group not in viewer.groups:
            raise JsonableError("You do not have permission to post in this channel.")
    if plan.moved and not plan.resolve_only:
        assert target_stream is not None and target_stream.recipient_id is not None
        if target_stream.can_create_topic_group not in viewer.groups and not topic_exists(
            session, target_stream.recipient_id, target_topic
        ):
            raise JsonableError("You do not have permission to create new topics in this channel.")
    return plan


def _render_edit(
    session: Session,
    user: Requester,
    viewer: Viewer,
    plan: EditPlan,
    content: str,
    realm_url: str,
) -> None:
    # Emptying a message leaves a visible tombstone, as in Zulip.
    content = normalize_content(content if content.strip() else "(deleted)")
    message = plan.message
    rendered = render_content(session, user, content, realm_url)
    participants: set[int] = set()
    if plan.orig_stream is not None and rendered.topic_wildcard:
        participants = topic_participant_ids(session, message.recipient_id, plan.target_topic) | {
            message.sender_id
        }
    check_mentions(session, user, rendered, plan.orig_stream, participants, set(viewer.groups))
    plan.content = content
    plan.rendered = rendered
