"""User groups: named groups, system role groups, and anonymous groups behind group settings."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models.base import Base
from palaver.models.names import NameKeyed, name_key_column
from palaver.timeutil import utcnow

GROUP_PERMISSION_SETTINGS = (
    "can_add_members_group",
    "can_join_group",
    "can_leave_group",
    "can_manage_group",
    "can_mention_group",
    "can_remove_members_group",
)


class UserGroup(NameKeyed, Base):
    __tablename__ = "user_group"
    __table_args__ = (
        UniqueConstraint("realm_id", "name", name="uq_user_group_realm_name"),
        # Named groups are unique regardless of case (models/names.py); anonymous ones have no key.
        Index("uq_user_group_realm_name_key", "realm_id", "name_key", unique=True),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    # Anonymous groups (a group-setting value given as members and subgroups) have no name.
    name: Mapped[str | None] = mapped_column(String(100), default=None)
    name_key: Mapped[str | None] = name_key_column(nullable=True)
    description: Mapped[str] = mapped_column(Text, default="")
    is_system_group: Mapped[bool] = mapped_column(default=False)
    deactivated: Mapped[bool] = mapped_column(default=False)
    date_created: Mapped[datetime | None] = mapped_column(default=utcnow)
    creator_id: Mapped[int | None] = mapped_column(
        ForeignKey("user_profile.id", ondelete="SET NULL"), default=None
    )
    can_add_members_group: Mapped[int | None] = mapped_column(ForeignKey("user_group.id"), default=None)
    can_join_group: Mapped[int | None] = mapped_column(ForeignKey("user_group.id"), default=None)
    can_leave_group: Mapped[int | None] = mapped_column(ForeignKey("user_group.id"), default=None)
    can_manage_group: Mapped[int | None] = mapped_column(ForeignKey("user_group.id"), default=None)
    can_mention_group: Mapped[int | None] = mapped_column(ForeignKey("user_group.id"), default=None)
    can_remove_members_group: Mapped[int | None] = mapped_column(ForeignKey("user_group.id"), default=None)

    @property
    def is_named(self) -> bool:
        return self.name is not None


class UserGroupMembership(Base):
    __tablename__ = "user_group_membership"

    user_group_id: Mapped[int] = mapped_column(
        ForeignKey("user_group.id", ondelete="CASCADE"), primary_key=True
    )
    user_profile_id: Mapped[int] = mapped_column(
        ForeignKey("user_profile.id", ondelete="CASCADE"), primary_key=True, index=True
    )


class GroupGroupMembership(Base):
    __tablename__ = "group_group_membership"

    supergroup_id: Mapped[int] = mapped_column(
        ForeignKey("user_group.id", ondelete="CASCADE"), primary_key=True
    )
    subgroup_id: Mapped[int] = mapped_column(
        ForeignKey("user_group.id", ondelete="CASCADE"), primary_key=True, index=True
    )
