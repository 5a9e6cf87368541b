"""Background jobs of each server process, started from the app's lifespan (``app.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


async def in_daemon_thread(func: Callable[[], T], name: str) -> T:
    """Run a long job off the event loop in a daemon thread.

    Unlike ``asyncio.to_thread``, whose threads the interpreter joins at exit, a shutdown
    never waits for the job (an export may take minutes; restarts must not). A job cut
    short leaves its work claimed and unfinished, and the workers take it up again.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(outcome)

    def run() -> None:
        try:
            result = func()
        except BaseException as error:  # handed to the awaiting task
            failure = error
            settle(lambda: None if future.done() else future.set_exception(failure))
            return
        settle(lambda: None if future.done() else future.set_result(result))

    threading.Thread(target=run, name=name, daemon=True).start()
    return await future
