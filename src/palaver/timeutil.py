"""Time helpers: the server stores naive UTC datetimes and speaks UNIX seconds."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def to_timestamp(value: datetime) -> int:
    return int(value.replace(tzinfo=UTC).timestamp())


def to_iso(value: datetime) -> str:
    return value.replace(tzinfo=UTC).isoformat()
