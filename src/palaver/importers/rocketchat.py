"""Rocket.Chat's database as ``mongodump`` writes it: one ``<collection>.bson`` per
collection (BSON documents back to back), in a directory of the database's name.

    users                     people and bots        rocketchat_room       channels ("c"),
    rocketchat_subscription   who is in which room                         private groups ("p"),
    rocketchat_message        messages, replies (tmid)                     DMs ("d")
    rocketchat_uploads        files, their bytes in the GridFS bucket rocketchat_uploads
    rocketchat_custom_emoji   custom emoji, images in the GridFS bucket custom_emoji

Messages are read one document at a time; GridFS chunks are copied once into files in a
scratch directory, so neither is held in memory. Threads become topics as Slack's do
("YYYY-MM-DD Rocket.Chat thread N"); other channel messages go to "imported from
Rocket.Chat". System messages (joins, leaves, renames...) are dropped and counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import bson
from bson.errors import BSONError

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
)
from palaver.importers.threads import ThreadTopics
from palaver.models import Role

UNTHREADED_TOPIC = "imported from Rocket.Chat"
_WILDCARDS = {"all": "all", "here": "all"}


def read_rocketchat(bundle: Bundle) -> ImportSource:
    prefix = _database_prefix(bundle)
    report = Report()

    def collection(name: str) -> Iterator[dict[str, Any]]:
        return _documents(bundle, f"{prefix}{name}.bson", report)

    users: dict[str, ImportedUser] = {}
    by_username: dict[str, str] = {}
    for doc in collection("users"):
        user = _user(doc)
        users[user.key] = user
        by_username[str(doc.get("username") or "")] = user.key
    channels: dict[str, ImportedChannel] = {}
    slugs: dict[str, str] = {}  # a channel's name in #links -> its display name
    direct: dict[str, frozenset[str]] = {}
    for doc in collection("rocketchat_room"):
        room = str(doc.get("_id"))
        kind = doc.get("t")
        if kind in ("c", "p"):
            channels[room] = ImportedChannel(
                key=room,
                name=str(doc.get("fname") or doc.get("name") or room),
                description=" — ".join(str(doc[k]) for k in ("description", "topic") if doc.get(k)),
                invite_only=kind == "p",
                archived=bool(doc.get("archived")),
                creator=str((doc.get("u") or {}).get("_id") or "") or None,
                date_created=_naive(doc.get("ts")),
            )
            slugs[str(doc.get("name") or room)] = channels[room].name
        elif kind == "d":
            members = doc.get("uids") or [by_username.get(str(u)) for u in doc.get("usernames") or []]
            direct[room] = frozenset(str(m) for m in members if m)
        else:
            report.skip(f"room of a kind not imported ({kind!r}: livechat, ...)", room)
    for doc in collection("rocketchat_subscription"):
        joined = channels.get(str(doc.get("rid")))
        member = str((doc.get("u") or {}).get("_id") or "")
        if joined is not None and member:
            joined.members.append(member)
    scratch = bundle.scratch()
    uploads = _gridfs(bundle, prefix, "rocketchat_uploads", scratch / "uploads", report)
    files: dict[str, ImportedFile] = {}
    for doc in collection("rocketchat_uploads"):
        file_id = str(doc.get("_id"))
        path = uploads.get(file_id)
        if path is None:
            report.skip("upload whose bytes are not in the dump (not stored in GridFS)", file_id)
            continue
        files[file_id] = ImportedFile(
            key=file_id,
            name=str(doc.get("name") or file_id),
            owner=str(doc.get("userId") or ""),
            load=path.read_bytes,
            content_type=doc.get("type"),
            created=_naive(doc.get("uploadedAt")),
        )
    emoji_files = _gridfs(bundle, prefix, "custom_emoji", scratch / "emoji", report, by="filename")
    emoji = []
    for doc in collection("rocketchat_custom_emoji"):
        name = str(doc.get("name") or "")
        path = emoji_files.get(f"{name}.{doc.get('extension')}")
        if path is None:
            report.skip("custom emoji whose image is not in the dump", name)
            continue
        emoji.append(ImportedEmoji(name=name, load=path.read_bytes))

    def messages() -> Iterator[ImportedMessage]:
        with ThreadTopics("Rocket.Chat") as threads:
            context = _MessageContext(
                channels={k: c.name for k, c in channels.items()},
                direct=direct,
                names={u: users[k].full_name for u, k in by_username.items() if k in users},
                user_keys=by_username,
                channel_by_name=slugs,
                files=files,
                custom_emoji={e.name for e in emoji},
                report=report,
                threads=threads,
            )
            for index, doc in enumerate(collection("rocketchat_message")):
                message = context.message(doc, f"{prefix}rocketchat_message.bson[{index}]")
                if message is not None:
                    yield message

    return ImportSource(
        source="rocketchat",
        name="Imported from Rocket.Chat",
        users=list(users.values()),
        channels=list(channels.values()),
        emoji=emoji,
        messages=messages,
        report=report,
    )


def _database_prefix(bundle: Bundle) -> str:
    """The folder holding users.bson: mongodump writes one per database."""
    for name in bundle.names():
        if name == "users.bson" or name.endswith("/users.bson"):
            return name[: -len("users.bson")]
    raise ImportInputError(f"{bundle.path}: no users.bson (not a mongodump of Rocket.Chat's database?)")


def _documents(bundle: Bundle, name: str, report: Report) -> Iterator[dict[str, Any]]:
    if not bundle.has(name):
        return
    with bundle.open(name) as stream:
        index = 0
        try:
            for doc in bson.decode_file_iter(stream):
                index += 1
                yield doc
        except (BSONError, ValueError) as e:
            # A truncated or corrupt dump: what came before is kept, the rest is counted.
            report.skip("unreadable BSON (the rest of the collection)", f"{name}[{index}]: {e}")


def _naive(value: Any) -> datetime | None:
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)


def _user(doc: dict[str, Any]) -> ImportedUser:
    key = str(doc.get("_id"))
    roles = set(doc.get("roles") or [])
    role = Role.MEMBER
    if "admin" in roles:
        role = Role.ADMINISTRATOR
    elif "moderator" in roles:
        role = Role.MODERATOR
    elif "guest" in roles:
        role = Role.GUEST
    emails = doc.get("emails") or []
    email = str(emails[0].get("address") or "") if emails and isinstance(emails[0], dict) else ""
    username = str(doc.get("username") or key)
    return ImportedUser(
        key=key,
        email=email,
        full_name=clean_full_name(str(doc.get("name") or username), username),
        role=role,
        is_bot=doc.get("type") == "bot" or "bot" in roles,
        is_active=bool(doc.get("active", True)),
        date_joined=_naive(doc.get("createdAt")),
    )


def _gridfs(
    bundle: Bundle, prefix: str, bucket: str, target: Path, report: Report, *, by: str = "_id"
) -> dict[str, Path]:
    """Copy a GridFS bucket's files out of its chunks; the files by ``_id`` or filename."""
    names = {
        str(doc.get("_id")): str(doc.get(by) if by != "_id" else doc.get("_id"))
        for doc in _documents(bundle, f"{prefix}{bucket}.files.bson", report)
    }
    target.mkdir(parents=True, exist_ok=True)
    pieces: dict[str, list[tuple[int, Path]]] = {}
    for number, doc in enumerate(_documents(bundle, f"{prefix}{bucket}.chunks.bson", report)):
        file_id = str(doc.get("files_id"))
        piece = target / f"chunk-{number}"
        piece.write_bytes(bytes(doc.get("data") or b""))
        pieces.setdefault(file_id, []).append((int(doc.get("n", 0)), piece))
    found: dict[str, Path] = {}
    for file_id, parts in pieces.items():
        if file_id not in names:
            continue
        whole = target / f"file-{len(found)}"
        with whole.open("wb") as out:
            for _, piece in sorted(parts):
                out.write(piece.read_bytes())
                piece.unlink()
        found[names[file_id]] = whole
    return found


