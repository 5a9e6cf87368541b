"""Reading the realm-state cache: the public API (re-exported by ``palaver.cache``).

Every function takes the request's session, made by ``Database.session``:

Components, each loaded on first use by one Core query and cached per realm:

- ``realm_users(session, realm_id) -> RealmUsers`` (``by_id``, ``by_delivery_email``,
  ``by_email`` (keys lower-cased), ``inactive_ids``); ``cached_user(session, realm_id,
  user_id) -> CachedUser | None``; ``cached_users(session, realm_id, ids) -> dict``;
  ``active_users(session, realm_id) -> ActiveUsers`` (active users' IDs by role; never
  loads the component: a two-column query when it is not cached).
- ``user_realm_id(session, user_id) -> int | None`` (remembered per process).
- ``realm_channels(session, realm_id) -> RealmChannels`` (``by_id``, ``by_name`` lower-cased,
  ``by_recipient``; values are ``StreamInfo``, archived channels included);
  ``cached_channel(session, realm_id, stream_id)``, ``cached_channel_by_name(session,
  realm_id, name)`` (name stripped and lower-cased here).
- ``active_subscriber_ids(session, realm_id, stream_id) -> frozenset[int]`` (active users
  only, like ``lib.channels.subscriber_ids``); ``subscribed_channel_ids(session, realm_id,
  user_id) -> frozenset[int]`` (active subscriptions, archived channels included). These
  two are keyed components: cached per channel and per user, loaded one key at a time.
- ``realm_groups(session, realm_id) -> RealmGroups``; ``user_group_ids(session, realm_id,
  user_id) -> frozenset[int]`` (every group holding the user, subgroups resolved);
  ``group_member_ids(session, realm_id, group_id, active_only=True) -> frozenset[int]``;
  ``known_system_group_id(session, realm_id, name)`` (from the cached groups; never loads).
- ``realm_settings(session, realm_id) -> Mapping[str, Any]`` (every column of the realm row).
- ``realm_linkifiers(session, realm_id) -> tuple[CachedLinkifier, ...]`` (in applying order).
- ``realm_alert_words(session, realm_id) -> Mapping[int, tuple[str, ...]]`` (lower-cased).
- ``realm_emoji(session, realm_id) -> tuple[CachedEmoji, ...]`` (deactivated included).

Returned values are shared by every thread: never mutate them (they are frozen or
read-only mappings). Copy into a ``set``/``list`` before changing.

Coherence. The cache lives on ``Database`` (``db.cache``, ``cache/realm_cache.py``).
Nothing has to invalidate it by hand: ``Database.transaction`` records every table its write
transaction touched (ORM flushes and Core DML alike; the columns set, for an ORM update)
and, after commit, drops the components read from those tables or columns in the realms the
transaction sent events to (all realms if it sent none) and publishes the same invalidation
to the other processes (``cache/transport.py``, ``cache/change_log.py``). Writes outside
``transaction()`` through a ``Database`` session invalidate in every realm when they commit.
Inside a write transaction, a component whose tables the transaction has already written is
read from the database (the transaction's own writes) and not cached. A component with a
``reload`` is built again from the value a write dropped, reusing what did not change. Loads
run on a connection of their own, so a reader's older snapshot (SQLite) is never cached; a
load overtaken by an invalidation is not kept.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from palaver.cache.components import (
    ALERT_WORDS,
    CHANNELS,
    CHANNELS_OF_USER,
    EMOJI,
    GROUPS,
    LINKIFIERS,
    MUTED_BY,
    REALM,
    SUBSCRIBERS,
    USERS,
    KeyedLoaded,
    Loaded,
)
from palaver.cache.snapshots import (
    ActiveUsers,
    AlertWords,
    CachedEmoji,
    CachedLinkifier,
    CachedUser,
    RealmChannels,
    RealmGroups,
    RealmRow,
    RealmUsers,
    StreamInfo,
)
from palaver.cache.table_map import REALM_STATE_TABLES
from palaver.cache.writes import CACHE_KEY, written_tables
from palaver.models import UserProfile

if TYPE_CHECKING:
    from palaver.cache.realm_cache import RealmCache


T = TypeVar("T")
_EMPTY: frozenset[int] = frozenset()


def _caching(session: Session, component: Loaded[Any] | KeyedLoaded[Any]) -> RealmCache | None:
    """The cache whose store may serve ``component`` to this session, or None: not
    caching (turned off, or deaf to other processes for now), or the transaction has written
    the component's tables, and its own writes are visible only through its connection."""
    cache: RealmCache | None = session.info.get(CACHE_KEY)
    written = written_tables(session)
    if cache is None or not cache.store.accepting or (written is not None and component.dropped_by(written)):
        return None
    return cache


