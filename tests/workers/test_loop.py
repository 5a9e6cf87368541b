"""The shared worker loop: first round, delays, waking events, failed rounds, start and stop."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

import anyio
import anyio.to_thread
import pytest
from sqlalchemy.exc import OperationalError

from palaver.lib.dependencies import OutageMonitor
from palaver.services import Services
from palaver.workers.loop import BackgroundWorker
from tests.helpers import until


class Recorder(BackgroundWorker):
    name = "palaver-test-worker"
    label = "test worker"
    logger = logging.getLogger("tests.workers.loop")
    waking_events = frozenset({"ping"})

    def __init__(self, services: Services, *, first: float | None = 0.0, fail_round: int = 0) -> None:
        super().__init__(services)
        self.first = first
        self.fail_round = fail_round
        self.rounds = 0
        self.threads: list[str] = []
        self.stopped = 0

    def run_round(self) -> float | None:
        self.rounds += 1
        self.threads.append(threading.current_thread().name)
        if self.rounds == self.fail_round:
            raise ValueError("boom")
        return None

    def default_delay(self) -> float:
        return 60.0

    def first_delay(self) -> float | None:
        return self.first

    def wakes_on(self, event: dict[str, Any]) -> bool:
        return bool(event.get("wake", True))

    def on_stop(self) -> None:
        self.stopped += 1


class DaemonRecorder(Recorder):
    daemon_thread = True


class Ticker(Recorder):
    def default_delay(self) -> float:
        return 0.2


def anyio_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "AnyIO worker thread")


async def rounds_reach(worker: Recorder, count: int) -> None:
    await until(lambda: worker.rounds >= count)


async def test_rounds_run_at_once_then_when_woken(
    services: Services, caplog: pytest.LogCaptureFixture
) -> None:
    worker = Recorder(services, fail_round=2)
    await worker.start()
    await worker.start()  # a second start changes nothing
    await rounds_reach(worker, 1)
    worker._on_event(1, {"type": "other"}, [])
    worker._on_event(1, {"type": "ping", "wake": False}, [])
    await asyncio.sleep(0.05)
    assert worker.rounds == 1
    with caplog.at_level(logging.ERROR, logger="tests.workers.loop"):
        worker._on_event(1, {"type": "ping"}, [])
        await rounds_reach(worker, 2)
        # Logged by the loop once the failed round's thread hands back.
        await until(lambda: "test worker round failed" in caplog.text)
    worker._on_event(1, {"type": "ping"}, [])  # a failed round does not end the loop
    await rounds_reach(worker, 3)
    assert worker.threads[0] != threading.current_thread().name
    await worker.stop()
    await worker.stop()
    assert worker.stopped == 1
    worker._on_event(1, {"type": "ping"}, [])
    await asyncio.sleep(0.05)
    assert worker.rounds == 3


async def test_rounds_end_the_threads_a_burst_of_requests_left(services: Services) -> None:
    # Sixteen requests at once, each on a worker thread of anyio's (as Starlette runs views).
    async with anyio.create_task_group() as group:
        for _ in range(16):
            group.start_soon(anyio.to_thread.run_sync, time.sleep, 0.05)
    assert anyio_threads() >= 16
    worker = Ticker(services)
    await worker.start()
    try:
        # anyio ends a thread idle for 10 s when it next hands one work: the rounds do.
        await until(lambda: anyio_threads() <= 2, timeout=30)
    finally:
        await worker.stop()


async def test_first_round_waits_to_be_woken(services: Services) -> None:
    worker = DaemonRecorder(services, first=None)
    await worker.start()
    await asyncio.sleep(0.05)
    assert worker.rounds == 0
    worker._on_event(1, {"type": "ping"}, [])
    await rounds_reach(worker, 1)
    assert worker.threads == ["palaver-test-worker"]
    await worker.stop()


async def test_a_worker_woken_as_it_is_stopped_stops(services: Services) -> None:
    """A wake that lands with the stop, or a loop step or a few before it, must not swallow
    the stop's cancellation: the loop would go on with its rounds and ``stop`` wait for it
    forever (as when a message's event woke the push worker just as the server shut down)."""
    for steps in range(4):
        worker = Recorder(services, first=60.0)
        await worker.start()
        await asyncio.sleep(0.01)  # the task now waits out its first delay
        worker._on_event(1, {"type": "ping"}, [])
        for _ in range(steps):
            await asyncio.sleep(0)
        # Awaited through asyncio.wait, which cancels nothing when its time is up: a bound
        # that cancelled the stop would cancel the looping task again, and that one ends it.
        stopping = asyncio.create_task(worker.stop())
        await asyncio.wait({stopping}, timeout=5)
        assert stopping.done(), f"stop() still waits for the loop (woken {steps} steps before)"
        assert worker.stopped == 1


async def test_stopping_a_worker_never_started(services: Services) -> None:
    worker = Recorder(services)
    await worker.stop()
    assert worker.stopped == 0


class OutageRecorder(Recorder):
    """Its rounds meet an unreachable database."""

    def run_round(self) -> float | None:
        self.rounds += 1
        raise OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))


async def test_a_round_meeting_an_outage_is_one_line_not_a_traceback(
    services: Services, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monitor = OutageMonitor({})
    monkeypatch.setattr(services, "outages", monitor)
    worker = OutageRecorder(services)
    with caplog.at_level(logging.INFO):
        await worker.start()
        await rounds_reach(worker, 1)
        await until(lambda: monitor.down == {"database"})
        worker._on_event(1, {"type": "ping"}, [])
        await rounds_reach(worker, 2)
        await worker.stop()
    monitor.close()
    assert not [r for r in caplog.records if r.exc_info]
    # The monitor's line, once for the outage however many rounds meet it.
    assert [r.getMessage() for r in caplog.records if "unreachable" in r.getMessage()] == [
        "database unreachable: connection refused; answering 503 until it returns"
    ]


async def test_without_a_monitor_an_outage_is_still_one_line_a_round(
    services: Services, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services, "outages", None)
    worker = OutageRecorder(services)
    with caplog.at_level(logging.WARNING, logger="tests.workers.loop"):
        await worker.start()
        await rounds_reach(worker, 1)
        await until(lambda: "test worker round failed: database unreachable" in caplog.text)
        await worker.stop()
    assert not [r for r in caplog.records if r.exc_info]
