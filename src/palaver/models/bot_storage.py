"""Key-value state bots keep on the server (PUT/GET/DELETE /bot_storage)."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base


class BotStorageData(Base):
    __tablename__ = "bot_storage_data"
    __table_args__ = (UniqueConstraint("bot_profile_id", "key", name="uq_bot_storage_data_bot_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    bot_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(200))
    value: Mapped[str] = mapped_column(Text)
