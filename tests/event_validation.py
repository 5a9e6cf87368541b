"""Every event the suite's server publishes is validated against its typed model.

Actions build events as models (``palaver.events.types``), so a malformed field fails where
it is made; this checks the other half, what the bus actually carries: the published dict
must validate back into the model of its type and op (no model for it, a field the model
lost in ``to_dict``, an extra key are all failures). ``conftest.py`` adds ``listener`` to the
session's bus and loads this module as a plugin; a listener's exception would be swallowed
by the after-commit publish loop (it logs and goes on), so failures are collected here and
the test that caused them fails at teardown.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from palaver.events.types import validate_event

_failures: list[str] = []
_lock = threading.Lock()


def listener(realm_id: int, event: dict[str, Any], user_ids: Sequence[int]) -> None:
    """A bus listener: validate one published event, recording a failure."""
    try:
        validate_event(event)
    except (ValidationError, ValueError) as error:
        with _lock:
            _failures.append(f"{event.get('type')}/{event.get('op')}: {str(error)[:500]}")


def take_failures() -> list[str]:
    """The failures recorded since the last call, cleared."""
    with _lock:
        failures = list(_failures)
        _failures.clear()
    return failures


@pytest.fixture(autouse=True)
def _published_events_are_valid() -> Iterator[None]:
    take_failures()
    yield
    failures = take_failures()
    if failures:
        pytest.fail("published events that do not match their models:\n" + "\n".join(failures))
