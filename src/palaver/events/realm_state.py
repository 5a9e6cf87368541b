"""The per-process store behind the realm-state cache: an LRU of realms, each holding
immutable snapshots by component, dropped by the tables a committed write touched.

This module knows nothing of what is cached: ``lib/realm_cache.py`` defines the components
(their snapshot types, the tables they are read from, their loaders). The store only keeps
values, bounds how many realms it holds, and makes invalidation race-free.

A component is either one value per realm, or keyed: one value per key (a channel's
subscribers, by channel ID), loaded key by key. A realm that changes a channel's members all
day should not reread every subscription in the realm after each change; dropped by the
same tables, the keys are read again one at a time, as they are asked for.

The race: a reader misses, starts loading, and a write commits (and invalidates) before the
load finishes. The value loaded may predate the write; stored, it would stay stale until the
next invalidation. So every invalidation bumps a counter, each component remembers the
count at which it was last invalidated, and a load stores its value only if no invalidation
of its component (or eviction of its realm) happened since it started.

``Database`` owns one store (``db.realm_state``); ``events/invalidation.py`` carries
invalidations to the other processes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar, cast

from sqlalchemy.orm import MappedColumn

from palaver.models import (
    Base,
    CustomProfileField,
    CustomProfileFieldValue,
    GroupGroupMembership,
    Realm,
    UserGroup,
    UserGroupMembership,
    UserProfile,
)
from palaver.models.alert_words import AlertWord
from palaver.models.channels import Stream, Subscription
from palaver.models.linkifiers import RealmFilter
from palaver.models.muted_users import MutedUser
from palaver.models.realm_emoji import RealmEmoji
from palaver.models.user_settings import UserSettingsMixin
from palaver.models.user_status import UserStatus

T = TypeVar("T")

# Marks "invalidate in every realm", when a write's realm is unknown.
ALL_REALMS: None = None
# A written table that stands for every table (textual SQL whose table is not parsed).
ANY_TABLE = "*"
# Every table a component of lib/realm_cache reads (its loaders assert it), and those the
# /register components read (lib/realm_user_list.py, lib/state/: profile fields, statuses):
# writes to no other table concern any cache, so they are neither applied nor published.
REALM_STATE_TABLES = frozenset(
    model.__tablename__
    for model in (
        UserProfile,
        CustomProfileField,
        CustomProfileFieldValue,
        UserStatus,
        Stream,
        Subscription,
        UserGroup,
        UserGroupMembership,
        GroupGroupMembership,
        Realm,
        RealmFilter,
        AlertWord,
        RealmEmoji,
        MutedUser,
    )
)

# Columns of watched tables that no component reads: a user's personal settings (display,
# notifications), which only their own clients see. An UPDATE that sets nothing else changes
# nothing cached, so it is neither applied nor published: a user switching themes in a realm
# of 10,000 cost every process its cached users and its /register user list (0.75 s for the
# next /register). Two settings are read: the statuses component reads ``presence_enabled``,
# the user list ``email_address_visibility``. tests/lib/test_realm_cache.py changes every
# column here and compares /register served from the cache with one read afresh.
UNCACHED_COLUMNS: dict[str, frozenset[str]] = {
    UserProfile.__tablename__: frozenset(
        name for name, value in vars(UserSettingsMixin).items() if isinstance(value, MappedColumn)
    )
    - {"presence_enabled", "email_address_visibility"}
}

# Tables whose rows cached rows reference with ON DELETE CASCADE: the database deletes those
# without a statement of their own, so deleting from these counts as writing every table.
CASCADING_PARENTS = frozenset(
    key.column.table.name
    for name in REALM_STATE_TABLES
    for key in Base.metadata.tables[name].foreign_keys
    if (key.ondelete or "").upper() == "CASCADE"
)


def concerns_cache(tables: Iterable[str]) -> bool:
    """Whether a write to ``tables`` may change anything a realm-state cache holds."""
    return any(t == ANY_TABLE or t in REALM_STATE_TABLES for t in tables)


# Bound on the remembered row -> realm facts (a few MB at most).
_MAX_REALM_FACTS = 100_000
# Bound on the keys a keyed component holds per realm (its channels, its users).
_MAX_KEYS = 200_000


@dataclass(frozen=True)
class Component(Generic[T]):
    """One cached piece of a realm's state, read from ``tables`` and dropped when any is written."""

    name: str
    tables: frozenset[str]


@dataclass
class _RealmEntry:
    # The store's counter when the entry was made: loads started earlier may predate an
    # invalidation that found no entry to record itself in.
    created: int
    # Component name -> its value, or for a keyed component a dict of key -> value.
    values: dict[str, object] = field(default_factory=dict)
    # Component name -> the counter of its last invalidation.
    invalidated: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class LoadTicket:
    """Where a load started: its value is stored only if nothing invalidated it since."""

    realm_id: int
    component: str
    counter: int
    # Set for a keyed component's load: the key loaded.
    key: Hashable | None = None


