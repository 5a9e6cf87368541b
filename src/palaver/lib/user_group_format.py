"""Named user groups as clients see them: GET /user_groups, /register and user_group events.

Above ``user_groups`` (membership) and ``group_settings`` (the groups' own permission
settings, rendered here), which need neither this nor each other's formatting.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from palaver.lib.group_settings import render_group_settings
from palaver.lib.user_groups import direct_member_ids, direct_subgroup_ids
from palaver.models import UserGroup
from palaver.models.groups import GROUP_PERMISSION_SETTINGS
from palaver.timeutil import to_timestamp


def format_user_groups(session: Session, groups: list[UserGroup]) -> list[dict[str, Any]]:
    """Named groups as GET /user_groups, /register and user_group events show them."""
    ids = [g.id for g in groups]
    members = direct_member_ids(session, ids)
    subgroups = direct_subgroup_ids(session, ids)
    setting_ids = {getattr(g, s) for g in groups for s in GROUP_PERMISSION_SETTINGS} - {None}
    rendered = render_group_settings(session, setting_ids)
    result = []
    for group in groups:
        formatted: dict[str, Any] = {
            "id": group.id,
            "name": group.name,
            "description": group.description,
            "members": members[group.id],
            "direct_subgroup_ids": subgroups[group.id],
            "is_system_group": group.is_system_group,
            "date_created": to_timestamp(group.date_created) if group.date_created is not None else None,
            "creator_id": group.creator_id,
            "deactivated": group.deactivated,
        }
        for setting in GROUP_PERMISSION_SETTINGS:
            value = getattr(group, setting)
            formatted[setting] = rendered[value] if value is not None else None
        result.append(formatted)
    return result
