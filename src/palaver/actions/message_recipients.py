"""Where a message may go: the channel a sender may post to (and its topic rules), the users of a
direct message and whether the sender may write to them, and the direct-message group they form.
"""

from __future__ import annotations

import html

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.cache import ChannelFacts, StreamInfo, cached_channel, cached_channel_by_name, realm_settings
from palaver.cache.table_map import NOT_REALM_STATE
from palaver.lib.channels import check_stream_name, subscribed_stream_ids
from palaver.lib.conversations import dm_group_hash, get_dm_group, user_ids_sharing_conversations
from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import groups_containing_user
from palaver.lib.message_edit import check_topic_allowed
from palaver.lib.message_send import ChannelTarget, DirectTarget
from palaver.lib.topics import topic_exists
from palaver.lib.user_groups import NOBODY
from palaver.lib.users import access_user_by_email, get_realm_user, user_access_restricted
from palaver.models import UserGroup, UserProfile
from palaver.models.channels import Recipient, RecipientType, Subscription
from palaver.models.messages import DirectMessageGroup, Message
from palaver.models.requester import Requester

# A conversation's members go in through Core, marked as no concern of the realm-state cache.
_SUBSCRIPTION_TABLE = Subscription.metadata.tables[Subscription.__tablename__]

# Channel messages -----------------------------------------------------------------------------


def stream_for_send(session: Session, sender: Requester, target: ChannelTarget) -> StreamInfo:
    """The channel a message is sent to, by ID or name, or the error Zulip gives."""
    # The realm-state cache's channel, not the row: sending reads it and never changes it
    # (a channel's first message is set on the row, in the write: messages.note_messages_arrived).
    if target.stream_id is not None:
        stream = cached_channel(session, sender.realm_id, target.stream_id)
        if stream is None:
            raise JsonableError(
                f"Channel with ID '{target.stream_id}' does not exist",
                code="STREAM_DOES_NOT_EXIST",
                stream_id=target.stream_id,
            )
        return stream
    assert target.stream_name is not None
    name = check_stream_name(target.stream_name)
    stream = cached_channel_by_name(session, sender.realm_id, name)
    if stream is None:
        escaped = html.escape(name, quote=False)
        raise JsonableError(
            f"Channel '{escaped}' does not exist", code="STREAM_DOES_NOT_EXIST", stream=escaped
        )
    return stream


def _bot_owner(session: Session, sender: Requester) -> UserProfile | None:
    if not sender.is_bot or sender.bot_owner_id is None:
        return None
    return session.get(UserProfile, sender.bot_owner_id)


def check_stream_send_access(
    session: Session, sender: Requester, stream: ChannelFacts, groups: set[int]
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
    if stream.id in subscribed_stream_ids(session, sender.user_id):
        return
    if owner is not None and stream.id in subscribed_stream_ids(session, owner.id):
        return
    content_groups = {stream.can_add_subscribers_group, stream.can_subscribe_group}
    if stream.history_public_to_subscribers and not sender.is_guest and content_groups & groups:
        return
    raise not_authorized


def check_topic_creation(
    session: Session, sender: Requester, stream: ChannelFacts, topic: str, groups: set[int]
) -> None:
    """Refuse a new topic the sender (or a bot's owner) may not start, or one the realm forbids."""
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
    check_topic_allowed(realm_settings(session, sender.realm_id), stream, topic)


# Direct messages ------------------------------------------------------------------------------


def direct_recipients(
    session: Session, sender: Requester, target: DirectTarget, email_host: str
) -> list[UserProfile]:
    """The users a direct message names, by ID or email, each visible to the sender and active."""
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
        visible = set(user_ids_sharing_conversations(session, sender.user_id)) | {sender.user_id}
        if any(u.id not in visible and not u.is_bot for u in users.values()):
            raise JsonableError("You do not have permission to access some of the recipients.")
    for user in users.values():
        if not user.is_active:
            raise JsonableError(f"'{user.email}' is no longer using Zulip.")
    return list(users.values())


def _in_group(session: Session, user: UserProfile, group_id: int | None) -> bool:
    return group_id is None or group_id in groups_containing_user(session, user.id)


def check_direct_message_permission(
    session: Session, sender: UserProfile, recipients: list[UserProfile], group: DirectMessageGroup | None
) -> None:
    """The realm's rules for who may send and who may start direct messages."""
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
            return create_dm_group(session, member_ids)
    except IntegrityError:
        group = get_dm_group(session, member_ids)
        if group is None:
            raise
    return group


def create_dm_group(session: Session, member_ids: set[int]) -> DirectMessageGroup:
    """The new conversation of exactly these users, with its recipient and members. Only for
    users no other transaction can see yet (an import's): others may race to create it, so
    they go through ``get_or_create_dm_group``. No savepoint of its own: PostgreSQL slows
    every later statement of a transaction that has opened thousands of them."""
    group = DirectMessageGroup(huddle_hash=dm_group_hash(member_ids), group_size=len(member_ids))
    session.add(group)
    session.flush()
    recipient = Recipient(type=RecipientType.DIRECT_MESSAGE_GROUP, type_id=group.id)
    session.add(recipient)
    session.flush()
    group.recipient_id = recipient.id
    session.execute(
        insert(_SUBSCRIPTION_TABLE).execution_options(**{NOT_REALM_STATE: True}),
        [{"user_profile_id": uid, "recipient_id": recipient.id} for uid in sorted(member_ids)],
    )
    return group
