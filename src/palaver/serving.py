"""What a serving process does around uvicorn: answering long-polls when told to stop.

uvicorn, on SIGTERM or SIGINT, stops accepting connections and then waits for every open
request to finish. A parked ``GET /events`` would wait its whole heartbeat interval, past
the graceful-shutdown timeout, and then be cancelled into a 500. So each process chains
its own handler in front of uvicorn's: the signal first drains the queue backend (every
parked long-poll answers at once with a heartbeat or its events, and no new one parks),
then uvicorn's handler proceeds as usual. Clients poll again with the same queue and
``last_event_id`` and reach the next process; nothing is lost because queues are saved
(memory store) or live in Redis.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

logger = logging.getLogger("palaver.server")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def on_stop_signals(on_stop: Callable[[], None]) -> Iterator[None]:
    """Run ``on_stop`` on this event loop when a stop signal arrives, then the previous handler.

    Only the main thread may set signal handlers; elsewhere (a test client running the app
    on a thread of its own) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    previous: dict[int, Any] = {int(sig): signal.getsignal(sig) for sig in STOP_SIGNALS}

    def handler(sig: int, frame: FrameType | None) -> None:
        # A signal handler runs between two bytecodes of the loop's own thread; the loop's
        # thread-safe entry point is the one safe way in.
        loop.call_soon_threadsafe(on_stop)
        earlier = previous.get(sig)
        if callable(earlier):
            earlier(sig, frame)
        elif earlier == signal.SIG_DFL:
            # Nobody else handles it (not under uvicorn): keep the default meaning.
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)

    for sig in STOP_SIGNALS:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for number, earlier in previous.items():
            if signal.getsignal(number) is handler:
                signal.signal(number, earlier)
