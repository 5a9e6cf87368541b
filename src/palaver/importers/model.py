"""The source-independent representation an importer produces and the writer consumes.

Times are naive UTC datetimes, as the server stores them. Everything but messages is small
and held in lists; messages come as an iterator in the
order they were sent, so an import of millions of them holds one batch at a time. Keys
are the source's own IDs (strings): the writer maps them to new rows.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from palaver.lib.users import MAX_NAME_LENGTH
from palaver.models import Role

_NAME_FORBIDDEN = re.compile(r'[*`\\>"@]')


# Organization settings carried between Palaver and Zulip's export (both name them alike).
REALM_SETTINGS = (
    "invite_required",
    "emails_restricted_to_domains",
    "waiting_period_threshold",
    "default_language",
    "enable_spectator_access",
    "allow_message_editing",
    "allow_edit_history",
    "message_content_edit_limit_seconds",
    "mandatory_topics",
)


def from_timestamp(value: Any) -> datetime | None:
    """UNIX seconds (a number or numeric text) as the naive UTC datetime the server stores."""
    try:
        return datetime.fromtimestamp(float(value), tz=UTC).replace(tzinfo=None)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


class ImportInputError(Exception):
    """An export that cannot be imported at all; the message names the place (one line)."""


@dataclass
class ImportedUser:
    key: str
    email: str
    full_name: str
    role: int = Role.MEMBER
    is_bot: bool = False
    is_active: bool = True
    timezone: str = ""
    date_joined: datetime | None = None
    # The bot's owner (a user key), for bots whose source names one.
    bot_owner: str | None = None
    # The uploaded picture, if the source has one.
    avatar: Callable[[], bytes | None] | None = None
    # The person's own settings by Palaver's names (Zulip's); the writer keeps the valid ones.
    settings: dict[str, Any] = field(default_factory=dict)
    # A bot's kind (Palaver's BotType numbers, Zulip's), when the source has kinds.
    bot_type: int | None = None
    # An outgoing-webhook or embedded bot's services.
    services: list[ImportedBotService] = field(default_factory=list)


@dataclass
class ImportedBotService:
    """Where an outgoing-webhook bot's messages go (an embedded bot: its handler's name)."""

    name: str
    base_url: str
    interface: int = 1


@dataclass
class ImportedGroupSetting:
    """Who holds a permission, as the source names them: one named group (by name: one of the
    source's groups, or a system group "role:..." as Palaver and Zulip both name them), or
    the members (user keys) and subgroups (group names) of a group made for the one setting."""

    group: str | None = None
    members: list[str] = field(default_factory=list)
    subgroups: list[str] = field(default_factory=list)


@dataclass
class ImportedChannel:
    key: str
    name: str
    description: str = ""
    invite_only: bool = False
    archived: bool = False
    creator: str | None = None
    date_created: datetime | None = None
    # User keys of the subscribers.
    members: list[str] = field(default_factory=list)
    history_public_to_subscribers: bool = True
    is_web_public: bool = False
    # A member's own settings for the channel (color, is_muted, pin_to_top), by user key.
    member_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    # User keys of the channel's own administrators (its can_administer_channel_group);
    # none: the default (the organization's owner, who creates it).
    administrators: list[str] = field(default_factory=list)
    # The key of the channel folder it is in, if any.
    folder: str | None = None
    # Permission settings by Palaver's (Zulip's) names, STREAM_GROUP_SETTINGS; applied once
    # the groups exist (over ``administrators``); the others keep Palaver's defaults.
    group_settings: dict[str, ImportedGroupSetting] = field(default_factory=dict)


@dataclass
class ImportedChannelFolder:
    key: str
    name: str
    description: str = ""
    is_archived: bool = False
    order: int = 0


@dataclass
class ImportedFile:
    """A file a message links to; ``load`` returns its bytes (or None when unavailable)."""

    key: str
    name: str
    owner: str
    load: Callable[[], bytes | None]
    content_type: str | None = None
    created: datetime | None = None
    # The link to the file in the message content as the source wrote it: replaced by the
    # new link (else the new link is appended to the content).
    replaces: str | None = None


@dataclass
class ImportedGroup:
    name: str
    description: str = ""
    members: list[str] = field(default_factory=list)
    # Names of groups within this one; a reader lists a group after its subgroups.
    subgroups: list[str] = field(default_factory=list)
    # The group's own permission settings (GROUP_PERMISSION_SETTINGS), by name.
    group_settings: dict[str, ImportedGroupSetting] = field(default_factory=dict)


@dataclass
class ImportedProfileField:
    name: str
    field_type: int
    hint: str = ""
    field_data: dict[str, Any] = field(default_factory=dict)
    # User key -> the value as Palaver's API takes it (text, or a JSON list of user keys
    # for user fields).
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class ImportedEmoji:
    name: str
    load: Callable[[], bytes | None]
    author: str | None = None
    deactivated: bool = False


@dataclass
class ImportedReaction:
    user: str
    # A Palaver emoji name (unicode or one of the organization's custom emoji).
    emoji_name: str


@dataclass
class ImportedMessage:
    """One message; exactly one of ``channel`` and ``direct_members`` is set.

    ``content`` is Palaver Markdown; the writer appends links to ``files``.
    """

    location: str
    sender: str
    date_sent: datetime
    content: str
    channel: str | None = None
    topic: str = ""
    direct_members: frozenset[str] | None = None
    last_edit_time: datetime | None = None
    reactions: list[ImportedReaction] = field(default_factory=list)
    files: list[ImportedFile] = field(default_factory=list)
    starred_by: set[str] = field(default_factory=set)
    # The source's own per-user flags (user key -> MessageFlag bits): exactly these users
    # get the message. None: its audience gets it as read history, with mentions and stars.
    user_flags: dict[str, int] | None = None
    # Earlier versions, newest first, as Zulip records them; "user_id" holds a user key and
    # "stream"/"prev_stream" channel keys.
    edits: list[dict[str, Any]] | None = None
    # The source's own ID for the message, when something else imported points to it.
    source_id: str | None = None


@dataclass
class ImportedUserTopic:
    """A user's muted, unmuted or followed topic (Palaver's VisibilityPolicy numbers)."""

    user: str
    channel: str
    topic: str
    visibility_policy: int
    last_updated: datetime | None = None


@dataclass
class ImportedMutedUser:
    user: str
    muted: str
    date_muted: datetime | None = None


@dataclass
class ImportedAlertWord:
    user: str
    word: str


@dataclass
class ImportedScheduledMessage:
    """A message its sender scheduled and the old server had not sent yet. ``message`` holds
    the address, content and files (its ``date_sent`` is when it was scheduled)."""

    message: ImportedMessage
    deliver_at: datetime
    failed: bool = False
    failure_message: str | None = None
    read_by_sender: bool | None = None
    # A reminder: the ``source_id`` of the message it is about (the writer renders the
    # Notification Bot's text for the message's new ID), and the user's note.
    reminder_target: str | None = None
    reminder_note: str | None = None


@dataclass
class ImportedUserStatus:
    user: str
    status_text: str = ""
    # A Unicode emoji's name or one of the organization's custom emoji; "" for none.
    emoji_name: str = ""


@dataclass
class ImportedNavigationView:
    """A view of a user's left sidebar: a built-in one pinned or hidden, or their own named
    view of a narrow (``fragment`` is the URL hash it opens, ``name`` None for a built-in)."""

    user: str
    fragment: str
    is_pinned: bool = False
    name: str | None = None


@dataclass
class ImportedSnippet:
    user: str
    title: str
    content: str


@dataclass
class Report:
    """What was skipped and why, with where; the summary prints counts and the first few."""

    skipped: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def skip(self, reason: str, location: str) -> None:
        self.skipped[reason] += 1
        shown = self.examples.setdefault(reason, [])
        if len(shown) < 3:
            shown.append(location)


@dataclass
class ImportSource:
    """An export, read: the organization's name and its records."""

    source: str
    name: str
    users: list[ImportedUser]
    channels: list[ImportedChannel]
    emoji: list[ImportedEmoji]
    messages: Callable[[], Iterator[ImportedMessage]]
    report: Report
    groups: list[ImportedGroup] = field(default_factory=list)
    profile_fields: list[ImportedProfileField] = field(default_factory=list)
    # (pattern, URL template) pairs.
    linkifiers: list[tuple[str, str]] = field(default_factory=list)
    description: str = ""
    # Organization settings the source shares with Palaver, by Zulip's names (REALM_SETTINGS).
    realm_settings: dict[str, Any] = field(default_factory=dict)
    # The organization's permission settings (REALM_GROUP_SETTINGS), by name.
    realm_group_settings: dict[str, ImportedGroupSetting] = field(default_factory=dict)
    # Rough number of messages, for the progress bar (0 when unknown).
    message_estimate: int = 0
    # Each person's own settings the source carries.
    user_topics: list[ImportedUserTopic] = field(default_factory=list)
    muted_users: list[ImportedMutedUser] = field(default_factory=list)
    alert_words: list[ImportedAlertWord] = field(default_factory=list)
    scheduled_messages: list[ImportedScheduledMessage] = field(default_factory=list)
    channel_folders: list[ImportedChannelFolder] = field(default_factory=list)
    user_statuses: list[ImportedUserStatus] = field(default_factory=list)
    saved_snippets: list[ImportedSnippet] = field(default_factory=list)
    navigation_views: list[ImportedNavigationView] = field(default_factory=list)
    # Channel keys new users are subscribed to.
    default_channels: list[str] = field(default_factory=list)
    # (domain, allow_subdomains): where new users' emails may come from.
    realm_domains: list[tuple[str, bool]] = field(default_factory=list)
    # Code playgrounds: (name, Pygments language, URL template).
    playgrounds: list[tuple[str, str, str]] = field(default_factory=list)