@dataclass
class _MessageContext:
    channels: dict[str, str]  # room ID -> channel name
    direct: dict[str, frozenset[str]]
    names: dict[str, str]  # username -> full name
    user_keys: dict[str, str]  # username -> user key
    channel_by_name: dict[str, str]
    files: dict[str, ImportedFile]
    custom_emoji: set[str]
    report: Report
    threads: ThreadTopics  # (room ID, thread root ID) -> topic
    mentions: PlainMentions = field(init=False)

    def __post_init__(self) -> None:
        self.mentions = PlainMentions(self.names, self.channel_by_name, sigil="#", wildcards=_WILDCARDS)

    def message(self, doc: dict[str, Any], location: str) -> ImportedMessage | None:
        if doc.get("t"):
            self.report.skip(f"Rocket.Chat system message ({doc['t']})", location)
            return None
        room = str(doc.get("rid"))
        sender = str((doc.get("u") or {}).get("_id") or "")
        date_sent = _naive(doc.get("ts"))
        if not sender or date_sent is None:
            self.report.skip("message without a sender or time", location)
            return None
        channel = room if room in self.channels else None
        members = self.direct.get(room)
        if channel is None and members is None:
            self.report.skip("message in a room not in the dump", location)
            return None
        topic = ""
        if channel is not None:
            topic = self._topic(channel, doc, date_sent)
        files = []
        upload = doc.get("file")
        if isinstance(upload, dict):
            found = self.files.get(str(upload.get("_id")))
            if found is None:
                self.report.skip("message whose file is not in the dump", location)
            else:
                files.append(found)
        reactions = []
        for name, value in (doc.get("reactions") or {}).items():
            emoji = str(name).strip(":")
            for username in (value or {}).get("usernames") or []:
                reactions.append(ImportedReaction(self.user_keys.get(str(username), str(username)), emoji))
        pinned_by = str((doc.get("pinnedBy") or {}).get("_id") or "") if doc.get("pinned") else ""
        starred = {str(s.get("_id")) for s in doc.get("starred") or [] if isinstance(s, dict)}
        return ImportedMessage(
            location=location,
            sender=sender,
            date_sent=date_sent,
            content=self.mentions.convert(str(doc.get("msg") or "")),
            channel=channel,
            topic=topic,
            direct_members=members,
            last_edit_time=_naive(doc.get("editedAt")),
            reactions=reactions,
            files=files,
            starred_by=starred | ({pinned_by} if pinned_by else set()),
        )

    def _topic(self, channel: str, doc: dict[str, Any], date_sent: datetime) -> str:
        root = doc.get("tmid") or (doc.get("_id") if doc.get("tcount") else None)
        if root is None:
            return UNTHREADED_TOPIC
        return self.threads.topic(channel, str(root), date_sent.strftime("%Y-%m-%d"))
