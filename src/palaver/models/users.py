"""People and bots."""

from __future__ import annotations

from datetime import datetime
from enum import IntEnum
from typing import Protocol

from sqlalchemy import ForeignKey, Index, String, func
from sqlalchemy.orm import Mapped, mapped_column, relationship

from palaver.models.base import Base
from palaver.models.realm import Realm
from palaver.models.user_settings import UserSettingsMixin
from palaver.timeutil import utcnow


class Role(IntEnum):
    OWNER = 100
    ADMINISTRATOR = 200
    MODERATOR = 300
    MEMBER = 400
    GUEST = 600


class BotType(IntEnum):
    GENERIC = 1
    INCOMING_WEBHOOK = 2
    OUTGOING_WEBHOOK = 3
    EMBEDDED = 4


class EmailVisibility(IntEnum):
    EVERYONE = 1
    MEMBERS = 2
    ADMINS = 3
    NOBODY = 4
    MODERATORS = 5


class _HasRole(Protocol):
    @property
    def role(self) -> int: ...


class RoleChecks:
    """The role questions of anything with a ``role``: ``UserProfile`` and the realm cache's
    ``Requester`` (``models/requester.py``) and the realm cache's ``CachedUser`` ask them the same way."""

    __slots__ = ()

    @property
    def is_realm_owner(self: _HasRole) -> bool:
        return self.role == Role.OWNER

    @property
    def is_realm_admin(self: _HasRole) -> bool:
        return self.role in (Role.OWNER, Role.ADMINISTRATOR)

    @property
    def is_moderator(self: _HasRole) -> bool:
        return self.role == Role.MODERATOR

    @property
    def is_guest(self: _HasRole) -> bool:
        return self.role == Role.GUEST


class UserProfile(UserSettingsMixin, RoleChecks, Base):
    __tablename__ = "user_profile"
    __table_args__ = (
        # Emails are unique per realm regardless of case; the functional index enforces it
        # on both SQLite and PostgreSQL.
        Index("uq_user_profile_realm_delivery_email", "realm_id", func.lower("delivery_email"), unique=True),
        Index("ix_user_profile_realm_email", "realm_id", func.lower("email")),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    # The API email: the real address, or user<ID>@<host> when the owner hides it.
    email: Mapped[str] = mapped_column(String(254))
    delivery_email: Mapped[str] = mapped_column(String(254))
    full_name: Mapped[str] = mapped_column(String(100))
    role: Mapped[int] = mapped_column(default=Role.MEMBER)
    is_active: Mapped[bool] = mapped_column(default=True)
    is_bot: Mapped[bool] = mapped_column(default=False)
    bot_type: Mapped[int | None] = mapped_column(default=None)
    bot_owner_id: Mapped[int | None] = mapped_column(
        ForeignKey("user_profile.id", ondelete="SET NULL"), default=None
    )
    timezone: Mapped[str] = mapped_column(String(40), default="")
    avatar_source: Mapped[str] = mapped_column(String(1), default="G")
    avatar_version: Mapped[int] = mapped_column(default=1)
    # Random part of an uploaded avatar's storage key (lib/avatars.py): unguessable URLs.
    avatar_hash: Mapped[str | None] = mapped_column(String(40), default=None)
    date_joined: Mapped[datetime] = mapped_column(default=utcnow)
    last_login: Mapped[datetime | None] = mapped_column(default=None)
    is_imported_stub: Mapped[bool] = mapped_column(default=False)
    api_key: Mapped[str] = mapped_column(String(64), unique=True)
    password: Mapped[str | None] = mapped_column(String(200), default=None)

    realm: Mapped[Realm] = relationship(lazy="select")
