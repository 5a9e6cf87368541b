"""Zulip's realm export (``manage.py export``): a tarball of one directory holding

    realm.json           the organization's tables, each a list of rows: zerver_realm,
                         zerver_userprofile (+ _mirrordummy, _crossrealm), zerver_stream,
                         zerver_recipient, zerver_subscription, zerver_huddle (newer:
                         zerver_directmessagegroup), zerver_reaction, zerver_realmemoji,
                         zerver_usergroup/_namedusergroup/_usergroupmembership,
                         zerver_customprofilefield(value), zerver_realmfilter,
                         zerver_navigationview, ...
    messages-NNNNNN.json zerver_message and zerver_usermessage (flags as ``flags_mask``),
                         about a thousand messages each
    attachment.json      zerver_attachment, each with the IDs of the messages linking it
    uploads/, avatars/, emoji/   the files, each directory with a records.json

Rows name foreign keys by the field ("sender", "recipient", "user_profile") and hold
datetimes as UNIX timestamps. Every file is read incrementally, a table at a time (the
export's files can be large: realm.json holds every reaction), and what waits for the
messages (reactions, file links) waits in a scratch SQLite file, so memory does not grow
with the history; the message files are read one at a time.
"""

from __future__ import annotations

import functools
import re
import sqlite3
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ijson
import orjson

from palaver.importers.bundle import Bundle
from palaver.importers.model import (
    REALM_SETTINGS,
    ImportedAlertWord,
    ImportedBotService,
    ImportedChannel,
    ImportedChannelFolder,
    ImportedEmoji,
    ImportedFile,
    ImportedGroup,
    ImportedGroupSetting,
    ImportedMessage,
    ImportedMutedUser,
    ImportedNavigationView,
    ImportedProfileField,
    ImportedReaction,
    ImportedScheduledMessage,
    ImportedSnippet,
    ImportedUser,
    ImportedUserStatus,
    ImportedUserTopic,
    ImportInputError,
    ImportSource,
    Report,
    clean_full_name,
    from_timestamp,
)
from palaver.lib.user_settings import setting_specs
from palaver.models import Role
from palaver.models.channels import STREAM_GROUP_SETTINGS
from palaver.models.groups import GROUP_PERMISSION_SETTINGS
from palaver.models.realm import REALM_GROUP_SETTINGS

PERSONAL, STREAM, DIRECT_MESSAGE_GROUP = 1, 2, 3
SEND_LATER = 1  # ScheduledMessage.delivery_type; 2 is a reminder
# A subscription's own notification settings, both servers' names.
NOTIFICATION_SETTINGS = (
    "desktop_notifications",
    "audible_notifications",
    "push_notifications",
    "email_notifications",
    "wildcard_mentions_notify",
)
# UserMessage flag bits Palaver keeps: the same bits as Zulip's, read through is_private.
KEPT_FLAGS = 0x1FF
USER_FIELD_TYPE = 6
_MENTION_ID = re.compile(r"(@_?\*\*[^*|\n]+)\|\d+(\*\*)")
_MESSAGE_FILE = re.compile(r"^messages-(\d+)\.json$")
# ijson parses a read's worth of the file before it yields the first of its rows: with its
# 64 KB reads that was some 700 KB of rows at once, with 8 KB ones it is under 100 KB.
_READ_SIZE = 8192


def _realm_settings(realm: dict[str, Any]) -> dict[str, Any]:
    """The settings Palaver shares with Zulip. Zulip 11.0 replaced allow_edit_history with
    message_edit_history_visibility_policy (all 1, moves only 2, none 3); Palaver shows all
    of a history or none of it, so only "all" keeps it shown."""
    settings = {k: realm[k] for k in REALM_SETTINGS if realm.get(k) is not None}
    policy = realm.get("message_edit_history_visibility_policy")
    if "allow_edit_history" not in settings and policy is not None:
        settings["allow_edit_history"] = policy == 1
    return settings


