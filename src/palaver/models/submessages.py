"""Submessages: the data of widgets (polls, to-do lists) attached to a message."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base


class SubMessage(Base):
    __tablename__ = "submessage"

    id: Mapped[int] = mapped_column(primary_key=True)
    message_id: Mapped[int] = mapped_column(ForeignKey("message.id", ondelete="CASCADE"), index=True)
    sender_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    msg_type: Mapped[str] = mapped_column(String(100))
    # JSON text, as clients send and read it.
    content: Mapped[str] = mapped_column(Text)
