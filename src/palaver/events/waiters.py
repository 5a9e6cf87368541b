"""Waking the long-polls that wait in this process.

A publish may happen on any thread (whichever committed); each waiting request sits on its
own event loop. ``Waiters`` hands the wake-ups over to each loop in one call, and the loop
wakes them a batch at a time, so other work that became ready meanwhile (the response of
the request that published) is not queued behind thousands of woken polls.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterable

# Long-polls woken per turn of the event loop.
WAKE_BATCH = 64


class Waiter:
    """One waiting long-poll: a flag, plus a future only while it is actually suspended.

    Lighter than an ``asyncio.Event`` awaited through ``asyncio.wait_for`` (an event, its
    waiter deque, a future and a task per wait): thousands of these are parked at once.
    """

    __slots__ = ("future", "loop", "woken")

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.woken = False
        self.future: asyncio.Future[None] | None = None

    def set(self) -> None:
        """Wake the request (on its loop's thread)."""
        self.woken = True
        future = self.future
        if future is not None and not future.done():
            future.set_result(None)

    async def wait(self, timeout: float) -> bool:
        """Wait until woken or ``timeout`` seconds pass; whether it was woken (and clear it)."""
        if not self.woken:
            self.future = future = self.loop.create_future()
            timer = self.loop.call_later(timeout, _time_out, future)
            try:
                await future
            finally:
                timer.cancel()
                self.future = None
        woken, self.woken = self.woken, False
        return woken


def _time_out(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _set_all(loop: asyncio.AbstractEventLoop, waiters: list[Waiter], start: int = 0) -> None:
    end = start + WAKE_BATCH
    for waiter in waiters[start:end]:
        waiter.set()
    if end < len(waiters):
        # The rest on a later turn: what is already ready runs in between.
        loop.call_soon(_set_all, loop, waiters, end)


class Waiters:
    """Long-polls waiting in this process, by queue ID.

    ``wake`` may be called from any thread (publishing happens on whichever thread
    committed); it hands the wake-up to each waiter's own event loop, one call per loop,
    so a message to thousands of clients costs the publishing thread one hand-over.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # A list: most queues have one waiter, and a one-item list is a quarter of a set.
        self._by_queue: dict[str, list[Waiter]] = {}

    def add(self, queue_id: str) -> Waiter:
        waiter = Waiter()
        with self._lock:
            self._by_queue.setdefault(queue_id, []).append(waiter)
        return waiter

    def remove(self, queue_id: str, waiter: Waiter) -> None:
        with self._lock:
            waiters = self._by_queue.get(queue_id)
            if waiters is not None:
                with contextlib.suppress(ValueError):
                    waiters.remove(waiter)
                if not waiters:
                    del self._by_queue[queue_id]

    def wake(self, queue_ids: Iterable[str]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[Waiter]] = {}
        with self._lock:
            by_queue = self._by_queue
            for queue_id in set(queue_ids):
                for waiter in by_queue.get(queue_id, ()):
                    by_loop.setdefault(waiter.loop, []).append(waiter)
        for loop, waiters in by_loop.items():
            # RuntimeError: that loop has closed, and its requests are gone with it.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_set_all, loop, waiters)

    def wake_all(self) -> None:
        with self._lock:
            queue_ids = list(self._by_queue)
        self.wake(queue_ids)

    def count(self) -> int:
        with self._lock:
            return sum(len(w) for w in self._by_queue.values())
