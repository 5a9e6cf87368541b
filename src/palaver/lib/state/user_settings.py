"""Personal settings: the ``user_settings`` object, and the top-level copies older clients read."""

from __future__ import annotations

from palaver.lib.register import StateContext, StateDict, state_provider
from palaver.lib.state.realm import EMOJISET_CHOICES, available_notification_sounds
from palaver.lib.user_settings import setting_specs

# Settings that servers before the user_settings object (feature level 89) sent at top level,
# grouped by the legacy fetch name that asked for them.
LEGACY_DISPLAY_SETTINGS = (
    "color_scheme",
    "default_language",
    "demote_inactive_streams",
    "emojiset",
    "enable_drafts_synchronization",
    "enter_sends",
    "fluid_layout_width",
    "high_contrast_mode",
    "left_side_userlist",
    "starred_message_counts",
    "translate_emoticons",
    "twenty_four_hour_time",
    "web_home_view",
)
LEGACY_NOTIFICATION_SETTINGS = (
    "desktop_icon_count_display",
    "email_notifications_batching_period_seconds",
    "enable_desktop_notifications",
    "enable_digest_emails",
    "enable_login_emails",
    "enable_marketing_emails",
    "enable_offline_email_notifications",
    "enable_offline_push_notifications",
    "enable_online_push_notifications",
    "enable_sounds",
    "enable_stream_audible_notifications",
    "enable_stream_desktop_notifications",
    "enable_stream_email_notifications",
    "enable_stream_push_notifications",
    "message_content_in_email_notifications",
    "notification_sound",
    "pm_content_in_desktop_notifications",
    "presence_enabled",
    "realm_name_in_email_notifications_policy",
    "wildcard_mentions_notify",
)


@state_provider("user_settings")
def user_settings(ctx: StateContext) -> StateDict:
    user = ctx.user
    values: StateDict = {name: getattr(user, name) for name in setting_specs()}
    values["timezone"] = user.timezone
    values["emojiset_choices"] = EMOJISET_CHOICES
    values["available_notification_sounds"] = available_notification_sounds()
    return {"user_settings": values}


def _legacy_copies_wanted(ctx: StateContext) -> bool:
    # Clients that understand the user_settings object get the settings only there.
    return not ctx.client.has_capability("user_settings_object")


@state_provider("update_display_settings")
def legacy_display_settings(ctx: StateContext) -> StateDict:
    if not _legacy_copies_wanted(ctx):
        return {}
    state: StateDict = {name: getattr(ctx.user, name) for name in LEGACY_DISPLAY_SETTINGS}
    state["timezone"] = ctx.user.timezone
    state["emojiset_choices"] = EMOJISET_CHOICES
    return state


@state_provider("update_global_notifications")
def legacy_notification_settings(ctx: StateContext) -> StateDict:
    if not _legacy_copies_wanted(ctx):
        return {}
    state: StateDict = {name: getattr(ctx.user, name) for name in LEGACY_NOTIFICATION_SETTINGS}
    state["available_notification_sounds"] = available_notification_sounds()
    return state
