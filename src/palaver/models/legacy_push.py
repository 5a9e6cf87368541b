"""Push tokens registered through the legacy, unencrypted FCM/APNs operations."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow


class LegacyPushToken(Base):
    __tablename__ = "legacy_push_token"
    __table_args__ = (
        UniqueConstraint("user_profile_id", "kind", "token", name="uq_legacy_push_token_user_profile_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    # "fcm" (POST /users/me/android_gcm_reg_id) or "apns" (POST /users/me/apns_device_token).
    kind: Mapped[str] = mapped_column(String(8))
    token: Mapped[str] = mapped_column(String(4096))
    # APNs only: the iOS app's bundle ID the token belongs to.
    ios_app_id: Mapped[str | None] = mapped_column(String(255), default=None)
    last_updated: Mapped[datetime] = mapped_column(default=utcnow)
