"""Organization settings, server facts and limits (``realm``), and new users' defaults."""

from __future__ import annotations

from collections.abc import Mapping

from palaver.lib import limits
from palaver.lib.auth_methods import (
    EMAIL,
    LDAP,
    enabled_methods,
    method_enabled,
    realm_authentication_methods,
)
from palaver.lib.emoji_images import EMOJI_DATA_PATH
from palaver.lib.group_settings import render_group_settings
from palaver.lib.message_reports import report_message_types
from palaver.lib.realm import realm_email_host, realm_url
from palaver.lib.realm_images import realm_image_fields
from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.thumbnails import server_thumbnail_formats
from palaver.lib.user_groups import get_system_groups
from palaver.lib.user_settings import setting_specs
from palaver.models import RealmUserDefault
from palaver.models.realm import REALM_ANNOUNCEMENT_CHANNEL_SETTINGS, REALM_GROUP_SETTINGS

# How clients display the empty topic when they cannot show an empty string.
from palaver.models.topic_names import EMPTY_TOPIC_DISPLAY_NAME
from palaver.timeutil import to_timestamp

PASSWORD_MIN_LENGTH = 6
PASSWORD_MAX_LENGTH = 100

EMOJISET_CHOICES = [
    {"key": "google", "text": "Google"},
    {"key": "twitter", "text": "Twitter"},
    {"key": "text", "text": "Plain text"},
]


def available_notification_sounds() -> list[str]:
    choices = setting_specs()["notification_sound"].choices or frozenset()
    # "none" is the absence of a sound, not one clients can play.
    return sorted(str(c) for c in choices if c != "none")


# Zulip's deprecated integer policies, kept because clients still parse them (zulip-flutter
# requires realm_wildcard_mention_policy). Each is derived from its group setting: the
# system group's enum where the old policy had one, else the value for the largest group
# the old enum could name. The mention map has no owners entry (owners read as 1) in Zulip.
_COMMON_POLICY_OF_GROUP = {
    "role:members": 1,
    "role:administrators": 2,
    "role:fullmembers": 3,
    "role:moderators": 4,
}
_WEB_PUBLIC_POLICY_OF_GROUP = {
    "role:administrators": 2,
    "role:moderators": 4,
    "role:nobody": 6,
    "role:owners": 7,
}
_WILDCARD_MENTION_POLICY_OF_GROUP = {
    "role:everyone": 1,
    "role:members": 2,
    "role:fullmembers": 3,
    "role:administrators": 5,
    "role:nobody": 6,
    "role:moderators": 7,
}
_LEGACY_POLICIES = (
    ("realm_create_public_stream_policy", "can_create_public_channel_group", _COMMON_POLICY_OF_GROUP, 1),
    ("realm_create_private_stream_policy", "can_create_private_channel_group", _COMMON_POLICY_OF_GROUP, 1),
    (
        "realm_create_web_public_stream_policy",
        "can_create_web_public_channel_group",
        _WEB_PUBLIC_POLICY_OF_GROUP,
        4,
    ),
    ("realm_wildcard_mention_policy", "can_mention_many_users_group", _WILDCARD_MENTION_POLICY_OF_GROUP, 1),
)


def legacy_policy_fields(
    group_ids: Mapping[str, int | None], system_group_names: Mapping[int, str]
) -> StateDict:
    """The deprecated ``realm_*_policy`` integers for the realm's group settings."""
    fields: StateDict = {}
    for key, setting, enum_of_group, largest in _LEGACY_POLICIES:
        gid = group_ids.get(setting)
        name = system_group_names.get(gid) if gid is not None else None
        fields[key] = enum_of_group.get(name, largest) if name is not None else largest
    return fields


def _limit_fields(ctx: StateContext) -> StateDict:
    return {
        **limits.register_limits(),
        "max_topic_length": limits.MAX_TOPIC_LENGTH,
        "max_message_length": limits.MAX_MESSAGE_LENGTH,
        "max_file_upload_size_mib": ctx.settings.max_file_upload_size_mib,
        "max_avatar_file_size_mib": 5,
        "max_icon_file_size_mib": 5,
        "max_logo_file_size_mib": 5,
    }


def _server_fields(ctx: StateContext) -> StateDict:
    return {
        "server_generation": ctx.server_generation,
        "server_presence_ping_interval_seconds": 60,
        "server_presence_offline_threshold_seconds": 140,
        "server_typing_started_expiry_period_milliseconds": 45000,
        "server_typing_stopped_wait_period_milliseconds": 5000,
        "server_typing_started_wait_period_milliseconds": 10000,
        "server_min_deactivated_realm_deletion_days": None,
        "server_max_deactivated_realm_deletion_days": None,
        "server_inline_image_preview": True,
        "server_inline_url_embed_preview": ctx.settings.outgoing_fetches,
        "server_thumbnail_formats": server_thumbnail_formats(),
        "server_avatar_changes_disabled": False,
        "server_name_changes_disabled": False,
        "server_needs_upgrade": False,
        "server_web_public_streams_enabled": False,
        "server_jitsi_server_url": ctx.settings.jitsi_server_url,
        "server_can_summarize_topics": False,
        "server_report_message_types": report_message_types(),
        "settings_send_digest_emails": False,
        "development_environment": ctx.settings.development_auth,
        "password_min_length": PASSWORD_MIN_LENGTH,
        "password_max_length": PASSWORD_MAX_LENGTH,
        "password_min_guesses": 10000,
        "zulip_plan_is_not_limited": True,
        "upgrade_text_for_wide_organization_logo": "",
        # Deprecated, but a string: realm_jitsi_server_url || server_jitsi_server_url.
        "jitsi_server_url": ctx.settings.jitsi_server_url,
    }


