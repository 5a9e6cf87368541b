"""The event bus: the one way events leave a committed transaction.

``Database.transaction`` publishes each committed event with ``bus.publish``. The bus of a
running server is its queue backend (``events/queues.py``): publishing appends the event to
the matching client queues. Listeners see every event this process publishes, before any
queue does; tests record and validate events through them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Protocol

EventDict = dict[str, Any]
Listener = Callable[[int, EventDict, Sequence[int]], None]


class EventBus(Protocol):
    def publish(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None: ...

    def add_listener(self, listener: Listener) -> None: ...

    def remove_listener(self, listener: Listener) -> None: ...


class Listeners:
    """A thread-safe listener list; publishing happens on whichever thread committed."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self._lock = threading.Lock()

    def add(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.append(listener)

    def remove(self, listener: Listener) -> None:
        with self._lock:
            self._listeners.remove(listener)

    def notify(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(realm_id, event, user_ids)


class InProcessEventBus:
    """A bus with listeners and no queues, for code that needs only to observe events."""

    def __init__(self) -> None:
        self._listeners = Listeners()

    def publish(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None:
        self._listeners.notify(realm_id, event, user_ids)

    def add_listener(self, listener: Listener) -> None:
        self._listeners.add(listener)

    def remove_listener(self, listener: Listener) -> None:
        self._listeners.remove(listener)
