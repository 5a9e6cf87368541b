"""Validation of custom profile field definitions (what administrators create and edit)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import orjson

from palaver.lib.exceptions import JsonableError
from palaver.models.profile_fields import ProfileFieldType

NAME_MAX_LENGTH = 40
HINT_MAX_LENGTH = 80
MAX_SUMMARY_FIELDS = 2

# External account subtypes with a fixed name, hint and profile URL.
DEFAULT_EXTERNAL_ACCOUNTS: dict[str, dict[str, str]] = {
    "github": {
        "name": "GitHub",
        "hint": "Enter your GitHub username",
        "url_pattern": "https://github.com/%(username)s",
    },
    "twitter": {"name": "X", "hint": "Enter your X username", "url_pattern": "https://x.com/%(username)s"},
}

# Long text does not fit a summary; user pickers need client support that does not exist yet.
_NOT_IN_SUMMARY = frozenset({ProfileFieldType.LONG_TEXT, ProfileFieldType.USER})


def check_field_type(field_type: int) -> ProfileFieldType:
    try:
        return ProfileFieldType(field_type)
    except ValueError:
        raise JsonableError("Invalid field type.") from None


def check_name_and_hint(name: str, hint: str) -> tuple[str, str]:
    name, hint = name.strip(), hint.strip()
    if not name:
        raise JsonableError("Label cannot be blank.")
    if len(hint) > HINT_MAX_LENGTH:
        raise JsonableError(f"hint is too long (limit: {HINT_MAX_LENGTH} characters)")
    if len(name) > NAME_MAX_LENGTH:
        raise JsonableError(f"name is too long (limit: {NAME_MAX_LENGTH} characters)")
    return name, hint


def _required_string(var_name: str, value: object) -> str:
    if not isinstance(value, str):
        raise JsonableError(f"{var_name} is not a string")
    if not value.strip():
        raise JsonableError(f"{var_name} cannot be blank.")
    return value


def _check_keys(var_name: str, data: dict[str, Any], required: set[str], optional: set[str]) -> None:
    for key in sorted(required):
        if key not in data:
            raise JsonableError(f"{key} key is missing from {var_name}")
    extra = sorted(set(data) - required - optional)
    if extra:
        raise JsonableError(f"Unexpected arguments: {', '.join(extra)}")


def check_select_field_data(field_data: dict[str, Any]) -> None:
    if len(field_data) < 1:
        raise JsonableError("Field must have at least one choice.")
    texts: set[str] = set()
    for key, choice in field_data.items():
        if not key.strip():
            raise JsonableError("'value' cannot be blank.")
        where = f'field_data["{key}"]'
        if not isinstance(choice, dict):
            raise JsonableError(f"{where} is not a dict")
        _check_keys(where, choice, {"text", "order"}, set())
        texts.add(_required_string(f'{where}["text"]', choice["text"]))
        _required_string(f'{where}["order"]', choice["order"])
    if len(texts) != len(field_data):
        raise JsonableError("Field must not have duplicate choices.")


def _check_url_pattern(value: object) -> None:
    pattern = _required_string('field_data["url_pattern"]', value)
    if pattern.count("%(username)s") != 1:
        raise JsonableError("Malformed URL pattern.")
    parts = urlsplit(pattern.replace("%(username)s", "username"))
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in pattern):
        raise JsonableError("Malformed URL pattern.")


def check_external_account_field_data(field_data: dict[str, Any]) -> None:
    _check_keys("field_data", field_data, {"subtype"}, {"url_pattern"})
    subtype = _required_string('field_data["subtype"]', field_data["subtype"])
    if "url_pattern" in field_data:
        _check_url_pattern(field_data["url_pattern"])
    if subtype in DEFAULT_EXTERNAL_ACCOUNTS:
        return
    if subtype != "custom":
        raise JsonableError("Invalid external account type")
    if "url_pattern" not in field_data:
        raise JsonableError("Custom external account must define URL pattern")


def is_default_external_account(field_type: int, field_data: dict[str, Any]) -> bool:
    return (
        field_type == ProfileFieldType.EXTERNAL_ACCOUNT
        and field_data.get("subtype") in DEFAULT_EXTERNAL_ACCOUNTS
    )


def check_field_data(field_type: ProfileFieldType, field_data: dict[str, Any]) -> str:
    """The stored form of ``field_data``: JSON for the types that use it, else empty."""
    if field_type == ProfileFieldType.SELECT:
        check_select_field_data(field_data)
    elif field_type == ProfileFieldType.EXTERNAL_ACCOUNT:
        check_external_account_field_data(field_data)
    else:
        return ""
    return orjson.dumps(field_data).decode()


def check_display_in_summary(field_type: int, display_in_profile_summary: bool) -> None:
    if display_in_profile_summary and field_type in _NOT_IN_SUMMARY:
        raise JsonableError("Field type not supported for display in profile summary.")
