"""Writes to scheduled messages, and delivering due ones (scheduled messages and reminders).

Scheduling runs every check of sending (``check_message``), so the user hears of a
problem at once; delivery sends through ``do_send_message``, which checks again, since
permissions may have changed in between. A delivery that fails is marked failed with its
error, as in Zulip, and never retried on its own: the user edits or deletes it.
"""

from __future__ import annotations

import enum
import logging
from datetime import datetime
from typing import cast

import orjson
from sqlalchemy import update
from sqlalchemy.orm import Session

from palaver.actions.messages import SendContext, check_message, do_send_message
from palaver.actions.notification_bot import get_or_create_notification_bot
from palaver.config import Settings
from palaver.db.transaction import Tx, rowcount, transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_send import ChannelTarget, SendTarget, normalize_topic, parse_send_target
from palaver.lib.realm import realm_email_host, realm_url
from palaver.lib.scheduled_messages import (
    SCHEDULED_IN_PAST,
    access_scheduled_message,
    direct_to,
    format_scheduled_message,
    send_target,
)
from palaver.models import Realm, UserProfile
from palaver.models.requester import Requester
from palaver.models.scheduled_messages import DeliveryType, ScheduledMessage

logger = logging.getLogger(__name__)


def _apply_checked(
    session: Session,
    item: ScheduledMessage,
    sender: Requester,
    target: SendTarget,
    content: str,
    context: SendContext,
) -> None:
    checked = check_message(session, sender, target, content, context)
    stream = checked.recipients.stream
    item.type = "stream" if stream is not None else "private"
    item.stream_id = stream.id if stream is not None else None
    item.topic = checked.recipients.topic
    item.to = orjson.dumps(
        [] if stream is not None else direct_to(sender.user_id, list(checked.recipients.user_ids))
    ).decode()
    item.content = checked.content
    item.rendered_content = checked.rendered.html


def do_schedule_message(
    session: Session,
    sender: Requester,
    target: SendTarget,
    content: str,
    deliver_at: datetime,
    context: SendContext,
) -> ScheduledMessage:
    with transaction(session) as tx:
        item = ScheduledMessage(
            realm_id=sender.realm_id,
            sender_id=sender.user_id,
            delivery_type=DeliveryType.SEND_LATER,
            scheduled_timestamp=deliver_at,
            read_by_sender=context.read_by_sender,
            sending_client=context.client[:30],
        )
        _apply_checked(session, item, sender, target, content, context)
        session.add(item)
        session.flush()
        payload = ev.ScheduledMessagePayload(**format_scheduled_message(item))
        tx.send_event(
            sender.realm_id, ev.ScheduledMessagesAdd(scheduled_messages=[payload]), [sender.user_id]
        )
    return item


def do_edit_scheduled_message(
    session: Session,
    sender: Requester,
    item_id: int,
    *,
    message_type: str | None,
    to: int | list[int] | None,
    topic: str | None,
    content: str | None,
    deliver_at: datetime | None,
    context: SendContext,
) -> None:
    """Change what was given; the message is checked again if its address or content changed."""
    with transaction(session) as tx:
        item = access_scheduled_message(session, sender, item_id)
        if item.delivered:
            raise JsonableError("Scheduled message was already sent")
        # A failed message would otherwise be due again at once, at its past time.
        if item.failed and deliver_at is None:
            raise JsonableError(SCHEDULED_IN_PAST)
        if message_type is not None or to is not None or content is not None:
            new_type = message_type if message_type is not None else item.type
            new_to: int | list[int] = (
                to
                if to is not None
                else (
                    item.stream_id
                    if item.type == "stream" and item.stream_id is not None
                    else orjson.loads(item.to)
                )
            )
            new_topic = topic if topic is not None else item.topic
            target = parse_send_target(new_type, cast("int | list[int | str]", new_to), new_topic)
            _apply_checked(
                session, item, sender, target, content if content is not None else item.content, context
            )
        elif topic is not None and item.type == "stream":
            assert item.stream_id is not None
            # Only the topic changed: it must still be allowed in the channel.
            check_message(
                session,
                sender,
                ChannelTarget(topic=topic, stream_id=item.stream_id),
                item.content,
                context,
            )
            item.topic = normalize_topic(topic)
        if deliver_at is not None:
            item.scheduled_timestamp = deliver_at
        item.sending_client = context.client[:30]
        item.failed = False
        item.failure_message = None
        session.flush()
        payload = ev.ScheduledMessagePayload(**format_scheduled_message(item))
        tx.send_event(
            sender.realm_id, ev.ScheduledMessagesUpdate(scheduled_message=payload), [sender.user_id]
        )


