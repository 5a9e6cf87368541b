"""Time helpers: the server stores naive UTC datetimes and speaks UNIX seconds."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def to_timestamp(value: datetime) -> int:
    return int(value.replace(tzinfo=UTC).timestamp())


def to_iso(value: datetime) -> str:
    if value.tzinfo is None:
        # The stored naive UTC: the same text as an aware copy would give, without making
        # one (register formats 10,000 of these).
        return value.isoformat() + "+00:00"
    return value.astimezone(UTC).isoformat()
