"""The supervisor's health check of a worker (supervisor.answer_or_death), with real
processes; and that what supervisor.py and serving.py extend of uvicorn is still there."""

from __future__ import annotations

import inspect
import multiprocessing
import time
from multiprocessing.connection import Connection

import pytest
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.supervisors.multiprocess import Multiprocess, Process

from palaver.serving import GuardedHttpToolsProtocol
from palaver.supervisor import SlotProcess, SlotSupervisor, answer_or_death


def _answer_once(conn: Connection) -> None:
    conn.recv()
    conn.send(True)  # uvicorn's answer: the server has started


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
    # As with uvicorn's pipe, this process keeps the child's end open, so the pipe alone
    # would not report the death: the wait would last the whole timeout.
    context = multiprocessing.get_context("spawn")
    parent, _child = context.Pipe()
    process = context.Process(target=time.sleep, args=(0.2,))
    process.start()
    parent.send(b"ping")
    started = time.monotonic()
    assert answer_or_death(parent, process.sentinel, timeout=30) is None
    assert time.monotonic() - started < 10
    process.join()


def test_uvicorn_still_checks_health_through_the_overridden_method() -> None:
    # SlotProcess replaces a private method of uvicorn's; were it renamed, the override would
    # silently stop being used and the 30 s wait on a dead worker would be back.
    source = inspect.getsource(Process.ping) + inspect.getsource(Process.is_ready)
    assert "_healthcheck" in vars(Process)
    assert source.count("self._healthcheck(") == 2


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [(SlotSupervisor, Multiprocess), (SlotProcess, Process), (GuardedHttpToolsProtocol, HttpToolsProtocol)],
    ids=["supervisor", "process", "protocol"],
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
        "_add_slot",
        "_start_worker",
        "_arm_head_timer",
        "_disarm_head_timer",
        "_head_timed_out",
        "_count_head",
        "_reject",
    }
)