def _get(session: Session, realm_id: int, component: Loaded[T]) -> T:
    db = _caching(session, component)
    if db is None:
        return component.load(session.connection(), realm_id)
    store = db.store
    value = store.peek(realm_id, component)
    if value is not None:
        return value
    ticket = store.begin_load(realm_id, component)
    reload = component.reload
    previous = None if reload is None else store.previous(realm_id, component)
    # A connection of its own: the session's may hold an older snapshot (SQLite keeps one
    # for a whole read transaction), and a value read from it would be cached as current.
    with db.load_engine.connect() as conn:
        if reload is not None and previous is not None:
            value = reload(conn, realm_id, previous)
        else:
            value = component.load(conn, realm_id)
        conn.rollback()
    store.finish_load(ticket, value)
    return value


def _get_key(session: Session, realm_id: int, component: KeyedLoaded[T], key: int) -> T:
    """``_get`` for one key of a keyed component."""
    db = _caching(session, component)
    if db is None:
        return component.load(session.connection(), realm_id, key)
    store = db.store
    value = store.peek(realm_id, component, key)
    if value is not None:
        return value
    ticket = store.begin_load(realm_id, component, key)
    with db.load_engine.connect() as conn:
        value = component.load(conn, realm_id, key)
        conn.rollback()
    store.finish_load(ticket, value)
    return value


def cached_component(session: Session, realm_id: int, component: Loaded[T]) -> T:
    """A component defined by another module (a formatted view of cached tables, e.g. the
    /register user list), cached and dropped exactly as the components here are."""
    # Writes to other tables are not passed on to the store: such a component would go stale.
    assert component.read_tables <= REALM_STATE_TABLES, component.read_tables - REALM_STATE_TABLES
    return _get(session, realm_id, component)


# Users --------------------------------------------------------------------------------------


def realm_users(session: Session, realm_id: int) -> RealmUsers:
    return _get(session, realm_id, USERS)


# Built once: building a statement costs more than running its cached compiled form.
_ACTIVE_USER_ROLES = select(UserProfile.id, UserProfile.role).where(
    UserProfile.realm_id == bindparam("realm_id"), UserProfile.is_active
)


def active_users(session: Session, realm_id: int) -> ActiveUsers:
    """The realm's active users, by role: who hears of a change to a user or a channel. From
    the cached users when this session may use them and they are loaded; else by a query of
    two columns, not a load of every user (inside the transaction that changed a user, where
    the cached users are dropped: ~0.1 s at 10,000 users)."""
    db = _caching(session, USERS)
    cached = None if db is None else db.store.peek(realm_id, USERS)
    if cached is not None:
        return cached.active
    rows = session.execute(_ACTIVE_USER_ROLES, {"realm_id": realm_id})
    return ActiveUsers.from_roles((user_id, role) for user_id, role in rows)


def cached_user(session: Session, realm_id: int, user_id: int) -> CachedUser | None:
    return realm_users(session, realm_id).by_id.get(user_id)