def read_zulip(bundle: Bundle) -> ImportSource:
    if not bundle.has("realm.json"):
        raise ImportInputError(f"{bundle.path}: realm.json is missing (not a Zulip export?)")
    data = _Tables(bundle, "realm.json")
    realm_rows = data.rows("zerver_realm")
    if not realm_rows:
        raise ImportInputError("realm.json: no zerver_realm table")
    report = Report()
    realm = realm_rows[0]
    users = _users(bundle, data)
    known = {u.key for u in users}
    # Reactions, file links and the conversations' members wait on disk: all grow with the
    # history (a direct message may well be its conversation's only one).
    spill = _Spill(bundle.scratch() / "zulip.sqlite3")
    personal = spill.recipients(data.stream("zerver_recipient"))
    channel_recipients = {_ref(s, "recipient") for s in data.stream("zerver_stream") if s.get("recipient")}
    subscribers = spill.subscriptions(data.stream("zerver_subscription"), channel_recipients, personal)
    groups = _GroupIndex(data)
    channels = _channels(data, subscribers, known, groups, report)
    _count_unmodelled_settings(realm, data, report)
    channel_by_recipient = {
        _ref(s, "recipient"): str(s["id"]) for s in data.rows("zerver_stream") if s.get("recipient")
    }
    spill.reactions(data.stream("zerver_reaction"))
    spill.attachments(bundle, report)
    files = sorted((int(m[1]), name) for name in bundle.files_in("") if (m := _MESSAGE_FILE.match(name)))

    def dm_members(recipient_id: int, sender: str) -> frozenset[str] | None:
        if recipient_id in personal:
            return frozenset({personal[recipient_id], sender})
        return spill.members(recipient_id)

    def file_messages(name: str) -> Iterator[ImportedMessage]:
        table = _Tables(bundle, name)
        rows = sorted(table.stream("zerver_message"), key=lambda r: int(r["id"]))
        if not rows:
            return
        ids = [int(r["id"]) for r in rows]
        wanted = set(ids)
        flags: dict[int, dict[str, int]] = defaultdict(dict)
        for um in table.stream("zerver_usermessage"):
            message_id = _ref(um, "message")
            if message_id in wanted:
                flags[message_id][str(_ref(um, "user_profile"))] = int(um.get("flags_mask", 0)) & KEPT_FLAGS
        reactions = spill.reactions_for(ids[0], ids[-1])
        attachments = spill.files_for("message", ids[0], ids[-1], bundle)
        for index, row in enumerate(rows):
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

    def messages() -> Iterator[ImportedMessage]:
        # A file's rows, flags and files go with its generator, before the next file's are
        # read: held by a loop's variables, two files' were in memory at once.
        for _, name in files:
            yield from file_messages(name)

    return ImportSource(
        source="zulip",
        name=str(realm.get("name") or realm.get("string_id") or "Imported from Zulip"),
        description=str(realm.get("description") or ""),
        realm_settings=_realm_settings(realm),
        users=users,
        channels=channels,
        emoji=_emoji(bundle, report),
        messages=messages,
        report=report,
        message_estimate=len(files) * 1000,
        realm_group_settings=groups.settings(realm, REALM_GROUP_SETTINGS, "zerver_realm", report),
        groups=_groups(groups, report),
        profile_fields=_profile_fields(data),
        linkifiers=[
            (str(r["pattern"]), str(r.get("url_template") or r.get("url_format_string") or ""))
            for r in data.rows("zerver_realmfilter")
        ],
        user_topics=[
            ImportedUserTopic(
                user=str(_ref(r, "user_profile")),
                channel=str(_ref(r, "stream")),
                topic=str(r.get("topic_name") or ""),
                visibility_policy=int(r.get("visibility_policy") or 0),
                last_updated=from_timestamp(r.get("last_updated")),
            )
            for r in data.stream("zerver_usertopic")
        ],
        muted_users=[
            ImportedMutedUser(
                str(_ref(r, "user_profile")), str(_ref(r, "muted_user")), from_timestamp(r.get("date_muted"))
            )
            for r in data.stream("zerver_muteduser")
        ],
        alert_words=[
            ImportedAlertWord(str(_ref(r, "user_profile")), str(r.get("word") or ""))
            for r in data.stream("zerver_alertword")
        ],
        scheduled_messages=_scheduled(data, spill, bundle, channel_by_recipient, dm_members, report),
        channel_folders=[
            ImportedChannelFolder(
                key=str(r["id"]),
                name=str(r.get("name") or ""),
                description=str(r.get("description") or ""),
                is_archived=bool(r.get("is_archived")),
                order=int(r.get("order") or 0),
            )
            for r in data.stream("zerver_channelfolder")
        ],
        user_statuses=[
            ImportedUserStatus(
                str(_ref(r, "user_profile")), str(r.get("status_text") or ""), str(r.get("emoji_name") or "")
            )
            for r in data.stream("zerver_userstatus")
            if r.get("status_text") or r.get("emoji_name")
        ],
        saved_snippets=[
            ImportedSnippet(
                str(_ref(r, "user_profile")), str(r.get("title") or ""), str(r.get("content") or "")
            )
            for r in data.stream("zerver_savedsnippet")
        ],
        navigation_views=[
            ImportedNavigationView(
                str(_ref(r, "user")),
                str(r.get("fragment") or ""),
                bool(r.get("is_pinned")),
                str(r["name"]) if r.get("name") is not None else None,
            )
            for r in data.stream("zerver_navigationview")
        ],
        default_channels=[str(_ref(r, "stream")) for r in data.stream("zerver_defaultstream")],
        realm_domains=[
            (str(r.get("domain") or ""), bool(r.get("allow_subdomains")))
            for r in data.stream("zerver_realmdomain")
        ],
        playgrounds=[
            (
                str(r.get("name") or ""),
                str(r.get("pygments_language") or ""),
                str(r.get("url_template") or ""),
            )
            for r in data.stream("zerver_realmplayground")
        ],
    )


