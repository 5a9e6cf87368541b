"""``palaver export --format zulip``: one organization as the tarball Zulip's
``manage.py import`` reads (the layout ``zulip.py`` documents), so a team can leave.

Rows are written as Zulip's export writes them: foreign keys by field name, datetimes as
UNIX timestamps, UserMessage flags as ``flags_mask``, messages a thousand to a file, read
in batches from one snapshot. Direct messages between two people (or oneself) use Zulip's
personal recipients, which every Zulip version reads; larger groups are huddles. Permission
settings name user groups by ID, as Zulip's do: a named group (system ones included), or the
anonymous group (a zerver_usergroup row with no zerver_namedusergroup) made for the setting.
Palaver's organization settings beyond those, the name and the description (and the few
REALM_SETTINGS), are left to Zulip's defaults.
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import Connection, select

from palaver.actions.email_gateway import EMAIL_GATEWAY_LOCAL_PART
from palaver.importers.model import REALM_SETTINGS
from palaver.lib.auth_methods import ALL_METHODS
from palaver.lib.avatars import uploaded_avatar_key
from palaver.lib.markdown.render import render_markdown
from palaver.lib.notification_bot import notification_bot_email
from palaver.lib.realm import realm_email_host
from palaver.lib.realm_emoji import emoji_storage_key
from palaver.lib.realm_images import DEFAULT_ICON, DEFAULT_LOGO, UPLOADED, icon_key, logo_key
from palaver.lib.storage import FileStorage, make_storage
from palaver.models import Realm, UserProfile
from palaver.models.alert_words import AlertWord
from palaver.models.attachments import Attachment, AttachmentMessage
from palaver.models.bots import BotDefaults, BotService
from palaver.models.channels import (
    STREAM_GROUP_SETTINGS,
    ChannelFolder,
    DefaultStream,
    Recipient,
    RecipientType,
    Stream,
    Subscription,
)
from palaver.models.groups import (
    GROUP_PERMISSION_SETTINGS,
    GroupGroupMembership,
    UserGroup,
    UserGroupMembership,
)
from palaver.models.linkifiers import RealmFilter
from palaver.models.messages import DirectMessageGroup, Message, Reaction, UserMessage
from palaver.models.muted_users import MutedUser
from palaver.models.navigation_views import NavigationView
from palaver.models.playgrounds import RealmPlayground
from palaver.models.profile_fields import CustomProfileField, CustomProfileFieldValue
from palaver.models.realm import REALM_GROUP_SETTINGS
from palaver.models.realm_domains import RealmDomain
from palaver.models.realm_emoji import RealmEmoji
from palaver.models.saved_snippets import SavedSnippet
from palaver.models.scheduled_messages import DeliveryType, ScheduledMessage
from palaver.models.user_status import UserStatus
from palaver.models.user_topics import UserTopic
from palaver.services import Services
from palaver.timeutil import epoch_seconds

MESSAGES_PER_FILE = 1000
PERSONAL, STREAM, HUDDLE = 1, 2, 3
CLIENT_ID = 1
# Tables Zulip's import looks for that Palaver has nothing of (or keeps to itself). There is
# no zerver_realmauditlog: without one Zulip's import writes a subscription_created entry
# for each channel subscription, which its soft deactivation needs to give a returning
# user the messages sent meanwhile (an empty list would stand for "no history at all").
EMPTY_TABLES = (
    "zerver_userprofile_mirrordummy",
    "zerver_realmuserdefault",
    "zerver_botstoragedata",
    "zerver_botconfigdata",
    "zerver_onboardingstep",
    "zerver_useractivity",
    "zerver_useractivityinterval",
    "zerver_userpresence",
)
# Zulip's system bots live outside every organization, and an export names them in
# zerver_userprofile_crossrealm by these addresses (which manage.py import looks up on the
# new server). A user of the organization with one of them (a Zulip import's system bot)
# is written there too: as an ordinary user it would be a second account with a system
# bot's address, which Zulip's lookups of its system bots cannot tell apart.
NOTIFICATION_BOT, EMAIL_GATEWAY_BOT = "notification-bot@zulip.com", "emailgateway@zulip.com"
ZULIP_SYSTEM_BOT_EMAILS = (NOTIFICATION_BOT, EMAIL_GATEWAY_BOT, "welcome-bot@zulip.com")
# The organization's pictures: Zulip's names for the sources and versions, and the files.
REALM_IMAGES = ("icon", "logo", "night_logo")
# The realm's links to channels, each a key of every zerver_realm row manage.py import reads.
REALM_CHANNEL_SETTINGS = (
    "new_stream_announcements_stream",
    "signup_announcements_stream",
    "zulip_update_announcements_stream",
    "moderation_request_channel",
)
_UPLOAD_PATH = re.compile(r"/user_uploads/([^\s)\]\"'<>?#]+)")


@dataclass
class ZulipExport:
    path: Path
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def export_zulip(
    conn: Connection,
    realm_id: int,
    path: Path,
    *,
    storage: FileStorage,
    migration_status: bytes | None = None,
    realm_bots: dict[str, str] | None = None,
) -> ZulipExport:
    """Write the tarball to ``path`` (replaced only once complete), reading through ``conn``.

    ``migration_status`` is the target server's migration_status.json, which Zulip's
    ``manage.py import`` requires (and checks against its own migrations, app by app):
    only that server can write it. ``realm_bots`` maps the addresses of the organization's
    own system bots (its Notification Bot, its Email Gateway) to the Zulip system bot each
    stands for: they are written as that one."""
    started = time.monotonic()
    realm = conn.execute(select(Realm.__table__).where(Realm.id == realm_id)).mappings().one()
    top = f"zulip-export-{realm['string_id'] or 'root'}"
    work = Path(tempfile.mkdtemp(prefix="palaver-zulip-export-"))
    try:
        out = work / top
        out.mkdir()
        writer = _Writer(conn, realm_id, out, storage, realm_bots or {})
        result = writer.run(dict(realm))
        if migration_status is not None:
            (out / "migration_status.json").write_bytes(migration_status)
        # Created 0600 before a byte is written (as palaver export's archive): it holds every
        # message. The working directory from mkdtemp is the user's alone too.
        partial = path.with_name(path.name + ".partial")
        os.close(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        os.chmod(partial, 0o600)
        with tarfile.open(partial, "w:gz") as tf:
            tf.add(out, arcname=top)
        os.replace(partial, path)
    finally:
        path.with_name(path.name + ".partial").unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    result.path = path
    result.seconds = time.monotonic() - started
    return result


def _edit_history(value: str | None) -> str | None:
    """The history with each earlier content's HTML, which Zulip's import requires beside
    it: an entry that lacks it (Palaver keeps none for imported history) gets the content
    rendered as plain Markdown."""
    if not value:
        return value
    entries = orjson.loads(value)
    for entry in entries:
        if "prev_content" in entry and not entry.get("prev_rendered_content"):
            entry["prev_rendered_content"] = render_markdown(entry["prev_content"])
    return orjson.dumps(entries).decode()


def _ts(value: Any) -> float | None:
    return None if value is None else epoch_seconds(value)


def _write(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))


def _write_tables(
    path: Path, tables: dict[str, list[dict[str, Any]]], streamed: dict[str, Iterator[dict[str, Any]]]
) -> None:
    """``{"table": [rows], ...}``: the lists whole, then the streamed tables a row at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.write(b"{")
        first = True
        for name, rows in tables.items():
            f.write(b"\n" if first else b",\n")
            first = False
            f.write(orjson.dumps(name) + b": " + orjson.dumps(rows, option=orjson.OPT_INDENT_2))
        for name, stream in streamed.items():
            f.write(b"\n" if first else b",\n")
            first = False
            f.write(orjson.dumps(name) + b": [")
            separator = b"\n"
            for row in stream:
                f.write(separator + orjson.dumps(row))
                separator = b",\n"
            f.write(b"\n]")
        f.write(b"\n}\n")


