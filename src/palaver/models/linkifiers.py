"""Linkifiers: patterns in messages and topics that become links."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import NEVER_REUSED_IDS, Base


class RealmFilter(Base):
    """One linkifier (Zulip's historical name for them is "realm filter")."""

    __tablename__ = "realm_filter"
    __table_args__ = (
        UniqueConstraint("realm_id", "pattern", name="uq_realm_filter_realm_pattern"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    # Bounded so the unique index stays within PostgreSQL's B-tree entry size.
    pattern: Mapped[str] = mapped_column(String(1000))
    url_template: Mapped[str] = mapped_column(Text)
    # Linkifiers apply in increasing order; ties (never made by the API) fall back to ID.
    order: Mapped[int] = mapped_column(default=0)
