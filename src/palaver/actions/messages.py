"""Sending and deleting messages.

A message goes to every active subscriber of its channel, or to every member of its
direct-message conversation, as one ``UserMessage`` row each (with that user's flags) and
a ``message`` event. Events go out grouped by flags, so a channel of thousands costs a
handful of events: most recipients share the same (empty) flags.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.actions.attachments import update_message_attachments
from palaver.actions.service_bot_queue import queue_service_bot_events
from palaver.actions.submessages import create_widget_submessages
from palaver.db import Tx, lock_rows, transaction
from palaver.events import types as ev
from palaver.lib.alert_words import user_ids_with_alert_words_in
from palaver.lib.channels import (
    check_stream_name,
    get_stream_by_id,
    get_stream_by_name,
    metadata_access_user_ids,
    subscribed_stream_ids,
    subscriber_counts,
    subscriber_ids,
)
from palaver.lib.conversations import (
    dm_group_hash,
    get_dm_group,
    stream_for_message,
    user_ids_sharing_conversations,
)
from palaver.lib.email.missed import schedule_missed_message_emails
from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import groups_containing_user
from palaver.lib.ids import is_storable_id, storable_ids
from palaver.lib.markdown.contract import RenderResult
from palaver.lib.message_access import access_message
from palaver.lib.message_flags import flag_names
from palaver.lib.message_format import finalize_message, new_message_wide_dict, wide_message_dicts
from palaver.lib.message_render import render_content
from palaver.lib.message_send import (
    WILDCARD_MENTION_THRESHOLD,
    ChannelTarget,
    DirectTarget,
    SendTarget,
    normalize_content,
    normalize_topic,
)
from palaver.lib.topics import topic_exists, topic_participant_ids
from palaver.lib.user_groups import NOBODY, recursive_member_ids
from palaver.lib.users import access_user_by_email, get_realm_user, user_access_restricted
from palaver.models import UserGroup, UserProfile
from palaver.models.channels import Recipient, RecipientType, Stream, Subscription
from palaver.models.messages import DirectMessageGroup, Message, MessageFlag, Reaction, UserMessage
from palaver.models.muted_users import MutedUser
from palaver.models.topic_names import EMPTY_TOPIC_DISPLAY_NAME
from palaver.timeutil import utcnow

NOT_AUTHORIZED_TO_DELETE = "You don't have permission to delete this message"

# Recipients' rows go in through Core: one executemany, without the ORM's bulk machinery.
_USER_MESSAGE_TABLE = UserMessage.metadata.tables[UserMessage.__tablename__]


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


# Channel messages -----------------------------------------------------------------------------


def _stream_for_send(session: Session, sender: UserProfile, target: ChannelTarget) -> Stream:
    if target.stream_id is not None:
        stream = None
        if is_storable_id(target.stream_id):
            stream = get_stream_by_id(session, sender.realm_id, target.stream_id)
        if stream is None:
            raise JsonableError(
                f"Channel with ID '{target.stream_id}' does not exist",
                code="STREAM_DOES_NOT_EXIST",
                stream_id=target.stream_id,
            )
        return stream
    assert target.stream_name is not None
    name = check_stream_name(target.stream_name)
    stream = get_stream_by_name(session, sender.realm_id, name)
    if stream is None:
        escaped = html.escape(name, quote=False)
        raise JsonableError(
            f"Channel '{escaped}' does not exist", code="STREAM_DOES_NOT_EXIST", stream=escaped
        )
    return stream


def _bot_owner(session: Session, sender: UserProfile) -> UserProfile | None:
    if not sender.is_bot or sender.bot_owner_id is None:
        return None
    return session.get(UserProfile, sender.bot_owner_id)


def _check_stream_send_access(
    session: Session, sender: UserProfile, stream: Stream, groups: set[int]
) -> None:
    """Zulip's rules for posting; a bot may post wherever its owner may."""
    owner = _bot_owner(session, sender)
    if stream.can_send_message_group not in groups and (
        owner is None or stream.can_send_message_group not in groups_containing_user(session, owner.id)
    ):
        raise JsonableError("You do not have permission to post in this channel.")
    not_authorized = JsonableError(f"Not authorized to send to channel '{stream.name}'")
    if stream.deactivated:
        raise not_authorized
    if stream.is_web_public or not (stream.invite_only or sender.is_guest):
        return
    if stream.id in subscribed_stream_ids(session, sender.id):
        return
    if owner is not None and stream.id in subscribed_stream_ids(session, owner.id):
        return
    content_groups = {stream.can_add_subscribers_group, stream.can_subscribe_group}
    if stream.history_public_to_subscribers and not sender.is_guest and content_groups & groups:
        return
    raise not_authorized


