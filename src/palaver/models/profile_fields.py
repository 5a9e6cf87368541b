"""Custom profile fields an organization defines, and each user's values."""

from __future__ import annotations

from enum import IntEnum

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import NEVER_REUSED_IDS, Base


class ProfileFieldType(IntEnum):
    SHORT_TEXT = 1
    LONG_TEXT = 2
    SELECT = 3
    DATE = 4
    URL = 5
    USER = 6
    EXTERNAL_ACCOUNT = 7
    PRONOUNS = 8


# Types whose values are Markdown and so carry a rendered_value.
MARKDOWN_FIELD_TYPES = frozenset({ProfileFieldType.SHORT_TEXT, ProfileFieldType.LONG_TEXT})


class CustomProfileField(Base):
    __tablename__ = "custom_profile_field"
    __table_args__ = (
        UniqueConstraint("realm_id", "name", name="uq_custom_profile_field_realm_name"),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(40))
    hint: Mapped[str] = mapped_column(String(80), default="")
    field_type: Mapped[int] = mapped_column(default=ProfileFieldType.SHORT_TEXT)
    # JSON text: choices for SELECT, subtype/url_pattern for EXTERNAL_ACCOUNT.
    field_data: Mapped[str] = mapped_column(Text, default="")
    order: Mapped[int] = mapped_column(default=0)
    display_in_profile_summary: Mapped[bool] = mapped_column(default=False)
    required: Mapped[bool] = mapped_column(default=False)
    editable_by_user: Mapped[bool] = mapped_column(default=True)


class CustomProfileFieldValue(Base):
    __tablename__ = "custom_profile_field_value"
    __table_args__ = (
        UniqueConstraint("user_profile_id", "field_id", name="uq_custom_profile_field_value_user_field"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), index=True
    )
    field_id: Mapped[int] = mapped_column(ForeignKey("custom_profile_field.id", ondelete="CASCADE"))
    value: Mapped[str] = mapped_column(Text)
    rendered_value: Mapped[str | None] = mapped_column(Text, default=None)
