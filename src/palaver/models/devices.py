"""Client devices (one per logged-in mobile install) and their push registration."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.timeutil import utcnow


class Device(Base):
    __tablename__ = "device"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    date_created: Mapped[datetime] = mapped_column(default=utcnow)

    # The client's notification key: a cryptosystem byte (0x31, secret box) and the key.
    # Secret: it never leaves the server except as the key that encrypts notifications.
    push_key: Mapped[bytes | None] = mapped_column(LargeBinary, default=None)
    # Unsigned 32-bit, so it needs a 64-bit column on PostgreSQL.
    push_key_id: Mapped[int | None] = mapped_column(BigInteger, default=None)

    # The push token as the relay needs it: only the relay can decrypt the registration.
    # ``token_id`` is the registration notifications go to; with Zulip's push service a new
    # token is ``pending_token_id`` until the service has accepted it (a worker forwards it),
    # and a refusal leaves the service's error code in ``push_registration_error_code``.
    token_kind: Mapped[str | None] = mapped_column(String(8), default=None)
    token_id: Mapped[str | None] = mapped_column(String(16), default=None)
    pending_token_id: Mapped[str | None] = mapped_column(String(16), default=None)
    push_registration_error_code: Mapped[str | None] = mapped_column(String(64), default=None)
    bouncer_public_key: Mapped[str | None] = mapped_column(Text, default=None)
    encrypted_push_registration: Mapped[str | None] = mapped_column(Text, default=None)
    push_token_last_updated: Mapped[datetime | None] = mapped_column(default=None)