def _check_topic(session: Session, sender: UserProfile, stream: Stream, topic: str, groups: set[int]) -> None:
    # A sender in the group may create topics, so whether this one exists does not matter.
    if stream.can_create_topic_group not in groups:
        group = session.get(UserGroup, stream.can_create_topic_group)
        everyone = group is not None and group.is_system_group and group.name == "role:everyone"
        assert stream.recipient_id is not None
        if not everyone and not topic_exists(session, stream.recipient_id, topic):
            owner = _bot_owner(session, sender)
            allowed = owner is not None and stream.can_create_topic_group in groups_containing_user(
                session, owner.id
            )
            if not allowed:
                raise JsonableError("You do not have permission to create new topics in this channel.")
    policy = stream.topics_policy
    if policy == "inherit":
        realm = sender.realm
        policy = "disable_empty_topic" if realm.mandatory_topics else realm.topics_policy
    if policy == "disable_empty_topic" and topic == "":
        raise JsonableError(
            f"Sending messages to the {EMPTY_TOPIC_DISPLAY_NAME} is not allowed in this channel."
        )
    if policy == "empty_topic_only" and topic != "":
        raise JsonableError(f"Only the {EMPTY_TOPIC_DISPLAY_NAME} topic is allowed in this channel.")


# Direct messages ------------------------------------------------------------------------------


def _direct_recipients(
    session: Session, sender: UserProfile, target: DirectTarget, email_host: str
) -> list[UserProfile]:
    users: dict[int, UserProfile] = {}
    for user_id in target.user_ids:
        user = get_realm_user(session, sender.realm_id, user_id)
        if user is None:
            raise JsonableError(f"Invalid user ID {user_id}")
        users[user.id] = user
    for email in target.emails:
        try:
            user = access_user_by_email(session, sender, email, email_host=email_host)
        except JsonableError:
            raise JsonableError(f"Invalid email '{email}'") from None
        users[user.id] = user
    if user_access_restricted(session, sender):
        visible = set(user_ids_sharing_conversations(session, sender)) | {sender.id}
        if any(u.id not in visible and not u.is_bot for u in users.values()):
            raise JsonableError("You do not have permission to access some of the recipients.")
    for user in users.values():
        if not user.is_active:
            raise JsonableError(f"'{user.email}' is no longer using Zulip.")
    return list(users.values())


def _in_group(session: Session, user: UserProfile, group_id: int | None) -> bool:
    return group_id is None or group_id in groups_containing_user(session, user.id)


def _check_direct_message_permission(
    session: Session, sender: UserProfile, recipients: list[UserProfile], group: DirectMessageGroup | None
) -> None:
    if sender.is_bot or all(u.is_bot or u.id == sender.id for u in recipients):
        return
    realm = sender.realm
    permission_group = realm.direct_message_permission_group
    if not any(_in_group(session, u, permission_group) for u in [sender, *recipients]):
        named = session.get(UserGroup, permission_group) if permission_group is not None else None
        if named is not None and named.is_system_group and named.name == NOBODY:
            raise JsonableError("Direct messages are disabled in this organization.")
        raise JsonableError("This conversation does not include any users who can authorize it.")
    if _in_group(session, sender, realm.direct_message_initiator_group):
        return
    started = group is not None and (
        session.scalar(select(Message.id).where(Message.recipient_id == group.recipient_id).limit(1))
        is not None
    )
    if not started:
        raise JsonableError("You do not have permission to initiate direct message conversations.")


def get_or_create_dm_group(session: Session, member_ids: set[int]) -> DirectMessageGroup:
    """The conversation of exactly these users, made with its recipient and members if new."""
    group = get_dm_group(session, member_ids)
    if group is not None:
        return group
    try:
        # A concurrent first message may create the same conversation: on PostgreSQL the
        # loser's insert fails at the unique hash, and it then finds the winner's row.
        with session.begin_nested():
            group = DirectMessageGroup(huddle_hash=dm_group_hash(member_ids), group_size=len(member_ids))
            session.add(group)
            session.flush()
            recipient = Recipient(type=RecipientType.DIRECT_MESSAGE_GROUP, type_id=group.id)
            session.add(recipient)
            session.flush()
            group.recipient_id = recipient.id
            session.add_all(
                Subscription(user_profile_id=uid, recipient_id=recipient.id) for uid in member_ids
            )
            session.flush()
    except IntegrityError:
        group = get_dm_group(session, member_ids)
        if group is None:
            raise
    return group


