"""Default channel groups: named sets of channels new users may pick at sign-up."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import NEVER_REUSED_IDS, Base


class DefaultStreamGroup(Base):
    __tablename__ = "default_stream_group"
    __table_args__ = (
        UniqueConstraint("realm_id", "name", name="uq_default_stream_group_realm_id_name"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(60))
    description: Mapped[str] = mapped_column(Text, default="")


class DefaultStreamGroupChannel(Base):
    __tablename__ = "default_stream_group_channel"

    group_id: Mapped[int] = mapped_column(
        ForeignKey("default_stream_group.id", ondelete="CASCADE"), primary_key=True
    )
    stream_id: Mapped[int] = mapped_column(ForeignKey("stream.id", ondelete="CASCADE"), primary_key=True)
