"""Slack's workspace export (standard or full history), as a zip or its unpacked directory.

    users.json          people and bots          channels.json  public channels
    groups.json         private channels         dms.json       direct messages
    mpims.json          group direct messages    emoji.json     custom emoji (optional:
    <conversation>/YYYY-MM-DD.json                               the emoji.list response)
                        that day's messages: channels, groups and mpims by name, DMs by ID

Threads become topics as Zulip's Slack import names them: messages outside threads go to
"imported from Slack", each thread (its parent and replies, broadcast ones once) to
"YYYY-MM-DD Slack thread N", numbered per channel by the day the thread started.
Messages of all conversations are merged in time order, one day file of each open at a time.
"""

from __future__ import annotations

import functools
import heapq
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from palaver.importers.bundle import Bundle, parse_json
from palaver.importers.fetch import Downloader
from palaver.importers.model import (
    ImportedChannel,
    ImportedEmoji,
    ImportedFile,
    ImportedMessage,
    ImportedReaction,
    ImportedUser,
    ImportInputError,
    ImportSource,
    Report,
    clean_full_name,
    from_timestamp,
)
from palaver.importers.mrkdwn import Resolver, convert
from palaver.importers.threads import ThreadTopics
from palaver.lib.emoji import emoji_code_for_name
from palaver.models import Role

UNTHREADED_TOPIC = "imported from Slack"
# Membership and settings notices: Slack shows them, they carry no conversation.
NOISE_SUBTYPES = frozenset(
    {
        "channel_join",
        "channel_leave",
        "group_join",
        "group_leave",
        "channel_topic",
        "channel_purpose",
        "channel_name",
        "group_topic",
        "group_purpose",
        "group_name",
        "channel_archive",
        "channel_unarchive",
        "group_archive",
        "group_unarchive",
        "pinned_item",
        "unpinned_item",
        "tombstone",
        "bot_add",
        "bot_remove",
        "reminder_add",
        "sh_room_created",
    }
)
CONTENT_SUBTYPES = frozenset(
    {None, "bot_message", "file_share", "thread_broadcast", "me_message", "file_comment", "reply_broadcast"}
)
_DAY_FILE = re.compile(r"^(?P<dir>[^/]+)/(?P<day>\d{4}-\d{2}-\d{2})\.json$")
_SKIN_TONE = re.compile(r"::skin-tone-\d$")
# Slack names Palaver's emoji set spells otherwise.
_EMOJI_ALIASES = {"simple_smile": "slightly_smiling_face", "thumbsup_all": "+1"}


@dataclass
class _Conversation:
    directory: str
    key: str
    # The members of a direct message conversation; None for a channel.
    members: frozenset[str] | None


def read_slack(bundle: Bundle, downloader: Downloader) -> ImportSource:
    report = Report()
    users, bots = _users(bundle, report)
    channels, conversations, pins = _channels(bundle, report)
    conversations += _direct_conversations(bundle, report)
    resolver = Resolver({u.key: u.full_name for u in users}.get, {c.key: c.name for c in channels})
    days: dict[str, list[str]] = {}
    for name in bundle.names():
        match = _DAY_FILE.match(name)
        if match:
            days.setdefault(match["dir"], []).append(name)
    for directory in sorted(set(days) - {c.directory for c in conversations}):
        report.skip("message directory of no listed conversation", directory)
    emoji = _emoji(bundle, downloader, report)
    _integrations(bundle, report)
    custom_emoji = {e.name for e in emoji}

    def messages() -> Iterator[ImportedMessage]:
        streams = [
            _conversation_messages(bundle, sorted(days.get(c.directory, [])), c, report)
            for c in conversations
        ]
        with ThreadTopics("Slack") as threads:
            context = _MessageContext(resolver, bots, pins, custom_emoji, downloader, report, threads)
            for ts, _, raw, location, conversation in heapq.merge(*streams, key=lambda e: (e[0], e[1])):
                message = context.message(raw, location, conversation, ts)
                if message is not None:
                    yield message

    return ImportSource(
        source="slack",
        name=_workspace_name(bundle),
        users=users,
        channels=channels,
        emoji=emoji,
        messages=messages,
        report=report,
        # A rough figure for the progress bar: day files hold tens of messages.
        message_estimate=sum(len(days.get(c.directory, [])) for c in conversations) * 20,
    )


