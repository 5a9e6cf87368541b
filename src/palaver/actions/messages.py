"""Sending messages.

A message goes to every active subscriber of its channel, or to every member of its
direct-message conversation, as one ``UserMessage`` row each (with that user's flags) and
a ``message`` event. Events go out grouped by flags, so a channel of thousands costs a
handful of events: most recipients share the same (empty) flags.

A send is checked, rendered and its event payload built before the write transaction, as
Zulip does: only the rows and what depends on them (flags, side work) are decided while
the database's write lock is held, so concurrent senders wait on each other only that long.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from palaver.actions.attachments import update_message_attachments
from palaver.actions.message_events import EventRouting, send_message_events
from palaver.actions.message_mentions import check_mentions, mentioned_users
from palaver.actions.message_recipients import (
    check_direct_message_permission,
    check_stream_send_access,
    check_topic_creation,
    direct_recipients,
    get_or_create_dm_group,
    stream_for_send,
)
from palaver.actions.service_bot_queue import direct_service_bot_ids, queue_service_bot_events
from palaver.actions.submessages import create_widget_submessages
from palaver.cache import ChannelFacts, users_muting
from palaver.db.bulk import insert_rows
from palaver.db.transaction import Tx, grouped_write
from palaver.events import types as ev
from palaver.lib.alert_words import user_ids_with_alert_words_in
from palaver.lib.channels import metadata_access_user_ids, subscriber_ids
from palaver.lib.conversations import (
    get_dm_group,
)
from palaver.lib.email.missed import schedule_missed_message_emails
from palaver.lib.group_settings import groups_containing_user
from palaver.lib.markdown.contract import RenderResult
from palaver.lib.message_format import new_message_wide_dict, wide_message_dicts
from palaver.lib.message_render import render_content
from palaver.lib.message_send import (
    ChannelTarget,
    SendTarget,
    normalize_content,
    normalize_topic,
)
from palaver.lib.topics import topic_participant_ids
from palaver.lib.users import requester_user
from palaver.models import UserProfile
from palaver.models.channels import Stream
from palaver.models.messages import Message, MessageFlag, UserMessage
from palaver.models.requester import Requester
from palaver.timeutil import utcnow

# The rows of a send go in through Core statements built once: the ORM's unit of work (and
# building a statement per call) cost several times SQLite's own work for them.
_MESSAGE_TABLE = Message.metadata.tables[Message.__tablename__]
_USER_MESSAGE_TABLE = UserMessage.metadata.tables[UserMessage.__tablename__]
_INSERT_MESSAGE = insert(_MESSAGE_TABLE).returning(_MESSAGE_TABLE.c.id)
# Recipients' rows: many small ones, in one round trip (db/bulk.py).
_USER_MESSAGE_COLUMNS = ("user_profile_id", "message_id", "flags")

# Flag bits as plain ints: IntFlag arithmetic runs through the enum machinery per operation.
_IS_PRIVATE = int(MessageFlag.IS_PRIVATE)
_READ = int(MessageFlag.READ)
_MENTIONED = int(MessageFlag.MENTIONED)
_STREAM_WILDCARD = int(MessageFlag.STREAM_WILDCARD_MENTIONED)
_TOPIC_WILDCARD = int(MessageFlag.TOPIC_WILDCARD_MENTIONED)
_HAS_ALERT_WORD = int(MessageFlag.HAS_ALERT_WORD)


@dataclass(frozen=True)
class SendContext:
    """Facts about the request a message arrives with."""

    realm_url: str
    email_host: str
    client: str = "Internal"
    local_id: str | None = None
    sender_queue_id: str | None = None
    # None: the sender has read what they sent.
    read_by_sender: bool | None = None


# Sending ------------------------------------------------------------------------------------


@dataclass
class MessageRecipients:
    """Who receives a message being sent, as the send checks resolved it."""

    # None: a direct-message conversation that does not exist yet (made when the message is).
    recipient_id: int | None
    user_ids: set[int]
    stream: ChannelFacts | None
    topic: str
    # A direct message's members, sender included, as loaded by the checks.
    dm_members: list[UserProfile] = field(default_factory=list)


def _resolve_target(
    session: Session,
    sender: Requester,
    target: SendTarget,
    context: SendContext,
    groups: set[int],
    *,
    create_conversation: bool,
) -> MessageRecipients:
    if isinstance(target, ChannelTarget):
        topic = normalize_topic(target.topic)
        stream = stream_for_send(session, sender, target)
        check_stream_send_access(session, sender, stream, groups)
        check_topic_creation(session, sender, stream, topic, groups)
        assert stream.recipient_id is not None
        return MessageRecipients(stream.recipient_id, subscriber_ids(session, stream), stream, topic)
    # Direct messages check the sender's realm and visibility rules: the whole user.
    loaded = requester_user(session, sender)
    users = direct_recipients(session, sender, target, context.email_host)
    member_ids = {u.id for u in users} | {loaded.id}
    group = get_dm_group(session, member_ids)
    check_direct_message_permission(session, loaded, users, group)
    if group is None and create_conversation:
        group = get_or_create_dm_group(session, member_ids)
    recipient_id = group.recipient_id if group is not None else None
    return MessageRecipients(recipient_id, member_ids, None, "", [loaded, *users])


@dataclass
class CheckedMessage:
    """A message that passed every check of sending, and what the checks worked out."""

    content: str
    recipients: MessageRecipients
    rendered: RenderResult
    participants: set[int]


def check_message(
    session: Session, sender: Requester, target: SendTarget, content: str, context: SendContext
) -> CheckedMessage:
    """Run the checks of sending without sending; call inside a transaction.

    Scheduling a message (actions/scheduled_messages.py) runs the same checks when it is
    scheduled, as Zulip does, so the user hears of a problem then rather than at delivery.
    A new direct-message conversation is created here, which is why a transaction is needed.
    """
    return _check(session, sender, target, content, context, create_conversation=True)


def _check(
    session: Session,
    sender: Requester,
    target: SendTarget,
    content: str,
    context: SendContext,
    *,
    create_conversation: bool,
) -> CheckedMessage:
    content = normalize_content(content)
    groups = groups_containing_user(session, sender.user_id)
    recipients = _resolve_target(
        session, sender, target, context, groups, create_conversation=create_conversation
    )
    rendered = render_content(session, sender, content, context.realm_url)
    participants: set[int] = set()
    if recipients.stream is not None and rendered.topic_wildcard:
        assert recipients.recipient_id is not None
        participants = topic_participant_ids(session, recipients.recipient_id, recipients.topic) | {
            sender.user_id
        }
    check_mentions(session, sender, rendered, recipients.stream, participants, groups)
    return CheckedMessage(content, recipients, rendered, participants)


@dataclass
class _Prepared:
    """A checked message and every fact its writing needs, read before the write transaction
    (which expires the session's objects: reading one there would load it again)."""

    checked: CheckedMessage
    # The message row's values (the other columns keep their defaults), and the same as an
    # unsaved Message for what the rest of sending reads of it.
    values: dict[str, Any]
    message: Message
    wide: dict[str, Any] | None
    routing: EventRouting
    realm_id: int
    sender_is_bot: bool
    stream_id: int | None
    # Whether the channel's first message and recent activity are already what sending sets.
    stream_current: bool
    direct_service_bots: list[int]


def _prepare(
    session: Session, sender: Requester, target: SendTarget, content: str, context: SendContext
) -> _Prepared:
    checked = _check(session, sender, target, content, context, create_conversation=False)
    recipients, rendered = checked.recipients, checked.rendered
    stream = recipients.stream
    values: dict[str, Any] = {
        "realm_id": sender.realm_id,
        "sender_id": sender.user_id,
        "recipient_id": recipients.recipient_id,
        "subject": recipients.topic,
        "content": checked.content,
        "rendered_content": rendered.html,
        "rendered_content_version": 1,
        "date_sent": utcnow(),
        "has_attachment": rendered.has_attachment,
        "has_image": rendered.has_image,
        "has_link": rendered.has_link,
        "is_channel_message": stream is not None,
        "sending_client": context.client[:30],
    }
    message = Message(**values)
    wide = None
    if recipients.recipient_id is not None:
        wide = new_message_wide_dict(session, message, sender, stream, recipients.dm_members)
    return _Prepared(
        checked=checked,
        values=values,
        message=message,
        wide=wide,
        routing=EventRouting(
            sender_id=sender.user_id,
            public_channel=stream is not None and not stream.invite_only,
            local_id=context.local_id,
            sender_queue_id=context.sender_queue_id,
        ),
        realm_id=sender.realm_id,
        sender_is_bot=sender.is_bot,
        stream_id=stream.id if stream is not None else None,
        stream_current=stream is not None
        and stream.first_message_id is not None
        and stream.is_recently_active,
        direct_service_bots=direct_service_bot_ids(sender, recipients.dm_members),
    )


def do_send_message(
    session: Session, sender: Requester, target: SendTarget, content: str, context: SendContext
) -> int:
    """Send a message; returns its ID. ``sender`` may be the realm cache's row of the user
    (a request by known credentials): a channel message's checks read only that."""
    prepared = _prepare(session, sender, target, content, context)
    # Concurrent sends may share one commit: the write then runs on another request's
    # session, so it uses only what was prepared (db.Database.grouped_write).
    return grouped_write(session, lambda tx, write_session: _write(tx, write_session, prepared, context))


def _write(tx: Tx, session: Session, prepared: _Prepared, context: SendContext) -> int:
    checked, message = prepared.checked, prepared.message
    recipients, rendered = checked.recipients, checked.rendered
    sender_id = prepared.routing.sender_id
    if recipients.recipient_id is None:
        group = get_or_create_dm_group(session, recipients.user_ids)
        assert group.recipient_id is not None
        recipients.recipient_id = message.recipient_id = group.recipient_id
        prepared.values["recipient_id"] = group.recipient_id
    conn = session.connection()
    message_id: int = conn.execute(_INSERT_MESSAGE, prepared.values).scalar_one()
    message.id = message_id

    mentioned = mentioned_users(session, rendered)
    flags = recipient_flags(
        sender_id,
        recipients,
        rendered,
        mentioned,
        checked.participants,
        context,
        read_user_ids=users_muting(session, prepared.realm_id, sender_id),
    )
    # Alert words (lib/alert_words.py) flag recipients, though never on their own messages.
    others = flags.keys() - {sender_id}
    for user_id in user_ids_with_alert_words_in(session, prepared.realm_id, others, message.content):
        flags[user_id] |= _HAS_ALERT_WORD
    rows = [(user_id, message_id, bits) for user_id, bits in flags.items()]
    insert_rows(tx, conn, _USER_MESSAGE_TABLE, _USER_MESSAGE_COLUMNS, rows)
    if rendered.has_attachment:
        # Uploads the content links become readable by the message's audience; this may
        # correct has_attachment, so it works on the stored row.
        stored = session.get_one(Message, message_id)
        owner = Requester.of(session.get_one(UserProfile, sender_id))
        update_message_attachments(tx, session, owner, stored, rendered.links)
        message.has_attachment = stored.has_attachment
    if prepared.stream_id is not None and not prepared.stream_current:
        note_messages_arrived(tx, session, session.get_one(Stream, prepared.stream_id), message_id)
    # A /poll or /todo message carries its widget from the start (lib/widgets.py).
    submessages = create_widget_submessages(session, message)
    wide = prepared.wide
    if wide is None:
        # A new conversation: its recipient exists only now.
        sender = session.get_one(UserProfile, sender_id)
        wide = new_message_wide_dict(session, message, Requester.of(sender), None, recipients.dm_members)
    wide["id"] = message_id
    send_message_events(tx, message, wide, flags, prepared.routing, submessages)
    # Outgoing-webhook and embedded bots mentioned or written to (workers/outgoing_webhooks.py).
    if not prepared.sender_is_bot:
        queue_service_bot_events(
            session, prepared.realm_id, message_id, mentioned, prepared.direct_service_bots
        )
    # Offline recipients who may need an email; the email worker batches and sends it.
    schedule_missed_message_emails(session, message, prepared.stream_id, flags)
    return message_id


def recipient_flags(
    sender_id: int,
    recipients: MessageRecipients,
    rendered: RenderResult,
    mentioned: set[int],
    participants: set[int],
    context: SendContext,
    *,
    read_user_ids: Collection[int] = (),
) -> dict[int, int]:
    """Each recipient's flags; ``read_user_ids`` get the message as read."""
    read_by_sender = context.read_by_sender is not False
    user_ids = set(recipients.user_ids)
    if sender_id not in user_ids:
        # The sender keeps what they sent in their history, even in a channel they are not
        # subscribed to; there it must be read (unread messages are in subscribed channels).
        user_ids.add(sender_id)
        read_by_sender = True
    base = _IS_PRIVATE if recipients.stream is None else 0
    if rendered.stream_wildcard:
        base |= _STREAM_WILDCARD
    topic_wildcard = rendered.topic_wildcard
    flags: dict[int, int] = {}
    for user_id in sorted(user_ids):
        bits = base
        if read_by_sender if user_id == sender_id else user_id in read_user_ids:
            bits |= _READ
        if user_id in mentioned:
            bits |= _MENTIONED
        if topic_wildcard and user_id in participants:
            bits |= _TOPIC_WILDCARD
        flags[user_id] = bits
    return flags


def note_messages_arrived(tx: Tx, session: Session, stream: Stream, oldest_id: int) -> None:
    """Keep a channel's first message and recent activity true when messages arrive in it,
    by sending or by moving (which may bring in messages older than its first)."""
    changes: list[tuple[str, int | bool]] = []
    if stream.first_message_id is None or oldest_id < stream.first_message_id:
        stream.first_message_id = oldest_id
        changes.append(("first_message_id", oldest_id))
    if not stream.is_recently_active:
        stream.is_recently_active = True
        changes.append(("is_recently_active", True))
    if changes:
        audience = metadata_access_user_ids(session, stream)
        for name, value in changes:
            tx.send_event(
                stream.realm_id,
                ev.StreamUpdate(stream_id=stream.id, name=stream.name, property=name, value=value),
                audience,
            )


def send_written_message_events(
    tx: Tx,
    session: Session,
    sender: UserProfile,
    message: Message,
    stream: Stream | None,
    flags: dict[int, int],
    context: SendContext,
    *,
    dm_members: Sequence[UserProfile] = (),
) -> None:
    """The message events of a message just written (not by ``do_send_message``); a direct
    message needs ``dm_members`` (or they are read back from the database)."""
    if stream is not None or dm_members:
        wide = new_message_wide_dict(session, message, Requester.of(sender), stream, dm_members)
    else:
        wide = wide_message_dicts(session, [message])[message.id]
    routing = EventRouting(
        sender_id=sender.id,
        public_channel=stream is not None and not stream.invite_only,
        local_id=context.local_id,
        sender_queue_id=context.sender_queue_id,
    )
    send_message_events(tx, message, wide, flags, routing)
