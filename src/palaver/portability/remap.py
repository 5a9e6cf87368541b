"""New IDs for imported rows, applied to keys, references and IDs written inside text.

Each table's IDs move by one offset (``delta``): the imported range is reserved in one
piece, so the mapping needs no per-row memory and keeps the original order. Besides key
columns, IDs live in message Markdown (``@**Name|12**``), rendered HTML
(``data-user-id="12"``, channel and message links, upload paths), JSON text columns
(edit history, draft recipients, user-type profile fields) and a few derived values (the
direct-message group hash, the API email ``user12@host``); ``transform_row`` fixes them all.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from palaver.lib.conversations import dm_group_hash
from palaver.models import ProfileFieldType
from palaver.portability.schema import DIRECT_MESSAGE_GROUP, PERSONAL, STREAM, TablePlan

Row = dict[str, Any]

# Text columns that may hold IDs inside Markdown or HTML.
TEXT_COLUMNS = frozenset(
    {"content", "rendered_content", "description", "rendered_description", "rendered_value"}
)

# Extra field the exporter adds to direct_message_group rows (not a column).
MEMBERS_FIELD = "_member_ids"


class IdMap:
    def __init__(self, deltas: dict[str, int], email_hosts: tuple[str, str] = ("", "")) -> None:
        self.deltas = deltas
        # The realm's host in generated addresses (bots, user<ID>@host), before and after:
        # it changes with the string ID or the server.
        self.email_hosts = email_hosts
        # Old IDs of user-type custom profile fields, whose values are JSON user ID lists.
        self.user_field_ids: set[int] = set()

    def new(self, table: str, old: int) -> int:
        return old + self.deltas.get(table, 0)

    def new_list(self, table: str, olds: list[int]) -> list[int]:
        return [self.new(table, i) for i in olds]

    # Text ---------------------------------------------------------------------------------

    def text(self, value: str) -> str:
        if not value:
            return value
        for pattern, replace in self._rules:
            value = pattern.sub(replace, value)
        return value

    def replacer(self, table: str, group: int = 2) -> Callable[[re.Match[str]], str]:
        def replace(m: re.Match[str]) -> str:
            return m.group(1) + str(self.new(table, int(m.group(group)))) + m.group(group + 1)

        return replace

    def _dm_list(self, m: re.Match[str]) -> str:
        ids = ",".join(str(self.new("user_profile", int(i))) for i in m.group(2).split(","))
        return m.group(1) + ids + m.group(3)

    def _emoji(self, m: re.Match[str]) -> str:
        realm, emoji = self.new("realm", int(m.group(2))), self.new("realm_emoji", int(m.group(4)))
        return f"{m.group(1)}{realm}{m.group(3)}{emoji}{m.group(5)}"

    @property
    def _rules(self) -> list[tuple[re.Pattern[str], Callable[[re.Match[str]], str]]]:
        return [
            (_USER_ATTR, self.replacer("user_profile")),
            (_GROUP_ATTR, self.replacer("user_group")),
            (_STREAM_ATTR, self.replacer("stream")),
            (_CHANNEL_LINK, self.replacer("stream")),
            (_MESSAGE_LINK, self.replacer("message")),
            (_DM_LINK, self._dm_list),
            (_EMOJI_PATH, self._emoji),
            (_UPLOAD_PATH, self.replacer("realm")),
            (_MENTION, self.replacer("user_profile")),
            (_MESSAGE_MARKDOWN_LINK, self.replacer("message")),
        ]


_USER_ATTR = re.compile(r'(data-user-id=")(\d+)(")')
_GROUP_ATTR = re.compile(r'(data-user-group-id=")(\d+)(")')
_STREAM_ATTR = re.compile(r'(data-stream-id=")(\d+)(")')
_CHANNEL_LINK = re.compile(r"(#narrow/(?:channel|stream)/)(\d+)([-/\"])")
_MESSAGE_LINK = re.compile(r"(/(?:near|with)/)(\d+)(\b)")
_DM_LINK = re.compile(r"(#narrow/dm/)(\d+(?:,\d+)*)([-/\"])")
_EMOJI_PATH = re.compile(r"(/user_avatars/)(\d+)(/emoji/images/)(\d+)(\.)")
_UPLOAD_PATH = re.compile(r"(/user_uploads/)(\d+)(/)")
_MENTION = re.compile(r"(@_?\*\*[^*\n]*?\|)(\d+)(\*\*)")
_MESSAGE_MARKDOWN_LINK = re.compile(r"(#\*\*[^*\n]*?@)(\d+)(\*\*)")
_DUMMY_EMAIL = re.compile(r"^(user)(\d+)(@.*)$")
_EMOJI_FILE = re.compile(r"^()(\d+)(\..*)$")
_PATH_REALM = re.compile(r"^()(\d+)(/.*)$")


def transform_row(plan: TablePlan, row: Row, ids: IdMap) -> Row:
    """The row as it is inserted into the new database (changes ``row`` in place)."""
    name = plan.name
    if plan.own_id is not None:
        row[plan.own_id] = ids.new(name, row[plan.own_id])
    for column, target in plan.references.items():
        if row.get(column) is not None:
            row[column] = ids.new(target, row[column])
    for column in TEXT_COLUMNS.intersection(row):
        if isinstance(row[column], str):
            row[column] = ids.text(row[column])
    special = _SPECIAL.get(name)
    if special is not None:
        special(row, ids)
    return row


def _recipient(row: Row, ids: IdMap) -> None:
    table = {PERSONAL: "user_profile", STREAM: "stream", DIRECT_MESSAGE_GROUP: "direct_message_group"}
    row["type_id"] = ids.new(table[row["type"]], row["type_id"])


def _user_profile(row: Row, ids: IdMap) -> None:
    # An API email of the form user<ID>@host names the user's ID.
    dummy = _DUMMY_EMAIL.match(row["email"]) is not None and row["email"] != row["delivery_email"]
    row["email"] = _DUMMY_EMAIL.sub(ids.replacer("user_profile"), row["email"]) if dummy else row["email"]
    old, new = ids.email_hosts
    if old and old != new:
        columns = ("email", "delivery_email") if row["is_bot"] else ("email",) if dummy else ()
        for column in columns:
            if row[column].lower().endswith("@" + old):
                row[column] = row[column][: -len(old)] + new


def _attachment(row: Row, ids: IdMap) -> None:
    row["path_id"] = _PATH_REALM.sub(ids.replacer("realm"), row["path_id"])


def _realm_emoji(row: Row, ids: IdMap) -> None:
    row["file_name"] = _EMOJI_FILE.sub(ids.replacer("realm_emoji"), row["file_name"])


def _direct_message_group(row: Row, ids: IdMap) -> None:
    members = row.pop(MEMBERS_FIELD, None)
    if members:
        row["huddle_hash"] = dm_group_hash(ids.new_list("user_profile", members))


def _recipient_list(row: Row, ids: IdMap) -> None:
    # One channel ID for channel messages, user IDs for direct messages.
    target = "stream" if row["type"] == "stream" else "user_profile"
    row["to"] = orjson.dumps(ids.new_list(target, orjson.loads(row["to"] or "[]"))).decode()


def _custom_profile_field(row: Row, ids: IdMap) -> None:
    if row["field_type"] == ProfileFieldType.USER:
        ids.user_field_ids.add(row["id"] - ids.deltas.get("custom_profile_field", 0))


def _custom_profile_field_value(row: Row, ids: IdMap) -> None:
    old_field = row["field_id"] - ids.deltas.get("custom_profile_field", 0)
    if old_field in ids.user_field_ids:
        row["value"] = orjson.dumps(ids.new_list("user_profile", orjson.loads(row["value"]))).decode()


def _navigation_view(row: Row, ids: IdMap) -> None:
    row["fragment"] = ids.text("#" + row["fragment"])[1:] if "/" in row["fragment"] else row["fragment"]


def _message(row: Row, ids: IdMap) -> None:
    if row.get("edit_history"):
        entries = orjson.loads(row["edit_history"])
        for entry in entries:
            if "user_id" in entry and entry["user_id"] is not None:
                entry["user_id"] = ids.new("user_profile", entry["user_id"])
            for key in ("prev_stream", "stream"):
                if key in entry:
                    entry[key] = ids.new("stream", entry[key])
            for key in ("prev_content", "prev_rendered_content"):
                if isinstance(entry.get(key), str):
                    entry[key] = ids.text(entry[key])
        row["edit_history"] = orjson.dumps(entries).decode()


_SPECIAL: dict[str, Callable[[Row, IdMap], None]] = {
    "recipient": _recipient,
    "user_profile": _user_profile,
    "attachment": _attachment,
    "realm_emoji": _realm_emoji,
    "direct_message_group": _direct_message_group,
    "draft": _recipient_list,
    "scheduled_message": _recipient_list,
    "custom_profile_field": _custom_profile_field,
    "custom_profile_field_value": _custom_profile_field_value,
    "navigation_view": _navigation_view,
    "message": _message,
}