# Mentions -----------------------------------------------------------------------------------


def _check_mentions(
    session: Session,
    sender: UserProfile,
    rendered: RenderResult,
    stream: Stream | None,
    topic_participants: set[int],
    groups: set[int],
) -> None:
    if stream is not None:
        many = sender.realm.can_mention_many_users_group
        may_mention_many = many is not None and many in groups
        if rendered.stream_wildcard and not may_mention_many:
            count = subscriber_counts(session, [stream.id]).get(stream.id, 0)
            if count > WILDCARD_MENTION_THRESHOLD:
                raise JsonableError(
                    "You do not have permission to use channel wildcard mentions in this channel.",
                    code="STREAM_WILDCARD_MENTION_NOT_ALLOWED",
                )
        if (
            rendered.topic_wildcard
            and not may_mention_many
            and len(topic_participants) > WILDCARD_MENTION_THRESHOLD
        ):
            raise JsonableError(
                "You do not have permission to use topic wildcard mentions in this topic.",
                code="TOPIC_WILDCARD_MENTION_NOT_ALLOWED",
            )
    for group_id in sorted(rendered.mentioned_group_ids):
        group = session.get(UserGroup, group_id)
        if group is None or group.can_mention_group is None:
            continue
        if group.can_mention_group not in groups:
            raise JsonableError(f"You are not allowed to mention user group '{group.name}'.")


def _mentioned_user_ids(session: Session, rendered: RenderResult) -> set[int]:
    mentioned = set(rendered.mentioned_user_ids)
    for group_id in rendered.mentioned_group_ids:
        mentioned |= recursive_member_ids(session, group_id)
    return mentioned


# Sending ------------------------------------------------------------------------------------


@dataclass
class _Recipients:
    recipient_id: int
    user_ids: set[int]
    stream: Stream | None
    topic: str
    # A direct message's members, sender included, as loaded by the checks.
    dm_members: list[UserProfile] = field(default_factory=list)


def _resolve_target(
    session: Session, sender: UserProfile, target: SendTarget, context: SendContext, groups: set[int]
) -> _Recipients:
    if isinstance(target, ChannelTarget):
        topic = normalize_topic(target.topic)
        stream = _stream_for_send(session, sender, target)
        _check_stream_send_access(session, sender, stream, groups)
        _check_topic(session, sender, stream, topic, groups)
        assert stream.recipient_id is not None
        return _Recipients(stream.recipient_id, subscriber_ids(session, stream), stream, topic)
    users = _direct_recipients(session, sender, target, context.email_host)
    member_ids = {u.id for u in users} | {sender.id}
    _check_direct_message_permission(session, sender, users, get_dm_group(session, member_ids))
    group = get_or_create_dm_group(session, member_ids)
    assert group.recipient_id is not None
    return _Recipients(group.recipient_id, member_ids, None, "", [sender, *users])


@dataclass
class CheckedMessage:
    """A message that passed every check of sending, and what the checks worked out."""

    content: str
    recipients: _Recipients
    rendered: RenderResult
    participants: set[int]


def check_message(
    session: Session, sender: UserProfile, target: SendTarget, content: str, context: SendContext
) -> CheckedMessage:
    """Run the checks of sending without sending; call inside a transaction.

    Scheduling a message (actions/scheduled_messages.py) runs the same checks when it is
    scheduled, as Zulip does, so the user hears of a problem then rather than at delivery.
    A new direct-message conversation is created here, which is why a transaction is needed.
    """
    content = normalize_content(content)
    groups = groups_containing_user(session, sender.id)
    recipients = _resolve_target(session, sender, target, context, groups)
    rendered = render_content(session, sender, content, context.realm_url)
    participants: set[int] = set()
    if recipients.stream is not None and rendered.topic_wildcard:
        participants = topic_participant_ids(session, recipients.recipient_id, recipients.topic) | {sender.id}
    _check_mentions(session, sender, rendered, recipients.stream, participants, groups)
    return CheckedMessage(content, recipients, rendered, participants)


