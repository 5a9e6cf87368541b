"""Alert words: words or phrases that flag a new message for the user who chose them."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base

MAX_ALERT_WORD_LENGTH = 100


class AlertWord(Base):
    __tablename__ = "alert_word"
    __table_args__ = (UniqueConstraint("user_profile_id", "word", name="uq_alert_word_user_profile_id_word"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    # Kept with the realm so one query finds every word a message might match.
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    user_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    word: Mapped[str] = mapped_column(String(MAX_ALERT_WORD_LENGTH))
