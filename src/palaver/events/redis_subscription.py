"""One Redis pub/sub subscription kept up on a thread of its own.

Two things listen to Redis this way: realm-cache invalidations (``invalidation.py``) and
long-poll wake-ups (``redis_notify.py``). Both must treat a (re)subscription the same way,
since whatever was published while they were not subscribed is unheard, and both must live
through Redis going away: reconnect with a backoff, and say so once per outage rather than
once per attempt. This module imports nothing of redis-py; callers pass the client and the
errors that mean "Redis is unreachable".
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

logger = logging.getLogger("palaver.events")

_FIRST_BACKOFF = 0.1
_MAX_BACKOFF = 5.0


class SubscriptionHandler(Protocol):
    def subscribed(self) -> None:
        """Subscribed (again): anything published before now was not heard."""

    def message(self, data: Any) -> None:
        """One published message's data."""

    def lost(self) -> None:
        """The subscription failed; a new one is attempted after a backoff."""


def keep_subscribed(
    client: Any,
    channel: str,
    stop: threading.Event,
    handler: SubscriptionHandler,
    *,
    errors: type[Exception] | tuple[type[Exception], ...],
    what: str,
) -> None:
    """Hold a subscription to ``channel`` until ``stop`` is set, passing what arrives to
    ``handler``. ``what`` names the subscription in the log ("Lost the <what> ...")."""
    backoff = _FIRST_BACKOFF
    lost = False
    while not stop.is_set():
        # redis-py leaves pubsub() unannotated.
        pubsub = client.pubsub()
        try:
            pubsub.subscribe(channel)
            while not stop.is_set():
                message = pubsub.get_message(timeout=1.0)
                if message is None:
                    continue
                if message["type"] == "subscribe":
                    if lost:
                        lost = False
                        logger.warning("%s restored", what[:1].upper() + what[1:])
                    handler.subscribed()
                    backoff = _FIRST_BACKOFF
                elif message["type"] == "message":
                    handler.message(message["data"])
        except errors as error:
            handler.lost()
            if not stop.is_set():
                if not lost:
                    lost = True
                    logger.warning("Lost the %s (%s); reconnecting", what, error)
                stop.wait(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF)
        finally:
            pubsub.close()
