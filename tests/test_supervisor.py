"""The supervisor's health check of a worker (supervisor.answer_or_death), with real
processes; and that what serving.py extends of uvicorn is still there (supervisor.py uses
only uvicorn's public ``Server`` and ``Config``)."""

from __future__ import annotations

import inspect
import multiprocessing
import signal
import subprocess
import sys
import time
from multiprocessing.connection import Connection

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.config import STARTUP_FAILURE
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from palaver.serving import GuardedHttpToolsProtocol
from palaver.supervisor import Supervisor, Worker, answer_or_death


def _answer_once(conn: Connection) -> None:
    conn.recv()
    conn.send(True)  # the worker's answer: its server has started


def test_a_live_worker_answers() -> None:
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_answer_once, args=(child,))
    process.start()
    try:
        parent.send(b"ping")
        assert answer_or_death(parent, process.sentinel, timeout=30) is True
    finally:
        process.join()


def test_a_worker_that_dies_without_answering_ends_the_wait_at_once() -> None:
    # This process keeps the child's end open, so the pipe alone would not report the
    # death: the wait would last the whole timeout.
    context = multiprocessing.get_context("spawn")
    parent, _child = context.Pipe()
    process = context.Process(target=time.sleep, args=(0.2,))
    process.start()
    parent.send(b"ping")
    started = time.monotonic()
    assert answer_or_death(parent, process.sentinel, timeout=30) is None
    assert time.monotonic() - started < 10
    process.join()


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [(GuardedHttpToolsProtocol, HttpToolsProtocol)],
    ids=["protocol"],
)
def test_every_override_still_overrides_a_method_uvicorn_calls(ours: type, theirs: type) -> None:
    """An uvicorn release that renames or re-signs a method Palaver extends would leave the
    extension unused without an error; this names the method instead (pyproject pins the
    tested range)."""
    for name, method in vars(ours).items():
        if not callable(method) or name.startswith("__") or name in _OWN_HELPERS:
            continue
        original = getattr(theirs, name, None)
        assert original is not None, f"uvicorn's {theirs.__name__} has no {name} any more"
        ours_parameters = list(inspect.signature(method).parameters)
        assert ours_parameters == list(inspect.signature(original).parameters), name


# Methods of Palaver's own in those classes, not overrides of uvicorn's.
_OWN_HELPERS = frozenset(
    {
        "_arm_head_timer",
        "_disarm_head_timer",
        "_head_timed_out",
        "_count_head",
        "_reject",
    }
)


async def app_that_fails_to_start(scope: Scope, receive: Receive, send: Send) -> None:
    assert scope["type"] == "lifespan"
    await receive()
    await send({"type": "lifespan.startup.failed", "message": "broken on purpose"})


def _supervise(config: uvicorn.Config) -> None:
    sys.exit(Supervisor(config, preload=[]).run())


def test_a_worker_that_fails_to_start_stops_the_server_with_a_non_zero_exit() -> None:
    # Every replacement would fail the same way: the server stops instead of restarting it.
    config = uvicorn.Config(
        "tests.test_supervisor:app_that_fails_to_start",
        host="127.0.0.1",
        port=0,
        workers=2,
        lifespan="on",
        log_config=None,
    )
    process = multiprocessing.get_context("spawn").Process(target=_supervise, args=(config,))
    process.start()
    process.join(60)
    assert process.exitcode == STARTUP_FAILURE


class _ReapedBeforeItsExitCodeArrived:
    """A worker process as the supervisor sees it between the fork server's reaping of it and
    its report of the exit code: no exit code yet, and no process under its PID."""

    def __init__(self) -> None:
        finished = subprocess.Popen([sys.executable, "-c", "pass"])
        finished.wait()
        self.pid = finished.pid
        self.exitcode = None


def test_stopping_a_worker_already_reaped_is_not_an_error() -> None:
    # The race CI once lost: a worker killed from outside, its health check ended by the closed
    # pipe, and the supervisor's SIGKILL met no process; the supervisor itself exited on ESRCH.
    worker = Worker.__new__(Worker)
    worker.process = _ReapedBeforeItsExitCodeArrived()  # type: ignore[assignment]
    worker.stop(signal.SIGKILL)
