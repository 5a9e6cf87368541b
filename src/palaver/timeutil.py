"""Time helpers: the server stores naive UTC datetimes and speaks UNIX seconds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

# Where a component reads "now": a ``clock`` argument defaulting to ``utcnow``, so tests pass
# one they move forward instead of sleeping (workers, web sessions, event queues).
Clock = Callable[[], datetime]

_EPOCH = datetime(1970, 1, 1)


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def to_timestamp(value: datetime) -> int:
    """Whole UNIX seconds (truncated), reading a naive value as UTC as the database stores it.

    Subtracting the epoch costs a fifth of ``replace(tzinfo=UTC).timestamp()``, and GET
    /messages converts a timestamp or more per message.
    """
    if value.tzinfo is not None:
        value = value.replace(tzinfo=None)
    return int((value - _EPOCH).total_seconds())


def epoch_seconds(value: datetime) -> float:
    """A naive-UTC datetime as UNIX seconds, keeping the fraction (``to_timestamp`` drops it)."""
    return (value - _EPOCH).total_seconds()


def to_iso(value: datetime) -> str:
    if value.tzinfo is None:
        # The stored naive UTC: the same text as an aware copy would give, without making
        # one (register formats 10,000 of these).
        return value.isoformat() + "+00:00"
    return value.astimezone(UTC).isoformat()