def do_delete_scheduled_message(session: Session, sender: Requester, item_id: int) -> None:
    with transaction(session) as tx:
        item = access_scheduled_message(session, sender, item_id)
        session.delete(item)
        tx.send_event(
            sender.realm_id, ev.ScheduledMessagesRemove(scheduled_message_id=item_id), [sender.user_id]
        )


# Delivery ---------------------------------------------------------------------------------


class Delivery(enum.Enum):
    DELIVERED = "delivered"
    FAILED = "failed"
    # Another scheduler delivered (or failed) it first, or it was deleted or edited.
    SKIPPED = "skipped"


def _claim(session: Session, item_id: int, **values: object) -> bool:
    """Set values on an item only if nobody has delivered or failed it yet.

    The conditional UPDATE is the lock between schedulers: on PostgreSQL a second one
    waits for the first's row lock and then matches no row; on SQLite writers are
    serialized (BEGIN IMMEDIATE). Only the one that changed the row goes on.
    """
    result = session.execute(
        update(ScheduledMessage)
        .where(
            ScheduledMessage.id == item_id,
            ScheduledMessage.delivered.is_(False),
            ScheduledMessage.failed.is_(False),
        )
        .values(**values)
        .execution_options(synchronize_session=False)
    )
    return rowcount(result) == 1


def _remove_event(tx: Tx, item: ScheduledMessage) -> None:
    event: ev.Event
    if item.delivery_type == DeliveryType.REMIND:
        event = ev.RemindersRemove(reminder_id=item.id)
    else:
        event = ev.ScheduledMessagesRemove(scheduled_message_id=item.id)
    tx.send_event(item.realm_id, event, [item.sender_id])


def do_deliver_scheduled_message(session: Session, settings: Settings, item_id: int) -> Delivery:
    """Send one due item, in one transaction, unless another scheduler already has."""
    item = session.get(ScheduledMessage, item_id, populate_existing=True)
    if item is None or item.delivered or item.failed:
        return Delivery.SKIPPED
    realm = session.get(Realm, item.realm_id)
    assert realm is not None
    context = SendContext(
        realm_url=realm_url(settings, realm),
        email_host=realm_email_host(settings, realm),
        client=item.sending_client or "Internal",
        read_by_sender=item.read_by_sender,
    )
    try:
        sender = None
        if item.delivery_type == DeliveryType.REMIND:
            # Made before the delivery's transaction, which could not recover from a
            # concurrent creation.
            sender = get_or_create_notification_bot(session, realm, context.email_host)
        with transaction(session) as tx:
            if not _claim(session, item_id, delivered=True):
                return Delivery.SKIPPED
            item = session.get(ScheduledMessage, item_id, populate_existing=True)
            assert item is not None
            owner = session.get(UserProfile, item.sender_id)
            assert owner is not None
            if realm.deactivated:
                raise JsonableError("This organization has been deactivated")
            if not owner.is_active:
                raise JsonableError("Account is deactivated")
            message_id = do_send_message(
                session, Requester.of(sender or owner), send_target(item), item.content, context
            )
            item.delivered_message_id = message_id
            _remove_event(tx, item)
        return Delivery.DELIVERED
    except JsonableError as error:
        reason = error.msg
    except Exception:
        # Unexpected errors are not retried either: a message that crashes every attempt
        # would otherwise be attempted for ever.
        logger.exception("delivering scheduled message %s failed", item_id)
        session.rollback()
        reason = "Internal server error"
    return _mark_failed(session, item_id, reason)


def _mark_failed(session: Session, item_id: int, reason: str) -> Delivery:
    with transaction(session) as tx:
        if not _claim(session, item_id, failed=True, failure_message=reason):
            return Delivery.SKIPPED
        item = session.get(ScheduledMessage, item_id, populate_existing=True)
        assert item is not None
        if item.delivery_type == DeliveryType.REMIND:
            # Reminders have no update event, and failed ones are not listed.
            _remove_event(tx, item)
        else:
            payload = ev.ScheduledMessagePayload(**format_scheduled_message(item))
            tx.send_event(
                item.realm_id, ev.ScheduledMessagesUpdate(scheduled_message=payload), [item.sender_id]
            )
    return Delivery.FAILED