@dataclass
class Summary:
    users: int = 0
    bots: int = 0
    deactivated: int = 0
    channels: int = 0
    private_channels: int = 0
    archived_channels: int = 0
    topics: int = 0
    messages: int = 0
    direct_messages: int = 0
    reactions: int = 0
    files: int = 0
    emoji: int = 0
    groups: int = 0
    group_settings: int = 0
    profile_fields: int = 0
    linkifiers: int = 0
    avatars: int = 0
    user_topics: int = 0
    muted_users: int = 0
    alert_words: int = 0
    scheduled_messages: int = 0
    reminders: int = 0
    channel_folders: int = 0
    user_statuses: int = 0
    saved_snippets: int = 0
    navigation_views: int = 0
    default_channels: int = 0
    realm_domains: int = 0
    playgrounds: int = 0
    bot_services: int = 0
    realm_id: int | None = None
    seconds: float = 0.0

    def lines(self, report: Report) -> list[str]:
        out = [
            f"users: {self.users} ({self.bots} bots, {self.deactivated} deactivated)",
            f"channels: {self.channels} ({self.private_channels} private, {self.archived_channels} archived)",
            f"topics: {self.topics}",
            f"messages: {self.messages} ({self.direct_messages} direct)",
            f"reactions: {self.reactions}",
            f"files: {self.files}",
            f"custom emoji: {self.emoji}",
        ]
        extras = (
            ("user groups", self.groups),
            ("permission settings", self.group_settings),
            ("custom profile fields", self.profile_fields),
            ("linkifiers", self.linkifiers),
            ("avatars", self.avatars),
            ("muted, unmuted or followed topics", self.user_topics),
            ("muted users", self.muted_users),
            ("alert words", self.alert_words),
            ("scheduled messages", self.scheduled_messages),
            ("reminders", self.reminders),
            ("channel folders", self.channel_folders),
            ("statuses", self.user_statuses),
            ("saved snippets", self.saved_snippets),
            ("navigation views", self.navigation_views),
            ("default channels", self.default_channels),
            ("email domains", self.realm_domains),
            ("code playgrounds", self.playgrounds),
            ("bot endpoints", self.bot_services),
        )
        out += [f"{label}: {count}" for label, count in extras if count]
        if report.skipped:
            out.append(f"skipped: {sum(report.skipped.values())}")
            for reason, count in sorted(report.skipped.items()):
                where = ", ".join(report.examples.get(reason, []))
                out.append(f"  {count} x {reason} (e.g. {where})")
        else:
            out.append("skipped: 0")
        out += [f"warning: {w}" for w in report.warnings]
        return out


def clean_full_name(name: str, fallback: str) -> str:
    """A name Palaver accepts: no control characters or mention syntax, within the length."""
    name = "".join(c for c in name if unicodedata.category(c)[0] != "C")
    name = _NAME_FORBIDDEN.sub("", name)
    name = re.sub(r"\|(\d+)$", r" \1", name).strip()[:MAX_NAME_LENGTH].strip()
    return name or fallback
