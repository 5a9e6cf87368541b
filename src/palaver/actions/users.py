"""Writes to users: creation, profile, role, activation, credentials.

Every function runs in one transaction (joining the caller's if there is one) and queues
its events there, so clients hear of a change only once it is committed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any
from urllib.parse import urlsplit

import orjson
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from palaver.actions.anonymous_settings import send_settings_naming_user
from palaver.actions.messages import SendContext
from palaver.actions.notification_bot import get_or_create_notification_bot, internal_send_stream_message
from palaver.actions.presence import do_announce_presence_enabled
from palaver.actions.realm_export import do_notify_export_consent
from palaver.actions.subscriptions import do_subscribe_to_default_streams
from palaver.actions.user_creation import (
    bot_event_recipients,
    create_user,
    email_taken_is_an_error,
    set_system_group_membership,
)
from palaver.actions.web_sessions import do_revoke_user_web_sessions
from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.avatars import avatar_url
from palaver.lib.channels import get_announcement_channel
from palaver.lib.exceptions import JsonableError
from palaver.lib.markdown.render import render_markdown
from palaver.lib.notification_bot import silent_mention
from palaver.lib.passwords import generate_api_key
from palaver.lib.profile_fields import get_profile_fields, select_choices
from palaver.lib.realm import active_user_ids
from palaver.lib.state.user_settings import LEGACY_DISPLAY_SETTINGS, LEGACY_NOTIFICATION_SETTINGS
from palaver.lib.user_settings import LANGUAGES
from palaver.lib.users import (
    api_email_for,
    can_view_delivery_email,
    check_full_name,
    get_realm_user,
    is_last_owner,
    lock_realm_owners,
    requester_user,
    user_ids_who_can_access,
)
from palaver.lib.web_sessions import current_web_session_id
from palaver.models import (
    CustomProfileField,
    CustomProfileFieldValue,
    ProfileFieldType,
    Realm,
    Role,
    UserGroup,
    UserGroupMembership,
    UserProfile,
)
from palaver.models.auth import ExternalIdentity
from palaver.models.profile_fields import MARKDOWN_FIELD_TYPES
from palaver.models.requester import Requester


def send_person_update(tx: Tx, session: Session, user: UserProfile, person: ev.RealmUserUpdatePerson) -> None:
    tx.send_event(user.realm_id, ev.RealmUserUpdate(person=person), user_ids_who_can_access(session, user))


def do_create_user(
    session: Session,
    realm: Realm,
    *,
    email: str,
    full_name: str,
    password_hash: str | None,
    email_host: str,
    role: int = Role.MEMBER,
    bot_type: int | None = None,
    bot_owner_id: int | None = None,
    timezone: str = "",
    announce_bot: bool = True,
    default_streams: bool = True,
) -> UserProfile:
    """Create a user or bot (``user_creation.create_user``); a person joining is then
    subscribed to the realm's default channels and announced in its signups channel.

    ``default_streams`` False skips subscribing a new human to the realm's default channels
    (an invitation may say so).
    """
    with email_taken_is_an_error(), transaction(session):
        user = create_user(
            session,
            realm,
            email=email,
            full_name=full_name,
            password_hash=password_hash,
            email_host=email_host,
            role=role,
            bot_type=bot_type,
            bot_owner_id=bot_owner_id,
            timezone=timezone,
            announce_bot=announce_bot,
        )
        if not user.is_bot:
            # After realm_user add, so peers learn of the person before seeing them subscribe.
            if default_streams:
                do_subscribe_to_default_streams(session, user)
            _announce_signup(session, user, email_host)
    return user


SIGNUPS_TOPIC = "signups"


def _announce_signup(session: Session, user: UserProfile, email_host: str) -> None:
    """Zulip's new-user notice: the Notification Bot tells the realm's signup announcements
    channel, if it has one, of every human who joins after the first."""
    target = get_announcement_channel(session, user.realm, "signup_announcements_stream_id")
    if target is None or not _has_other_humans(session, user):
        return
    bot = get_or_create_notification_bot(session, user.realm, email_host)
    # Markdown needs the realm's URL only to recognise links to the realm, and the notice
    # holds none; callers such as the CLI have no URL to give.
    context = SendContext(realm_url="", email_host=email_host)
    content = f"{silent_mention(user)} joined this organization."
    internal_send_stream_message(session, bot, target, SIGNUPS_TOPIC, content, context)


def _has_other_humans(session: Session, user: UserProfile) -> bool:
    return (
        session.scalar(
            select(UserProfile.id)
            .where(
                UserProfile.realm_id == user.realm_id,
                UserProfile.is_active,
                UserProfile.is_bot.is_(False),
                UserProfile.id != user.id,
            )
            .limit(1)
        )
        is not None
    )


def do_change_full_name(session: Session, user: UserProfile, full_name: str) -> None:
    full_name = check_full_name(full_name)
    with transaction(session) as tx:
        if user.full_name == full_name:
            return
        user.full_name = full_name
        send_person_update(tx, session, user, ev.PersonFullName(user_id=user.id, full_name=full_name))
        if user.is_bot:
            tx.send_event(
                user.realm_id,
                ev.RealmBotUpdate(bot=ev.BotChange(user_id=user.id, full_name=full_name)),
                bot_event_recipients(session, user),
            )


def do_change_user_role(
    session: Session, user: UserProfile, role: int, *, acting_user: Requester | None
) -> None:
    """``acting_user`` None: the server's own decision (a provider's role mapping)."""
    if role not in set(Role):
        raise JsonableError("Invalid role")
    with transaction(session) as tx:
        # The acting user's row, read in the transaction and reread under the owners' lock:
        # whether they are an owner decides a change to or from the owner role.
        acting = requester_user(session, acting_user) if acting_user is not None else None
        if Role.OWNER in (role, user.role):
            lock_realm_owners(session, user, *([acting] if acting is not None else []))
        tx.lock(user)
        if user.role == role:
            return
        if Role.OWNER in (role, user.role) and acting is not None and not acting.is_realm_owner:
            raise JsonableError("Must be an organization owner")
        if is_last_owner(session, user):
            raise JsonableError("The owner permission cannot be removed from the only organization owner.")
        user.role = role
        session.flush()
        set_system_group_membership(tx, session, user)
        send_person_update(tx, session, user, ev.PersonRole(user_id=user.id, role=role))


@dataclass(frozen=True)
class ProfileDataChange:
    field_id: int
    value: str | list[int] | None


# Free-text values are short, except long text, which holds a paragraph.
_PROFILE_VALUE_LIMITS = {
    ProfileFieldType.SHORT_TEXT: 50,
    ProfileFieldType.PRONOUNS: 50,
    ProfileFieldType.EXTERNAL_ACCOUNT: 50,
    ProfileFieldType.LONG_TEXT: 500,
}
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _is_date(value: str) -> bool:
    # date.fromisoformat alone also takes forms like 20000101 or 2000-W01-1, which clients
    # showing the stored text would not understand.
    if _ISO_DATE.match(value) is None:
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_url(value: str) -> bool:
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc) and not any(c.isspace() for c in value)


def validate_profile_value(session: Session, field: CustomProfileField, value: str | list[int]) -> str:
    """The value to store for ``field``, or JsonableError saying why it does not fit."""
    field_type = ProfileFieldType(field.field_type)
    if field_type == ProfileFieldType.USER:
        if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
            raise JsonableError(f"{field.name} is not a list")
        for user_id in value:
            if get_realm_user(session, field.realm_id, user_id) is None:
                raise JsonableError(f"Invalid user ID: {user_id}")
        return orjson.dumps(value).decode()
    if not isinstance(value, str):
        raise JsonableError(f"{field.name} is not a string")
    if field_type == ProfileFieldType.SELECT and value not in select_choices(field):
        raise JsonableError(f"'{value}' is not a valid choice for '{field.name}'.")
    if field_type == ProfileFieldType.DATE and not _is_date(value):
        raise JsonableError(f"{field.name} is not a date")
    if field_type == ProfileFieldType.URL and not _is_url(value):
        raise JsonableError(f"{field.name} is not a URL")
    limit = _PROFILE_VALUE_LIMITS.get(field_type)
    if limit is not None and len(value) > limit:
        raise JsonableError(f"{field.name} is too long (limit: {limit} characters)")
    return value


def do_update_user_custom_profile_data(
    session: Session, user: UserProfile, changes: Iterable[ProfileDataChange]
) -> None:
    with transaction(session) as tx:
        fields = {f.id: f for f in get_profile_fields(session, user.realm_id)}
        for change in changes:
            field = fields.get(change.field_id)
            if field is None:
                raise JsonableError(f"Field id {change.field_id} not found.")
            existing = session.scalars(
                select(CustomProfileFieldValue).where(
                    CustomProfileFieldValue.user_profile_id == user.id,
                    CustomProfileFieldValue.field_id == field.id,
                )
            ).one_or_none()
            if change.value is None or change.value in ("", []):
                if existing is None:
                    continue
                session.delete(existing)
                payload = ev.CustomProfileFieldChange(id=field.id, value=None)
            else:
                value = validate_profile_value(session, field, change.value)
                if existing is not None and existing.value == value:
                    continue
                rendered = render_markdown(value) if field.field_type in MARKDOWN_FIELD_TYPES else None
                if existing is None:
                    session.add(
                        CustomProfileFieldValue(
                            user_profile_id=user.id, field_id=field.id, value=value, rendered_value=rendered
                        )
                    )
                else:
                    existing.value, existing.rendered_value = value, rendered
                payload = ev.CustomProfileFieldChange(id=field.id, value=value, rendered_value=rendered)
            send_person_update(
                tx, session, user, ev.PersonCustomProfileField(user_id=user.id, custom_profile_field=payload)
            )


def do_update_user(
    session: Session,
    user: UserProfile,
    *,
    acting_user: Requester,
    full_name: str | None = None,
    role: int | None = None,
    profile_data: list[ProfileDataChange] | None = None,
) -> None:
    """An administrator's edit of another user; all parts apply together or not at all."""
    with transaction(session):
        if full_name is not None:
            do_change_full_name(session, user, full_name)
        if role is not None:
            do_change_user_role(session, user, role, acting_user=acting_user)
        if profile_data:
            do_update_user_custom_profile_data(session, user, profile_data)


