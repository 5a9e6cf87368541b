"""Changing a user's own message flags: read, starred, collapsed.

Invariant: every unread message is in a channel the user is subscribed to. Marking channel
messages unread skips channels the user is not subscribed to, and unsubscribing marks the
channel's messages read.

A flag on a message the user may read but never received (shared channel history) needs a
row to live on: one is made, marked "historical", unless the flag's new value equals what
such messages already show (read, not starred, not collapsed).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table, bindparam, func, insert, literal, select, update
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.channels import access_stream_by_id
from palaver.lib.conversations import streams_by_recipient
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import storable_ids
from palaver.lib.message_access import bulk_access_message_ids, invalid_message
from palaver.lib.message_fetch import MAX_MESSAGES_PER_FETCH, fetch_message_rows
from palaver.lib.message_flags import DEFAULT_HISTORICAL_FLAGS, EDITABLE_FLAGS, FLAG_BITS, READ_ONLY_FLAGS
from palaver.lib.narrow import build_narrow_filter
from palaver.lib.unreads import unread_message_details
from palaver.models import UserProfile
from palaver.models.channels import Stream, Subscription
from palaver.models.messages import Message, MessageFlag, UserMessage
from palaver.models.requester import Requester
from palaver.models.topic_names import topic_for_lookup

_READ = int(MessageFlag.READ)


def check_flag_operation(op: str, flag: str) -> None:
    if flag not in FLAG_BITS and flag not in READ_ONLY_FLAGS:
        raise JsonableError(f"Invalid flag: '{flag}'")
    if flag not in EDITABLE_FLAGS:
        raise JsonableError(f"Flag not editable: '{flag}'")
    if op not in ("add", "remove"):
        raise JsonableError(f"Invalid message flag operation: '{op}'")


@dataclass
class FlagsResult:
    # Messages whose flag changed, in the order asked for.
    messages: list[int]
    # Only when marking unread: channels skipped because the user is not subscribed.
    ignored_because_not_subscribed_channels: list[int] | None = None


_MESSAGES = Message.__table__.c
_SUBSCRIPTIONS = Subscription.__table__.c
_UNSUBSCRIBED_CHANNEL_MESSAGES = select(_MESSAGES.id, _MESSAGES.recipient_id).where(
    _MESSAGES.id.in_(bindparam("message_ids", expanding=True)),
    _MESSAGES.realm_id == bindparam("realm_id"),
    _MESSAGES.is_channel_message,
    _MESSAGES.recipient_id.not_in(
        select(_SUBSCRIPTIONS.recipient_id).where(
            _SUBSCRIPTIONS.user_profile_id == bindparam("user_id"), _SUBSCRIPTIONS.active
        )
    ),
)


def _unsubscribed_channel_messages(
    session: Session, user: Requester, message_ids: Collection[int]
) -> tuple[set[int], list[int]]:
    """Of these, the channel messages outside the user's subscriptions, and those channels."""
    params = {"user_id": user.user_id, "realm_id": user.realm_id, "message_ids": storable_ids(message_ids)}
    rows = session.execute(_UNSUBSCRIBED_CHANNEL_MESSAGES, params).all()
    streams = streams_by_recipient(session, user.realm_id, {recipient_id for _, recipient_id in rows})
    return {message_id for message_id, _ in rows}, sorted({s.id for s in streams.values()})


def _flags_event(
    session: Session,
    user: Requester,
    op: str,
    flag: str,
    messages: list[int],
    *,
    all_messages: bool = False,
) -> ev.Event:
    if op == "add":
        return ev.UpdateMessageFlagsAdd(flag=flag, messages=messages, all=all_messages)
    details = None
    if flag == "read":
        details = {
            key: ev.UnreadMessageDetails(**value)
            for key, value in unread_message_details(session, user, messages).items()
        }
    return ev.UpdateMessageFlagsRemove(flag=flag, messages=messages, message_details=details)


