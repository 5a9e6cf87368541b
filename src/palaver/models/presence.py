"""Presence: when each user last had a client connected, and last used one."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base


class UserPresence(Base):
    __tablename__ = "user_presence"
    # Incremental fetches ask for a realm's rows newer than an update ID.
    __table_args__ = (Index("ix_user_presence_realm_id_last_update_id", "realm_id", "last_update_id"),)

    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True
    )
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"))
    last_connected_time: Mapped[datetime]
    # None until a client reports the user active.
    last_active_time: Mapped[datetime | None] = mapped_column(default=None)
    last_update_id: Mapped[int] = mapped_column(default=0)


class PresenceSequence(Base):
    """The realm's last presence update ID; clients poll for rows newer than theirs."""

    __tablename__ = "presence_sequence"

    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), primary_key=True)
    last_update_id: Mapped[int] = mapped_column(default=0)