def do_deactivate_user(session: Session, user: UserProfile, *, acting_user: Requester | None) -> None:
    with transaction(session) as tx:
        if user.is_realm_owner:
            lock_realm_owners(session, user)
        tx.lock(user)
        if not user.is_active:
            raise JsonableError("User is already deactivated")
        if is_last_owner(session, user):
            raise JsonableError("Cannot deactivate the only organization owner")
        recipients = user_ids_who_can_access(session, user)
        user.is_active = False
        do_revoke_user_web_sessions(session, user.id)
        tx.send_event(
            user.realm_id,
            ev.RealmUserUpdate(person=ev.PersonIsActive(user_id=user.id, is_active=False)),
            recipients,
        )
        if user.is_bot:
            tx.send_event(
                user.realm_id,
                ev.RealmBotUpdate(bot=ev.BotChange(user_id=user.id, is_active=False)),
                bot_event_recipients(session, user),
            )
        else:
            # A person's bots stop with them, as they would otherwise act unsupervised.
            bots = session.scalars(
                select(UserProfile).where(UserProfile.bot_owner_id == user.id, UserProfile.is_active)
            )
            for bot in bots:
                do_deactivate_user(session, bot, acting_user=acting_user)


def do_deactivate_own_user(session: Session, user: Requester) -> None:
    """A user leaving the organization: their row is loaded in the deactivation's transaction."""
    with transaction(session):
        do_deactivate_user(session, requester_user(session, user), acting_user=user)