def do_send_message(
    session: Session, sender: UserProfile, target: SendTarget, content: str, context: SendContext
) -> int:
    """Send a message; returns its ID."""
    with transaction(session) as tx:
        checked = check_message(session, sender, target, content, context)
        content, recipients, rendered, participants = (
            checked.content,
            checked.recipients,
            checked.rendered,
            checked.participants,
        )
        stream = recipients.stream

        message = Message(
            realm_id=sender.realm_id,
            sender_id=sender.id,
            recipient_id=recipients.recipient_id,
            subject=recipients.topic,
            content=content,
            rendered_content=rendered.html,
            rendered_content_version=1,
            date_sent=utcnow(),
            has_attachment=rendered.has_attachment,
            has_image=rendered.has_image,
            has_link=rendered.has_link,
            is_channel_message=stream is not None,
            sending_client=context.client[:30],
        )
        session.add(message)
        session.flush()

        mentioned = _mentioned_user_ids(session, rendered)
        flags = _recipient_flags(
            sender,
            recipients,
            rendered,
            mentioned,
            participants,
            context,
            read_user_ids=_muting_user_ids(session, sender),
        )
        # Alert words (lib/alert_words.py) flag recipients, though never on their own messages.
        others = flags.keys() - {sender.id}
        for user_id in user_ids_with_alert_words_in(session, sender.realm_id, others, content):
            flags[user_id] = int(flags[user_id] | MessageFlag.HAS_ALERT_WORD)
        session.execute(
            insert(_USER_MESSAGE_TABLE),
            [
                {"user_profile_id": uid, "message_id": message.id, "flags": bits}
                for uid, bits in flags.items()
            ],
        )
        if rendered.has_attachment:
            # Uploads the content links become readable by the message's audience.
            update_message_attachments(tx, session, sender, message, rendered.links)
        if stream is not None:
            note_messages_arrived(tx, session, stream, message.id)
        # A /poll or /todo message carries its widget from the start (lib/widgets.py).
        submessages = create_widget_submessages(session, message)
        _send_message_events(
            tx,
            session,
            sender,
            message,
            stream,
            flags,
            context,
            dm_members=recipients.dm_members,
            submessages=submessages,
        )
        # Outgoing-webhook and embedded bots mentioned or written to (workers/outgoing_webhooks.py).
        queue_service_bot_events(session, sender, message.id, mentioned, recipients.dm_members)
        # Offline recipients who may need an email; the email worker batches and sends it.
        schedule_missed_message_emails(session, message, stream, flags)
    return message.id


def _muting_user_ids(session: Session, sender: UserProfile) -> set[int]:
    """Users who muted the sender: the message reaches them already read, as in Zulip."""
    return set(session.scalars(select(MutedUser.user_profile_id).where(MutedUser.muted_user_id == sender.id)))


