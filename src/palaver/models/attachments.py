"""Uploaded files and the messages that link them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import NEVER_REUSED_IDS, Base
from palaver.timeutil import utcnow


class Attachment(Base):
    """One uploaded file; its bytes live in the file storage under ``path_id``."""

    __tablename__ = "attachment"
    __table_args__ = (Index("ix_attachment_owner_id_id", "owner_id", "id"), NEVER_REUSED_IDS)

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("user_profile.id", ondelete="CASCADE"))
    # "<realm_id>/<2 hex>/<random>/<sanitized name>": the file's URL is /user_uploads/<path_id>.
    path_id: Mapped[str] = mapped_column(String(255), unique=True)
    file_name: Mapped[str] = mapped_column(Text)
    content_type: Mapped[str | None] = mapped_column(String(255), default=None)
    size: Mapped[int] = mapped_column(BigInteger)
    create_time: Mapped[datetime] = mapped_column(default=utcnow)
    # Signs temporary URLs for this file alone, so no server-wide secret has to be shared
    # between worker processes.
    url_secret: Mapped[str] = mapped_column(String(64))


class AttachmentMessage(Base):
    """A message whose content links an attachment (many-to-many)."""

    __tablename__ = "attachment_message"
    __table_args__ = (Index("ix_attachment_message_message_id", "message_id"),)

    attachment_id: Mapped[int] = mapped_column(
        ForeignKey("attachment.id", ondelete="CASCADE"), primary_key=True
    )
    message_id: Mapped[int] = mapped_column(ForeignKey("message.id", ondelete="CASCADE"), primary_key=True)
