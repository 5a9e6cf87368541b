"""Browser sign-in sessions: the cookie's token is stored only as its SHA-256."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base


class WebSession(Base):
    __tablename__ = "web_session"

    id: Mapped[int] = mapped_column(primary_key=True)
    # sha256 of the cookie value, hex: a leaked database does not log anyone in.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    # Sent back by the page in X-CSRFToken on every write made with the cookie.
    csrf_token: Mapped[str] = mapped_column(String(64))
    created: Mapped[datetime]
    last_seen: Mapped[datetime]
    # Slides forward with use (session_lifetime_days after last_seen).
    expires: Mapped[datetime] = mapped_column(index=True)