# Built once, on the table: a statement made and ORM-compiled on every call cost several
# times what running it does (bench/instructions.py --kind flags counts it).
_USER_MESSAGES = UserMessage.__table__.c
_FLAGS_OF_MESSAGES = (
    select(_USER_MESSAGES.message_id, _USER_MESSAGES.flags)
    .where(
        _USER_MESSAGES.user_profile_id == bindparam("user_id"),
        _USER_MESSAGES.message_id.in_(bindparam("message_ids", expanding=True)),
    )
    .with_for_update()
)


def _flags_update(new_flags: Any) -> Any:
    """An UPDATE of the user's rows for some messages, setting ``flags`` to ``new_flags``."""
    return (
        update(cast(Table, UserMessage.__table__))
        .where(
            _USER_MESSAGES.user_profile_id == bindparam("user_id"),
            _USER_MESSAGES.message_id.in_(bindparam("message_ids", expanding=True)),
        )
        .values(flags=new_flags)
    )


_SET_FLAGS = _flags_update(_USER_MESSAGES.flags.op("|")(bindparam("bits")))
_CLEAR_FLAGS = _flags_update(_USER_MESSAGES.flags.op("&")(bindparam("bits")))


def update_flags(
    tx: Tx, session: Session, user: Requester, op: str, flag: str, message_ids: Sequence[int]
) -> FlagsResult:
    """Change one flag on messages, inside the caller's transaction."""
    check_flag_operation(op, flag)
    bit = int(FLAG_BITS[flag])
    adding = op == "add"
    target = bit if adding else 0
    ids = list(dict.fromkeys(message_ids))
    result = FlagsResult([])
    if flag == "read" and not adding:
        skipped, channels = _unsubscribed_channel_messages(session, user, ids)
        ids = [i for i in ids if i not in skipped]
        result.ignored_because_not_subscribed_channels = channels

    # Larger numbers name no message, and PostgreSQL refuses to compare with them.
    rows = session.execute(_FLAGS_OF_MESSAGES, {"user_id": user.user_id, "message_ids": storable_ids(ids)})
    current = {message_id: flags for message_id, flags in rows}
    changed = [i for i in ids if (current.get(i, DEFAULT_HISTORICAL_FLAGS) & bit) != target]
    historical = [i for i in changed if i not in current]
    if historical:
        if len(bulk_access_message_ids(session, user, historical)) != len(historical):
            raise invalid_message()
        bits = (int(DEFAULT_HISTORICAL_FLAGS) & ~bit) | target
        session.execute(
            insert(UserMessage),
            [{"user_profile_id": user.user_id, "message_id": i, "flags": bits} for i in historical],
        )
    existing = [i for i in changed if i in current]
    if existing:
        params = {"user_id": user.user_id, "message_ids": existing, "bits": bit if adding else ~bit}
        session.execute(_SET_FLAGS if adding else _CLEAR_FLAGS, params)
    result.messages = changed
    tx.send_event(user.realm_id, _flags_event(session, user, op, flag, changed), [user.user_id])
    return result


def do_update_message_flags(
    session: Session, user: Requester, op: str, flag: str, message_ids: Sequence[int]
) -> FlagsResult:
    check_flag_operation(op, flag)
    with transaction(session) as tx:
        return update_flags(tx, session, user, op, flag, message_ids)


