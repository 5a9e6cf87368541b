"""The per-process store behind the realm-state cache: an LRU of realms, each holding
immutable snapshots by component, dropped by the tables a committed write touched.

This module knows nothing of what is cached: ``cache/components.py`` defines the components
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

``RealmCache`` (``cache/realm_cache.py``) owns one store per process; ``cache/transport.py``
and ``cache/change_log.py`` carry invalidations to the other processes.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from palaver.cache.table_map import ANY_TABLE, Component

T = TypeVar("T")

# Bound on the remembered row -> realm facts (a few MB at most).
_MAX_REALM_FACTS = 100_000
# Bound on the keys a keyed component holds per realm (its channels, its users).
_MAX_KEYS = 200_000


@dataclass
class _RealmEntry:
    # The store's counter when the entry was made: loads started earlier may predate an
    # invalidation that found no entry to record itself in.
    created: int
    # Component name -> its value, or for a keyed component a dict of key -> value.
    values: dict[str, object] = field(default_factory=dict)
    # Component name -> the counter of its last invalidation.
    invalidated: dict[str, int] = field(default_factory=dict)
    # Component name -> its value before the last invalidation, until loaded again (only
    # components that keep theirs). Possibly out of date: a loader reuses pieces of it whose
    # inputs it finds unchanged, never the value itself.
    previous: dict[str, object] = field(default_factory=dict)


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
        self._components: dict[str, Component[Any]] = {}
        self._keep_previous: set[str] = set()
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
            self._components.setdefault(component.name, component)
            if component.keeps_previous:
                self._keep_previous.add(component.name)
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
                entry.previous.pop(ticket.component, None)
            else:
                keyed = cast("dict[Hashable, object]", entry.values.setdefault(ticket.component, {}))
                if len(keyed) >= self.max_keys:
                    keyed.clear()  # a bound, never reached by a realm's own channels and users
                keyed[ticket.key] = value
            self.loads += 1
            return True

    def previous(self, realm_id: int, component: Component[T]) -> T | None:
        """The value an invalidation dropped, for a component that keeps it, until the next
        load is stored: possibly stale, so only for reusing what its loader checks."""
        with self._lock:
            entry = self._realms.get(realm_id)
            return None if entry is None else cast("T | None", entry.previous.get(component.name))

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
            # A row never moves to another realm, but it may be deleted and its ID reused. (A
            # column name finds nothing here, except the realm ID's, named for its table.)
            for table in self._realm_of if ANY_TABLE in written else written:
                self._realm_of.get(table.removesuffix(".realm_id"), {}).clear()
            names = [name for name, component in self._components.items() if component.dropped_by(written)]
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
                    value = entry.values.pop(name, None)
                    if value is not None and name in self._keep_previous:
                        entry.previous[name] = value
                    entry.invalidated[name] = self._counter

    def clear(self) -> None:
        """Drop everything (invalidations may have been missed: a lost Redis connection)."""
        with self._lock:
            self._counter += 1
            self._realms.clear()
            self._realm_of = {}

    def components(self) -> list[Component[Any]]:
        """Every component a load has been started for (for tests)."""
        with self._lock:
            return list(self._components.values())

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
