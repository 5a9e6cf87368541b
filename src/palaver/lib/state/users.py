"""Users (``realm_user``), bots the user administers (``realm_bot``), custom profile fields."""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import select

from palaver.cache import user_group_ids
from palaver.lib.avatars import avatar_url
from palaver.lib.bots import bots_extra_fields
from palaver.lib.profile_fields import format_profile_field, get_profile_fields
from palaver.lib.realm_user_list import realm_user_json
from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.models import ProfileFieldType, UserProfile

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

    groups = user_group_ids(ctx.session, realm.id, user.id)

    def holds(group_id: int | None) -> bool:
        return group_id is not None and group_id in groups

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


@state_provider("realm_user")
def realm_users(ctx: StateContext) -> StateDict:
    user = ctx.user
    active, inactive = realm_user_json(ctx.session, user, client_gravatar=ctx.client.client_gravatar)
    return {
        # Already JSON (see lib/realm_user_list.py): orjson writes fragments as they are.
        "realm_users": orjson.Fragment(active),
        "realm_non_active_users": orjson.Fragment(inactive),
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
