"""Message drafts a user keeps on the server to share between their clients."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import NEVER_REUSED_IDS, Base


class Draft(Base):
    __tablename__ = "draft"
    __table_args__ = (
        # GET /drafts lists a user's drafts newest edit first.
        Index("ix_draft_user_profile_id_last_edit_time", "user_profile_id", "last_edit_time"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    # "" (unaddressed), "stream" or "private", as clients name them.
    type: Mapped[str] = mapped_column(String(8))
    # JSON list of IDs: one channel ID for "stream", user IDs for "private". Kept as IDs
    # rather than foreign keys: a draft outlives the channel or user it was addressed to.
    to: Mapped[str] = mapped_column(Text, default="[]")
    topic: Mapped[str] = mapped_column(Text, default="")
    content: Mapped[str] = mapped_column(Text)
    last_edit_time: Mapped[datetime]