@state_provider("realm")
def realm_state(ctx: StateContext) -> StateDict:
    realm = ctx.realm
    settings = ctx.settings
    url = realm_url(settings, realm)
    moves_within = realm.move_messages_within_stream_limit_seconds
    moves_between = realm.move_messages_between_streams_limit_seconds
    group_ids = {name: getattr(realm, name) for name in REALM_GROUP_SETTINGS}
    system_groups = get_system_groups(ctx.session, realm.id)
    owners = system_groups["role:owners"].id
    rendered = render_group_settings(
        ctx.session, [gid for gid in group_ids.values() if gid is not None] + [owners]
    )
    state: StateDict = {
        "realm_name": realm.name,
        # Markdown source; clients render it (GET /server_settings sends the HTML).
        "realm_description": realm.description,
        "realm_url": url,
        "realm_uri": url,
        "realm_date_created": to_timestamp(realm.date_created),
        "realm_org_type": realm.org_type,
        "realm_plan_type": 1,
        **realm_image_fields(settings, realm),
        "server_emoji_data_url": url + EMOJI_DATA_PATH,
        "realm_bot_domain": realm_email_host(settings, realm),
        "realm_default_language": realm.default_language,
        "realm_invite_required": realm.invite_required,
        "realm_emails_restricted_to_domains": realm.emails_restricted_to_domains,
        "realm_disallow_disposable_email_addresses": True,
        "realm_waiting_period_threshold": realm.waiting_period_threshold,
        "realm_enable_spectator_access": realm.enable_spectator_access,
        "realm_message_retention_days": -1
        if realm.message_retention_days is None
        else realm.message_retention_days,
        "realm_allow_message_editing": realm.allow_message_editing,
        "realm_allow_edit_history": realm.allow_edit_history,
        "realm_message_edit_history_visibility_policy": "all" if realm.allow_edit_history else "none",
        "realm_message_content_edit_limit_seconds": realm.message_content_edit_limit_seconds,
        "realm_move_messages_within_stream_limit_seconds": moves_within,
        "realm_move_messages_between_streams_limit_seconds": moves_between,
        "realm_message_content_delete_limit_seconds": realm.message_content_delete_limit_seconds,
        "realm_topics_policy": realm.topics_policy,
        "realm_mandatory_topics": realm.mandatory_topics,
        "realm_empty_topic_display_name": EMPTY_TOPIC_DISPLAY_NAME,
        "realm_email_changes_disabled": False,  # PATCH /settings email sends a confirmation link
        "realm_name_changes_disabled": False,
        "realm_avatar_changes_disabled": False,
        "realm_require_unique_names": False,
        "realm_digest_emails_enabled": True,  # weekly digests (lib/email/digest.py)
        "realm_digest_weekday": 1,
        "realm_send_welcome_emails": False,
        "realm_message_content_allowed_in_email_notifications": True,
        "realm_want_advertise_in_communities_directory": False,
        "realm_inline_image_preview": realm.inline_image_preview,
        "realm_inline_url_embed_preview": realm.inline_url_embed_preview,
        "realm_default_code_block_language": "",
        "realm_video_chat_provider": 0,
        "realm_available_video_chat_providers": {"disabled": {"name": "None", "id": 0}},
        "realm_jitsi_server_url": None,
        "realm_enable_read_receipts": realm.enable_read_receipts,
        "realm_enable_guest_user_indicator": True,
        "realm_enable_guest_user_dm_warning": True,
        "realm_presence_disabled": False,
        "realm_is_zephyr_mirror_realm": False,
        "realm_email_auth_enabled": method_enabled(settings, realm, EMAIL),
        "realm_password_auth_enabled": bool({EMAIL, LDAP} & enabled_methods(settings, realm)),
        "realm_authentication_methods": realm_authentication_methods(settings, realm),
        # Palaver's own sign-in settings (PATCH /realm; realm update events follow them).
        "realm_external_signup": realm.external_signup,
        "realm_require_two_factor": realm.require_two_factor,
        "realm_push_notifications_enabled": settings.push_configured,
        "realm_push_notifications_enabled_end_timestamp": None,
        "realm_upload_quota_mib": None,
        "realm_default_external_accounts": {},
        # Billing is not a concept here; owners hold it, as they do by default elsewhere.
        "realm_can_manage_billing_group": rendered[owners],
        **_limit_fields(ctx),
        **_server_fields(ctx),
        **legacy_policy_fields(group_ids, {g.id: name for name, g in system_groups.items()}),
    }
    for name, gid in group_ids.items():
        state[f"realm_{name}"] = rendered[gid] if gid is not None else None
    for name in REALM_ANNOUNCEMENT_CHANNEL_SETTINGS:
        stream_id = getattr(realm, name)
        state[f"realm_{name}"] = -1 if stream_id is None else stream_id
    return state


@state_provider("realm_user_settings_defaults")
def realm_user_settings_defaults(ctx: StateContext) -> StateDict:
    defaults = ctx.session.get(RealmUserDefault, ctx.realm.id)
    values: StateDict = {}
    if defaults is not None:
        values = {name: getattr(defaults, name) for name in setting_specs()}
    values["emojiset_choices"] = EMOJISET_CHOICES
    values["available_notification_sounds"] = available_notification_sounds()
    return {"realm_user_settings_defaults": values}