def user_realm_id(session: Session, user_id: int) -> int | None:
    """The user's realm (for callers that hold only an ID), without a query once known."""

    def load() -> int | None:
        return session.scalar(select(UserProfile.realm_id).where(UserProfile.id == user_id))

    db: RealmCache | None = session.info.get(CACHE_KEY)
    if db is None:
        return load()
    return db.store.realm_of(UserProfile.__tablename__, user_id, load)


def cached_users(session: Session, realm_id: int, user_ids: Iterable[int]) -> dict[int, CachedUser]:
    """The realm's users among ``user_ids`` (others are left out), by ID."""
    by_id = realm_users(session, realm_id).by_id
    return {i: u for i in user_ids if (u := by_id.get(i)) is not None}


# Channels and subscriptions -----------------------------------------------------------------


def realm_channels(session: Session, realm_id: int) -> RealmChannels:
    return _get(session, realm_id, CHANNELS)


def cached_channel(session: Session, realm_id: int, stream_id: int) -> StreamInfo | None:
    return realm_channels(session, realm_id).by_id.get(stream_id)


def cached_channel_by_name(session: Session, realm_id: int, name: str) -> StreamInfo | None:
    return realm_channels(session, realm_id).by_name.get(name.strip().lower())


def active_subscriber_ids(session: Session, realm_id: int, stream_id: int) -> frozenset[int]:
    """Active users actively subscribed to the channel."""
    subscribers = _get_key(session, realm_id, SUBSCRIBERS, stream_id)
    inactive = realm_users(session, realm_id).inactive_ids
    return subscribers - inactive if inactive and not inactive.isdisjoint(subscribers) else subscribers


def subscribed_channel_ids(session: Session, realm_id: int, user_id: int) -> frozenset[int]:
    return _get_key(session, realm_id, CHANNELS_OF_USER, user_id)


# Groups -------------------------------------------------------------------------------------


def realm_groups(session: Session, realm_id: int) -> RealmGroups:
    return _get(session, realm_id, GROUPS)


def user_group_ids(session: Session, realm_id: int, user_id: int) -> frozenset[int]:
    return realm_groups(session, realm_id).containing.get(user_id, _EMPTY)


def known_system_group_id(session: Session, realm_id: int, name: str) -> int | None:
    """A system group's ID from the cached groups, else None (nothing is loaded).

    Read even inside a transaction that wrote groups: system groups are made with their
    realm and are never renamed or removed, so no write of an existing realm changes their
    IDs (a new realm is not cached yet; a removed one drops every table everywhere).
    """
    db: RealmCache | None = session.info.get(CACHE_KEY)
    if db is None or not db.store.accepting:
        return None
    groups = db.store.peek(realm_id, GROUPS)
    return None if groups is None else groups.system_groups.get(name)


def group_member_ids(
    session: Session, realm_id: int, group_id: int, *, active_only: bool = True
) -> frozenset[int]:
    members = realm_groups(session, realm_id).members.get(group_id, _EMPTY)
    if not active_only:
        return members
    inactive = realm_users(session, realm_id).inactive_ids
    return members - inactive if inactive and not inactive.isdisjoint(members) else members


# Realm, linkifiers, alert words, emoji ------------------------------------------------------


def realm_settings(session: Session, realm_id: int) -> RealmRow:
    """The realm's row: where a few settings are read, cheaper than loading the ``Realm``."""
    return _get(session, realm_id, REALM)


def realm_linkifiers(session: Session, realm_id: int) -> tuple[CachedLinkifier, ...]:
    return _get(session, realm_id, LINKIFIERS)


def realm_alert_words(session: Session, realm_id: int) -> AlertWords:
    return _get(session, realm_id, ALERT_WORDS)


def realm_emoji(session: Session, realm_id: int) -> tuple[CachedEmoji, ...]:
    return _get(session, realm_id, EMOJI)


def users_muting(session: Session, realm_id: int, user_id: int) -> frozenset[int]:
    """The users of the realm who muted ``user_id``."""
    return _get(session, realm_id, MUTED_BY).get(user_id, _EMPTY)
