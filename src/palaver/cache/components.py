"""One Core query (no ORM objects) per component (or per key of a keyed component), and the
tables each component is read from.

A component is dropped when a committed write touches any of its tables; keep ``tables``
in step with what the loader reads.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, String, bindparam, cast, func, select

from palaver.cache.snapshots import (
    ActiveUsers,
    AlertWords,
    CachedEmoji,
    CachedGroup,
    CachedLinkifier,
    CachedUser,
    MutedBy,
    RealmChannels,
    RealmGroups,
    RealmRow,
    RealmUsers,
    StreamInfo,
)
from palaver.cache.table_map import REALM_STATE_TABLES, Component, columns
from palaver.models import GroupGroupMembership, Realm, UserGroup, UserGroupMembership, UserProfile
from palaver.models.alert_words import AlertWord
from palaver.models.channels import Stream, Subscription
from palaver.models.linkifiers import RealmFilter
from palaver.models.muted_users import MutedUser
from palaver.models.realm_emoji import RealmEmoji

T = TypeVar("T")


@dataclass(frozen=True)
class Loaded(Component[T], Generic[T]):
    """A component with its loader: ``load(connection, realm_id)``, and optionally
    ``reload(connection, realm_id, previous)``, which builds it again reusing the unchanged
    parts of the value an invalidation dropped (``RealmStateStore.previous``)."""

    load: Callable[[Connection, int], T]
    reload: Callable[[Connection, int, T], T] | None = None

    @property
    def keeps_previous(self) -> bool:
        return self.reload is not None


@dataclass(frozen=True)
class KeyedLoaded(Component[T], Generic[T]):
    """A keyed component with its loader: ``load(connection, realm_id, key)``."""

    load: Callable[[Connection, int, int], T]


_USER_COLUMNS = [UserProfile.__table__.c[name] for name in CachedUser._fields]
_STREAM_COLUMNS = [Stream.__table__.c[name] for name in StreamInfo._fields]


def _load_users(conn: Connection, realm_id: int) -> RealmUsers:
    make = CachedUser._make
    users = [
        make(row) for row in conn.execute(select(*_USER_COLUMNS).where(UserProfile.realm_id == realm_id))
    ]
    return RealmUsers(
        by_id=MappingProxyType({u.id: u for u in users}),
        by_delivery_email=MappingProxyType({u.delivery_email.lower(): u for u in users}),
        by_email=MappingProxyType({u.email.lower(): u for u in users}),
        inactive_ids=frozenset(u.id for u in users if not u.is_active),
        active=ActiveUsers.from_roles((u.id, u.role) for u in users if u.is_active),
    )


def _load_channels(conn: Connection, realm_id: int) -> RealmChannels:
    streams = [
        StreamInfo._make(row)
        for row in conn.execute(select(*_STREAM_COLUMNS).where(Stream.realm_id == realm_id))
    ]
    return RealmChannels(
        by_id=MappingProxyType({s.id: s for s in streams}),
        by_name=MappingProxyType({s.name.lower(): s for s in streams}),
        by_recipient=MappingProxyType({s.recipient_id: s for s in streams if s.recipient_id is not None}),
    )


# Active subscriptions, of active and deactivated users alike (``RealmUsers`` tells them
# apart, so deactivating a user does not reread subscriptions). Built once: building a
# statement costs more than running its cached compiled form.
_ACTIVE_SUBSCRIPTIONS = (
    select(Stream.id, Subscription.user_profile_id)
    .join(Subscription, Subscription.recipient_id == Stream.recipient_id)
    .where(Stream.realm_id == bindparam("realm_id"), Subscription.active)
)
_SUBSCRIBERS = _ACTIVE_SUBSCRIPTIONS.where(Stream.id == bindparam("key"))
_CHANNELS_OF_USER = _ACTIVE_SUBSCRIPTIONS.where(Subscription.user_profile_id == bindparam("key"))


def _load_subscribers(conn: Connection, realm_id: int, stream_id: int) -> frozenset[int]:
    """The users subscribed to one channel of the realm."""
    rows = conn.execute(_SUBSCRIBERS, {"realm_id": realm_id, "key": stream_id})
    return frozenset(user_id for _, user_id in rows)


def _load_channels_of_user(conn: Connection, realm_id: int, user_id: int) -> frozenset[int]:
    """The realm's channels one user is subscribed to (archived ones included)."""
    rows = conn.execute(_CHANNELS_OF_USER, {"realm_id": realm_id, "key": user_id})
    return frozenset(stream_id for stream_id, _ in rows)


