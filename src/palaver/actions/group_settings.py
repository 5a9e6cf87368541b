"""Storing group-setting values (``lib/group_settings.py`` validates and renders them).

A value held by an object's setting is a user-group ID: a named group as it is, or an
anonymous group made for that one setting. These functions flush rows but open no
transaction and send no events; the calling action owns both.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete
from sqlalchemy.orm import Session

from palaver.lib.group_settings import (
    CREATOR,
    GroupSettingRule,
    ResolvedValue,
    current_value,
    system_group_id,
)
from palaver.lib.user_groups import NOBODY
from palaver.models import GroupGroupMembership, UserGroup, UserGroupMembership


def store_group_setting_value(session: Session, realm_id: int, value: ResolvedValue) -> int:
    """The group ID to store for a value, creating its anonymous group when it needs one."""
    if value.group_id is not None:
        return value.group_id
    group = UserGroup(realm_id=realm_id, name=None, description="", is_system_group=False)
    session.add(group)
    session.flush()
    session.add_all(UserGroupMembership(user_group_id=group.id, user_profile_id=u) for u in value.members)
    session.add_all(GroupGroupMembership(supergroup_id=group.id, subgroup_id=g) for g in value.subgroups)
    session.flush()
    return group.id


def default_group_setting(
    session: Session, realm_id: int, rule: GroupSettingRule, creator_id: int | None
) -> int:
    if rule.default == CREATOR:
        if creator_id is None:
            return system_group_id(session, realm_id, NOBODY)
        return store_group_setting_value(session, realm_id, ResolvedValue(members=frozenset({creator_id})))
    return system_group_id(session, realm_id, rule.default)


def set_group_setting(
    session: Session, target: Any, setting_name: str, value: ResolvedValue, realm_id: int
) -> bool:
    """Point ``target.<setting_name>`` at the value; returns whether it changed.

    The anonymous group the setting held before belongs to it alone and is removed.
    """
    old_id: int = getattr(target, setting_name)
    if current_value(session, old_id) == value:
        return False
    setattr(target, setting_name, store_group_setting_value(session, realm_id, value))
    session.flush()
    old = session.get(UserGroup, old_id)
    if old is not None and old.name is None:
        session.execute(delete(UserGroup).where(UserGroup.id == old_id))
    return True
