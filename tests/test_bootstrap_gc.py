"""The garbage-collector settings a serving process runs with (bootstrap.tune_gc_for_serving)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from palaver.bootstrap import SERVING_GC_GEN0_THRESHOLD, tune_gc_for_serving


@pytest.fixture
def restored_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


@pytest.mark.usefixtures("restored_gc")
def test_serving_freezes_start_up_objects_and_collects_less_often() -> None:
    tune_gc_for_serving()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == SERVING_GC_GEN0_THRESHOLD
