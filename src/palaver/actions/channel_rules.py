"""Rules for channel writes: the realm permissions to create (or make public, private, web-public) a
channel, and the rule for which topics a channel allows.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.lib.exceptions import IncompatibleParametersError, JsonableError
from palaver.lib.group_settings import user_has_permission
from palaver.models import UserGroup, UserProfile
from palaver.models.channels import Stream

INSUFFICIENT_PERMISSION = "Insufficient permission"


def _realm_permission(session: Session, user: UserProfile, setting: str) -> bool:
    return user_has_permission(session, user, getattr(user.realm, setting))


def _check_privacy_permissions(
    session: Session, user: UserProfile, *, invite_only: bool, is_web_public: bool
) -> None:
    if is_web_public:
        if not user.realm.enable_spectator_access:
            raise JsonableError("Web-public channels are not enabled.")
        if not _realm_permission(session, user, "can_create_web_public_channel_group"):
            raise JsonableError(INSUFFICIENT_PERMISSION)
    setting = "can_create_private_channel_group" if invite_only else "can_create_public_channel_group"
    if not _realm_permission(session, user, setting):
        raise JsonableError(INSUFFICIENT_PERMISSION)


def _system_group_name(session: Session, group_id: int) -> str | None:
    group = session.get(UserGroup, group_id)
    return group.name if group is not None and group.is_system_group else None


def _check_topic_creation_rule(session: Session, stream: Stream) -> None:
    # Without shared history, a subscriber could not read a topic someone else may not start.
    if (
        stream.invite_only
        and not stream.history_public_to_subscribers
        and _system_group_name(session, stream.can_create_topic_group) != "role:everyone"
    ):
        raise IncompatibleParametersError(["can_create_topic_group", "history_public_to_subscribers"])
