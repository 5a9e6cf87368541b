"""Rules for channel writes: the realm permissions to create (or make public, private, web-public) a
channel, and the rule for which topics a channel allows.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.cache import realm_settings
from palaver.lib.exceptions import IncompatibleParametersError, JsonableError
from palaver.lib.group_settings import user_has_permission
from palaver.models import UserGroup
from palaver.models.channels import Stream
from palaver.models.requester import Requester

INSUFFICIENT_PERMISSION = "Insufficient permission"


def has_realm_permission(session: Session, user: Requester, setting: str) -> bool:
    """Whether the user is in the group the realm's ``setting`` (a ``can_…_group`` name) names."""
    return user_has_permission(session, user, realm_settings(session, user.realm_id)[setting])


def check_privacy_permissions(
    session: Session, user: Requester, *, invite_only: bool, is_web_public: bool
) -> None:
    """Refuse a channel the user may not create (or make) public, private or web-public."""
    if is_web_public:
        if not realm_settings(session, user.realm_id).enable_spectator_access:
            raise JsonableError("Web-public channels are not enabled.")
        if not has_realm_permission(session, user, "can_create_web_public_channel_group"):
            raise JsonableError(INSUFFICIENT_PERMISSION)
    setting = "can_create_private_channel_group" if invite_only else "can_create_public_channel_group"
    if not has_realm_permission(session, user, setting):
        raise JsonableError(INSUFFICIENT_PERMISSION)


def _system_group_name(session: Session, group_id: int) -> str | None:
    group = session.get(UserGroup, group_id)
    return group.name if group is not None and group.is_system_group else None


def check_topic_creation_rule(session: Session, stream: Stream) -> None:
    """Refuse a topic-creation group the channel's history settings contradict."""
    # Without shared history, a subscriber could not read a topic someone else may not start.
    if (
        stream.invite_only
        and not stream.history_public_to_subscribers
        and _system_group_name(session, stream.can_create_topic_group) != "role:everyone"
    ):
        raise IncompatibleParametersError(["can_create_topic_group", "history_public_to_subscribers"])
