"""Saved snippets: a user's reusable pieces of message text."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import NEVER_REUSED_IDS, Base
from palaver.timeutil import utcnow

MAX_TITLE_LENGTH = 60


class SavedSnippet(Base):
    __tablename__ = "saved_snippet"
    __table_args__ = (NEVER_REUSED_IDS,)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    title: Mapped[str] = mapped_column(String(MAX_TITLE_LENGTH))
    content: Mapped[str] = mapped_column(Text)
    date_created: Mapped[datetime] = mapped_column(default=utcnow)
