"""The immutable snapshots the realm-state cache holds, one type per component.

Never ORM objects: a snapshot is shared by every thread of the process, so it is built of
frozen dataclasses, named tuples, tuples, frozensets and read-only mappings.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, Protocol

from palaver.models import Role
from palaver.models.users import RoleChecks


class _CachedUserRow(NamedTuple):
    """A user's identity and the facts access checks, mentions and recipients need.

    A named tuple, not a frozen dataclass: made from a row in 0.6 µs instead of 4.2, and a
    change to any user of a 10,000-user realm rebuilds them all on the next request.
    """

    id: int
    realm_id: int
    email: str
    delivery_email: str
    full_name: str
    role: int
    is_active: bool
    is_bot: bool
    bot_type: int | None
    bot_owner_id: int | None
    avatar_source: str
    avatar_version: int
    email_address_visibility: int
    is_imported_stub: bool
    date_joined: datetime
    send_private_typing_notifications: bool
    send_stream_typing_notifications: bool
    presence_enabled: bool


class CachedUser(_CachedUserRow, RoleChecks):
    """``_CachedUserRow`` with the role checks a ``UserProfile`` has."""

    __slots__ = ()


class ActiveUsers(NamedTuple):
    """The realm's active users' IDs, whole and by the roles that decide who hears of a
    change to a user or a channel. Built once per snapshot: at 10,000 users, a pass over
    the cached users per channel of a join was a fifth of the request."""

    all: frozenset[int]
    non_guests: frozenset[int]
    guests: frozenset[int]
    # Owners and administrators.
    administrators: frozenset[int]

    @classmethod
    def from_roles(cls, roles: Iterable[tuple[int, int]]) -> ActiveUsers:
        # Plain ints: an enum comparison per user was most of the loop at 10,000 users.
        guest, administrator = int(Role.GUEST), int(Role.ADMINISTRATOR)
        everyone, guests, administrators = [], [], []
        for user_id, role in roles:
            everyone.append(user_id)
            if role == guest:
                guests.append(user_id)
            elif role <= administrator:
                administrators.append(user_id)
        all_ids, guest_ids = frozenset(everyone), frozenset(guests)
        return cls(all_ids, all_ids - guest_ids, guest_ids, frozenset(administrators))


@dataclass(frozen=True, slots=True)
class RealmUsers:
    by_id: Mapping[int, CachedUser]
    # Lower-cased delivery (real) email and lower-cased API email.
    by_delivery_email: Mapping[str, CachedUser]
    by_email: Mapping[str, CachedUser]
    inactive_ids: frozenset[int]
    active: ActiveUsers


class ChannelFacts(Protocol):
    """What reading a channel needs: a ``Stream`` row and a cached ``StreamInfo`` both are one.

    Reads and permission checks take this, so a caller passes whichever it holds; the
    members are read-only."""

    @property
    def id(self) -> int: ...

    @property
    def realm_id(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def rendered_description(self) -> str: ...

    @property
    def date_created(self) -> datetime: ...

    @property
    def creator_id(self) -> int | None: ...

    @property
    def deactivated(self) -> bool: ...

    @property
    def recipient_id(self) -> int | None: ...

    @property
    def folder_id(self) -> int | None: ...

    @property
    def invite_only(self) -> bool: ...

    @property
    def history_public_to_subscribers(self) -> bool: ...

    @property
    def is_web_public(self) -> bool: ...

    @property
    def message_retention_days(self) -> int | None: ...

    @property
    def topics_policy(self) -> str: ...

    @property
    def first_message_id(self) -> int | None: ...

    @property
    def is_recently_active(self) -> bool: ...

    @property
    def can_add_subscribers_group(self) -> int: ...

    @property
    def can_administer_channel_group(self) -> int: ...

    @property
    def can_create_topic_group(self) -> int: ...

    @property
    def can_send_message_group(self) -> int: ...

    @property
    def can_subscribe_group(self) -> int: ...

    @property
    def is_archived(self) -> bool: ...


class StreamInfo(NamedTuple):
    """A channel's columns without an ORM object.

    POST /register reads every channel of the organization, and loading a thousand mapped
    instances cost about as much as formatting them. Anything reading a channel's
    attributes takes either this or a ``Stream``.
    """

    id: int
    realm_id: int
    name: str
    description: str
    rendered_description: str
    date_created: datetime
    creator_id: int | None
    deactivated: bool
    recipient_id: int | None
    folder_id: int | None
    invite_only: bool
    history_public_to_subscribers: bool
    is_web_public: bool
    message_retention_days: int | None
    topics_policy: str
    first_message_id: int | None
    is_recently_active: bool
    can_add_subscribers_group: int
    can_administer_channel_group: int
    can_create_topic_group: int
    can_delete_any_message_group: int
    can_delete_own_message_group: int
    can_move_messages_out_of_channel_group: int
    can_move_messages_within_channel_group: int
    can_remove_subscribers_group: int
    can_resolve_topics_group: int
    can_send_message_group: int
    can_subscribe_group: int

    @property
    def is_archived(self) -> bool:
        return self.deactivated

    @property
    def is_public(self) -> bool:
        return not self.invite_only


@dataclass(frozen=True, slots=True)
class RealmChannels:
    """Every channel of the realm, archived ones included."""

    by_id: Mapping[int, StreamInfo]
    # Lower-cased name -> channel (names are unique per realm regardless of case).
    by_name: Mapping[str, StreamInfo]
    by_recipient: Mapping[int, StreamInfo]


@dataclass(frozen=True, slots=True)
class CachedGroup:
    id: int
    name: str | None
    is_system_group: bool
    deactivated: bool


@dataclass(frozen=True, slots=True)
class RealmGroups:
    """Group membership with subgroups resolved."""

    groups: Mapping[int, CachedGroup]
    # System group name ("role:members") -> ID.
    system_groups: Mapping[str, int]
    # User ID -> every group holding the user, directly or through subgroups.
    containing: Mapping[int, frozenset[int]]
    # Group ID -> every user in it or in a group nested below (deactivated users included).
    members: Mapping[int, frozenset[int]]


class CachedLinkifier(NamedTuple):
    id: int
    pattern: str
    url_template: str


class CachedEmoji(NamedTuple):
    id: int
    name: str
    file_name: str
    is_animated: bool
    deactivated: bool
    author_id: int | None


class RealmRow(Mapping[str, Any]):
    """A realm's columns from the cache (every column: settings, permission groups, flags),
    by key or by attribute: what a read or check of a few realm settings takes, so it needs
    no ORM ``Realm``. The attributes are ``Any`` to mypy, which cannot check their names."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any]) -> None:
        self._values = dict(values)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, name: str) -> Any:
        # Only columns: an attribute lookup before __init__ (copy, pickle) must not recurse.
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None


# User ID -> that user's alert words, lower-cased.
AlertWords = Mapping[int, tuple[str, ...]]
# User ID -> the users who muted that user.
MutedBy = Mapping[int, frozenset[int]]
