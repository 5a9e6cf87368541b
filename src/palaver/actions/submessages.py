"""Submessages: a widget's first one, written with its message, and those users add."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_access import access_message
from palaver.lib.message_audience import message_audience
from palaver.lib.widgets import check_widget_data, format_submessage, message_widget_type, widget_for_content
from palaver.models.messages import Message
from palaver.models.requester import Requester
from palaver.models.submessages import SubMessage

MAX_MSG_TYPE_LENGTH = 100


def create_widget_submessages(session: Session, message: Message) -> list[dict[str, Any]]:
    """The widget submessage of a message being sent (inside its transaction), if any."""
    widget = widget_for_content(message.content)
    if widget is None:
        return []
    widget_type, extra_data = widget
    row = SubMessage(
        message_id=message.id,
        sender_id=message.sender_id,
        msg_type="widget",
        content=orjson.dumps({"widget_type": widget_type, "extra_data": extra_data}).decode(),
    )
    session.add(row)
    session.flush()
    return [format_submessage(row)]


def do_add_submessage(session: Session, user: Requester, message_id: int, msg_type: str, content: str) -> int:
    """Attach a submessage to a message the user can read; returns its ID."""
    with transaction(session) as tx:
        message, _ = access_message(session, user, message_id)
        if not msg_type or len(msg_type) > MAX_MSG_TYPE_LENGTH:
            raise JsonableError("Invalid msg_type")
        widget_type, has_any = message_widget_type(session, message.id)
        # Only the sender may start a widget on their message; others may then take part.
        if not has_any and user.user_id != message.sender_id:
            raise JsonableError("You cannot attach a submessage to this message.")
        try:
            data = orjson.loads(content)
        except orjson.JSONDecodeError:
            raise JsonableError("Invalid json for submessage") from None
        check_widget_data(widget_type, data, is_widget_author=user.user_id == message.sender_id)
        row = SubMessage(message_id=message.id, sender_id=user.user_id, msg_type=msg_type, content=content)
        session.add(row)
        session.flush()
        tx.send_event(
            message.realm_id,
            ev.SubmessageEvent(
                msg_type=msg_type,
                content=content,
                message_id=message.id,
                sender_id=user.user_id,
                submessage_id=row.id,
            ),
            message_audience(session, message),
        )
        return row.id
