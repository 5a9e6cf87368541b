"""What a client asked for when it registered its queue, and the errors naming a queue.

A ``ClientDescriptor`` is fixed for the queue's life; every store keeps one per queue and
tailors each event to it (``events/delivery.py``).
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from palaver.lib.exceptions import JsonableError
from palaver.models.narrow import MatchEnv, NarrowSyntaxError, NarrowTerm, parse_terms
from palaver.models.narrow_operators import message_matches

# Message columns a message event's ``internal`` part may carry for narrows (has:link...).
_MESSAGE_FACTS = ("has_link", "has_image", "has_attachment")

# Everything of a registration that tailoring reads, other than who the client is and its
# narrow: clients with equal shapes get identical copies of an event (``delivery.py``).
ClientShape = tuple[frozenset[str] | None, bool, bool, bool, frozenset[str]]


class BadEventQueueIdError(JsonableError):
    """The queue is unknown, expired, or another user's.

    Clients recover (register a new queue) on this code, or, as zulip-terminal does, on a
    message starting with the lowercase "Bad event queue id:".
    """

    code = "BAD_EVENT_QUEUE_ID"

    def __init__(self, queue_id: str) -> None:
        super().__init__(f"Bad event queue id: {queue_id}", queue_id=queue_id)


class EventsAlreadyPrunedError(JsonableError):
    def __init__(self, last_event_id: int) -> None:
        super().__init__(f"An event newer than {last_event_id} has already been pruned!")


def new_queue_id() -> str:
    return str(uuid.uuid4())


@dataclass
class ClientDescriptor:
    """What a client asked for when it registered; fixed for the queue's life."""

    queue_id: str
    user_id: int
    realm_id: int
    # None means every event type.
    event_types: frozenset[str] | None = None
    apply_markdown: bool = False
    client_gravatar: bool = True
    slim_presence: bool = False
    all_public_streams: bool = False
    # Normalized terms: {"operator": str, "operand": Any, "negated": bool}.
    narrow: list[dict[str, Any]] = field(default_factory=list)
    client_capabilities: dict[str, bool] = field(default_factory=dict)
    lifespan_seconds: int = 600
    user_agent: str = ""
    created_at: float = field(default_factory=time.time)
    # Updated by the memory store on each request; the Redis store keeps it in Redis.
    last_access: float = field(default_factory=time.time)

    def has_capability(self, name: str) -> bool:
        return bool(self.client_capabilities.get(name, False))

    @functools.cached_property
    def shape(self) -> ClientShape:
        """The registration as tailoring sees it (not the user, queue or narrow)."""
        capabilities = frozenset(name for name, on in self.client_capabilities.items() if on)
        return (self.event_types, self.apply_markdown, self.client_gravatar, self.slim_presence, capabilities)

    @functools.cached_property
    def _narrow_terms(self) -> list[NarrowTerm] | None:
        try:
            return parse_terms(self.narrow)
        except NarrowSyntaxError:
            return None  # a malformed narrow (registration refuses them) filters nothing

    def matches_narrow(
        self, message: Mapping[str, Any], flags: Sequence[str], internal: Mapping[str, Any]
    ) -> bool:
        """Whether a message passes the queue's narrow (``models/narrow.py``, in memory).

        ``internal`` may carry message columns the client's object lacks (has_link...).
        """
        terms = self._narrow_terms
        if terms is None:
            return True
        facts = {name: bool(internal[name]) for name in _MESSAGE_FACTS if internal.get(name) is not None}
        return message_matches(terms, message, MatchEnv(self.user_id, flags, facts=facts))

    def to_dict(self) -> dict[str, Any]:
        return {
            "queue_id": self.queue_id,
            "user_id": self.user_id,
            "realm_id": self.realm_id,
            "event_types": sorted(self.event_types) if self.event_types is not None else None,
            "apply_markdown": self.apply_markdown,
            "client_gravatar": self.client_gravatar,
            "slim_presence": self.slim_presence,
            "all_public_streams": self.all_public_streams,
            "narrow": self.narrow,
            "client_capabilities": self.client_capabilities,
            "lifespan_seconds": self.lifespan_seconds,
            "user_agent": self.user_agent,
            "created_at": self.created_at,
            "last_access": self.last_access,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClientDescriptor:
        event_types = data.get("event_types")
        return cls(
            queue_id=str(data["queue_id"]),
            user_id=int(data["user_id"]),
            realm_id=int(data["realm_id"]),
            event_types=frozenset(event_types) if event_types is not None else None,
            apply_markdown=bool(data.get("apply_markdown", False)),
            client_gravatar=bool(data.get("client_gravatar", True)),
            slim_presence=bool(data.get("slim_presence", False)),
            all_public_streams=bool(data.get("all_public_streams", False)),
            narrow=list(data.get("narrow", [])),
            client_capabilities=dict(data.get("client_capabilities", {})),
            lifespan_seconds=int(data.get("lifespan_seconds", 600)),
            user_agent=str(data.get("user_agent", "")),
            created_at=float(data.get("created_at", time.time())),
            last_access=float(data.get("last_access", time.time())),
        )
