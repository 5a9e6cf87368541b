"""Users (``realm_user``), bots the user administers (``realm_bot``), custom profile fields."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.avatars import GRAVATAR, avatar_url, avatar_url_for, gravatar_enabled
from palaver.lib.bots import bots_extra_fields
from palaver.lib.profile_fields import format_profile_field, get_profile_fields
from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.user_groups import is_user_in_group
from palaver.lib.users import accessible_user_filter, can_view_delivery_email
from palaver.models import (
    CustomProfileField,
    CustomProfileFieldValue,
    EmailVisibility,
    ProfileFieldType,
    Realm,
    Role,
    UserProfile,
)
from palaver.timeutil import to_iso

# Names clients show for each custom profile field type.
PROFILE_FIELD_TYPE_NAMES = {
    ProfileFieldType.SHORT_TEXT: "Text (short)",
    ProfileFieldType.LONG_TEXT: "Text (long)",
    ProfileFieldType.SELECT: "List of options",
    ProfileFieldType.DATE: "Date",
    ProfileFieldType.URL: "Link",
    ProfileFieldType.USER: "Users",
    ProfileFieldType.EXTERNAL_ACCOUNT: "External account",
    ProfileFieldType.PRONOUNS: "Pronouns",
}


def _own_permissions(ctx: StateContext) -> StateDict:
    user, realm = ctx.user, ctx.realm

    def holds(group_id: int | None) -> bool:
        return is_user_in_group(ctx.session, user, group_id)

    public = holds(realm.can_create_public_channel_group)
    private = holds(realm.can_create_private_channel_group)
    # Web-public channels need spectator access, which this server does not offer yet.
    web_public = False
    return {
        "can_create_streams": public or private or web_public,
        "can_create_public_streams": public,
        "can_create_private_streams": private,
        "can_create_web_public_streams": web_public,
        "can_subscribe_other_users": holds(realm.can_add_subscribers_group),
        "can_invite_others_to_realm": holds(realm.can_invite_users_group),
    }


# Table columns rather than ORM attributes: the rows then skip the ORM's loading machinery.
_USER_COLUMNS = tuple(
    UserProfile.__table__.c[name]
    for name in (
        "id",
        "email",
        "delivery_email",
        "full_name",
        "date_joined",
        "is_active",
        "role",
        "is_bot",
        "bot_type",
        "bot_owner_id",
        "timezone",
        "avatar_source",
        "avatar_version",
        "is_imported_stub",
        "email_address_visibility",
        "avatar_hash",
    )
)


def realm_user_dicts(
    session: Session, realm: Realm, viewer: UserProfile, *, client_gravatar: bool
) -> list[dict[str, Any]]:
    """``format_users(get_users(...), include_custom_profile_fields=True)`` for a whole realm.

    The same User objects (a test holds the two equal), built from plain rows: a realm of
    10,000 users would otherwise spend most of /register making and reading ORM objects.
    """
    profile_data: dict[int, dict[str, dict[str, str]]] = defaultdict(dict)
    values = session.execute(
        select(
            CustomProfileFieldValue.user_profile_id,
            CustomProfileFieldValue.field_id,
            CustomProfileFieldValue.value,
            CustomProfileFieldValue.rendered_value,
        )
        .join(CustomProfileField, CustomProfileField.id == CustomProfileFieldValue.field_id)
        .where(CustomProfileField.realm_id == realm.id)
    )
    for user_id, field_id, value, rendered in values:
        entry = {"value": value}
        if rendered is not None:
            entry["rendered_value"] = rendered
        profile_data[user_id][str(field_id)] = entry

    # Which visibility levels this viewer sees, asked of the one rule for a stand-in user.
    visible_levels = frozenset(
        level
        for level in EmailVisibility
        if can_view_delivery_email(viewer, UserProfile(id=0, is_bot=False, email_address_visibility=level))
    )
    table = UserProfile.__table__
    rows = session.connection().execute(
        select(*_USER_COLUMNS)
        .where(table.c.realm_id == realm.id, accessible_user_filter(session, viewer))
        .order_by(table.c.id)
    )
    admin_roles = (Role.OWNER, Role.ADMINISTRATOR)
    gravatar = gravatar_enabled(session)
    result = []
    for (
        user_id,
        email,
        delivery_email,
        full_name,
        date_joined,
        is_active,
        role,
        is_bot,
        bot_type,
        bot_owner_id,
        timezone,
        avatar_source,
        avatar_version,
        is_imported_stub,
        visibility,
        avatar_hash,
    ) in rows:
        sees_email = is_bot or user_id == viewer.id or visibility in visible_levels
        person = {
            "user_id": user_id,
            "delivery_email": delivery_email if sees_email else None,
            "email": email,
            "full_name": full_name,
            "date_joined": to_iso(date_joined),
            "is_active": is_active,
            "is_owner": role == Role.OWNER,
            "is_admin": role in admin_roles,
            "is_guest": role == Role.GUEST,
            "is_bot": is_bot,
            "bot_type": bot_type,
            "bot_owner_id": bot_owner_id,
            "role": role,
            "timezone": timezone,
            "avatar_url": None
            if (client_gravatar and sees_email and gravatar and avatar_source == GRAVATAR)
            else avatar_url_for(
                realm_id=realm.id,
                user_id=user_id,
                full_name=full_name,
                delivery_email=delivery_email,
                source=avatar_source,
                version=avatar_version,
                avatar_hash=avatar_hash,
                gravatar=gravatar,
            ),
            "avatar_version": avatar_version,
            "is_imported_stub": is_imported_stub,
        }
        if not is_bot:
            person["profile_data"] = profile_data.get(user_id, {})
        result.append(person)
    return result


@state_provider("realm_user")
def realm_users(ctx: StateContext) -> StateDict:
    user = ctx.user
    formatted = realm_user_dicts(ctx.session, ctx.realm, user, client_gravatar=ctx.client.client_gravatar)
    return {
        "realm_users": [u for u in formatted if u["is_active"]],
        "realm_non_active_users": [u for u in formatted if not u["is_active"]],
        # System bots that live outside every organization; this server has none.
        "cross_realm_bots": [],
        "user_id": user.id,
        "email": user.email,
        "delivery_email": user.delivery_email,
        "full_name": user.full_name,
        "avatar_source": user.avatar_source,
        "avatar_url": avatar_url(user),
        "avatar_url_medium": avatar_url(user, medium=True),
        "is_admin": user.is_realm_admin,
        "is_owner": user.is_realm_owner,
        "is_moderator": user.is_moderator,
        "is_guest": user.is_guest,
        "role": user.role,
        **_own_permissions(ctx),
    }


def format_bot(bot: UserProfile, extra: dict[str, Any]) -> dict[str, Any]:
    """The Bot object of ``realm_bots`` (the same fields as realm_bot add events)."""
    return {
        "user_id": bot.id,
        "full_name": bot.full_name,
        "email": bot.email,
        "api_key": bot.api_key,
        "bot_type": bot.bot_type or 1,
        "is_active": bot.is_active,
        "avatar_url": avatar_url(bot),
        "owner_id": bot.bot_owner_id,
        **extra,
    }


@state_provider("realm_bot")
def realm_bots(ctx: StateContext) -> StateDict:
    user = ctx.user
    query = select(UserProfile).where(UserProfile.realm_id == user.realm_id, UserProfile.is_bot)
    if not user.is_realm_admin:
        # Administrators manage every bot; anyone else only their own.
        query = query.where(UserProfile.bot_owner_id == user.id)
    bots = list(ctx.session.scalars(query.order_by(UserProfile.id)))
    extra = bots_extra_fields(ctx.session, bots)
    return {"realm_bots": [format_bot(bot, extra[bot.id]) for bot in bots]}


@state_provider("custom_profile_fields")
def custom_profile_fields(ctx: StateContext) -> StateDict:
    fields = get_profile_fields(ctx.session, ctx.realm.id)
    return {
        "custom_profile_fields": [format_profile_field(f) for f in fields],
        "custom_profile_field_types": {
            field_type.name: {"id": int(field_type), "name": name}
            for field_type, name in PROFILE_FIELD_TYPE_NAMES.items()
        },
    }
