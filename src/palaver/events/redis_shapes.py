"""The client shapes a publishing process knows of, for publishing to Redis in one trip.

A queue's hash in Redis names its shape (``shape_id``), the same in every process. A
publisher tailors the event once for each shape it has met (here, a registration stripped
of who the client is) and sends those copies with the publish script, which appends to
each recipient queue the copy of its shape (``redis_scripts.PUBLISH``).
"""

from __future__ import annotations

import hashlib
import threading

import orjson

from palaver.events.descriptor import ClientDescriptor, ClientShape

# Distinct registrations are few (one per client program and version); past this many the
# registry starts again, and queues of forgotten shapes cost a second round trip until met.
MAX_SHAPES = 256


def shape_id(client: ClientDescriptor) -> str:
    """The queue's shape as Redis records it; "" for a narrowed queue, tailored one by one."""
    if client.narrow:
        return ""
    event_types, apply_markdown, client_gravatar, slim_presence, capabilities = client.shape
    key = [
        sorted(event_types) if event_types is not None else None,
        apply_markdown,
        client_gravatar,
        slim_presence,
        sorted(capabilities),
    ]
    return hashlib.blake2b(orjson.dumps(key), digest_size=9).hexdigest()


def _neutral(shape: ClientShape) -> ClientDescriptor:
    """A client of the shape that is no one: no user, queue or narrow of its own."""
    event_types, apply_markdown, client_gravatar, slim_presence, capabilities = shape
    return ClientDescriptor(
        queue_id="",
        user_id=0,
        realm_id=0,
        event_types=event_types,
        apply_markdown=apply_markdown,
        client_gravatar=client_gravatar,
        slim_presence=slim_presence,
        client_capabilities=dict.fromkeys(capabilities, True),
    )


class ShapeRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, ClientDescriptor] = {}

    def learn(self, client: ClientDescriptor) -> None:
        key = shape_id(client)
        if not key or key in self._by_id:
            return
        neutral = _neutral(client.shape)
        with self._lock:
            if len(self._by_id) >= MAX_SHAPES:
                self._by_id.clear()
            self._by_id[key] = neutral

    def known(self) -> list[tuple[str, ClientDescriptor]]:
        with self._lock:
            return list(self._by_id.items())