def _recipient_flags(
    sender: UserProfile,
    recipients: _Recipients,
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
    if sender.id not in user_ids:
        # The sender keeps what they sent in their history, even in a channel they are not
        # subscribed to; there it must be read (unread messages are in subscribed channels).
        user_ids.add(sender.id)
        read_by_sender = True
    flags: dict[int, int] = {}
    for user_id in sorted(user_ids):
        bits = 0
        if recipients.stream is None:
            bits |= MessageFlag.IS_PRIVATE
        if read_by_sender if user_id == sender.id else user_id in read_user_ids:
            bits |= MessageFlag.READ
        if user_id in mentioned:
            bits |= MessageFlag.MENTIONED
        if rendered.stream_wildcard:
            bits |= MessageFlag.STREAM_WILDCARD_MENTIONED
        if rendered.topic_wildcard and user_id in participants:
            bits |= MessageFlag.TOPIC_WILDCARD_MENTIONED
        flags[user_id] = int(bits)
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


def _send_message_events(
    tx: Tx,
    session: Session,
    sender: UserProfile,
    message: Message,
    stream: Stream | None,
    flags: dict[int, int],
    context: SendContext,
    *,
    dm_members: Sequence[UserProfile] = (),
    submessages: Sequence[dict[str, Any]] = (),
) -> None:
    """The message events of a message just written; a direct message needs ``dm_members``
    (or they are read back from the database)."""
    if stream is not None or dm_members:
        wide = new_message_wide_dict(message, sender, stream, dm_members)
    else:
        wide = wide_message_dicts(session, [message])[message.id]
    if submessages:
        wide["submessages"] = list(submessages)
    payload = ev.MessagePayload(
        **finalize_message(wide, apply_markdown=True, client_gravatar=False, allow_empty_topic_name=True)
    )
    by_flags: dict[int, list[int]] = defaultdict(list)
    for user_id, bits in flags.items():
        by_flags[bits].append(user_id)
    # The sender's own event carries local_message_id, so it goes out alone.
    local_echo = context.local_id is not None and context.sender_queue_id is not None
    groups: list[tuple[int, list[int], bool]] = []
    for bits, user_ids in by_flags.items():
        if local_echo and sender.id in user_ids:
            others = [u for u in user_ids if u != sender.id]
            if others:
                groups.append((bits, others, False))
            groups.append((bits, [sender.id], True))
        else:
            groups.append((bits, user_ids, False))

    broadcast = -1
    if stream is not None and not stream.invite_only:
        plain = [i for i, (bits, _, _) in enumerate(groups) if flag_names(bits) == []]
        broadcast = plain[0] if plain else max(range(len(groups)), key=lambda i: len(groups[i][1]))
    for index, (bits, user_ids, is_sender_echo) in enumerate(groups):
        is_broadcast = index == broadcast
        skip = (
            sorted(u for i, (_, ids, _) in enumerate(groups) if i != index for u in ids)
            if is_broadcast
            else []
        )
        internal = ev.MessageEventInternal(
            raw_content=message.content,
            sender_queue_id=context.sender_queue_id if is_sender_echo else None,
            avatar_computable=bool(wide["avatar_computable"]),
            broadcast=is_broadcast,
            skip_broadcast_user_ids=skip,
            has_link=message.has_link,
            has_image=message.has_image,
            has_attachment=message.has_attachment,
        )
        event = ev.MessageEvent(
            message=payload,
            flags=flag_names(bits),
            local_message_id=context.local_id if is_sender_echo else None,
            internal=internal,
        )
        tx.send_event(message.realm_id, event, user_ids)


# Deleting -----------------------------------------------------------------------------------


def _check_can_delete(session: Session, user: UserProfile, message: Message, stream: Stream | None) -> None:
    groups = groups_containing_user(session, user.id)
    realm = user.realm
    if realm.can_delete_any_message_group in groups:
        return
    if stream is not None and stream.can_delete_any_message_group in groups:
        return
    if message.sender_id != user.id:
        sender = session.get(UserProfile, message.sender_id)
        # People may delete what their bots sent.
        if sender is None or sender.bot_owner_id != user.id:
            raise JsonableError(NOT_AUTHORIZED_TO_DELETE)
    may_delete_own = realm.can_delete_own_message_group in groups or (
        stream is not None and stream.can_delete_own_message_group in groups
    )
    if not may_delete_own:
        raise JsonableError(NOT_AUTHORIZED_TO_DELETE)
    limit = realm.message_content_delete_limit_seconds
    if limit is not None and utcnow() - message.date_sent > timedelta(seconds=limit):
        raise JsonableError("The time limit for deleting this message has passed")


def do_delete_message(session: Session, user: UserProfile, message_id: int) -> None:
    with transaction(session) as tx:
        # A concurrent delete of the same message waits here, then finds it gone.
        lock_rows(session, Message, storable_ids([message_id]))
        message, _ = access_message(session, user, message_id)
        stream = stream_for_message(session, message) if message.is_channel_message else None
        _check_can_delete(session, user, message, stream)
        audience = set(
            session.scalars(select(UserMessage.user_profile_id).where(UserMessage.message_id == message.id))
        )
        if stream is not None:
            audience |= subscriber_ids(session, stream)
        event = ev.DeleteMessage(
            message_type="stream" if stream is not None else "private",
            message_ids=[message.id],
            message_id=message.id,
            stream_id=stream.id if stream is not None else None,
            topic=message.subject if stream is not None else None,
        )
        session.execute(delete(Reaction).where(Reaction.message_id == message.id))
        session.execute(delete(UserMessage).where(UserMessage.message_id == message.id))
        session.execute(delete(Message).where(Message.id == message.id))
        tx.send_event(message.realm_id, event, audience)
