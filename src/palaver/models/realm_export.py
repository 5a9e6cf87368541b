"""Data exports requested through the API (POST /export/realm), made in the background."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow


class RealmExportType:
    PUBLIC = 1
    STANDARD = 2


class RealmExportRecord(Base):
    __tablename__ = "realm_export"
    __table_args__ = (Index("ix_realm_export_pending", "pending"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    acting_user_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    export_type: Mapped[int] = mapped_column(default=RealmExportType.PUBLIC)
    date_requested: Mapped[datetime] = mapped_column(default=utcnow)
    # Claimed by a worker (so two processes never make the same export).
    date_started: Mapped[datetime | None] = mapped_column(default=None)
    date_succeeded: Mapped[datetime | None] = mapped_column(default=None)
    date_failed: Mapped[datetime | None] = mapped_column(default=None)
    date_deleted: Mapped[datetime | None] = mapped_column(default=None)
    pending: Mapped[bool] = mapped_column(default=True)
    # Storage key of the archive: <realm_id>/exports/<unguessable token>/<file name>.
    storage_key: Mapped[str | None] = mapped_column(String(200), default=None)
    size_bytes: Mapped[int | None] = mapped_column(default=None)