class _ListWriter:
    """A JSON list written a row at a time."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = path.open("wb")
        self.file.write(b"[")
        self.separator = b"\n"

    def add(self, row: dict[str, Any]) -> None:
        self.file.write(self.separator + orjson.dumps(row))
        self.separator = b",\n"

    def __enter__(self) -> _ListWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.write(b"\n]\n")
        self.file.close()


class _Writer:
    def _personal_settings(
        self, user_ids: set[int], stream_recipients: dict[int, int | None]
    ) -> dict[str, list[dict[str, Any]]]:
        """Each person's topic settings, muted users and alert words (rows of their users)."""
        topics = self.rows(select(UserTopic.__table__).where(UserTopic.user_profile_id.in_(user_ids)))
        muted = self.rows(select(MutedUser.__table__).where(MutedUser.user_profile_id.in_(user_ids)))
        words = self.rows(select(AlertWord.__table__).where(AlertWord.realm_id == self.realm_id))
        return {
            "zerver_usertopic": [
                {
                    "id": t["id"],
                    "user_profile": t["user_profile_id"],
                    "stream": t["stream_id"],
                    "recipient": stream_recipients.get(t["stream_id"]),
                    "topic_name": t["topic_name"],
                    "visibility_policy": t["visibility_policy"],
                    "last_updated": _ts(t["last_updated"]),
                }
                for t in topics
                if t["stream_id"] in stream_recipients
            ],
            "zerver_muteduser": [
                {
                    "id": m["id"],
                    "user_profile": m["user_profile_id"],
                    "muted_user": m["muted_user_id"],
                    "date_muted": _ts(m["date_muted"]),
                }
                for m in muted
            ],
            "zerver_alertword": [
                {
                    "id": w["id"],
                    "user_profile": w["user_profile_id"],
                    "realm": self.realm_id,
                    "word": w["word"],
                }
                for w in words
            ],
        }

    def __init__(
        self, conn: Connection, realm_id: int, out: Path, storage: FileStorage, realm_bots: dict[str, str]
    ) -> None:
        self.conn, self.realm_id, self.out, self.storage = conn, realm_id, out, storage
        self.realm_bots = {k.lower(): v for k, v in realm_bots.items()}
        self.counts: dict[str, int] = {}
        self.reactions = 0

    def rows(self, query: Any) -> list[dict[str, Any]]:
        return [dict(r) for r in self.conn.execute(query).mappings()]

    def run(self, realm: dict[str, Any]) -> ZulipExport:
        everyone = self.rows(select(UserProfile.__table__).where(UserProfile.realm_id == self.realm_id))
        self.system_bots: dict[int, str] = {}
        for u in everyone:
            email = u["delivery_email"].lower()
            if not u["is_bot"]:
                continue
            if email in ZULIP_SYSTEM_BOT_EMAILS:
                self.system_bots[u["id"]] = email
            elif email in self.realm_bots and u["bot_owner_id"] is None:
                self.system_bots[u["id"]] = self.realm_bots[email]
        # The organization's own people and bots; the system bots are the new server's.
        users = [u for u in everyone if u["id"] not in self.system_bots]
        user_ids = {u["id"] for u in users}
        streams = self.rows(select(Stream.__table__).where(Stream.realm_id == self.realm_id))
        stream_recipients = {s["recipient_id"] for s in streams if s["recipient_id"] is not None}
        disabled = {m for m in realm["disabled_authentication_methods"].split(",") if m}
        tables: dict[str, list[dict[str, Any]]] = {
            "zerver_realm": [
                {
                    "id": self.realm_id,
                    "string_id": realm["string_id"],
                    "name": realm["name"],
                    "description": realm["description"],
                    "date_created": _ts(realm["date_created"]),
                    "deactivated": realm["deactivated"],
                    **{k: realm[k] for k in REALM_SETTINGS if k in realm and k != "allow_edit_history"},
                    # Zulip's Realm has no allow_edit_history since 11.0 (migration 0678):
                    # this policy, all (1) or none (3), replaced it.
                    "message_edit_history_visibility_policy": 1 if realm["allow_edit_history"] else 3,
                    **{k: realm[k] for k in REALM_GROUP_SETTINGS},
                    **{k: realm[f"{k}_id"] for k in REALM_CHANNEL_SETTINGS},
                    **{
                        f"{k}_{part}": realm[f"{k}_{part}"]
                        for k in REALM_IMAGES
                        for part in ("source", "version")
                    },
                }
            ],
            "zerver_client": [{"id": CLIENT_ID, "name": "palaver"}],
            # A row for each sign-in method the organization allows: Zulip's import enables
            # only the methods listed (none listed, nobody could sign in).
            "zerver_realmauthenticationmethod": [
                {"id": n, "realm": self.realm_id, "name": name}
                for n, name in enumerate((m for m in ALL_METHODS if m not in disabled), 1)
            ],
            **{name: [] for name in EMPTY_TABLES},
        }
        recipients, subscriptions = self._recipients(everyone, stream_recipients)
        self.personal = {r["type_id"]: r["id"] for r in recipients if r["type"] == PERSONAL}
        tables["zerver_userprofile_crossrealm"] = [
            {"id": user_id, "email": email, "recipient_id": self.personal[user_id]}
            for user_id, email in self.system_bots.items()
        ]
        # A system bot's own recipient and subscriptions are the new server's.
        recipients = [
            r for r in recipients if not (r["type"] == PERSONAL and r["type_id"] in self.system_bots)
        ]
        subscriptions = [s for s in subscriptions if s["user_profile"] not in self.system_bots]
        for n, sub in enumerate(subscriptions, 1):
            sub["id"] = n
        bot_defaults = {
            d["bot_profile_id"]: d
            for d in self.rows(
                select(BotDefaults.__table__).where(BotDefaults.bot_profile_id.in_(list(user_ids)))
            )
        }
        tables["zerver_userprofile"] = [self._user(u, bot_defaults.get(u["id"])) for u in users]
        # Outgoing-webhook bots' endpoints. The token stays behind: Zulip's import gives each
        # service a new one (fix_service_tokens), which its receiver learns anew either way.
        tables["zerver_service"] = [
            {
                "id": b["id"],
                "user_profile": b["bot_profile_id"],
                "name": b["name"],
                "base_url": b["base_url"],
                "token": "",
                "interface": b["interface"],
            }
            for b in self.rows(
                select(BotService.__table__).where(BotService.bot_profile_id.in_(list(user_ids)))
            )
        ]
        self.counts["bot_services"] = len(tables["zerver_service"])
        tables["zerver_stream"] = [self._stream(s) for s in streams]
        tables["zerver_recipient"] = recipients
        tables["zerver_subscription"] = subscriptions
        tables["zerver_huddle"] = self._huddles()
        tables["zerver_defaultstream"] = [
            {"id": n, "realm": self.realm_id, "stream": r["stream_id"]}
            for n, r in enumerate(
                self.rows(select(DefaultStream.__table__).where(DefaultStream.realm_id == self.realm_id)), 1
            )
        ]
        tables |= self._groups(user_ids)
        # Zulip's billing permission (Palaver has no billing): its default, the administrators.
        tables["zerver_realm"][0]["can_manage_billing_group"] = next(
            (
                g["usergroup_ptr"]
                for g in tables["zerver_namedusergroup"]
                if g["is_system_group"] and g["name"] == "role:administrators"
            ),
            None,
        )
        tables |= self._profile_fields()
        tables["zerver_realmfilter"] = [
            {
                "id": r["id"],
                "realm": self.realm_id,
                "pattern": r["pattern"],
                "url_template": r["url_template"],
                "order": r["order"],
            }
            for r in self.rows(select(RealmFilter.__table__).where(RealmFilter.realm_id == self.realm_id))
        ]
        emoji = self.rows(select(RealmEmoji.__table__).where(RealmEmoji.realm_id == self.realm_id))
        tables["zerver_realmemoji"] = [
            {
                "id": e["id"],
                "realm": self.realm_id,
                "name": e["name"],
                "file_name": e["file_name"],
                "author": e["author_id"],
                "deactivated": e["deactivated"],
                "is_animated": e["is_animated"],
            }
            for e in emoji
        ]
        tables |= self._personal_settings(user_ids, {s["id"]: s["recipient_id"] for s in streams})
        tables |= self._organization_extras(user_ids)
        tables["zerver_channelfolder"] = [
            {
                "id": f["id"],
                "realm": self.realm_id,
                "name": f["name"],
                "description": f["description"],
                "rendered_description": f["rendered_description"],
                "date_created": _ts(f["date_created"]),
                "creator": f["creator_id"],
                "is_archived": f["is_archived"],
                "order": f["order"],
            }
            for f in self.rows(select(ChannelFolder.__table__).where(ChannelFolder.realm_id == self.realm_id))
        ]
        self.counts["channel_folders"] = len(tables["zerver_channelfolder"])
        tables["zerver_scheduledmessage"] = self._scheduled_messages(
            {s["id"]: s["recipient_id"] for s in streams}
        )
        # Each file a pending message links (Zulip's import rewrites those links only).
        self.scheduled_links: dict[str, list[int]] = defaultdict(list)
        for m in tables["zerver_scheduledmessage"]:
            for path_id in dict.fromkeys(_UPLOAD_PATH.findall(m["content"])):
                self.scheduled_links[path_id].append(m["id"])
        messages = self._messages()
        for rows in tables.values():
            rows.sort(key=lambda r: r.get("id", 0))
        # Reactions grow with the history: written as they are read, in ID order.
        _write_tables(self.out / "realm.json", tables, {"zerver_reaction": self._reactions()})
        self._attachments()
        self._emoji_files(emoji)
        self._avatars(users)
        self._realm_images(realm, tables["zerver_realm"][0])
        _write(
            self.out / "analytics.json",
            {"analytics_realmcount": [], "analytics_streamcount": [], "analytics_usercount": []},
        )
        self.counts |= {
            "users": len(users),
            "system_bots": len(self.system_bots),
            "channels": len(streams),
            "messages": messages,
            "reactions": self.reactions,
            "emoji": len(emoji),
        }
        return ZulipExport(Path(), self.counts)

    # Tables ---------------------------------------------------------------------------------

    def _user(self, u: dict[str, Any], bot_defaults: dict[str, Any] | None) -> dict[str, Any]:
        # Every key manage.py import reads by name is present (None where Palaver has none).
        return {
            "id": u["id"],
            "realm": self.realm_id,
            "email": u["delivery_email"],
            "delivery_email": u["delivery_email"],
            "full_name": u["full_name"],
            "role": u["role"],
            "is_active": u["is_active"],
            "is_bot": u["is_bot"],
            "bot_type": u["bot_type"],
            "bot_owner": u["bot_owner_id"],
            "is_mirror_dummy": False,
            "timezone": u["timezone"],
            "date_joined": _ts(u["date_joined"]),
            "last_login": _ts(u["last_login"]),
            "default_language": u["default_language"],
            "avatar_source": u["avatar_source"],
            "avatar_version": u["avatar_version"],
            "recipient": self.personal.get(u["id"]),
            "last_reminder": None,
            "last_active_message_id": None,
            "default_sending_stream": bot_defaults and bot_defaults["default_sending_stream_id"],
            "default_events_register_stream": bot_defaults
            and bot_defaults["default_events_register_stream_id"],
            "default_all_public_streams": bool(bot_defaults and bot_defaults["default_all_public_streams"]),
            "user_permissions": [],
            "groups": [],
        }

    def _stream(self, s: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": s["id"],
            "realm": self.realm_id,
            "name": s["name"],
            "description": s["description"],
            "rendered_description": s["rendered_description"],
            "invite_only": s["invite_only"],
            "history_public_to_subscribers": s["history_public_to_subscribers"],
            "is_web_public": s["is_web_public"],
            "deactivated": s["deactivated"],
            "date_created": _ts(s["date_created"]),
            "creator": s["creator_id"],
            "recipient": s["recipient_id"],
            "message_retention_days": s["message_retention_days"],
            "first_message_id": s["first_message_id"],
            "folder": s["folder_id"],
            **{k: s[k] for k in STREAM_GROUP_SETTINGS},
        }

    def _recipients(
        self, users: list[dict[str, Any]], stream_recipients: set[int]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Channel and huddle recipients as they are; a personal recipient for each user."""
        subs = self.rows(
            select(Subscription.__table__).where(
                Subscription.user_profile_id.in_(
                    select(UserProfile.id).where(UserProfile.realm_id == self.realm_id)
                )
            )
        )
        self.members: dict[int, list[int]] = defaultdict(list)
        for sub in subs:
            self.members[sub["recipient_id"]].append(sub["user_profile_id"])
        used = {s["recipient_id"] for s in subs} | stream_recipients
        existing = self.rows(select(Recipient.__table__).where(Recipient.id.in_(used))) if used else []
        # Two-person (and one's own) conversations become Zulip's personal recipients.
        self.small_groups = {
            r["id"]
            for r in existing
            if r["type"] == RecipientType.DIRECT_MESSAGE_GROUP and len(self.members[r["id"]]) <= 2
        }
        self.huddle_of_members = {
            frozenset(self.members[r["id"]]): r["id"]
            for r in existing
            if r["type"] == RecipientType.DIRECT_MESSAGE_GROUP and r["id"] not in self.small_groups
        }
        recipients = [
            {"id": r["id"], "type": int(r["type"]), "type_id": r["type_id"]}
            for r in existing
            if r["id"] not in self.small_groups and r["type"] != PERSONAL
        ]
        next_id = max([r["id"] for r in existing] + [0]) + 1
        subscriptions = []
        for sub in subs:
            if sub["recipient_id"] in self.small_groups:
                continue
            subscriptions.append(self._subscription(sub))
        for n, user in enumerate(sorted(users, key=lambda u: u["id"])):
            recipient_id = next_id + n
            recipients.append({"id": recipient_id, "type": PERSONAL, "type_id": user["id"]})
            subscriptions.append(
                {
                    "id": None,
                    "user_profile": user["id"],
                    "recipient": recipient_id,
                    "active": True,
                    "color": "#c2c2c2",
                    "is_muted": False,
                    "pin_to_top": False,
                }
            )
        for n, sub in enumerate(subscriptions, 1):
            sub["id"] = n
        return recipients, subscriptions

    def _subscription(self, sub: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": sub["id"],
            "user_profile": sub["user_profile_id"],
            "recipient": sub["recipient_id"],
            "active": sub["active"],
            "color": sub["color"],
            "is_muted": sub["is_muted"],
            "pin_to_top": sub["pin_to_top"],
            "desktop_notifications": sub["desktop_notifications"],
            "audible_notifications": sub["audible_notifications"],
            "push_notifications": sub["push_notifications"],
            "email_notifications": sub["email_notifications"],
            "wildcard_mentions_notify": sub["wildcard_mentions_notify"],
        }

    def _huddles(self) -> list[dict[str, Any]]:
        rows = self.rows(
            select(DirectMessageGroup.__table__).where(
                DirectMessageGroup.recipient_id.in_(list(self.members))
            )
        )
        return [
            {
                "id": g["id"],
                "huddle_hash": g["huddle_hash"],
                "group_size": g["group_size"],
                "recipient": g["recipient_id"],
            }
            for g in rows
            if g["recipient_id"] not in self.small_groups
        ]

    def _groups(self, user_ids: set[int]) -> dict[str, list[dict[str, Any]]]:
        groups = self.rows(select(UserGroup.__table__).where(UserGroup.realm_id == self.realm_id))
        group_ids = [g["id"] for g in groups]
        members = self.rows(
            select(UserGroupMembership.__table__).where(UserGroupMembership.user_group_id.in_(group_ids))
        )
        nested = self.rows(
            select(GroupGroupMembership.__table__).where(GroupGroupMembership.supergroup_id.in_(group_ids))
        )
        return {
            "zerver_usergroup": [{"id": g["id"], "realm": self.realm_id} for g in groups],
            "zerver_namedusergroup": [
                {
                    "id": g["id"],
                    "usergroup_ptr": g["id"],
                    "realm_for_sharding": self.realm_id,
                    "name": g["name"],
                    "description": g["description"],
                    "is_system_group": g["is_system_group"],
                    "deactivated": g["deactivated"],
                    "date_created": _ts(g["date_created"]),
                    "creator": g["creator_id"],
                    **{k: g[k] for k in GROUP_PERMISSION_SETTINGS},
                }
                for g in groups
                if g["name"] is not None
            ],
            "zerver_usergroupmembership": [
                {"id": n, "user_group": m["user_group_id"], "user_profile": m["user_profile_id"]}
                for n, m in enumerate(members, 1)
                if m["user_profile_id"] in user_ids
            ],
            "zerver_groupgroupmembership": [
                {"id": n, "supergroup": m["supergroup_id"], "subgroup": m["subgroup_id"]}
                for n, m in enumerate(nested, 1)
            ],
        }

    def _profile_fields(self) -> dict[str, list[dict[str, Any]]]:
        fields = self.rows(
            select(CustomProfileField.__table__).where(CustomProfileField.realm_id == self.realm_id)
        )
        values = self.rows(
            select(CustomProfileFieldValue.__table__).where(
                CustomProfileFieldValue.field_id.in_([f["id"] for f in fields])
            )
        )
        return {
            "zerver_customprofilefield": [
                {
                    "id": f["id"],
                    "realm": self.realm_id,
                    "name": f["name"],
                    "hint": f["hint"],
                    "field_type": f["field_type"],
                    "field_data": f["field_data"],
                    "order": f["order"],
                    "display_in_profile_summary": f["display_in_profile_summary"],
                    "required": f["required"],
                    "editable_by_user": f["editable_by_user"],
                }
                for f in fields
            ],
            "zerver_customprofilefieldvalue": [
                {
                    "id": v["id"],
                    "field": v["field_id"],
                    "user_profile": v["user_profile_id"],
                    "value": v["value"],
                    "rendered_value": v["rendered_value"],
                }
                for v in values
                if v["user_profile_id"] not in self.system_bots
            ],
        }

    def _organization_extras(self, user_ids: set[int]) -> dict[str, list[dict[str, Any]]]:
        """Email domains, code playgrounds, and each person's status, saved snippets and
        navigation views."""
        domains = self.rows(select(RealmDomain.__table__).where(RealmDomain.realm_id == self.realm_id))
        playgrounds = self.rows(
            select(RealmPlayground.__table__).where(RealmPlayground.realm_id == self.realm_id)
        )
        statuses = self.rows(select(UserStatus.__table__).where(UserStatus.user_profile_id.in_(user_ids)))
        snippets = self.rows(select(SavedSnippet.__table__).where(SavedSnippet.user_profile_id.in_(user_ids)))
        views = self.rows(
            select(NavigationView.__table__).where(NavigationView.user_profile_id.in_(user_ids))
        )
        self.counts["navigation_views"] = len(views)
        return {
            "zerver_realmdomain": [
                {
                    "id": d["id"],
                    "realm": self.realm_id,
                    "domain": d["domain"],
                    "allow_subdomains": d["allow_subdomains"],
                }
                for d in domains
            ],
            "zerver_realmplayground": [
                {
                    "id": p["id"],
                    "realm": self.realm_id,
                    "name": p["name"],
                    "pygments_language": p["pygments_language"],
                    "url_template": p["url_template"],
                }
                for p in playgrounds
            ],
            "zerver_userstatus": [
                {
                    "id": n,
                    "user_profile": s["user_profile_id"],
                    "client": CLIENT_ID,
                    "timestamp": _ts(s["timestamp"]),
                    "status_text": s["status_text"],
                    "emoji_name": s["emoji_name"],
                    "emoji_code": s["emoji_code"],
                    "reaction_type": s["reaction_type"],
                }
                for n, s in enumerate(statuses, 1)
            ],
            "zerver_savedsnippet": [
                {
                    "id": s["id"],
                    "realm": self.realm_id,
                    "user_profile": s["user_profile_id"],
                    "title": s["title"],
                    "content": s["content"],
                    "date_created": _ts(s["date_created"]),
                }
                for s in snippets
            ],
            "zerver_navigationview": [
                {
                    "id": v["id"],
                    "user": v["user_profile_id"],
                    "fragment": v["fragment"],
                    "is_pinned": v["is_pinned"],
                    "name": v["name"],
                }
                for v in views
            ],
        }

    def _scheduled_messages(self, stream_recipients: dict[int, int | None]) -> list[dict[str, Any]]:
        """Messages scheduled and not sent yet, addressed by Zulip's recipients (a group that
        never talked has no recipient to name: such a message stays behind, counted)."""
        rows, left = [], 0
        now = time.time()
        for m in self.rows(
            select(ScheduledMessage.__table__).where(
                ScheduledMessage.realm_id == self.realm_id,
                ScheduledMessage.delivered.is_(False),
            )
        ):
            reminder = m["delivery_type"] == DeliveryType.REMIND
            if reminder:
                # A reminder is a direct message to oneself about a message.
                recipient = self.personal.get(m["sender_id"])
            elif m["type"] == "stream":
                recipient = stream_recipients.get(m["stream_id"])
            else:
                others = [int(u) for u in orjson.loads(m["to"]) if int(u) != m["sender_id"]]
                if len(others) <= 1:
                    recipient = self.personal.get(others[0] if others else m["sender_id"])
                else:
                    recipient = self.huddle_of_members.get(frozenset([*others, m["sender_id"]]))
            if recipient is None:
                left += 1
                continue
            rows.append(
                {
                    "id": m["id"],
                    "realm": self.realm_id,
                    "sender": m["sender_id"],
                    "recipient": recipient,
                    "stream": m["stream_id"],
                    "subject": m["topic"],
                    "content": m["content"],
                    "rendered_content": m["rendered_content"],
                    "sending_client": CLIENT_ID,
                    "scheduled_timestamp": _ts(m["scheduled_timestamp"]),
                    "request_timestamp": now,
                    "read_by_sender": m["read_by_sender"],
                    "delivered": False,
                    "delivered_message": None,
                    "has_attachment": "/user_uploads/" in m["content"],
                    "failed": m["failed"],
                    "failure_message": m["failure_message"],
                    "delivery_type": int(DeliveryType(m["delivery_type"])),
                    "reminder_target_message": m["reminder_target_message_id"] if reminder else None,
                    "reminder_note": m["reminder_note"] if reminder else None,
                }
            )
        self.counts["reminders"] = sum(r["delivery_type"] == DeliveryType.REMIND for r in rows)
        self.counts["scheduled_messages"] = len(rows) - self.counts["reminders"]
        if left:
            self.counts["scheduled_messages_without_recipient"] = left
        return rows

    # Messages -------------------------------------------------------------------------------

    def _batches(self, query: Any, id_column: Any) -> Iterator[list[dict[str, Any]]]:
        """The query's rows in ID order, a file's worth at a time (one ID to resume from)."""
        last = 0
        while True:
            batch = self.rows(query.where(id_column > last).order_by(id_column).limit(MESSAGES_PER_FILE))
            if not batch:
                return
            yield batch
            last = batch[-1]["id"]

    def _message_batches(self) -> Iterator[list[dict[str, Any]]]:
        return self._batches(select(Message.__table__).where(Message.realm_id == self.realm_id), Message.id)

    def _messages(self) -> int:
        exported = 0
        for number, batch in enumerate(self._message_batches(), 1):
            ids = [m["id"] for m in batch]
            user_messages = self.rows(select(UserMessage.__table__).where(UserMessage.message_id.in_(ids)))
            _write(
                self.out / f"messages-{number:06d}.json",
                {
                    "zerver_message": [self._message(m) for m in batch],
                    "zerver_usermessage": [
                        {
                            "id": um["id"],
                            "user_profile": um["user_profile_id"],
                            "message": um["message_id"],
                            "flags_mask": int(um["flags"]),
                        }
                        for um in user_messages
                        if um["user_profile_id"] not in self.system_bots
                    ],
                },
            )
            exported += len(ids)
        return exported

    def _message(self, m: dict[str, Any]) -> dict[str, Any]:
        recipient = m["recipient_id"]
        if recipient in self.small_groups:
            others = [u for u in self.members[recipient] if u != m["sender_id"]]
            recipient = self.personal[others[0] if others else m["sender_id"]]
        return {
            "id": m["id"],
            "realm": self.realm_id,
            "sender": m["sender_id"],
            "recipient": recipient,
            "subject": m["subject"],
            "content": m["content"],
            "rendered_content": m["rendered_content"],
            "rendered_content_version": m["rendered_content_version"],
            "date_sent": _ts(m["date_sent"]),
            "last_edit_time": _ts(m["last_edit_time"]),
            "edit_history": _edit_history(m["edit_history"]),
            "has_attachment": m["has_attachment"],
            "has_image": m["has_image"],
            "has_link": m["has_link"],
            "is_channel_message": m["is_channel_message"],
            "sending_client": CLIENT_ID,
        }

    def _reactions(self) -> Iterator[dict[str, Any]]:
        in_realm = select(Message.id).where(Message.realm_id == self.realm_id)
        query = select(Reaction.__table__).where(Reaction.message_id.in_(in_realm))
        for batch in self._batches(query, Reaction.id):
            for r in batch:
                self.reactions += 1
                yield {
                    "id": r["id"],
                    "user_profile": r["user_profile_id"],
                    "message": r["message_id"],
                    "emoji_name": r["emoji_name"],
                    "emoji_code": r["emoji_code"],
                    "reaction_type": r["reaction_type"],
                }

    # Files ----------------------------------------------------------------------------------

    def _attachments(self) -> None:
        """attachment.json and uploads/, a batch of attachments at a time (they grow with the
        history as messages do): each row lists the messages linking it."""
        self.counts["files"] = 0
        records = _ListWriter(self.out / "uploads" / "records.json")

        def rows() -> Iterator[dict[str, Any]]:
            query = select(Attachment.__table__).where(Attachment.realm_id == self.realm_id)
            for batch in self._batches(query, Attachment.id):
                links: dict[int, list[int]] = defaultdict(list)
                for link in self.rows(
                    select(AttachmentMessage.__table__).where(
                        AttachmentMessage.attachment_id.in_([a["id"] for a in batch])
                    )
                ):
                    links[link["attachment_id"]].append(link["message_id"])
                for a in batch:
                    row = self._attachment(a, sorted(links[a["id"]]), records)
                    if row is not None:
                        yield row

        with records:
            _write_tables(self.out / "attachment.json", {}, {"zerver_attachment": rows()})

    def _attachment(
        self, a: dict[str, Any], message_ids: list[int], records: _ListWriter
    ) -> dict[str, Any] | None:
        """The file's row, its bytes copied into uploads/ (None: its file is gone)."""
        data = self.storage.read(a["path_id"])
        if data is None:
            return None
        target = self.out / "uploads" / a["path_id"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        records.add(
            {
                "realm_id": self.realm_id,
                "user_profile_id": a["owner_id"],
                "s3_path": a["path_id"],
                "path": a["path_id"],
                "size": len(data),
                "last_modified": _ts(a["create_time"]),
                "content_type": a["content_type"],
            }
        )
        self.counts["files"] += 1
        return {
            "id": a["id"],
            "realm": self.realm_id,
            "owner": a["owner_id"],
            "file_name": a["file_name"],
            "path_id": a["path_id"],
            "size": a["size"],
            "content_type": a["content_type"],
            "create_time": _ts(a["create_time"]),
            "is_realm_public": True,
            "is_web_public": False,
            "messages": message_ids,
            "scheduled_messages": self.scheduled_links.get(a["path_id"], []),
        }

    def _emoji_files(self, emoji: list[dict[str, Any]]) -> None:
        records = []
        for e in emoji:
            key = emoji_storage_key(self.realm_id, e["file_name"])
            data = self.storage.read(key)
            if data is None:
                continue
            (self.out / "emoji" / key).parent.mkdir(parents=True, exist_ok=True)
            (self.out / "emoji" / key).write_bytes(data)
            records.append(
                {
                    "realm_id": self.realm_id,
                    "author": e["author_id"],
                    "path": key,
                    "s3_path": key,
                    "file_name": e["file_name"],
                    "name": e["name"],
                    "deactivated": e["deactivated"],
                }
            )
        _write(self.out / "emoji" / "records.json", records)

    def _realm_images(self, realm: dict[str, Any], row: dict[str, Any]) -> None:
        """The uploaded icon and logos, as Zulip keeps them: <realm>/realm/<name>.png and
        .original (an image whose file is gone is its default again)."""
        records = []
        for name in REALM_IMAGES:
            if realm[f"{name}_source"] != UPLOADED:
                continue
            key = icon_key(self.realm_id) if name == "icon" else logo_key(self.realm_id, night=name != "logo")
            data = self.storage.read(key)
            if data is None:
                row[f"{name}_source"] = DEFAULT_ICON if name == "icon" else DEFAULT_LOGO
                continue
            for suffix in (".original", ".png"):
                path = f"{self.realm_id}/realm/{name}{suffix}"
                (self.out / "realm_icons" / path).parent.mkdir(parents=True, exist_ok=True)
                (self.out / "realm_icons" / path).write_bytes(data)
                records.append({"realm_id": self.realm_id, "path": path, "s3_path": path})
        _write(self.out / "realm_icons" / "records.json", records)
        self.counts["realm_images"] = len(records) // 2

    def _avatars(self, users: list[dict[str, Any]]) -> None:
        """Each uploaded picture, as Zulip names them: <realm>/<hash>.png and .original."""
        records = []
        for u in users:
            if u["avatar_source"] != "U" or not u["avatar_hash"]:
                continue
            data = self.storage.read(uploaded_avatar_key(self.realm_id, u["avatar_hash"], medium=True))
            data = data or self.storage.read(uploaded_avatar_key(self.realm_id, u["avatar_hash"]))
            if data is None:
                continue
            for suffix in (".original", ".png"):
                path = f"{self.realm_id}/{u['avatar_hash']}{suffix}"
                (self.out / "avatars" / path).parent.mkdir(parents=True, exist_ok=True)
                (self.out / "avatars" / path).write_bytes(data)
                records.append(
                    {
                        "realm_id": self.realm_id,
                        "user_profile_id": u["id"],
                        # Zulip names the file it writes after the user's ID and this version.
                        "avatar_version": u["avatar_version"],
                        "user_profile_email": u["delivery_email"],
                        "s3_path": path,
                        "path": path,
                        "size": len(data),
                        "last_modified": None,
                        "content_type": "image/png",
                    }
                )
        _write(self.out / "avatars" / "records.json", records)
        self.counts["avatars"] = len(records) // 2


def export_zulip_realm(
    services: Services, realm_id: int, path: Path, *, migration_status: bytes | None = None
) -> ZulipExport:
    """``export_zulip`` from one consistent snapshot of the server's database."""
    storage = make_storage(services.settings)
    with services.db.session() as session:
        realm = session.get(Realm, realm_id)
        assert realm is not None
        host = realm_email_host(services.settings, realm)
    realm_bots = {
        notification_bot_email(host): NOTIFICATION_BOT,
        f"{EMAIL_GATEWAY_LOCAL_PART}@{host}": EMAIL_GATEWAY_BOT,
    }
    options: dict[str, Any] = {} if services.settings.is_sqlite else {"isolation_level": "REPEATABLE READ"}
    with services.db.engine.connect().execution_options(**options) as conn, conn.begin():
        return export_zulip(
            conn, realm_id, path, storage=storage, migration_status=migration_status, realm_bots=realm_bots
        )
