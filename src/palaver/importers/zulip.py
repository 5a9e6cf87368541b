"""Zulip's realm export (``manage.py export``): a tarball of one directory holding

    realm.json           the organization's tables, each a list of rows: zerver_realm,
                         zerver_userprofile (+ _mirrordummy, _crossrealm), zerver_stream,
                         zerver_recipient, zerver_subscription, zerver_huddle (newer:
                         zerver_directmessagegroup), zerver_reaction, zerver_realmemoji,
                         zerver_usergroup/_namedusergroup/_usergroupmembership,
                         zerver_customprofilefield(value), zerver_realmfilter, ...
    messages-NNNNNN.json zerver_message and zerver_usermessage (flags as ``flags_mask``),
                         about a thousand messages each
    attachment.json      zerver_attachment, each with the IDs of the messages linking it
    uploads/, avatars/, emoji/   the files, each directory with a records.json

Rows name foreign keys by the field ("sender", "recipient", "user_profile") and hold
datetimes as UNIX timestamps. Message files are read one at a time.
"""

from __future__ import annotations

import functools
import re
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import orjson

from palaver.importers.bundle import Bundle
from palaver.importers.model import (
    REALM_SETTINGS,
    ImportedAlertWord,
    ImportedChannel,
    ImportedEmoji,
    ImportedFile,
    ImportedGroup,
    ImportedMessage,
    ImportedMutedUser,
    ImportedProfileField,
    ImportedReaction,
    ImportedUser,
    ImportedUserTopic,
    ImportInputError,
    ImportSource,
    Report,
    clean_full_name,
    from_timestamp,
)
from palaver.models import Role

PERSONAL, STREAM, DIRECT_MESSAGE_GROUP = 1, 2, 3
# UserMessage flag bits Palaver keeps: the same bits as Zulip's, read through is_private.
KEPT_FLAGS = 0x1FF
USER_FIELD_TYPE = 6
_MENTION_ID = re.compile(r"(@_?\*\*[^*|\n]+)\|\d+(\*\*)")
_MESSAGE_FILE = re.compile(r"^messages-(\d+)\.json$")


def read_zulip(bundle: Bundle) -> ImportSource:
    if not bundle.has("realm.json"):
        raise ImportInputError(f"{bundle.path}: realm.json is missing (not a Zulip export?)")
    data = bundle.json("realm.json")
    if not isinstance(data, dict) or not data.get("zerver_realm"):
        raise ImportInputError("realm.json: no zerver_realm table")
    report = Report()
    realm = data["zerver_realm"][0]
    users = _users(bundle, data)
    known = {u.key for u in users}
    recipients = {r["id"]: r for r in _rows(data, "zerver_recipient")}
    subscribers: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for sub in _rows(data, "zerver_subscription"):
        subscribers[_ref(sub, "recipient")].append(sub)
    channels = _channels(data, subscribers, known)
    channel_by_recipient = {
        _ref(s, "recipient"): str(s["id"]) for s in _rows(data, "zerver_stream") if s.get("recipient")
    }
    attachments = _attachments(bundle, report)
    # Every reaction of the export waits for its message: (user ID, emoji name) pairs, the
    # smallest form (realm.json itself is in memory already).
    reactions: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for row in _rows(data, "zerver_reaction"):
        reactions[_ref(row, "message")].append((_ref(row, "user_profile"), str(row["emoji_name"])))
    files = sorted((int(m[1]), name) for name in bundle.names() if (m := _MESSAGE_FILE.match(name)))

    def dm_members(recipient_id: int, sender: str) -> frozenset[str] | None:
        recipient = recipients.get(recipient_id)
        if recipient is None:
            return None
        if recipient["type"] == PERSONAL:
            return frozenset({str(recipient["type_id"]), sender})
        return frozenset(str(_ref(s, "user_profile")) for s in subscribers.get(recipient_id, []))

    def messages() -> Iterator[ImportedMessage]:
        for _, name in files:
            table = bundle.json(name)
            flags: dict[int, dict[str, int]] = defaultdict(dict)
            for um in table.get("zerver_usermessage", []):
                flags[_ref(um, "message")][str(_ref(um, "user_profile"))] = (
                    int(um.get("flags_mask", 0)) & KEPT_FLAGS
                )
            for index, row in enumerate(sorted(table.get("zerver_message", []), key=lambda r: r["id"])):
                message = _message(
                    row,
                    f"{name}[{index}]",
                    channel_by_recipient,
                    dm_members,
                    flags,
                    reactions,
                    attachments,
                    report,
                )
                if message is not None:
                    yield message

    return ImportSource(
        source="zulip",
        name=str(realm.get("name") or realm.get("string_id") or "Imported from Zulip"),
        description=str(realm.get("description") or ""),
        realm_settings={k: realm[k] for k in REALM_SETTINGS if realm.get(k) is not None},
        users=users,
        channels=channels,
        emoji=_emoji(bundle, report),
        messages=messages,
        report=report,
        message_estimate=len(files) * 1000,
        groups=_groups(data),
        profile_fields=_profile_fields(data),
        linkifiers=[
            (str(r["pattern"]), str(r.get("url_template") or r.get("url_format_string") or ""))
            for r in _rows(data, "zerver_realmfilter")
        ],
        user_topics=[
            ImportedUserTopic(
                user=str(_ref(r, "user_profile")),
                channel=str(_ref(r, "stream")),
                topic=str(r.get("topic_name") or ""),
                visibility_policy=int(r.get("visibility_policy") or 0),
                last_updated=from_timestamp(r.get("last_updated")),
            )
            for r in _rows(data, "zerver_usertopic")
        ],
        muted_users=[
            ImportedMutedUser(
                str(_ref(r, "user_profile")), str(_ref(r, "muted_user")), from_timestamp(r.get("date_muted"))
            )
            for r in _rows(data, "zerver_muteduser")
        ],
        alert_words=[
            ImportedAlertWord(str(_ref(r, "user_profile")), str(r.get("word") or ""))
            for r in _rows(data, "zerver_alertword")
        ],
    )