def _load_groups(conn: Connection, realm_id: int) -> RealmGroups:
    in_realm = select(UserGroup.id).where(UserGroup.realm_id == realm_id).scalar_subquery()
    groups = {
        row.id: CachedGroup(row.id, row.name, row.is_system_group, row.deactivated)
        for row in conn.execute(
            select(UserGroup.id, UserGroup.name, UserGroup.is_system_group, UserGroup.deactivated).where(
                UserGroup.realm_id == realm_id
            )
        )
    }
    # One string of member IDs per group: a role group of a large organization lists every
    # user, and a row per membership through SQLAlchemy was half of this load.
    direct: dict[int, set[int]] = {
        group_id: set(map(int, members.split(",")))
        for group_id, members in conn.execute(
            select(
                UserGroupMembership.user_group_id,
                func.aggregate_strings(cast(UserGroupMembership.user_profile_id, String), ","),
            )
            .where(UserGroupMembership.user_group_id.in_(in_realm))
            .group_by(UserGroupMembership.user_group_id)
        )
    }
    children: dict[int, set[int]] = defaultdict(set)
    for supergroup_id, subgroup_id in conn.execute(
        select(GroupGroupMembership.supergroup_id, GroupGroupMembership.subgroup_id).where(
            GroupGroupMembership.supergroup_id.in_(in_realm)
        )
    ):
        children[supergroup_id].add(subgroup_id)
    members: dict[int, frozenset[int]] = {}

    def resolve(group_id: int, path: frozenset[int]) -> frozenset[int]:
        done = members.get(group_id)
        if done is not None:
            return done
        found = set(direct.get(group_id, ()))
        for child in children.get(group_id, ()):
            # Cycles are refused on write; a guard costs nothing.
            if child not in path:
                found |= resolve(child, path | {child})
        members[group_id] = frozenset(found)
        return members[group_id]

    containing: dict[int, set[int]] = defaultdict(set)
    for group_id in groups:
        for user_id in resolve(group_id, frozenset({group_id})):
            containing[user_id].add(group_id)
    return RealmGroups(
        groups=MappingProxyType(groups),
        system_groups=MappingProxyType(
            {g.name: g.id for g in groups.values() if g.is_system_group and g.name is not None}
        ),
        containing=MappingProxyType({u: frozenset(g) for u, g in containing.items()}),
        members=MappingProxyType(members),
    )


def _load_realm(conn: Connection, realm_id: int) -> RealmRow:
    row = conn.execute(select(Realm.__table__).where(Realm.id == realm_id)).one_or_none()
    return RealmRow(dict(row._mapping) if row is not None else {})


def _load_linkifiers(conn: Connection, realm_id: int) -> tuple[CachedLinkifier, ...]:
    rows = conn.execute(
        select(RealmFilter.id, RealmFilter.pattern, RealmFilter.url_template)
        .where(RealmFilter.realm_id == realm_id)
        .order_by(RealmFilter.order, RealmFilter.id)
    )
    return tuple(CachedLinkifier._make(row) for row in rows)


def _load_alert_words(conn: Connection, realm_id: int) -> AlertWords:
    words: dict[int, list[str]] = defaultdict(list)
    for user_id, word in conn.execute(
        select(AlertWord.user_profile_id, AlertWord.word)
        .where(AlertWord.realm_id == realm_id)
        .order_by(AlertWord.id)
    ):
        words[user_id].append(word.lower())
    return MappingProxyType({u: tuple(w) for u, w in words.items()})


def _load_muted_by(conn: Connection, realm_id: int) -> MutedBy:
    muters: dict[int, set[int]] = defaultdict(set)
    for muted_id, user_id in conn.execute(
        select(MutedUser.muted_user_id, MutedUser.user_profile_id)
        .join(UserProfile, UserProfile.id == MutedUser.user_profile_id)
        .where(UserProfile.realm_id == realm_id)
    ):
        muters[muted_id].add(user_id)
    return MappingProxyType({u: frozenset(m) for u, m in muters.items()})


def _load_emoji(conn: Connection, realm_id: int) -> tuple[CachedEmoji, ...]:
    rows = conn.execute(
        select(
            RealmEmoji.id,
            RealmEmoji.name,
            RealmEmoji.file_name,
            RealmEmoji.is_animated,
            RealmEmoji.deactivated,
            RealmEmoji.author_id,
        )
        .where(RealmEmoji.realm_id == realm_id)
        .order_by(RealmEmoji.id)
    )
    return tuple(CachedEmoji._make(row) for row in rows)


def _tables(*models: Any) -> frozenset[str]:
    return frozenset(m.__tablename__ for m in models)


# Dropped also by a new API key, which it does not hold: a credential is known to be its
# user's for as long as this snapshot stays (api/known_credentials.py), so it must not
# outlive any column authentication reads (the key, the addresses, the realm, whether active).
USERS = Loaded("users", columns(UserProfile, *CachedUser._fields, "api_key"), _load_users)
CHANNELS = Loaded("channels", _tables(Stream), _load_channels)
# Keyed: a realm of 10,000 users holds ~100,000 subscriptions, and every subscription change
# drops them; reading them all again took ~300 ms, one channel's members a few.
SUBSCRIBERS = KeyedLoaded("subscribers", _tables(Subscription, Stream), _load_subscribers)
CHANNELS_OF_USER = KeyedLoaded("channels_of_user", _tables(Subscription, Stream), _load_channels_of_user)
GROUPS = Loaded("groups", _tables(UserGroup, UserGroupMembership, GroupGroupMembership), _load_groups)
REALM = Loaded("realm", _tables(Realm), _load_realm)
LINKIFIERS = Loaded("linkifiers", _tables(RealmFilter), _load_linkifiers)
ALERT_WORDS = Loaded("alert_words", _tables(AlertWord), _load_alert_words)
EMOJI = Loaded("emoji", _tables(RealmEmoji), _load_emoji)
# The join reads user_profile only for realm_id, which never changes: its writes need not
# drop who muted whom.
MUTED_BY = Loaded("muted_by", _tables(MutedUser), _load_muted_by)
COMPONENTS: tuple[Component[Any], ...] = (
    USERS,
    CHANNELS,
    SUBSCRIBERS,
    CHANNELS_OF_USER,
    GROUPS,
    REALM,
    LINKIFIERS,
    ALERT_WORDS,
    EMOJI,
    MUTED_BY,
)
# Database skips invalidating (and publishing) writes to tables outside this set.
assert frozenset().union(*(c.read_tables for c in COMPONENTS)) <= REALM_STATE_TABLES