class _Tables:
    """One of the export's JSON files (``{"table": [rows...], ...}``), read a table at a
    time: each read is one streaming pass over the file, building only that table's rows,
    so a table that grows with the history (reactions, audit log) is never whole in memory
    unless asked for with ``rows``."""

    def __init__(self, bundle: Bundle, name: str) -> None:
        self.bundle, self.name = bundle, name

    def stream(self, table: str) -> Iterator[dict[str, Any]]:
        with self.bundle.open(self.name) as f:
            try:
                for row in ijson.items(f, f"{table}.item", use_float=True, buf_size=_READ_SIZE):
                    if isinstance(row, dict):
                        yield row
            except ijson.JSONError as e:
                raise ImportInputError(f"{self.name}: invalid JSON or UTF-8 in {table} ({e})") from None

    def rows(self, table: str) -> list[dict[str, Any]]:
        return list(self.stream(table))


class _Spill:
    """Rows that wait for the messages they belong to, in a scratch SQLite file indexed by
    message ID: a message file's reactions and files are one range query."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path)
        self.db.executescript(
            """
            PRAGMA journal_mode = OFF;
            PRAGMA synchronous = OFF;
            CREATE TABLE reaction (message INTEGER, user INTEGER, emoji TEXT);
            CREATE TABLE attachment (id INTEGER PRIMARY KEY, path_id TEXT, row TEXT);
            CREATE TABLE link (kind TEXT, target INTEGER, attachment INTEGER);
            CREATE TABLE conversation (recipient INTEGER PRIMARY KEY);
            CREATE TABLE member (recipient INTEGER, user INTEGER);
            """
        )
        # The conversations a message file names again and again (most histories have few).
        self.members = functools.lru_cache(maxsize=256)(self._members)

    def recipients(self, rows: Iterator[dict[str, Any]]) -> dict[int, str]:
        """Each person's own recipient ID -> their user key; the conversations' recipients
        (direct message groups) go to disk."""
        personal: dict[int, str] = {}

        def conversations() -> Iterator[tuple[int]]:
            for row in rows:
                kind = int(row.get("type") or 0)
                if kind == PERSONAL:
                    personal[int(row["id"])] = str(row["type_id"])
                elif kind == DIRECT_MESSAGE_GROUP:
                    yield (int(row["id"]),)

        self.db.executemany("INSERT OR IGNORE INTO conversation VALUES (?)", conversations())
        return personal

    def subscriptions(
        self, rows: Iterator[dict[str, Any]], channels: set[int], personal: dict[int, str]
    ) -> dict[int, list[dict[str, Any]]]:
        """The channels' subscriptions by recipient ID; a conversation's (its members, left
        ones too, as Zulip counts them) go to disk, a person's own are of no use."""
        by_channel: dict[int, list[dict[str, Any]]] = defaultdict(list)

        def members() -> Iterator[tuple[int, int]]:
            for row in rows:
                recipient = _ref(row, "recipient")
                if recipient in channels:
                    by_channel[recipient].append(row)
                elif recipient not in personal:
                    yield recipient, _ref(row, "user_profile")

        self.db.executemany("INSERT INTO member VALUES (?, ?)", members())
        self.db.execute("CREATE INDEX member_recipient ON member (recipient)")
        return by_channel

    def _members(self, recipient: int) -> frozenset[str] | None:
        """A conversation's members, or None for a recipient the export does not define."""
        if self.db.execute("SELECT 1 FROM conversation WHERE recipient = ?", (recipient,)).fetchone() is None:
            return None
        rows = self.db.execute("SELECT user FROM member WHERE recipient = ?", (recipient,))
        return frozenset(str(user) for (user,) in rows)

    # Rows go in as the export's file gives them (executemany reads an iterator a row at a
    # time): a batch of 10,000 was a few hundred KB that grew with a history below that.

    def reactions(self, rows: Iterator[dict[str, Any]]) -> None:
        self.db.executemany(
            "INSERT INTO reaction VALUES (?, ?, ?)",
            ((_ref(r, "message"), _ref(r, "user_profile"), str(r.get("emoji_name") or "")) for r in rows),
        )
        self.db.execute("CREATE INDEX reaction_message ON reaction (message)")

    def attachments(self, bundle: Bundle, report: Report) -> None:
        if bundle.has("attachment.json"):
            for n, row in enumerate(_Tables(bundle, "attachment.json").stream("zerver_attachment")):
                path_id = str(row.get("path_id", ""))
                if not bundle.has(f"uploads/{path_id}"):
                    report.skip("attachment whose file is not in uploads/", path_id)
                    continue
                self.db.execute("INSERT INTO attachment VALUES (?, ?, ?)", (n, path_id, orjson.dumps(row)))
                links = [("message", int(m), n) for m in row.get("messages") or []]
                links += [("scheduled", int(m), n) for m in row.get("scheduled_messages") or []]
                self.db.executemany("INSERT INTO link VALUES (?, ?, ?)", links)
        self.db.execute("CREATE INDEX link_target ON link (kind, target)")

    def reactions_for(self, first: int, last: int) -> dict[int, list[tuple[int, str]]]:
        found: dict[int, list[tuple[int, str]]] = defaultdict(list)
        for message, user, emoji in self.db.execute(
            "SELECT message, user, emoji FROM reaction WHERE message BETWEEN ? AND ? ORDER BY rowid",
            (first, last),
        ):
            found[message].append((user, emoji))
        return found

    def files_for(self, kind: str, first: int, last: int, bundle: Bundle) -> dict[int, list[ImportedFile]]:
        """Target ID -> the files it links, read from uploads/ when used."""
        found: dict[int, list[ImportedFile]] = defaultdict(list)
        for target, path_id, raw in self.db.execute(
            "SELECT link.target, path_id, row FROM link JOIN attachment ON attachment.id = link.attachment"
            " WHERE kind = ? AND target BETWEEN ? AND ? ORDER BY link.rowid",
            (kind, first, last),
        ):
            row = orjson.loads(raw)
            found[target].append(
                ImportedFile(
                    key=path_id,
                    name=str(row.get("file_name") or path_id.rsplit("/", 1)[-1]),
                    owner=str(_ref(row, "owner")),
                    load=functools.partial(bundle.read, f"uploads/{path_id}"),
                    content_type=row.get("content_type"),
                    created=from_timestamp(row.get("create_time")),
                    replaces=f"/user_uploads/{path_id}",
                )
            )
        return found