def do_reactivate_user(session: Session, user: UserProfile) -> None:
    with transaction(session) as tx:
        tx.lock(user)
        if user.is_active:
            raise JsonableError("User is already active")
        if user.is_bot and user.bot_owner_id is not None:
            owner = session.get(UserProfile, user.bot_owner_id)
            if owner is not None and not owner.is_active:
                raise JsonableError("Cannot reactivate bot whose owner is deactivated")
        user.is_active = True
        # Whoever reactivates, a provider's later departure notice starts afresh.
        session.execute(
            update(ExternalIdentity)
            .where(ExternalIdentity.user_profile_id == user.id)
            .values(deactivated_by_provider=False)
        )
        session.flush()
        tx.send_event(
            user.realm_id,
            ev.RealmUserUpdate(person=ev.PersonIsActive(user_id=user.id, is_active=True)),
            user_ids_who_can_access(session, user),
        )
        if user.is_bot:
            tx.send_event(
                user.realm_id,
                ev.RealmBotUpdate(bot=ev.BotChange(user_id=user.id, is_active=True)),
                bot_event_recipients(session, user),
            )
        # Clients dropped the user from every group on deactivation; put them back.
        named_group_ids = session.scalars(
            select(UserGroupMembership.user_group_id)
            .join(UserGroup, UserGroup.id == UserGroupMembership.user_group_id)
            .where(UserGroupMembership.user_profile_id == user.id, UserGroup.name.is_not(None))
            .order_by(UserGroupMembership.user_group_id)
        ).all()
        recipients = active_user_ids(session, user.realm_id)
        for group_id in named_group_ids:
            tx.send_event(
                user.realm_id, ev.UserGroupAddMembers(group_id=group_id, user_ids=[user.id]), recipients
            )
        send_settings_naming_user(tx, session, user.realm, user.id)


def do_change_password(session: Session, user: UserProfile, password_hash: str) -> None:
    with transaction(session):
        user.password = password_hash
        # Other browsers signed in as this user are signed out; the one changing it stays.
        do_revoke_user_web_sessions(session, user.id, keep_id=current_web_session_id.get())


