"""Muted users: people whose messages and presence a user chose to hide."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow


class MutedUser(Base):
    __tablename__ = "muted_user"
    __table_args__ = (
        UniqueConstraint(
            "user_profile_id", "muted_user_id", name="uq_muted_user_user_profile_id_muted_user_id"
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    muted_user_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"), index=True)
    date_muted: Mapped[datetime] = mapped_column(default=utcnow)