def _ref(row: dict[str, Any], name: str) -> int:
    """A foreign key, whether exported by field name ("sender") or column ("sender_id")."""
    value = row.get(name, row.get(f"{name}_id"))
    return int(value) if value is not None else 0


def _users(bundle: Bundle, data: _Tables) -> list[ImportedUser]:
    avatars = _avatar_paths(bundle)
    services: dict[int, list[ImportedBotService]] = {}
    for row in data.stream("zerver_service"):
        service = ImportedBotService(
            name=str(row.get("name") or ""),
            base_url=str(row.get("base_url") or ""),
            interface=int(row.get("interface") or 1),
        )
        services.setdefault(int(row["user_profile"]), []).append(service)
    users = []
    for table, active in (("zerver_userprofile", None), ("zerver_userprofile_mirrordummy", False)):
        for row in data.stream(table):
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
                    settings={k: row[k] for k in setting_specs() if k in row},
                    bot_type=int(row["bot_type"]) if row.get("is_bot") and row.get("bot_type") else None,
                    services=services.get(int(row["id"]), []),
                )
            )
    # The old server's system bots (Notification Bot...) sent some of the messages.
    for row in data.stream("zerver_userprofile_crossrealm"):
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
    data: _Tables,
    subscribers: dict[int, list[dict[str, Any]]],
    known: set[str],
    groups: _GroupIndex,
    report: Report,
) -> list[ImportedChannel]:
    channels = []
    for row in data.stream("zerver_stream"):
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
                folder=str(row["folder"]) if row.get("folder") else None,
                group_settings=groups.settings(
                    row, STREAM_GROUP_SETTINGS, f"zerver_stream {row.get('name')}", report
                ),
                member_settings={
                    str(_ref(s, "user_profile")): {
                        **{k: s[k] for k in ("color", "is_muted", "pin_to_top") if s.get(k) is not None},
                        # None: the person's own default, as in Zulip.
                        **{k: s.get(k) for k in NOTIFICATION_SETTINGS},
                    }
                    for s in subs
                },
            )
        )
    return channels