def _rows(data: dict[str, Any], table: str) -> list[dict[str, Any]]:
    rows = data.get(table) or []
    if not isinstance(rows, list):
        raise ImportInputError(f"realm.json: {table} is not a list")
    return [r for r in rows if isinstance(r, dict)]


def _ref(row: dict[str, Any], name: str) -> int:
    """A foreign key, whether exported by field name ("sender") or column ("sender_id")."""
    value = row.get(name, row.get(f"{name}_id"))
    return int(value) if value is not None else 0


def _users(bundle: Bundle, data: dict[str, Any]) -> list[ImportedUser]:
    avatars = _avatar_paths(bundle)
    users = []
    for table, active in (("zerver_userprofile", None), ("zerver_userprofile_mirrordummy", False)):
        for row in _rows(data, table):
            key = str(row["id"])
            path = avatars.get(row["id"])
            users.append(
                ImportedUser(
                    key=key,
                    email=str(row.get("delivery_email") or row.get("email") or ""),
                    full_name=clean_full_name(str(row.get("full_name") or ""), key),
                    role=int(row.get("role") or Role.MEMBER),
                    is_bot=bool(row.get("is_bot")),
                    is_active=bool(row.get("is_active", True)) if active is None else active,
                    timezone=str(row.get("timezone") or ""),
                    date_joined=from_timestamp(row.get("date_joined")),
                    bot_owner=str(row["bot_owner"]) if row.get("bot_owner") else None,
                    avatar=functools.partial(bundle.read_optional, f"avatars/{path}") if path else None,
                )
            )
    # The old server's system bots (Notification Bot...) sent some of the messages.
    for row in _rows(data, "zerver_userprofile_crossrealm"):
        email = str(row.get("email") or "")
        name = email.split("@", 1)[0].replace("-", " ").title() or "System Bot"
        users.append(ImportedUser(key=str(row["id"]), email=email, full_name=name, is_bot=True))
    return users


def _avatar_paths(bundle: Bundle) -> dict[int, str]:
    """User ID -> the best picture in avatars/: the original upload, else the square one."""
    if not bundle.has("avatars/records.json"):
        return {}
    found: dict[int, str] = {}
    for record in bundle.json("avatars/records.json"):
        path = str(record.get("path", ""))
        user_id = record.get("user_profile_id")
        if user_id is None or path.endswith("-medium.png"):
            continue
        if path.endswith(".original") or user_id not in found:
            found[int(user_id)] = path
    return found


def _channels(
    data: dict[str, Any], subscribers: dict[int, list[dict[str, Any]]], known: set[str]
) -> list[ImportedChannel]:
    channels = []
    for row in _rows(data, "zerver_stream"):
        subs = [s for s in subscribers.get(_ref(row, "recipient"), []) if s.get("active", True)]
        members = [str(_ref(s, "user_profile")) for s in subs]
        channels.append(
            ImportedChannel(
                key=str(row["id"]),
                name=str(row.get("name") or ""),
                description=str(row.get("description") or ""),
                invite_only=bool(row.get("invite_only")),
                archived=bool(row.get("deactivated")),
                creator=str(row["creator"]) if row.get("creator") else None,
                date_created=from_timestamp(row.get("date_created")),
                members=[m for m in members if m in known],
                history_public_to_subscribers=bool(row.get("history_public_to_subscribers", True)),
                is_web_public=bool(row.get("is_web_public")),
                member_settings={
                    str(_ref(s, "user_profile")): {
                        k: s[k] for k in ("color", "is_muted", "pin_to_top") if s.get(k) is not None
                    }
                    for s in subs
                },
            )
        )
    return channels