class RealmStateStore:
    """Thread-safe; one per process (on ``Database``). Values must be immutable."""

    def __init__(self, max_realms: int, max_keys: int = _MAX_KEYS) -> None:
        self.max_realms = max(1, max_realms)
        self.max_keys = max(1, max_keys)
        self._realms: OrderedDict[int, _RealmEntry] = OrderedDict()
        self._tables: dict[str, frozenset[str]] = {}
        self._counter = 0
        # (table, row ID) -> the row's realm: facts that never change while the row exists,
        # kept across realms (a bounded memo, forgotten when the table is written).
        self._realm_of: dict[str, dict[int, int]] = {}
        self._lock = threading.Lock()
        # Set while invalidations from other processes can reach this store (its
        # invalidation channel is connected); loads are not kept while it is clear.
        self._accepting = threading.Event()
        # Statistics, for tests and the bench: loads stored, loads dropped as stale.
        self.loads = 0
        self.stale_loads = 0

    @property
    def accepting(self) -> bool:
        return self._accepting.is_set()

    @accepting.setter
    def accepting(self, value: bool) -> None:
        if value:
            self._accepting.set()
        else:
            self._accepting.clear()

    def wait_accepting(self, timeout: float) -> bool:
        return self._accepting.wait(timeout)

    def peek(self, realm_id: int, component: Component[T], key: Hashable | None = None) -> T | None:
        """The cached value (of ``key``, for a keyed component), or None; marks the realm
        recently used. A keyed component without a key: its cached keys, for tests."""
        with self._lock:
            entry = self._realms.get(realm_id)
            if entry is None:
                return None
            self._realms.move_to_end(realm_id)
            value = entry.values.get(component.name)
            if key is not None and value is not None:
                value = cast("dict[Hashable, object]", value).get(key)
            return cast("T | None", value)

    def begin_load(self, realm_id: int, component: Component[T], key: Hashable | None = None) -> LoadTicket:
        with self._lock:
            self._tables.setdefault(component.name, component.tables)
            self._entry(realm_id)
            return LoadTicket(realm_id, component.name, self._counter, key)

    def finish_load(self, ticket: LoadTicket, value: T) -> bool:
        """Store a loaded value unless an invalidation overtook the load; whether it was stored."""
        with self._lock:
            entry = self._realms.get(ticket.realm_id)
            if (
                not self._accepting.is_set()
                or entry is None
                or entry.created > ticket.counter
                or entry.invalidated.get(ticket.component, -1) > ticket.counter
            ):
                self.stale_loads += 1
                return False
            if ticket.key is None:
                entry.values[ticket.component] = value
            else:
                keyed = cast("dict[Hashable, object]", entry.values.setdefault(ticket.component, {}))
                if len(keyed) >= self.max_keys:
                    keyed.clear()  # a bound, never reached by a realm's own channels and users
                keyed[ticket.key] = value
            self.loads += 1
            return True

    def get(self, realm_id: int, component: Component[T], load: Callable[[], T]) -> T:
        """The cached value, else ``load()`` (outside the lock), stored if still current."""
        value = self.peek(realm_id, component)
        if value is not None:
            return value
        ticket = self.begin_load(realm_id, component)
        value = load()
        self.finish_load(ticket, value)
        return value

    def realm_of(self, table: str, row_id: int, load: Callable[[], int | None]) -> int | None:
        """The realm a row (a user, a channel) belongs to, remembered once read."""
        known = self._realm_of.get(table)
        realm_id = None if known is None else known.get(row_id)
        if realm_id is not None:
            return realm_id
        ticket = self._counter
        realm_id = load()
        if realm_id is not None and self._accepting.is_set():
            with self._lock:
                # Anything written meanwhile may have been this row: remember it next time.
                if self._counter == ticket:
                    rows = self._realm_of.setdefault(table, {})
                    if len(rows) >= _MAX_REALM_FACTS:
                        rows.clear()
                    rows[row_id] = realm_id
        return realm_id

    def invalidate(self, realm_ids: Iterable[int] | None, tables: Iterable[str]) -> None:
        """Drop the components read from any of ``tables``, in these realms (None: all)."""
        written = frozenset(tables)
        with self._lock:
            # A row never moves to another realm, but it may be deleted and its ID reused.
            for table in self._realm_of if ANY_TABLE in written else written:
                self._realm_of.get(table, {}).clear()
            names = [
                name
                for name, read in self._tables.items()
                if ANY_TABLE in written or not read.isdisjoint(written)
            ]
            if not names:
                return
            self._counter += 1
            entries = (
                list(self._realms.values())
                if realm_ids is None
                else [e for r in realm_ids if (e := self._realms.get(r)) is not None]
            )
            for entry in entries:
                for name in names:
                    entry.values.pop(name, None)
                    entry.invalidated[name] = self._counter

    def clear(self) -> None:
        """Drop everything (invalidations may have been missed: a lost Redis connection)."""
        with self._lock:
            self._counter += 1
            self._realms.clear()
            self._realm_of = {}

    def cached_realms(self) -> list[int]:
        with self._lock:
            return list(self._realms)

    def _entry(self, realm_id: int) -> _RealmEntry:
        entry = self._realms.get(realm_id)
        if entry is None:
            self._counter += 1
            entry = self._realms[realm_id] = _RealmEntry(created=self._counter)
            while len(self._realms) > self.max_realms:
                self._realms.popitem(last=False)
        else:
            self._realms.move_to_end(realm_id)
        return entry
