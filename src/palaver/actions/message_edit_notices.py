"""The Notification Bot's notices in the old and new topics after messages move."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.actions.message_edit_plan import EditContext, EditPlan, MessageEdit
from palaver.actions.messages import SendContext
from palaver.actions.notification_bot import get_or_create_notification_bot, internal_send_stream_message
from palaver.lib.channels import Viewer
from palaver.lib.message_edit import topic_messages_for_user
from palaver.lib.notification_bot import message_link, silent_mention, topic_link_syntax
from palaver.lib.realm import get_realm
from palaver.models.channels import Stream
from palaver.models.requester import Requester

# Notices --------------------------------------------------------------------------------------


def send_edit_notifications(
    session: Session,
    user: Requester,
    viewer: Viewer,
    plan: EditPlan,
    edit: MessageEdit,
    context: EditContext,
    moved_ids: list[int],
) -> None:
    """The notification bot's notices of a move or (un)resolve, in the old and new topics."""
    old, new = plan.orig_stream, plan.target_stream
    assert old is not None and new is not None
    send_context = SendContext(realm_url=context.realm_url, email_host=context.email_host)
    mention = silent_mention(user)
    count = len(moved_ids)
    # Whether the user moved everything they can see of the topic decides the wording.
    moved_all = edit.propagate_mode == "change_all" or not topic_messages_for_user(
        session, viewer, old, plan.orig_topic
    )

    def post(stream: Stream, topic: str, text: str) -> int:
        # The realm row: the Notification Bot may be created in it.
        bot = get_or_create_notification_bot(session, get_realm(session, user.realm_id), context.email_host)
        return internal_send_stream_message(
            session, bot, stream, topic, text, send_context, read_by_user_id=user.user_id
        )

    notice_id = None
    if plan.resolve_only and plan.content is None:
        state = "resolved" if plan.resolved else "unresolved"
        notice_id = post(old, plan.target_topic, f"{mention} has marked this topic as {state}.")

    new_thread = edit.send_notification_to_new_thread and (
        plan.stream_edited or (plan.topic_edited and not (plan.resolved or plan.unresolved))
    )
    if new_thread:
        old_location = topic_link_syntax(old, plan.orig_topic)
        preexisting = [
            m
            for m in topic_messages_for_user(session, viewer, new, plan.target_topic)
            if m.id not in set(moved_ids) and m.id != notice_id
        ]
        if not preexisting and moved_all:
            text = f"This topic was moved here from {old_location} by {mention}."
        elif count == 1:
            link = message_link(context.realm_url, new, plan.target_topic, plan.message.id)
            text = f"[A message]({link}) was moved here from {old_location} by {mention}."
        else:
            text = f"{count} messages were moved here from {old_location} by {mention}."
        post(new, plan.target_topic, text)

    if edit.send_notification_to_old_thread:
        new_location = topic_link_syntax(new, plan.target_topic)
        if moved_all:
            text = f"This topic was moved to {new_location} by {mention}."
        elif count == 1:
            text = f"A message was moved from this topic to {new_location} by {mention}."
        else:
            text = f"{count} messages were moved from this topic to {new_location} by {mention}."
        post(old, plan.orig_topic, text)
