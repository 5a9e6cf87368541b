"""One queue's pending events, held as references to copies shared by many queues.

An event published to thousands of queues is tailored once per client shape
(``delivery.py``); each queue holds only its own event ID and a reference to that shared
copy, which is serialized to JSON once, by whichever long-poll answers first, and spliced
into every response that carries it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from palaver.events.bus import EventDict
from palaver.events.descriptor import EventsAlreadyPrunedError

# An event as JSON text, its ``id`` included: what a fetch returns, spliced into responses
# unparsed (the Redis store keeps events as text, the memory store as ``SharedEvent``).
JsonText = bytes | str


class SharedEvent:
    """A tailored event (without its ID), and its JSON once some response needed it."""

    __slots__ = ("_head", "event")

    def __init__(self, event: EventDict) -> None:
        # Each queue numbers its events; a published ``id`` would be overwritten anyway.
        self.event = event if "id" not in event else {k: v for k, v in event.items() if k != "id"}
        self._head: bytes | None = None

    def head(self) -> bytes:
        """The JSON object, open for the ``id`` member that each queue adds last.

        Racing threads may both serialize it; they produce the same bytes.
        """
        head = self._head
        if head is None:
            head = self._head = orjson.dumps(self.event)[:-1] + (b',"id":' if self.event else b'"id":')
        return head

    def json(self, event_id: int) -> bytes:
        return b"%b%d}" % (self.head(), event_id)

    def with_id(self, event_id: int) -> EventDict:
        return {**self.event, "id": event_id}


class EventQueue:
    """One client's pending events, in increasing ID order."""

    __slots__ = ("events", "newest_pruned_id", "next_event_id")

    def __init__(
        self,
        next_event_id: int = 0,
        newest_pruned_id: int = -1,
        events: Iterable[tuple[int, SharedEvent]] = (),
    ) -> None:
        self.next_event_id = next_event_id
        self.newest_pruned_id = newest_pruned_id
        self.events: list[tuple[int, SharedEvent]] = list(events)

    def push(self, event: SharedEvent) -> int:
        event_id = self.next_event_id
        self.next_event_id += 1
        self.events.append((event_id, event))
        return event_id

    def acknowledge(self, last_event_id: int) -> None:
        """Drop the events the client has confirmed it received.

        Acknowledging less than was already dropped means the client missed events it can
        no longer get, so that is an error rather than a silent gap.
        """
        if last_event_id < self.newest_pruned_id:
            raise EventsAlreadyPrunedError(last_event_id)
        keep = 0
        events = self.events
        while keep < len(events) and events[keep][0] <= last_event_id:
            self.newest_pruned_id = events[keep][0]
            keep += 1
        del events[:keep]

    def contents(self) -> list[JsonText]:
        return [shared.json(event_id) for event_id, shared in self.events]

    def to_dict(self) -> dict[str, Any]:
        return {
            "next_event_id": self.next_event_id,
            "newest_pruned_id": self.newest_pruned_id,
            "events": [shared.with_id(event_id) for event_id, shared in self.events],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EventQueue:
        events = [
            (int(event["id"]), SharedEvent({k: v for k, v in event.items() if k != "id"}))
            for event in data["events"]
        ]
        return cls(int(data["next_event_id"]), int(data["newest_pruned_id"]), events)
