"""A user's status message and emoji (the deprecated ``away`` is ``presence_enabled``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow

MAX_STATUS_TEXT_LENGTH = 60


class UserStatus(Base):
    __tablename__ = "user_status"

    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True
    )
    status_text: Mapped[str] = mapped_column(String(MAX_STATUS_TEXT_LENGTH), default="")
    emoji_name: Mapped[str] = mapped_column(String(100), default="")
    emoji_code: Mapped[str] = mapped_column(String(100), default="")
    reaction_type: Mapped[str] = mapped_column(String(30), default="unicode_emoji")
    timestamp: Mapped[datetime] = mapped_column(default=utcnow)
