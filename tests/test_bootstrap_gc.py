"""The garbage-collector settings a serving process runs with (bootstrap.tune_gc_for_serving)."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from palaver.bootstrap import tune_gc_for_serving


@pytest.fixture
def restored_gc() -> Iterator[None]:
    frozen_before = gc.get_freeze_count()
    thresholds = gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)
    gc.unfreeze()
    if frozen_before:
        # The session had frozen what collection left alive (tests/conftest.py); unfreezing
        # alone would hand all of it back to every later full collection of this worker.
        gc.freeze()


@pytest.mark.usefixtures("restored_gc")
def test_serving_freezes_start_up_objects_and_collects_fully_on_a_clock() -> None:
    young, middle, _ = gc.get_threshold()
    full = threading.Event()

    def watch(phase: str, info: dict[str, Any]) -> None:
        if phase == "stop" and info["generation"] == 2:
            full.set()

    stop = tune_gc_for_serving(full_collection_seconds=0.05)
    gc.callbacks.append(watch)
    try:
        assert gc.get_freeze_count() > 0
        # The young generations keep their thresholds; the promotion rule never starts a
        # full collection by itself, the clock does.
        assert gc.get_threshold()[:2] == (young, middle)
        assert gc.get_threshold()[2] >= 1 << 30
        assert full.wait(timeout=10)
    finally:
        stop()
        gc.callbacks.remove(watch)