def do_regenerate_api_key(session: Session, user: UserProfile) -> str:
    with transaction(session) as tx:
        user.api_key = generate_api_key()
        if user.is_bot:
            tx.send_event(
                user.realm_id,
                ev.RealmBotUpdate(bot=ev.BotChange(user_id=user.id, api_key=user.api_key)),
                bot_event_recipients(session, user),
            )
    return user.api_key


def do_change_timezone(session: Session, user: UserProfile, timezone: str) -> None:
    with transaction(session) as tx:
        if user.timezone == timezone:
            return
        user.timezone = timezone
        # The time zone is one of the user's settings to their own clients, and part of
        # their profile to everyone else.
        tx.send_event(user.realm_id, ev.UserSettingsUpdate(property="timezone", value=timezone), [user.id])
        send_person_update(
            tx, session, user, ev.PersonTimezone(user_id=user.id, email=user.email, timezone=timezone)
        )


def do_change_email_visibility(session: Session, user: UserProfile, visibility: int, email_host: str) -> None:
    """Change who may see the real email; the API email follows and viewers are told."""
    with transaction(session) as tx:
        viewers = list(
            session.scalars(
                select(UserProfile).where(UserProfile.id.in_(user_ids_who_can_access(session, user)))
            )
        )
        could_see = {v.id: can_view_delivery_email(Requester.of(v), user) for v in viewers}
        if user.email_address_visibility == visibility:
            return
        user.email_address_visibility = visibility
        tx.send_event(
            user.realm_id,
            ev.UserSettingsUpdate(property="email_address_visibility", value=visibility),
            [user.id],
        )
        new_email = api_email_for(email_host, user)
        if new_email != user.email:
            user.email = new_email
            send_person_update(tx, session, user, ev.PersonNewEmail(user_id=user.id, new_email=new_email))
        for viewer in viewers:
            sees = can_view_delivery_email(Requester.of(viewer), user)
            if sees != could_see[viewer.id]:
                person = ev.PersonDeliveryEmail(
                    user_id=user.id, delivery_email=user.delivery_email if sees else None
                )
                tx.send_event(user.realm_id, ev.RealmUserUpdate(person=person), [viewer.id])
                if not sees and user.avatar_source == "G":
                    # Clients that compute Gravatar URLs were sent none for this user, and
                    # can no longer compute one without the address: they need the URL.
                    avatar = ev.PersonAvatar(
                        user_id=user.id,
                        avatar_source=user.avatar_source,
                        avatar_url=avatar_url(user),
                        avatar_url_medium=avatar_url(user, medium=True),
                        avatar_version=user.avatar_version,
                    )
                    tx.send_event(user.realm_id, ev.RealmUserUpdate(person=avatar), [viewer.id])


def do_change_user_setting(session: Session, user: UserProfile, name: str, value: Any) -> None:
    """Change one personal setting; the user's own clients get a user_settings event."""
    with transaction(session) as tx:
        if getattr(user, name) == value:
            return
        setattr(user, name, value)
        event = ev.UserSettingsUpdate(
            property=name,
            value=value,
            language_name=LANGUAGES.get(value) if name == "default_language" else None,
        )
        tx.send_event(user.realm_id, event, [user.id])
        _send_legacy_setting_event(tx, user, name, value, event.language_name)
        if name == "presence_enabled":
            do_announce_presence_enabled(session, user, value)
        if name == "allow_private_data_export":
            do_notify_export_consent(session, user)


def _send_legacy_setting_event(
    tx: Tx, user: UserProfile, name: str, value: Any, language: str | None
) -> None:
    """The pre-user_settings_object copy of the change; the queue layer gives it only to
    clients without that capability."""
    legacy: ev.Event
    if name in LEGACY_DISPLAY_SETTINGS:
        legacy = ev.UpdateDisplaySettings(
            user=user.email, setting_name=name, setting=value, language_name=language
        )
    elif name in LEGACY_NOTIFICATION_SETTINGS:
        legacy = ev.UpdateGlobalNotifications(user=user.email, notification_name=name, setting=value)
    else:
        return
    tx.send_event(user.realm_id, legacy, [user.id])


__all__ = [
    "ProfileDataChange",
    "do_change_email_visibility",
    "do_change_full_name",
    "do_change_password",
    "do_change_timezone",
    "do_change_user_role",
    "do_change_user_setting",
    "do_create_user",
    "do_deactivate_user",
    "do_reactivate_user",
    "do_regenerate_api_key",
    "do_update_user",
    "do_update_user_custom_profile_data",
]
