"""Invitations (single-address and reusable links) and one-time confirmation links."""

from __future__ import annotations

from datetime import datetime
from enum import IntEnum

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import NEVER_REUSED_IDS, Base
from palaver.timeutil import utcnow


class InviteStatus(IntEnum):
    ACTIVE = 0
    USED = 1
    REVOKED = 2


class Invitation(Base):
    """An email invitation (``email`` set) or a reusable link (``is_multiuse``).

    The API names both by ID plus ``is_multiuse``; one table keeps the IDs unique anyway.
    """

    __tablename__ = "invitation"
    __table_args__ = (NEVER_REUSED_IDS,)

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    is_multiuse: Mapped[bool] = mapped_column(default=False)
    email: Mapped[str | None] = mapped_column(String(254), default=None)
    referred_by_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    invited_at: Mapped[datetime] = mapped_column(default=utcnow)
    expiry_date: Mapped[datetime | None] = mapped_column(default=None)
    invited_as: Mapped[int] = mapped_column(default=400)
    # JSON list of channel IDs the new user joins.
    stream_ids: Mapped[str] = mapped_column(Text, default="[]")
    include_realm_default_subscriptions: Mapped[bool] = mapped_column(default=False)
    notify_referrer_on_join: Mapped[bool] = mapped_column(default=True)
    key: Mapped[str] = mapped_column(String(40), unique=True)
    status: Mapped[int] = mapped_column(default=InviteStatus.ACTIVE)


class ConfirmationKind(IntEnum):
    PASSWORD_RESET = 1
    EMAIL_CHANGE = 2


class Confirmation(Base):
    """A one-time link sent by email: password reset, or confirming a new address."""

    __tablename__ = "confirmation"

    id: Mapped[int] = mapped_column(primary_key=True)
    key: Mapped[str] = mapped_column(String(40), unique=True)
    kind: Mapped[int]
    user_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    new_email: Mapped[str | None] = mapped_column(String(254), default=None)
    created: Mapped[datetime] = mapped_column(default=utcnow)
    expires: Mapped[datetime]
    used: Mapped[bool] = mapped_column(default=False)
