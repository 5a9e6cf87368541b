"""The garbage-collector settings a serving process runs with (bootstrap.tune_gc_for_serving)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from palaver.bootstrap import tune_gc_for_serving


@pytest.fixture
def restored_gc() -> Iterator[None]:
    frozen_before = gc.get_freeze_count()
    yield
    gc.unfreeze()
    if frozen_before:
        # The session had frozen what collection left alive (tests/conftest.py); unfreezing
        # alone would hand all of it back to every later full collection of this worker.
        gc.freeze()


@pytest.mark.usefixtures("restored_gc")
def test_serving_freezes_start_up_objects() -> None:
    tune_gc_for_serving()
    assert gc.get_freeze_count() > 0
