"""Organization settings administrators edit (PATCH /realm): values, rules and event forms."""

from __future__ import annotations

from typing import Any

from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import GroupSettingRule
from palaver.lib.user_groups import NOBODY
from palaver.lib.user_settings import LANGUAGES
from palaver.models.realm import REALM_ANNOUNCEMENT_CHANNEL_SETTINGS, REALM_GROUP_SETTINGS

MAX_REALM_NAME_LENGTH = 40
MAX_REALM_DESCRIPTION_LENGTH = 1000
# Integer columns are 32-bit; larger limits mean nothing anyway (68 years).
MAX_SETTING_INT = 2**31 - 1

ORG_TYPES = frozenset({0, 10, 20, 30, 35, 40, 50, 60, 70, 80, 90, 100, 1000})
REALM_TOPICS_POLICIES = ("allow_empty_topic", "disable_empty_topic")

# Time limits where "unlimited" is stored as None.
TIME_LIMIT_SETTINGS = (
    "message_content_edit_limit_seconds",
    "message_content_delete_limit_seconds",
    "move_messages_within_stream_limit_seconds",
    "move_messages_between_streams_limit_seconds",
)

# Settings whose changes clients receive in the update_dict form, as they have since
# those settings began to be coupled with each other (message editing and moving).
UPDATE_DICT_SETTINGS = frozenset({"allow_message_editing", *TIME_LIMIT_SETTINGS, *REALM_GROUP_SETTINGS})

# Who may join and how long messages live are decisions for owners, not administrators.
OWNER_ONLY_SETTINGS = frozenset(
    {
        "message_retention_days",
        "invite_required",
        "emails_restricted_to_domains",
        "disabled_authentication_methods",
        "external_signup",
        "require_two_factor",
        "can_invite_users_group",
        "create_multiuse_invite_group",
    }
)

_DEFAULT_RULE = GroupSettingRule(NOBODY)
# Values a realm permission refuses, beyond never reaching anonymous visitors.
REALM_GROUP_RULES: dict[str, GroupSettingRule] = {name: _DEFAULT_RULE for name in REALM_GROUP_SETTINGS} | {
    # Access to all users is all or members: a finer split would hide people arbitrarily.
    "can_access_all_users_group": GroupSettingRule(
        "role:everyone", allow_nobody_group=False, require_system_group=True
    ),
    "can_manage_all_groups": GroupSettingRule("role:owners", allow_everyone_group=False),
    "can_create_groups": GroupSettingRule("role:members", allow_everyone_group=False),
}
_ALL_USERS_ACCESS_GROUPS = frozenset({"role:everyone", "role:members"})


def bad_value(setting: str, value: object) -> JsonableError:
    return JsonableError(f"Bad value for '{setting}': {value}")


def parse_time_limit(setting: str, value: int | str) -> int | None:
    if value == "unlimited":
        return None
    if isinstance(value, str) or not 0 < value <= MAX_SETTING_INT:
        raise bad_value(setting, value)
    return value


def parse_realm_retention_days(value: int | str) -> int | None:
    """None keeps messages forever (clients see -1)."""
    if value == "unlimited":
        return None
    if isinstance(value, str) or not 0 < value <= MAX_SETTING_INT:
        raise bad_value("message_retention_days", value)
    return value


def check_realm_name(name: str) -> str:
    name = name.strip()
    if not name:
        raise JsonableError("Organization name can't be empty.")
    if len(name) > MAX_REALM_NAME_LENGTH:
        raise JsonableError(f"name is too long (limit: {MAX_REALM_NAME_LENGTH} characters)")
    return name


def check_realm_value(name: str, value: Any) -> Any:
    """Validate one non-group setting, returning the value to store."""
    if name == "name":
        return check_realm_name(value)
    if name == "description":
        if len(value) > MAX_REALM_DESCRIPTION_LENGTH:
            raise JsonableError(f"description is too long (limit: {MAX_REALM_DESCRIPTION_LENGTH} characters)")
        return value
    if name in TIME_LIMIT_SETTINGS:
        return parse_time_limit(name, value)
    if name == "message_retention_days":
        return parse_realm_retention_days(value)
    if name == "default_language" and value not in LANGUAGES:
        raise JsonableError(f"Invalid language '{value}'")
    if name == "org_type" and value not in ORG_TYPES:
        raise JsonableError("Invalid org_type")
    if name == "topics_policy" and value not in REALM_TOPICS_POLICIES:
        raise JsonableError("Invalid topics_policy")
    if name == "waiting_period_threshold" and not 0 <= value <= MAX_SETTING_INT:
        raise bad_value(name, value)
    return value


def event_value(name: str, stored: Any) -> Any:
    """A stored value as clients see it in events and /register."""
    if name in ("message_retention_days", *REALM_ANNOUNCEMENT_CHANNEL_SETTINGS) and stored is None:
        return -1
    return stored


def check_all_users_access_group(name: str, group_name: str | None) -> None:
    if name == "can_access_all_users_group" and group_name not in _ALL_USERS_ACCESS_GROUPS:
        raise JsonableError(f"'{name}' setting cannot be set to '{group_name}' group.")
