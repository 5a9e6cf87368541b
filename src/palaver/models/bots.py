"""What a bot has beyond its user row: default channels and its outgoing-webhook service."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base


class BotDefaults(Base):
    """A bot's default channels; a bot without a row has none (the usual case)."""

    __tablename__ = "bot_defaults"

    bot_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True
    )
    default_sending_stream_id: Mapped[int | None] = mapped_column(
        ForeignKey("stream.id", ondelete="SET NULL"), default=None
    )
    default_events_register_stream_id: Mapped[int | None] = mapped_column(
        ForeignKey("stream.id", ondelete="SET NULL"), default=None
    )
    default_all_public_streams: Mapped[bool] = mapped_column(default=False)


class ServiceInterface:
    GENERIC = 1
    SLACK = 2


class BotService(Base):
    """Where an outgoing-webhook bot's messages are delivered."""

    __tablename__ = "bot_service"

    id: Mapped[int] = mapped_column(primary_key=True)
    bot_profile_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    base_url: Mapped[str] = mapped_column(Text)
    # Sent with each delivery so the receiver can tell the request came from this server.
    token: Mapped[str] = mapped_column(String(64))
    interface: Mapped[int] = mapped_column(default=ServiceInterface.GENERIC)
