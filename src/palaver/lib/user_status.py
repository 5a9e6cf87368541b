"""User statuses as clients see them: only the parts that are set, plus the deprecated
``away``, which is ``not presence_enabled``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from palaver.lib.users import accessible_user_filter
from palaver.models import UserProfile
from palaver.models.requester import Requester
from palaver.models.user_status import UserStatus


def format_user_status(status: UserStatus | None, presence_enabled: bool) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if not presence_enabled:
        result["away"] = True
    if status is not None:
        if status.status_text:
            result["status_text"] = status.status_text
        if status.emoji_name:
            result["emoji_name"] = status.emoji_name
            result["emoji_code"] = status.emoji_code
            result["reaction_type"] = status.reaction_type
    return result


def get_user_status(session: Session, user: UserProfile) -> dict[str, Any]:
    return format_user_status(session.get(UserStatus, user.id), user.presence_enabled)


def realm_user_statuses(session: Session, viewer: UserProfile) -> dict[str, dict[str, Any]]:
    """Statuses of the active users the viewer may see, keyed by user ID; unset ones omitted."""
    rows = session.execute(
        select(UserProfile.id, UserProfile.presence_enabled, UserStatus)
        .outerjoin(UserStatus, UserStatus.user_profile_id == UserProfile.id)
        .where(
            UserProfile.realm_id == viewer.realm_id,
            UserProfile.is_active,
            or_(
                UserProfile.presence_enabled.is_(False),
                UserStatus.status_text != "",
                UserStatus.emoji_name != "",
            ),
            accessible_user_filter(session, Requester.of(viewer)),
        )
    )
    result: dict[str, dict[str, Any]] = {}
    for user_id, presence_enabled, status in rows:
        formatted = format_user_status(status, presence_enabled)
        if formatted:
            result[str(user_id)] = formatted
    return result
