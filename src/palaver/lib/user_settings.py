"""The personal settings table: each setting's type and the values it accepts."""

from __future__ import annotations

import typing
import zoneinfo
from dataclasses import dataclass
from functools import lru_cache

from palaver.models.user_settings import UserSettingsMixin


@dataclass(frozen=True)
class SettingSpec:
    name: str
    type: type
    choices: frozenset[object] | None = None
    minimum: int | None = None
    maximum: int | None = None

    def check(self, value: object) -> bool:
        if type(value) is not self.type:  # bool is not an int here
            return False
        if self.choices is not None and value not in self.choices:
            return False
        if isinstance(value, int) and not isinstance(value, bool):
            if self.minimum is not None and value < self.minimum:
                return False
            if self.maximum is not None and value > self.maximum:
                return False
        return True


def _choices(*values: object) -> frozenset[object]:
    return frozenset(values)


_ONE_TO_THREE = _choices(1, 2, 3)
_ONE_TO_FOUR = _choices(1, 2, 3, 4)


class _Constraints(typing.TypedDict, total=False):
    choices: frozenset[object]
    minimum: int
    maximum: int


_CONSTRAINTS: dict[str, _Constraints] = {
    "web_mark_read_on_scroll_policy": {"choices": _ONE_TO_THREE},
    "web_channel_default_view": {"choices": _ONE_TO_FOUR},
    "web_font_size_px": {"minimum": 8, "maximum": 64},
    "web_line_height_percent": {"minimum": 100, "maximum": 300},
    "color_scheme": {"choices": _ONE_TO_THREE},
    "demote_inactive_streams": {"choices": _ONE_TO_THREE},
    "user_list_style": {"choices": _ONE_TO_THREE},
    "web_stream_unreads_count_display_policy": {"choices": _ONE_TO_THREE},
    "desktop_icon_count_display": {"choices": _ONE_TO_FOUR},
    "automatically_follow_topics_policy": {"choices": _ONE_TO_FOUR},
    "automatically_unmute_topics_in_muted_streams_policy": {"choices": _ONE_TO_FOUR},
    "email_address_visibility": {"choices": _choices(1, 2, 3, 4, 5)},
    "realm_name_in_email_notifications_policy": {"choices": _ONE_TO_THREE},
    "email_notifications_batching_period_seconds": {"minimum": 120, "maximum": 7 * 24 * 3600},
    "web_home_view": {"choices": _choices("recent", "inbox", "all_messages")},
    "emojiset": {"choices": _choices("google", "twitter", "text")},
    "web_animate_image_previews": {"choices": _choices("always", "on_hover", "never")},
    "resolved_topic_notice_auto_read_policy": {"choices": _choices("always", "except_followed", "never")},
    "notification_sound": {
        "choices": _choices("none", "zulip", "chime", "ding", "ping", "bell", "beep", "swoosh", "knock")
    },
}

# English names of the languages clients offer, for user_settings events on default_language.
LANGUAGES: dict[str, str] = {
    "ar": "Arabic",
    "bg": "Bulgarian",
    "bn": "Bengali",
    "ca": "Catalan",
    "cs": "Czech",
    "da": "Danish",
    "de": "German",
    "el": "Greek",
    "en": "English",
    "en_GB": "British English",
    "eo": "Esperanto",
    "es": "Spanish",
    "fa": "Persian",
    "fi": "Finnish",
    "fr": "French",
    "gl": "Galician",
    "gu": "Gujarati",
    "he": "Hebrew",
    "hi": "Hindi",
    "hu": "Hungarian",
    "id": "Indonesian",
    "it": "Italian",
    "ja": "Japanese",
    "ko": "Korean",
    "lt": "Lithuanian",
    "ml": "Malayalam",
    "nl": "Dutch",
    "no": "Norwegian",
    "pl": "Polish",
    "pt": "Portuguese",
    "pt_BR": "Portuguese (Brazil)",
    "ro": "Romanian",
    "ru": "Russian",
    "si": "Sinhala",
    "sr": "Serbian",
    "sv": "Swedish",
    "ta": "Tamil",
    "te": "Telugu",
    "tl": "Tagalog",
    "tr": "Turkish",
    "uk": "Ukrainian",
    "vi": "Vietnamese",
    "zh-hans": "Simplified Chinese",
    "zh-hant": "Traditional Chinese",
}
_CONSTRAINTS["default_language"] = {"choices": frozenset(LANGUAGES)}

# Settings that also live in the realm's defaults for new users (everything personal here).
REALM_DEFAULT_EXCLUDED = frozenset(
    {
        "default_language",
        "enable_login_emails",
        "enable_marketing_emails",
        "web_mark_read_on_scroll_policy",
        "allow_private_data_export",
        "resolved_topic_notice_auto_read_policy",
    }
)


@lru_cache(maxsize=1)
def setting_specs() -> dict[str, SettingSpec]:
    hints = typing.get_type_hints(UserSettingsMixin)
    specs: dict[str, SettingSpec] = {}
    for name, hint in hints.items():
        (python_type,) = typing.get_args(hint)
        extra = _CONSTRAINTS.get(name, {})
        specs[name] = SettingSpec(name=name, type=python_type, **extra)
    return specs


def realm_default_specs() -> dict[str, SettingSpec]:
    return {k: v for k, v in setting_specs().items() if k not in REALM_DEFAULT_EXCLUDED}


@lru_cache(maxsize=1)
def valid_timezones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def is_valid_timezone(value: str) -> bool:
    return value == "" or value in valid_timezones()
