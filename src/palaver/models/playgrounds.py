"""Code playgrounds: where clients may open a code block of a given language."""

from __future__ import annotations

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import NEVER_REUSED_IDS, Base
from palaver.models.names import NameKeyed, name_key_column


class RealmPlayground(NameKeyed, Base):
    __tablename__ = "realm_playground"
    __table_args__ = (
        # Clients pick a playground by language and then by name, so that pair must be unique,
        # the name regardless of case (models/names.py).
        UniqueConstraint(
            "realm_id", "pygments_language", "name", name="uq_realm_playground_realm_language_name"
        ),
        Index(
            "uq_realm_playground_realm_language_name_key",
            "realm_id",
            "pygments_language",
            "name_key",
            unique=True,
        ),
        NEVER_REUSED_IDS,
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(60))
    name_key: Mapped[str] = name_key_column()
    pygments_language: Mapped[str] = mapped_column(String(40))
    url_template: Mapped[str] = mapped_column(Text)
