"""Messages to send later and reminders: both are a message the server sends at a set time.

As in Zulip, one table holds both kinds, told apart by ``delivery_type``: a reminder is a
direct message from the Notification Bot to the user who asked for it.
"""

from __future__ import annotations

from datetime import datetime
from enum import IntEnum

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import NEVER_REUSED_IDS, Base
from palaver.models.messages import MAX_TOPIC_COLUMN_LENGTH


class DeliveryType(IntEnum):
    SEND_LATER = 1
    REMIND = 2


class ScheduledMessage(Base):
    __tablename__ = "scheduled_message"
    __table_args__ = (
        # The scheduler's scan: undelivered, not failed, oldest due first.
        Index("ix_scheduled_message_pending", "delivered", "failed", "scheduled_timestamp"),
        # GET /scheduled_messages and GET /reminders list one user's pending items.
        Index("ix_scheduled_message_sender_id_delivery_type", "sender_id", "delivery_type", "delivered"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"))
    # Who scheduled it; for reminders also the user the reminder goes to.
    sender_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    delivery_type: Mapped[int] = mapped_column(default=DeliveryType.SEND_LATER)
    # "stream" or "private", as clients read them back.
    type: Mapped[str] = mapped_column(String(8))
    # The address is kept as the client gave it (channel ID, or the other users' IDs as a
    # JSON list) and checked again at delivery: permissions may change in between.
    stream_id: Mapped[int | None] = mapped_column(default=None)
    to: Mapped[str] = mapped_column(Text, default="[]")
    topic: Mapped[str] = mapped_column(String(MAX_TOPIC_COLUMN_LENGTH), default="")
    content: Mapped[str] = mapped_column(Text)
    rendered_content: Mapped[str] = mapped_column(Text)
    scheduled_timestamp: Mapped[datetime]
    # None: the sender has read what they sent (the default of sending now).
    read_by_sender: Mapped[bool | None] = mapped_column(default=None)
    sending_client: Mapped[str] = mapped_column(String(30), default="")
    # Set in the same transaction that sends the message, so no two schedulers send it.
    delivered: Mapped[bool] = mapped_column(default=False)
    delivered_message_id: Mapped[int | None] = mapped_column(default=None)
    failed: Mapped[bool] = mapped_column(default=False)
    failure_message: Mapped[str | None] = mapped_column(Text, default=None)
    # Reminders: the message reminded of (a plain ID; the message may be deleted meanwhile).
    reminder_target_message_id: Mapped[int | None] = mapped_column(default=None)
    reminder_note: Mapped[str | None] = mapped_column(Text, default=None)
