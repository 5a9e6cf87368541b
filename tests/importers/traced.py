"""Peak traced memory of a piece of an import, independent of what ran before it."""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def traced_peak() -> Iterator[Callable[[], int]]:
    """Trace allocations; the yielded function reads the peak above the start.

    Python's full collection waits until a quarter as many objects as survived the last one
    are pending, so in a test worker that has run for a while (hundreds of thousands of
    long-lived objects) an import's cyclic garbage piled up for longer the longer the import
    ran, and a larger history peaked higher though it kept nothing. What is alive now is
    collected once and frozen (as tests/conftest.py freezes what collection left), so the
    collector runs as it would in a fresh ``palaver import-from`` process."""
    gc.collect()
    gc.freeze()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        yield lambda: tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
