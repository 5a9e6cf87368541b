"""The per-process store behind the realm-state cache: an LRU of realms, each holding
immutable snapshots by component, dropped by the tables a committed write touched.

This module knows nothing of what is cached: ``lib/realm_cache.py`` defines the components
(their snapshot types, the tables they are read from, their loaders). The store only keeps
values, bounds how many realms it holds, and makes invalidation race-free.

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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar, cast

T = TypeVar("T")

# Marks "invalidate in every realm", when a write's realm is unknown.
ALL_REALMS: None = None
# A written table that stands for every table (textual SQL whose table is not parsed).
ANY_TABLE = "*"


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
    values: dict[str, object] = field(default_factory=dict)
    # Component name -> the counter of its last invalidation.
    invalidated: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class LoadTicket:
    """Where a load started: its value is stored only if nothing invalidated it since."""

    realm_id: int
    component: str
    counter: int


class RealmStateStore:
    """Thread-safe; one per process (on ``Database``). Values must be immutable."""

    def __init__(self, max_realms: int) -> None:
        self.max_realms = max(1, max_realms)
        self._realms: OrderedDict[int, _RealmEntry] = OrderedDict()
        self._tables: dict[str, frozenset[str]] = {}
        self._counter = 0
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

    def peek(self, realm_id: int, component: Component[T]) -> T | None:
        """The cached value, or None; marks the realm recently used."""
        with self._lock:
            entry = self._realms.get(realm_id)
            if entry is None:
                return None
            self._realms.move_to_end(realm_id)
            return cast("T | None", entry.values.get(component.name))

    def begin_load(self, realm_id: int, component: Component[T]) -> LoadTicket:
        with self._lock:
            self._tables.setdefault(component.name, component.tables)
            self._entry(realm_id)
            return LoadTicket(realm_id, component.name, self._counter)

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
            entry.values[ticket.component] = value
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

    def invalidate(self, realm_ids: Iterable[int] | None, tables: Iterable[str]) -> None:
        """Drop the components read from any of ``tables``, in these realms (None: all)."""
        written = frozenset(tables)
        with self._lock:
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