def _integrations(bundle: Bundle, report: Report) -> None:
    """``integration_logs.json`` records apps and services added to the workspace. Their bot
    users come with users.json; the integrations themselves (tokens, webhooks at Slack)
    cannot move, so each one still installed is reported by name, to be set up again."""
    if not bundle.has("integration_logs.json"):
        return
    try:
        logs = parse_json(bundle.read("integration_logs.json"), "integration_logs.json")
    except ImportInputError as e:
        report.skip("unreadable integration_logs.json", str(e))
        return
    entries = [e for e in logs if isinstance(e, dict)] if isinstance(logs, list) else []
    entries.sort(key=lambda e: _float(e.get("date")), reverse=True)
    installed: dict[str, bool] = {}
    # Newest first: an integration's first entry is its current state.
    for entry in entries:
        name = str(entry.get("service_type") or entry.get("app_type") or entry.get("service_id") or "")
        if name and name not in installed:
            installed[name] = str(entry.get("change_type") or "") not in ("removed", "disabled", "expired")
    for name in sorted(n for n, on in installed.items() if on):
        report.skip(
            "Slack integration (not movable: set it up again in Palaver)", f"integration_logs.json {name}"
        )


def _float(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _users(bundle: Bundle, report: Report) -> tuple[list[ImportedUser], dict[str, str]]:
    """The users, and which user each bot ID (of ``bot_message`` posts) is."""
    users: list[ImportedUser] = []
    bots: dict[str, str] = {}
    for index, raw in enumerate(_list(bundle, "users.json", required=True)):
        user = _user(raw, f"users.json[{index}]", report)
        if user is None:
            continue
        users.append(user)
        bot_id = (raw.get("profile") or {}).get("bot_id")
        if isinstance(bot_id, str):
            bots[bot_id] = user.key
    return users, bots


def _channels(
    bundle: Bundle, report: Report
) -> tuple[list[ImportedChannel], list[_Conversation], dict[tuple[str, str], set[str]]]:
    """Public and private channels, their message directories, and who pinned which message."""
    channels: list[ImportedChannel] = []
    conversations: list[_Conversation] = []
    pins: dict[tuple[str, str], set[str]] = {}
    for file_name, private in (("channels.json", False), ("groups.json", True)):
        for index, raw in enumerate(_list(bundle, file_name)):
            location = f"{file_name}[{index}]"
            if not isinstance(raw, dict) or not isinstance(raw.get("id"), str) or not raw.get("name"):
                report.skip("channel without an ID or name", location)
                continue
            channel = ImportedChannel(
                key=raw["id"],
                name=str(raw["name"]),
                description=_description(raw),
                invite_only=private,
                archived=bool(raw.get("is_archived")),
                creator=raw.get("creator"),
                date_created=from_timestamp(raw.get("created")),
                members=[m for m in raw.get("members") or [] if isinstance(m, str)],
            )
            channels.append(channel)
            conversations.append(_Conversation(str(raw["name"]), channel.key, None))
            for pin in raw.get("pins") or []:
                if isinstance(pin, dict) and isinstance(pin.get("id"), str):
                    pins.setdefault((channel.key, pin["id"]), set()).add(str(pin.get("user", "")))
    return channels, conversations, pins


def _direct_conversations(bundle: Bundle, report: Report) -> list[_Conversation]:
    """DMs (their directories named by ID) and group DMs (by name)."""
    found = []
    for file_name, by_name in (("dms.json", False), ("mpims.json", True)):
        for index, raw in enumerate(_list(bundle, file_name)):
            members = raw.get("members") if isinstance(raw, dict) else None
            if not isinstance(members, list) or not isinstance(raw.get("id"), str):
                report.skip("direct message conversation without members", f"{file_name}[{index}]")
                continue
            directory = str(raw.get("name") if by_name else raw["id"])
            found.append(_Conversation(directory, raw["id"], frozenset(str(m) for m in members)))
    return found


def _list(bundle: Bundle, name: str, *, required: bool = False) -> list[Any]:
    if not bundle.has(name):
        if required:
            raise ImportInputError(f"{bundle.path}: {name} is missing (not a Slack export?)")
        return []
    data = bundle.json(name)
    if not isinstance(data, list):
        raise ImportInputError(f"{name}: expected a JSON list")
    return data


def _user(raw: Any, location: str, report: Report) -> ImportedUser | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        report.skip("user without an ID", location)
        return None
    profile = raw.get("profile") or {}
    key = raw["id"]
    is_bot = bool(raw.get("is_bot")) or key == "USLACKBOT"
    if raw.get("is_primary_owner") or raw.get("is_owner"):
        role = Role.OWNER
    elif raw.get("is_admin"):
        role = Role.ADMINISTRATOR
    elif raw.get("is_restricted") or raw.get("is_ultra_restricted"):
        role = Role.GUEST
    else:
        role = Role.MEMBER
    name = (
        profile.get("real_name")
        or raw.get("real_name")
        or profile.get("display_name")
        or raw.get("name")
        or key
    )
    return ImportedUser(
        key=key,
        email=str(profile.get("email") or ""),
        full_name=clean_full_name(str(name), key),
        role=role,
        is_bot=is_bot,
        is_active=not raw.get("deleted"),
        timezone=str(raw.get("tz") or ""),
    )


def _description(raw: dict[str, Any]) -> str:
    parts = []
    for name in ("purpose", "topic"):
        value = raw[name].get("value") if isinstance(raw.get(name), dict) else None
        if value:
            parts.append(str(value))
    return " — ".join(dict.fromkeys(parts))


def _workspace_name(bundle: Bundle) -> str:
    stem = bundle.path.name
    for suffix in (".zip", ".tar.gz", ".tgz", ".tar"):
        stem = stem.removesuffix(suffix)
    return re.sub(r"\s*Slack export.*$", "", stem).strip() or "Imported from Slack"


def _emoji(bundle: Bundle, downloader: Downloader, report: Report) -> list[ImportedEmoji]:
    if not bundle.has("emoji.json"):
        return []
    data = bundle.json("emoji.json")
    if isinstance(data, dict) and isinstance(data.get("emoji"), dict):
        data = data["emoji"]
    if not isinstance(data, dict):
        raise ImportInputError("emoji.json: expected an object of names to image URLs")
    found = []
    for name, url in sorted(data.items()):
        if not isinstance(url, str) or url.startswith("alias:"):
            report.skip("custom emoji alias (not imported)", f"emoji.json {name}")
            continue
        found.append(ImportedEmoji(name=name, load=functools.partial(downloader.get, url)))
    return found


MessageEntry = tuple[float, int, dict[str, Any], str, _Conversation]


def _conversation_messages(
    bundle: Bundle, files: list[str], conversation: _Conversation, report: Report
) -> Iterator[MessageEntry]:
    """One conversation's messages in time order, one day file in memory at a time."""
    sequence = 0
    for name in files:
        try:
            data = parse_json(bundle.read(name), name)
        except ImportInputError as e:
            report.skip("unreadable day file (invalid JSON or UTF-8)", str(e))
            continue
        if not isinstance(data, list):
            report.skip("day file that is not a list of messages", name)
            continue
        entries = []
        for index, raw in enumerate(data):
            location = f"{name}[{index}]"
            try:
                ts = float(raw["ts"])
            except (TypeError, KeyError, ValueError):
                report.skip("message without a valid ts", location)
                continue
            sequence += 1
            entries.append((ts, sequence, raw, location, conversation))
        entries.sort(key=lambda e: (e[0], e[1]))
        yield from entries


@dataclass
class _MessageContext:
    resolver: Resolver
    bots: dict[str, str]  # bot ID -> user key
    pins: dict[tuple[str, str], set[str]]
    custom_emoji: set[str]
    downloader: Downloader
    report: Report
    # (channel, thread_ts) -> topic.
    threads: ThreadTopics

    def message(
        self, raw: dict[str, Any], location: str, conversation: _Conversation, ts: float
    ) -> ImportedMessage | None:
        subtype = raw.get("subtype")
        if subtype in NOISE_SUBTYPES:
            self.report.skip(f"Slack notice ({subtype})", location)
            return None
        if subtype not in CONTENT_SUBTYPES:
            self.report.skip(f"unknown message subtype {subtype!r}", location)
            return None
        sender = raw.get("user") if isinstance(raw.get("user"), str) else None
        if raw.get("bot_id") in self.bots and (sender is None or subtype == "bot_message"):
            sender = self.bots[str(raw.get("bot_id"))]
        if sender is None:
            self.report.skip("message with no known sender", location)
            return None
        date_sent = from_timestamp(ts) or datetime(1970, 1, 1)
        content = convert(str(raw.get("text") or ""), self.resolver)
        if subtype == "me_message":
            content = f"/me {content}"
        is_channel = conversation.members is None
        edited = raw.get("edited")
        return ImportedMessage(
            location=location,
            sender=sender,
            date_sent=date_sent,
            content=content,
            channel=conversation.key if is_channel else None,
            topic=self._topic(conversation.key, raw.get("thread_ts"), date_sent) if is_channel else "",
            direct_members=conversation.members,
            last_edit_time=from_timestamp(edited.get("ts")) if isinstance(edited, dict) else None,
            reactions=self._reactions(raw, location),
            files=self._files(raw, location, sender),
            starred_by=self.pins.get((conversation.key, str(raw.get("ts"))), set()),
        )

    def _topic(self, channel: str, thread_ts: Any, date_sent: datetime) -> str:
        if not isinstance(thread_ts, str):
            return UNTHREADED_TOPIC
        day = (from_timestamp(thread_ts) or date_sent).strftime("%Y-%m-%d")
        return self.threads.topic(channel, thread_ts, day)

    def _reactions(self, raw: dict[str, Any], location: str) -> list[ImportedReaction]:
        reactions = []
        for reaction in raw.get("reactions") or []:
            if not isinstance(reaction, dict):
                continue
            name = slack_emoji_name(str(reaction.get("name", "")), self.custom_emoji)
            if name is None:
                self.report.skip(f"reaction with an unknown emoji :{reaction.get('name')}:", location)
                continue
            reactions += [ImportedReaction(str(u), name) for u in reaction.get("users") or []]
        return reactions

    def _files(self, raw: dict[str, Any], location: str, sender: str) -> list[ImportedFile]:
        files = []
        for index, file in enumerate(raw.get("files") or []):
            if not isinstance(file, dict):
                continue
            url = file.get("url_private_download") or file.get("url_private")
            if file.get("mode") in ("tombstone", "hidden_by_limit") or not isinstance(url, str):
                self.report.skip(
                    "file removed from Slack or beyond the plan's limit", f"{location}.files[{index}]"
                )
                continue
            files.append(
                ImportedFile(
                    key=str(file.get("id", "")),
                    name=str(file.get("name") or file.get("title") or "file"),
                    owner=str(file.get("user") or sender),
                    load=functools.partial(self.downloader.get, url),
                    content_type=file.get("mimetype"),
                    created=from_timestamp(file.get("created")),
                )
            )
        return files


def slack_emoji_name(name: str, custom: set[str]) -> str | None:
    """Slack's emoji name as Palaver's: skin tones dropped, a few spellings mapped."""
    name = _SKIN_TONE.sub("", name)
    if name in custom:
        return name
    for candidate in (name, _EMOJI_ALIASES.get(name, ""), name.replace("-", "_")):
        if candidate and emoji_code_for_name(candidate) is not None:
            return candidate
    return None
