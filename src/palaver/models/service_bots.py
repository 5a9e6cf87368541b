"""Work for service bots (outgoing-webhook and embedded) and embedded bots' configuration.

A message that mentions a service bot, or is a direct message to one, leaves a
``ServiceBotEvent`` row in the sending transaction; the bot worker
(``workers/outgoing_webhooks.py``) delivers it later, so a restart loses none.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow


class ServiceBotEvent(Base):
    __tablename__ = "service_bot_event"
    __table_args__ = (Index("ix_service_bot_event_next_attempt_at", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    bot_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    message_id: Mapped[int] = mapped_column(ForeignKey("message.id", ondelete="CASCADE"), index=True)
    # "mention" or "direct_message", as the outgoing payload names it.
    trigger: Mapped[str] = mapped_column(String(20))
    attempts: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(default=utcnow)
    # A worker holds the row until then; a crashed worker's claim runs out.
    claimed_until: Mapped[datetime | None] = mapped_column(default=None)


class BotConfigData(Base):
    """An embedded bot's configuration (``config_data`` of POST /bots), one row per key."""

    __tablename__ = "bot_config_data"
    __table_args__ = (
        UniqueConstraint("bot_profile_id", "key", name="uq_bot_config_data_bot_profile_id_key"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    bot_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(100))
    value: Mapped[str] = mapped_column(Text)