def _attachments(bundle: Bundle, report: Report) -> dict[int, list[ImportedFile]]:
    """Message ID -> the files it links, read from uploads/ when used."""
    table = bundle.json("attachment.json", default={})
    by_message: dict[int, list[ImportedFile]] = defaultdict(list)
    for row in table.get("zerver_attachment", []):
        path_id = str(row.get("path_id", ""))
        name = f"uploads/{path_id}"
        if not bundle.has(name):
            report.skip("attachment whose file is not in uploads/", path_id)
            continue
        file = ImportedFile(
            key=path_id,
            name=str(row.get("file_name") or path_id.rsplit("/", 1)[-1]),
            owner=str(_ref(row, "owner")),
            load=functools.partial(bundle.read, name),
            content_type=row.get("content_type"),
            created=from_timestamp(row.get("create_time")),
            replaces=f"/user_uploads/{path_id}",
        )
        for message_id in row.get("messages", []):
            by_message[int(message_id)].append(file)
    return by_message


def _emoji(bundle: Bundle, report: Report) -> list[ImportedEmoji]:
    if not bundle.has("emoji/records.json"):
        return []
    found = []
    for record in bundle.json("emoji/records.json"):
        name = f"emoji/{record.get('path', '')}"
        if not bundle.has(name):
            report.skip("custom emoji whose image is not in emoji/", str(record.get("name")))
            continue
        found.append(
            ImportedEmoji(
                name=str(record["name"]),
                load=functools.partial(bundle.read, name),
                author=str(record["author"]) if record.get("author") else None,
                deactivated=bool(record.get("deactivated")),
            )
        )
    return found


def _groups(data: dict[str, Any]) -> list[ImportedGroup]:
    named = {_ref(r, "usergroup_ptr") or int(r.get("id", 0)): r for r in _rows(data, "zerver_namedusergroup")}
    members: dict[int, list[str]] = defaultdict(list)
    for row in _rows(data, "zerver_usergroupmembership"):
        members[_ref(row, "user_group")].append(str(_ref(row, "user_profile")))
    groups = []
    for row in _rows(data, "zerver_usergroup"):
        info = named.get(row["id"], row)
        if info.get("is_system_group") or info.get("deactivated") or not info.get("name"):
            continue
        groups.append(
            ImportedGroup(str(info["name"]), str(info.get("description") or ""), members[row["id"]])
        )
    return groups


def _profile_fields(data: dict[str, Any]) -> list[ImportedProfileField]:
    values: dict[int, dict[str, Any]] = defaultdict(dict)
    for row in _rows(data, "zerver_customprofilefieldvalue"):
        values[_ref(row, "field")][str(_ref(row, "user_profile"))] = row.get("value")
    fields = []
    for row in sorted(_rows(data, "zerver_customprofilefield"), key=lambda r: (r.get("order", 0), r["id"])):
        field_values = values[row["id"]]
        if row.get("field_type") == USER_FIELD_TYPE:
            field_values = {k: [str(u) for u in orjson.loads(v)] for k, v in field_values.items() if v}
        raw_data = row.get("field_data") or "{}"
        fields.append(
            ImportedProfileField(
                name=str(row["name"]),
                field_type=int(row["field_type"]),
                hint=str(row.get("hint") or ""),
                field_data=orjson.loads(raw_data) if isinstance(raw_data, str) and raw_data else {},
                values=field_values,
            )
        )
    return fields


def _message(
    row: dict[str, Any],
    location: str,
    channel_by_recipient: dict[int, str],
    dm_members: Any,
    flags: dict[int, dict[str, int]],
    reactions: dict[int, list[tuple[int, str]]],
    attachments: dict[int, list[ImportedFile]],
    report: Report,
) -> ImportedMessage | None:
    sender = str(_ref(row, "sender"))
    recipient_id = _ref(row, "recipient")
    date_sent = from_timestamp(row.get("date_sent", row.get("pub_date")))
    if date_sent is None:
        report.skip("message without a valid date_sent", location)
        return None
    channel = channel_by_recipient.get(recipient_id)
    members = None if channel is not None else dm_members(recipient_id, sender)
    if channel is None and members is None:
        report.skip("message to a recipient not in zerver_recipient", location)
        return None
    history = None
    if row.get("edit_history"):
        try:
            history = orjson.loads(row["edit_history"])
        except orjson.JSONDecodeError:
            report.skip("edit history that is not JSON (dropped)", location)
    return ImportedMessage(
        location=location,
        sender=sender,
        date_sent=date_sent,
        # Mentions name users by their old IDs: by name alone they resolve to the new ones.
        content=_MENTION_ID.sub(r"\1\2", str(row.get("content") or "")),
        channel=channel,
        topic=str(row.get("subject", row.get("topic", ""))) if channel is not None else "",
        direct_members=members,
        last_edit_time=from_timestamp(row.get("last_edit_time")),
        reactions=[ImportedReaction(str(u), name) for u, name in reactions.get(int(row["id"]), [])],
        files=attachments.get(int(row["id"]), []),
        user_flags=flags.get(int(row["id"])),
        edits=history if isinstance(history, list) else None,
    )