class _GroupIndex:
    """Every user group of the export by ID: a named group's name (system groups too), an
    anonymous one's members and subgroups (Zulip's value of a setting no named group holds)."""

    def __init__(self, data: _Tables) -> None:
        self.named: dict[int, dict[str, Any]] = {}
        for row in data.stream("zerver_namedusergroup"):
            self.named[_ref(row, "usergroup_ptr") or int(row.get("id", 0))] = row
        self.ids: list[int] = []
        for row in data.stream("zerver_usergroup"):
            self.ids.append(int(row["id"]))
            if row.get("name") and int(row["id"]) not in self.named:  # before NamedUserGroup
                self.named[int(row["id"])] = row
        self.members: dict[int, list[str]] = defaultdict(list)
        for row in data.stream("zerver_usergroupmembership"):
            self.members[_ref(row, "user_group")].append(str(_ref(row, "user_profile")))
        self.subgroups: dict[int, list[int]] = defaultdict(list)
        for row in data.stream("zerver_groupgroupmembership"):
            self.subgroups[_ref(row, "supergroup")].append(_ref(row, "subgroup"))
        self.known = set(self.ids)

    def name(self, group_id: int) -> str | None:
        row = self.named.get(group_id)
        return str(row["name"]) if row is not None and row.get("name") else None

    def settings(
        self, row: dict[str, Any], names: tuple[str, ...], where: str, report: Report
    ) -> dict[str, ImportedGroupSetting]:
        """The row's values of the settings Palaver models; one naming what the export does
        not define is counted and left out (Palaver's default applies)."""
        found = {}
        for name in names:
            value = row.get(name, row.get(f"{name}_id"))
            if value is None:
                continue
            setting = self._value(value)
            if setting is None:
                report.skip(
                    "permission setting naming a user group or user the export does not define"
                    " (Palaver's default applies)",
                    f"{where}: {name}={orjson.dumps(value).decode()}",
                )
                continue
            found[name] = setting
        return found

    def _value(self, value: Any) -> ImportedGroupSetting | None:
        if isinstance(value, dict):  # the API's form, as some converters write it
            members, subgroups = value.get("direct_members"), value.get("direct_subgroups")
            if not isinstance(members, list) or not isinstance(subgroups, list):
                return None
            return self._anonymous([str(m) for m in members], subgroups)
        if not isinstance(value, int) or isinstance(value, bool) or value not in self.known:
            return None
        name = self.name(value)
        if name is not None:
            return ImportedGroupSetting(group=name)
        return self._anonymous(self.members.get(value, []), self.subgroups.get(value, []))

    def _anonymous(self, members: list[str], subgroups: list[Any]) -> ImportedGroupSetting | None:
        names = [self.name(g) if isinstance(g, int) and g in self.known else None for g in subgroups]
        if any(n is None for n in names):  # only named groups nest in a setting's group
            return None
        return ImportedGroupSetting(members=members, subgroups=[n for n in names if n is not None])


