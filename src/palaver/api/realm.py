"""Organization settings: PATCH /realm and PATCH /realm/user_settings_defaults."""

from __future__ import annotations

import inspect
from typing import Any

from palaver.actions.realm_settings import do_update_realm_settings, do_update_realm_user_default_settings
from palaver.api.context import Ctx
from palaver.api.params import set_signature, with_setting_params
from palaver.api.routing import ApiRouter, JsonDict
from palaver.api.settings import check_setting_values, settings_signature
from palaver.lib.auth_methods import check_authentication_methods
from palaver.lib.exceptions import OrganizationAdministratorRequiredError
from palaver.lib.group_settings import GroupSettingUpdate
from palaver.lib.realm import get_realm
from palaver.lib.user_settings import realm_default_specs
from palaver.models.realm import REALM_GROUP_SETTINGS

router = ApiRouter()


def update_realm(
    ctx: Ctx,
    name: str | None = None,
    description: str | None = None,
    allow_message_editing: bool | None = None,
    message_content_edit_limit_seconds: int | str | None = None,
    message_content_delete_limit_seconds: int | str | None = None,
    move_messages_within_stream_limit_seconds: int | str | None = None,
    move_messages_between_streams_limit_seconds: int | str | None = None,
    allow_edit_history: bool | None = None,
    topics_policy: str | None = None,
    waiting_period_threshold: int | None = None,
    default_language: str | None = None,
    enable_spectator_access: bool | None = None,
    enable_read_receipts: bool | None = None,
    message_retention_days: int | str | None = None,
    invite_required: bool | None = None,
    emails_restricted_to_domains: bool | None = None,
    org_type: int | None = None,
    new_stream_announcements_stream_id: int | None = None,
    signup_announcements_stream_id: int | None = None,
    zulip_update_announcements_stream_id: int | None = None,
    moderation_request_channel_id: int | None = None,
    inline_image_preview: bool | None = None,
    inline_url_embed_preview: bool | None = None,
    authentication_methods: dict[str, bool] | None = None,
    external_signup: bool | None = None,
    require_two_factor: bool | None = None,
    **group_settings: GroupSettingUpdate | None,
) -> JsonDict:
    values = {
        key: value
        for key, value in {
            "name": name,
            "description": description,
            "allow_message_editing": allow_message_editing,
            "message_content_edit_limit_seconds": message_content_edit_limit_seconds,
            "message_content_delete_limit_seconds": message_content_delete_limit_seconds,
            "move_messages_within_stream_limit_seconds": move_messages_within_stream_limit_seconds,
            "move_messages_between_streams_limit_seconds": move_messages_between_streams_limit_seconds,
            "allow_edit_history": allow_edit_history,
            "topics_policy": topics_policy,
            "waiting_period_threshold": waiting_period_threshold,
            "default_language": default_language,
            "enable_spectator_access": enable_spectator_access,
            "enable_read_receipts": enable_read_receipts,
            "message_retention_days": message_retention_days,
            "invite_required": invite_required,
            "emails_restricted_to_domains": emails_restricted_to_domains,
            "org_type": org_type,
            "new_stream_announcements_stream_id": new_stream_announcements_stream_id,
            "signup_announcements_stream_id": signup_announcements_stream_id,
            "zulip_update_announcements_stream_id": zulip_update_announcements_stream_id,
            "moderation_request_channel_id": moderation_request_channel_id,
            "inline_image_preview": inline_image_preview,
            "inline_url_embed_preview": inline_url_embed_preview,
            "external_signup": external_signup,
            "require_two_factor": require_two_factor,
        }.items()
        if value is not None
    }
    if authentication_methods is not None:
        # Stored as the methods turned off, judged against what this server offers.
        values["disabled_authentication_methods"] = check_authentication_methods(
            ctx.services.settings, get_realm(ctx.session, ctx.requester.realm_id), authentication_methods
        )
    updates = {key: value for key, value in group_settings.items() if value is not None}
    do_update_realm_settings(ctx.session, ctx.requester, values, updates, settings=ctx.services.settings)
    return {}


# The realm's group settings are declared once, on the model; the view takes each of them.
update_realm = with_setting_params(REALM_GROUP_SETTINGS, GroupSettingUpdate)(update_realm)
router.patch("/realm")(update_realm)


def update_realm_user_settings_defaults(ctx: Ctx, **settings: Any) -> JsonDict:
    if not ctx.requester.is_realm_admin:
        # Before the values are judged: their faults are no business of non-administrators.
        raise OrganizationAdministratorRequiredError()
    changes = check_setting_values(realm_default_specs(), settings)
    do_update_realm_user_default_settings(ctx.session, ctx.requester, changes)
    return {}


# One optional parameter per setting of the defaults table (lib/user_settings).
_default_signature, _default_annotations = settings_signature(
    inspect.signature(update_realm_user_settings_defaults), realm_default_specs()
)
set_signature(update_realm_user_settings_defaults, _default_signature)
update_realm_user_settings_defaults.__annotations__ = {
    **update_realm_user_settings_defaults.__annotations__,
    **_default_annotations,
}
router.patch("/realm/user_settings_defaults")(update_realm_user_settings_defaults)
