"""The one loop of every background worker (started and stopped from the app's lifespan).

A worker is an asyncio task that runs a blocking round off the event loop, logs a round that
fails, then waits until its next round is due or until an event published in this process
wakes it. Rounds run on anyio's worker threads (the ones requests use), or in a daemon
thread (``in_daemon_thread``) for long jobs a shutdown must not wait for. Subclasses say what
a round is and when.

On anyio's threads, not asyncio's executor: anyio stops its threads idle for 10 s only when
it next hands one work, and the WAL checkpoint's round (every second) is that work on an
idle server, so the threads a burst of requests started end ~10 s after it; and no second
pool of threads exists beside anyio's (bench/queue_memory.py, ``idle:``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import anyio.to_thread

from palaver.lib.dependencies import dependency_of
from palaver.workers import in_daemon_thread

if TYPE_CHECKING:
    from palaver.services import Services


# Set in a thread while it runs a worker's round: what the rounds hold (a connection, say)
# is told apart from what requests hold, on the same threads (workers/idle_memory.py).
_round_thread = threading.local()


def in_background_round() -> bool:
    """Whether the calling thread is running a background worker's round."""
    return bool(getattr(_round_thread, "active", False))


class BackgroundWorker:
    #: The asyncio task's name (and the daemon thread's).
    name: ClassVar[str]
    #: What the failed-round log line calls the worker ("<label> round failed").
    label: ClassVar[str]
    logger: ClassVar[logging.Logger]
    #: Run rounds in a daemon thread rather than ``asyncio.to_thread``.
    daemon_thread: ClassVar[bool] = False
    #: Types of published events that may wake the worker (``wakes_on`` decides); none: the
    #: worker does not listen to the event bus.
    waking_events: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, services: Services) -> None:
        self.services = services
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._limiter: anyio.CapacityLimiter | None = None

    # What subclasses define --------------------------------------------------------------

    def run_round(self) -> float | None:
        """One round, in a thread; the seconds until the next, or None for ``default_delay``."""
        raise NotImplementedError

    def default_delay(self) -> float | None:
        """Seconds between rounds when a round names none (or fails); None: until woken."""
        return None

    def first_delay(self) -> float | None:
        """Seconds before the first round; None: until woken."""
        return 0.0

    def wakes_on(self, event: dict[str, Any]) -> bool:
        """Whether an event of one of ``waking_events`` wakes the worker.

        Called in the thread that published it, also before the worker starts.
        """
        return True

    def accept(self, realm_id: int, event: dict[str, Any], user_ids: Sequence[int]) -> bool:
        """Whether a published event of one of ``waking_events`` wakes the worker; a worker
        that works on the events themselves keeps what it needs here (``wakes_on`` by default).

        Called in the thread that published it, right after its commit: keep it cheap.
        """
        return self.wakes_on(event)

    def on_stop(self) -> None:
        """Called once the running task is stopped (not when stopping a stopped worker)."""

    # Running in the server ---------------------------------------------------------------

    def _on_event(self, realm_id: int, event: dict[str, Any], user_ids: Sequence[int]) -> None:
        if event.get("type") not in self.waking_events or not self.accept(realm_id, event, user_ids):
            return
        if self._loop is not None and self._wake is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    async def _wait(self, delay: float | None) -> None:
        assert self._wake is not None
        # asyncio.timeout, never asyncio.wait_for: on Python 3.11, wait_for returns normally
        # when a wake and ``stop``'s cancel land in the same loop step (the wake having
        # finished its inner task first), so the loop ran on and ``stop`` waited forever.
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(delay):
                await self._wake.wait()

    def _marked_round(self) -> float | None:
        _round_thread.active = True
        try:
            return self.run_round()
        finally:
            _round_thread.active = False

    async def _round(self) -> float | None:
        if self.daemon_thread:
            return await in_daemon_thread(self._marked_round, self.name)
        # Abandoned when the worker stops, as asyncio.to_thread's rounds were: stopping never
        # waits for a round in progress (it finishes on its thread, its result dropped). Its
        # own limiter: a round never waits for, or takes, a request's thread slot.
        return await anyio.to_thread.run_sync(
            self._marked_round, abandon_on_cancel=True, limiter=self._limiter
        )

    async def _run(self) -> None:
        assert self._wake is not None
        first = self.first_delay()
        if first != 0.0:
            await self._wait(first)
        while True:
            self._wake.clear()
            try:
                delay = await self._round()
            except Exception as error:
                if not self._outage(error):
                    self.logger.exception("%s round failed", self.label)
                delay = None
            await self._wait(self.default_delay() if delay is None else delay)

    def _outage(self, error: Exception) -> bool:
        """Whether a failed round met a database or Redis outage, told as requests tell it.

        The server's outage monitor says so in one line per outage (and probes for the
        recovery); a traceback every round would bury it. The next round retries as usual.
        """
        dependency = dependency_of(error)
        if dependency is None:
            return False
        monitor = self.services.outages
        if monitor is not None:
            monitor.failed(dependency, error)
        else:
            self.logger.warning("%s round failed: %s unreachable (%s)", self.label, dependency, error)
        return True

    async def start(self) -> None:
        if self._task is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._limiter = anyio.CapacityLimiter(1)
        if self.waking_events:
            self.services.bus.add_listener(self._on_event)
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        if self._task is None:
            return
        if self.waking_events:
            self.services.bus.remove_listener(self._on_event)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None
        self.on_stop()
