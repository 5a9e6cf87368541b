"""Per-user topic visibility: muted, unmuted (in a muted channel) and followed topics."""

from __future__ import annotations

from datetime import datetime
from enum import IntEnum

from sqlalchemy import ForeignKey, Index, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow


class VisibilityPolicy(IntEnum):
    INHERIT = 0
    MUTED = 1
    UNMUTED = 2
    FOLLOWED = 3


class UserTopic(Base):
    __tablename__ = "user_topic"
    __table_args__ = (
        # Topics are one conversation regardless of case, so one row per user and topic.
        Index(
            "uq_user_topic_user_stream_topic",
            "user_profile_id",
            "stream_id",
            text("lower(topic_name)"),
            unique=True,
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    stream_id: Mapped[int] = mapped_column(ForeignKey("stream.id", ondelete="CASCADE"), index=True)
    topic_name: Mapped[str] = mapped_column(Text)
    visibility_policy: Mapped[int] = mapped_column(default=VisibilityPolicy.INHERIT)
    last_updated: Mapped[datetime] = mapped_column(default=utcnow)
