"""What the server knows about uploaded images, for thumbnails (lib/thumbnails.py)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base


class ImageAttachment(Base):
    """An uploaded image: its size, recorded at upload, and the thumbnails made of it.

    ``status`` is "pending" until the thumbnail worker has made every format ("done"), or
    found it cannot ("failed"); ``claimed_at`` marks a worker busy with it, so several
    server processes never make the same thumbnails twice.
    """

    __tablename__ = "image_attachment"

    id: Mapped[int] = mapped_column(primary_key=True)
    attachment_id: Mapped[int] = mapped_column(ForeignKey("attachment.id", ondelete="CASCADE"), unique=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"))
    path_id: Mapped[str] = mapped_column(String(255), unique=True)
    original_width: Mapped[int]
    original_height: Mapped[int]
    frames: Mapped[int] = mapped_column(default=1)
    content_type: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(10), default="pending", index=True)
    claimed_at: Mapped[datetime | None] = mapped_column(default=None)
    # Names of the formats made, comma-separated ("840x560.webp,840x560-anim.webp").
    thumbnails: Mapped[str] = mapped_column(Text, default="")
