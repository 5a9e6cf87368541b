"""Writes to organization settings and to the defaults of new users' personal settings."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.actions.group_settings import set_group_setting
from palaver.actions.user_creation import set_system_group_membership
from palaver.config import Settings
from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.auth_methods import realm_authentication_methods
from palaver.lib.channels import access_announcement_channel
from palaver.lib.exceptions import (
    JsonableError,
    OrganizationAdministratorRequiredError,
    OrganizationOwnerRequiredError,
)
from palaver.lib.group_settings import (
    GroupSettingUpdate,
    check_expected_value,
    parse_group_setting_value,
    render_group_setting,
)
from palaver.lib.message_reports import check_moderation_channel_private
from palaver.lib.realm import active_user_ids, get_realm
from palaver.lib.realm_settings import (
    OWNER_ONLY_SETTINGS,
    REALM_GROUP_RULES,
    UPDATE_DICT_SETTINGS,
    check_all_users_access_group,
    check_realm_value,
    event_value,
)
from palaver.models import RealmUserDefault, Role, UserGroup, UserProfile
from palaver.models.realm import REALM_ANNOUNCEMENT_CHANNEL_SETTINGS
from palaver.models.requester import Requester


def _check_role(user: Requester, names: list[str]) -> None:
    if not user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    if not user.is_realm_owner and any(name in OWNER_ONLY_SETTINGS for name in names):
        raise OrganizationOwnerRequiredError()


def _send_realm_event(tx: Tx, session: Session, realm_id: int, name: str, value: Any) -> None:
    event: ev.Event
    if name in UPDATE_DICT_SETTINGS:
        event = ev.RealmUpdateDict(data={name: value})
    else:
        event = ev.RealmUpdate(property=name, value=value)
    tx.send_event(realm_id, event, active_user_ids(session, realm_id))


def _refresh_full_members(tx: Tx, session: Session, realm_id: int) -> None:
    """Who counts as a full member depends on the waiting period; move members accordingly."""
    members = session.scalars(
        select(UserProfile).where(
            UserProfile.realm_id == realm_id, UserProfile.is_active, UserProfile.role == Role.MEMBER
        )
    )
    for user in members:
        set_system_group_membership(tx, session, user)


def do_update_realm_settings(
    session: Session,
    acting_user: Requester,
    values: dict[str, Any],
    group_settings: dict[str, GroupSettingUpdate],
    *,
    settings: Settings | None = None,
) -> None:
    """Apply validated organization settings atomically; each change sends its own event.

    ``settings`` (the server's) is needed to describe a change of the sign-in methods.
    """
    _check_role(acting_user, [*values, *group_settings])
    realm = get_realm(session, acting_user.realm_id)
    with transaction(session) as tx:
        tx.lock(realm)
        for name, raw in values.items():
            value: Any
            if name in REALM_ANNOUNCEMENT_CHANNEL_SETTINGS:
                value = access_announcement_channel(session, acting_user, raw)
                if name == "moderation_request_channel_id" and value is not None:
                    check_moderation_channel_private(session, realm.id, value)
            else:
                value = check_realm_value(name, raw)
            if getattr(realm, name) == value:
                continue
            setattr(realm, name, value)
            if name == "disabled_authentication_methods":
                assert settings is not None, "changing sign-in methods needs the server's settings"
                methods = realm_authentication_methods(settings, realm)
                tx.send_event(
                    realm.id,
                    ev.RealmUpdateDict(data={"authentication_methods": methods}),
                    active_user_ids(session, realm.id),
                )
                continue
            _send_realm_event(tx, session, realm.id, name, event_value(name, value))
            if name == "topics_policy":
                # Older clients read whether topics are required from mandatory_topics.
                realm.mandatory_topics = value == "disable_empty_topic"
                _send_realm_event(tx, session, realm.id, "mandatory_topics", realm.mandatory_topics)
            if name == "allow_edit_history":
                policy = "all" if value else "none"
                _send_realm_event(tx, session, realm.id, "message_edit_history_visibility_policy", policy)
            if name == "waiting_period_threshold":
                session.flush()
                _refresh_full_members(tx, session, realm.id)
        for name, update in group_settings.items():
            current: int = getattr(realm, name)
            check_expected_value(session, current, update.old)
            resolved = parse_group_setting_value(session, realm.id, name, update.new, REALM_GROUP_RULES[name])
            if resolved.group_id is not None:
                group = session.get(UserGroup, resolved.group_id)
                check_all_users_access_group(name, group.name if group is not None else None)
            if set_group_setting(session, realm, name, resolved, realm.id):
                rendered = render_group_setting(session, getattr(realm, name))
                payload = rendered if isinstance(rendered, int) else ev.GroupSettingObject(**rendered)
                _send_realm_event(tx, session, realm.id, name, payload)
        session.flush()


def do_update_realm_user_default_settings(
    session: Session, acting_user: Requester, settings: dict[str, Any]
) -> None:
    """Change what new users start with; users who already joined keep their settings."""
    if not acting_user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()
    realm_id = acting_user.realm_id
    with transaction(session) as tx:
        defaults = session.get(RealmUserDefault, realm_id)
        if defaults is None:
            raise JsonableError("Organization has no user defaults")
        recipients = active_user_ids(session, realm_id)
        for name, value in settings.items():
            if getattr(defaults, name) == value:
                continue
            setattr(defaults, name, value)
            tx.send_event(
                realm_id, ev.RealmUserSettingsDefaultsUpdate(property=name, value=value), recipients
            )
