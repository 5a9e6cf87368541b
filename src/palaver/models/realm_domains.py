"""Email domains an organization accepts new users from."""

from __future__ import annotations

from sqlalchemy import ForeignKey, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base


class RealmDomain(Base):
    __tablename__ = "realm_domain"
    __table_args__ = (UniqueConstraint("realm_id", "domain", name="uq_realm_domain_realm_domain"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    # Stored lower-cased; the API names a domain by this text.
    domain: Mapped[str] = mapped_column(String(255))
    allow_subdomains: Mapped[bool] = mapped_column(default=False)