def _count_unmodelled_settings(realm: dict[str, Any], data: _Tables, report: Report) -> None:
    """Permission settings of Zulip's that Palaver has no such setting for (billing...):
    each is counted, and has no effect here."""
    for key in sorted(k for k in realm if _is_group_setting(k) and k not in REALM_GROUP_SETTINGS):
        if realm[key] is not None:
            report.skip("organization permission setting Palaver does not have", key)
    for row in data.stream("zerver_stream"):
        for key in sorted(k for k in row if _is_group_setting(k)):
            if row[key] is not None and key.removesuffix("_id") not in STREAM_GROUP_SETTINGS:
                report.skip("channel permission setting Palaver does not have", f"{row.get('name')}: {key}")


def _is_group_setting(key: str) -> bool:
    key = key.removesuffix("_id")
    return key.startswith("can_") and key.endswith(("_group", "_groups"))


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


def _groups(index: _GroupIndex, report: Report) -> list[ImportedGroup]:
    """The organization's own groups (not the system ones), each after its subgroups."""
    groups: dict[int, ImportedGroup] = {}
    for group_id in index.ids:
        info = index.named.get(group_id)
        if info is None or info.get("is_system_group") or info.get("deactivated") or not info.get("name"):
            continue
        groups[group_id] = ImportedGroup(
            str(info["name"]),
            str(info.get("description") or ""),
            index.members[group_id],
            group_settings=index.settings(
                info, GROUP_PERMISSION_SETTINGS, f"zerver_namedusergroup {info['name']}", report
            ),
        )
    within: dict[int, list[int]] = defaultdict(list)
    for supergroup, subgroups in index.subgroups.items():
        for subgroup in subgroups:
            if supergroup in groups and subgroup in groups:
                within[supergroup].append(subgroup)
                groups[supergroup].subgroups.append(groups[subgroup].name)
    ordered: list[ImportedGroup] = []
    placed: set[int] = set()

    def place(group_id: int, path: frozenset[int]) -> None:
        if group_id in placed or group_id in path:  # a cycle's last edge is dropped
            return
        for subgroup in within[group_id]:
            place(subgroup, path | {group_id})
        placed.add(group_id)
        ordered.append(groups[group_id])

    for group_id in groups:
        place(group_id, frozenset())
    return ordered


def _profile_fields(data: _Tables) -> list[ImportedProfileField]:
    values: dict[int, dict[str, Any]] = defaultdict(dict)
    for row in data.stream("zerver_customprofilefieldvalue"):
        values[_ref(row, "field")][str(_ref(row, "user_profile"))] = row.get("value")
    fields = []
    for row in sorted(data.stream("zerver_customprofilefield"), key=lambda r: (r.get("order", 0), r["id"])):
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


def _scheduled(
    data: _Tables,
    spill: _Spill,
    bundle: Bundle,
    channel_by_recipient: dict[int, str],
    dm_members: Any,
    report: Report,
) -> list[ImportedScheduledMessage]:
    """The messages scheduled and not yet sent (those sent are in the history already)."""
    pending = [r for r in data.stream("zerver_scheduledmessage") if not r.get("delivered")]
    files = spill.files_for("scheduled", 0, max((int(r["id"]) for r in pending), default=0), bundle)
    found = []
    for row in pending:
        location = f"zerver_scheduledmessage {row['id']}"
        target = None
        if int(row.get("delivery_type") or SEND_LATER) != SEND_LATER:
            target_id = row.get("reminder_target_message")
            if target_id is None:
                report.skip("reminder whose message was deleted", location)
                continue
            target = str(target_id)
        deliver_at = from_timestamp(row.get("scheduled_timestamp"))
        # The address, content and files are a message's: read as one.
        message = _message(
            {**row, "date_sent": row.get("request_timestamp") or row.get("scheduled_timestamp")},
            location,
            channel_by_recipient,
            dm_members,
            {},
            {},
            files,
            report,
        )
        if message is None or deliver_at is None:
            continue
        found.append(
            ImportedScheduledMessage(
                message=message,
                deliver_at=deliver_at,
                failed=bool(row.get("failed")),
                failure_message=row.get("failure_message"),
                read_by_sender=row.get("read_by_sender"),
                reminder_target=target,
                reminder_note=row.get("reminder_note") if target is not None else None,
            )
        )
    return found


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
        source_id=str(row["id"]),
    )
