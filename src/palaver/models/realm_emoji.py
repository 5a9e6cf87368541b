"""Custom emoji an organization uploads."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base, partial_index


class RealmEmoji(Base):
    __tablename__ = "realm_emoji"
    __table_args__ = (
        # Deactivated emoji keep their names (old messages still show them), so only one
        # active emoji may hold a name; a new one may reuse a deactivated one's.
        partial_index(
            "uq_realm_emoji_realm_active_name",
            "realm_id",
            "name",
            unique=True,
            sqlite_where="deactivated = 0",
            postgresql_where="NOT deactivated",
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    author_id: Mapped[int | None] = mapped_column(
        ForeignKey("user_profile.id", ondelete="SET NULL"), default=None
    )
    name: Mapped[str] = mapped_column(String(60))
    # Name of the image under <realm_id>/emoji/images/ in storage; set once the ID is known.
    file_name: Mapped[str] = mapped_column(String(80), default="")
    is_animated: Mapped[bool] = mapped_column(default=False)
    deactivated: Mapped[bool] = mapped_column(default=False)
