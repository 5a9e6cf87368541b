"""Mattermost's bulk export (``mmctl export create``): a zip of ``import.jsonl`` (one object
a line: version, emoji, team, channel, user, bot, post, direct_channel, direct_post) and the
attachments under ``data/``.

One organization per team: ``--team NAME`` picks it (an export of one team needs none).
Times are milliseconds. Posts with replies become topics as Slack threads do ("YYYY-MM-DD
Mattermost thread N"); the others go to "imported from Mattermost". Mattermost's Markdown is
Palaver's, but for mentions: ``@username`` and ``~channel`` become ``@**Full Name**`` and
``#**channel**``. The file is read twice, line by line: people, channels and emoji first,
then the posts.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from palaver.importers.bundle import Bundle
from palaver.importers.mentions import PlainMentions
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
from palaver.models import Role

UNTHREADED_TOPIC = "imported from Mattermost"
_WILDCARDS = {"all": "all", "channel": "channel", "here": "all"}


def read_mattermost(bundle: Bundle, team: str | None) -> ImportSource:
    jsonl = next((n for n in bundle.names() if n.endswith(".jsonl")), None)
    if jsonl is None:
        raise ImportInputError(f"{bundle.path}: no .jsonl file (not a Mattermost bulk export?)")
    report = Report()
    scan = _Scan(jsonl, team)
    for number, kind, value in _lines(bundle, jsonl, report):
        scan.take(number, kind, value, report)
    chosen = scan.team_name()
    users = list(scan.users.values())
    names = {u.key: u.full_name for u in users}
    channels = [c for (t, _), c in scan.channels.items() if t == chosen]
    channel_names = {c.key: c.name for c in channels}
    emoji = [
        ImportedEmoji(name=name, load=functools.partial(bundle.read_optional, path))
        for name, path in scan.emoji
    ]
    context = _PostContext(bundle, chosen, names, channel_names, {e.name for e in emoji}, report)

    def messages() -> Iterator[ImportedMessage]:
        for number, kind, value in _lines(bundle, jsonl, Report()):
            if kind in ("post", "direct_post"):
                yield from context.post(f"{jsonl}:{number}", kind, value)

    return ImportSource(
        source="mattermost",
        name=scan.teams[chosen].get("display_name") or chosen,
        description=str(scan.teams[chosen].get("description") or ""),
        users=users,
        channels=channels,
        emoji=emoji,
        messages=messages,
        report=report,
        message_estimate=scan.posts,
    )


def _lines(bundle: Bundle, name: str, report: Report) -> Iterator[tuple[int, str, dict[str, Any]]]:
    with bundle.open(name) as stream:
        for number, line in enumerate(stream, 1):
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                report.skip("line that is not JSON (or not UTF-8)", f"{name}:{number} ({e})")
                continue
            kind = row.get("type") if isinstance(row, dict) else None
            value = row.get(kind) if isinstance(kind, str) else None
            if isinstance(kind, str) and isinstance(value, dict):
                yield number, kind, value
            elif kind != "version":
                report.skip(f"unknown line type {kind!r}", f"{name}:{number}")


def _roles(value: Any) -> set[str]:
    return set(str(value or "").split())


@dataclass
class _Scan:
    jsonl: str
    wanted_team: str | None
    teams: dict[str, dict[str, Any]] = field(default_factory=dict)
    channels: dict[tuple[str, str], ImportedChannel] = field(default_factory=dict)
    users: dict[str, ImportedUser] = field(default_factory=dict)
    emoji: list[tuple[str, str]] = field(default_factory=list)
    posts: int = 0

    def take(self, number: int, kind: str, value: dict[str, Any], report: Report) -> None:
        location = f"{self.jsonl}:{number}"
        if kind == "team":
            self.teams[str(value.get("name"))] = value
        elif kind == "channel":
            key = str(value.get("name"))
            self.channels[(str(value.get("team")), key)] = ImportedChannel(
                key=key,
                name=str(value.get("display_name") or key),
                description=" — ".join(p for p in (value.get("purpose"), value.get("header")) if p),
                invite_only=value.get("type") == "P",
                archived=bool(value.get("deleted_at")),
            )
        elif kind in ("user", "bot"):
            self._user(kind, value, location, report)
        elif kind == "emoji":
            if value.get("name") and value.get("image"):
                self.emoji.append((str(value["name"]), str(value["image"])))
        elif kind in ("post", "direct_post"):
            self.posts += 1 + len(value.get("replies") or [])
        elif kind not in ("direct_channel", "scheme"):
            report.skip(f"unknown line type {kind!r}", location)

    def _user(self, kind: str, value: dict[str, Any], location: str, report: Report) -> None:
        username = str(value.get("username") or "")
        if not username:
            report.skip("user without a username", location)
            return
        name = " ".join(p for p in (value.get("first_name"), value.get("last_name")) if p)
        name = str(value.get("display_name") or name or value.get("nickname") or username)
        roles = _roles(value.get("roles"))
        team_roles = {r for t in value.get("teams") or [] for r in _roles(t.get("roles"))}
        role = Role.MEMBER
        if "system_admin" in roles:
            role = Role.OWNER
        elif "team_admin" in team_roles:
            role = Role.ADMINISTRATOR
        elif "system_guest" in roles or "team_guest" in team_roles:
            role = Role.GUEST
        self.users[username] = ImportedUser(
            key=username,
            email=str(value.get("email") or ""),
            full_name=clean_full_name(name, username),
            role=role,
            is_bot=kind == "bot",
            is_active=not value.get("delete_at"),
            timezone=str((value.get("timezone") or {}).get("manualTimezone") or ""),
            bot_owner=str(value["owner"]) if kind == "bot" and value.get("owner") else None,
        )
        for team in value.get("teams") or []:
            for channel in team.get("channels") or []:
                found = self.channels.get((str(team.get("name")), str(channel.get("name"))))
                if found is None:
                    report.skip(
                        "membership of a channel not in the export", f"{location} {channel.get('name')}"
                    )
                    continue
                found.members.append(username)
                if "channel_admin" in _roles(channel.get("roles")):
                    found.administrators.append(username)

    def team_name(self) -> str:
        if self.wanted_team is not None:
            if self.wanted_team not in self.teams:
                known = ", ".join(sorted(self.teams)) or "none"
                raise ImportInputError(f"no team {self.wanted_team!r} in the export (it has: {known})")
            return self.wanted_team
        if len(self.teams) != 1:
            known = ", ".join(sorted(self.teams)) or "none"
            raise ImportInputError(
                f"the export has {len(self.teams)} teams ({known}): import each with --team NAME"
            )
        return next(iter(self.teams))


@dataclass
class _PostContext:
    bundle: Bundle
    team: str
    names: dict[str, str]
    channel_names: dict[str, str]
    custom_emoji: set[str]
    report: Report
    threads: Counter[tuple[str, str]] = field(default_factory=Counter)
    mentions: PlainMentions = field(init=False)

    def __post_init__(self) -> None:
        self.mentions = PlainMentions(self.names, self.channel_names, sigil="~", wildcards=_WILDCARDS)

    def post(self, location: str, kind: str, value: dict[str, Any]) -> Iterator[ImportedMessage]:
        if kind == "post" and value.get("team") != self.team:
            return
        channel = str(value.get("channel")) if kind == "post" else None
        if kind == "post" and channel not in self.channel_names:
            self.report.skip("post in a channel not in the export", location)
            return
        members = None
        if kind == "direct_post":
            members = frozenset(str(m) for m in value.get("channel_members") or [])
        replies = [r for r in value.get("replies") or [] if isinstance(r, dict)]
        topic = ""
        if channel is not None:
            topic = UNTHREADED_TOPIC
            if replies:
                started = from_timestamp(int(value.get("create_at") or 0) / 1000)
                day = started.strftime("%Y-%m-%d") if started else "undated"
                self.threads[(channel, day)] += 1
                topic = f"{day} Mattermost thread {self.threads[(channel, day)]}"
        for index, item in enumerate([value, *replies]):
            where = location if index == 0 else f"{location} reply {index}"
            message = self._message(item, where, channel, members, topic)
            if message is not None:
                yield message

    def _message(
        self,
        item: dict[str, Any],
        location: str,
        channel: str | None,
        members: frozenset[str] | None,
        topic: str,
    ) -> ImportedMessage | None:
        sender = str(item.get("user") or "")
        date_sent = from_timestamp(int(item.get("create_at") or 0) / 1000)
        if not sender or date_sent is None or not item.get("create_at"):
            self.report.skip("post without a user or create_at", location)
            return None
        files = []
        for attachment in item.get("attachments") or []:
            path = str(attachment.get("path") or "")
            if not self.bundle.has(path):
                self.report.skip("attachment whose file is not in the export", f"{location}: {path}")
                continue
            files.append(
                ImportedFile(
                    key=path,
                    name=path.rsplit("/", 1)[-1],
                    owner=sender,
                    load=functools.partial(self.bundle.read, path),
                )
            )
        reactions = []
        for reaction in item.get("reactions") or []:
            name = str(reaction.get("emoji_name") or "")
            if name not in self.custom_emoji:
                name = name.replace("-", "_")  # Mattermost's spelling of a few Unicode names
            reactions.append(ImportedReaction(str(reaction.get("user")), name))
        edited = item.get("edit_at")
        return ImportedMessage(
            location=location,
            sender=sender,
            date_sent=date_sent,
            content=self.mentions.convert(str(item.get("message") or "")),
            channel=channel,
            topic=topic,
            direct_members=members,
            last_edit_time=from_timestamp(int(edited) / 1000) if edited else None,
            reactions=reactions,
            files=files,
            starred_by={str(u) for u in item.get("flagged_by") or []},
        )
