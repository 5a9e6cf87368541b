"""Posting what an incoming webhook delivered: every notification of one request, or none."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from palaver.actions.messages import SendContext, do_send_message
from palaver.db.transaction import transaction
from palaver.lib.webhooks import webhook_target
from palaver.models import UserProfile
from palaver.models.requester import Requester
from palaver.webhooks.base import Notification


def do_send_webhook_notifications(
    session: Session,
    sender: UserProfile,
    notifications: Sequence[Notification],
    *,
    stream: str | None,
    topic: str | None,
    context: SendContext,
) -> list[int]:
    """Send the notifications as ``sender``; returns the new message IDs."""
    with transaction(session):
        return [
            do_send_message(
                session,
                Requester.of(sender),
                webhook_target(sender, stream, topic, note.topic),
                note.content,
                context,
            )
            for note in notifications
        ]