def _clamp_range(num_before: int, num_after: int) -> tuple[int, int]:
    # Bounds the transaction's size, keeping at least half the budget for each side.
    limit = MAX_MESSAGES_PER_FETCH
    num_before = min(num_before, max(limit - num_after, limit // 2))
    num_after = min(num_after, max(limit - num_before, limit // 2))
    return num_before, num_after


def do_update_message_flags_for_narrow(
    session: Session,
    user: Requester,
    *,
    anchor: int | None,
    include_anchor: bool,
    num_before: int,
    num_after: int,
    narrow: Sequence[Any] | None,
    op: str,
    flag: str,
) -> dict[str, Any]:
    """Change a flag on a range of messages in a narrow; the body of the response."""
    check_flag_operation(op, flag)
    if num_before > 0 and num_after > 0 and not include_anchor:
        raise JsonableError("The anchor can only be excluded at an end of the range")
    num_before, num_after = _clamp_range(num_before, num_after)
    with transaction(session) as tx:
        nf = build_narrow_filter(session, user, narrow)
        fetched = fetch_message_rows(
            session,
            user,
            nf,
            anchor=anchor,
            include_anchor=include_anchor,
            num_before=num_before,
            num_after=num_after,
        )
        ids = [message_id for message_id, _ in fetched.rows]
        outcome = update_flags(tx, session, user, op, flag, ids)
    body: dict[str, Any] = {
        "processed_count": len(ids),
        "updated_count": len(outcome.messages),
        "first_processed_id": ids[0] if ids else None,
        "last_processed_id": ids[-1] if ids else None,
        "found_oldest": fetched.found_oldest,
        "found_newest": fetched.found_newest,
    }
    if outcome.ignored_because_not_subscribed_channels is not None:
        body["ignored_because_not_subscribed_channels"] = outcome.ignored_because_not_subscribed_channels
    return body


def mark_read(tx: Tx, session: Session, realm_id: int, user_id: int, conditions: Sequence[Any]) -> list[int]:
    """Mark the user's unread messages meeting the conditions (on Message) read."""
    unread = (
        select(UserMessage.message_id)
        .join(Message, Message.id == UserMessage.message_id)
        .where(UserMessage.user_profile_id == user_id, UserMessage.flags.op("&")(_READ) == 0, *conditions)
        .order_by(UserMessage.message_id)
    )
    ids = list(session.scalars(unread))
    if ids:
        session.execute(
            update(UserMessage)
            .where(UserMessage.user_profile_id == user_id, UserMessage.message_id.in_(ids))
            .values(flags=UserMessage.flags.op("|")(_READ))
        )
        tx.send_event(realm_id, ev.UpdateMessageFlagsAdd(flag="read", messages=ids), [user_id])
    return ids


def do_mark_all_as_read(session: Session, user: Requester) -> None:
    with transaction(session) as tx:
        session.execute(
            update(UserMessage)
            .where(UserMessage.user_profile_id == user.user_id, UserMessage.flags.op("&")(_READ) == 0)
            .values(flags=UserMessage.flags.op("|")(_READ))
        )
        # "all" tells clients to clear every unread count, without listing the messages.
        tx.send_event(
            user.realm_id, ev.UpdateMessageFlagsAdd(flag="read", messages=[], all=True), [user.user_id]
        )


def do_mark_stream_as_read(session: Session, user: Requester, stream_id: int) -> None:
    with transaction(session) as tx:
        stream = access_stream_by_id(session, user, stream_id, require_content_access=True)
        mark_read(tx, session, user.realm_id, user.user_id, [Message.recipient_id == stream.recipient_id])


def do_mark_topic_as_read(session: Session, user: Requester, stream_id: int, topic_name: str) -> None:
    with transaction(session) as tx:
        stream = access_stream_by_id(session, user, stream_id, require_content_access=True)
        topic = topic_for_lookup(topic_name)
        in_topic = [
            Message.recipient_id == stream.recipient_id,
            func.lower(Message.subject) == func.lower(literal(topic)),
        ]
        received = session.scalar(
            select(UserMessage.message_id)
            .join(Message, Message.id == UserMessage.message_id)
            .where(UserMessage.user_profile_id == user.user_id, *in_topic)
            .limit(1)
        )
        if received is None:
            raise JsonableError(f"No such topic '{topic_name}'")
        mark_read(tx, session, user.realm_id, user.user_id, in_topic)


def mark_unsubscribed_channels_read(
    tx: Tx, session: Session, removed: Sequence[tuple[UserProfile, Stream]]
) -> None:
    """Keep the unread invariant when users leave channels (called by the unsubscribe action)."""
    for user, stream in removed:
        mark_read(tx, session, user.realm_id, user.id, [Message.recipient_id == stream.recipient_id])
