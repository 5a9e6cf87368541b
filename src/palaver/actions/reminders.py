"""Writes to reminders: a Notification Bot direct message to oneself about a message, later.

Delivery is shared with scheduled messages (``do_deliver_scheduled_message``).
"""

from __future__ import annotations

from datetime import datetime

import orjson
from sqlalchemy.orm import Session

from palaver.actions.messages import SendContext, check_message
from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.message_access import access_message
from palaver.lib.message_send import DirectTarget
from palaver.lib.scheduled_messages import access_reminder, format_reminder, reminder_content
from palaver.models.requester import Requester
from palaver.models.scheduled_messages import DeliveryType, ScheduledMessage


def do_create_reminder(
    session: Session,
    user: Requester,
    message_id: int,
    deliver_at: datetime,
    note: str | None,
    context: SendContext,
) -> ScheduledMessage:
    with transaction(session) as tx:
        message, _ = access_message(session, user, message_id)
        content = reminder_content(session, message, note, context.realm_url)
        # As in Zulip, checked as a direct message to oneself, which the user sends in
        # effect (the bot only delivers it); this also renders it for clients' lists.
        checked = check_message(session, user, DirectTarget(user_ids=(user.user_id,)), content, context)
        item = ScheduledMessage(
            realm_id=user.realm_id,
            sender_id=user.user_id,
            delivery_type=DeliveryType.REMIND,
            type="private",
            to=orjson.dumps([user.user_id]).decode(),
            content=checked.content,
            rendered_content=checked.rendered.html,
            scheduled_timestamp=deliver_at,
            sending_client=context.client[:30],
            reminder_target_message_id=message.id,
            reminder_note=note,
        )
        session.add(item)
        session.flush()
        payload = ev.ReminderPayload(**format_reminder(item))
        tx.send_event(user.realm_id, ev.RemindersAdd(reminders=[payload]), [user.user_id])
    return item


def do_delete_reminder(session: Session, user: Requester, reminder_id: int) -> None:
    with transaction(session) as tx:
        item = access_reminder(session, user, reminder_id)
        session.delete(item)
        tx.send_event(user.realm_id, ev.RemindersRemove(reminder_id=reminder_id), [user.user_id])
