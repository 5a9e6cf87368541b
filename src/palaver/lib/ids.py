"""Row IDs as clients send them.

IDs are 32-bit integers in the database, but clients may send any integer. PostgreSQL
refuses to compare a 32-bit column with a larger value (the whole statement fails), so
an out-of-range ID must be treated as "no such row" before it reaches a query; then each
lookup answers with its own error ("Invalid channel ID", "Draft does not exist", ...).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from sqlalchemy.orm import Session

from palaver.models.base import MAX_ID

T = TypeVar("T")


def is_storable_id(value: int) -> bool:
    """Whether a row could have this ID."""
    return 0 < value <= MAX_ID


def id_in_text(text: str) -> int | None:
    """The ID a URL segment spells in ASCII digits, if a row could have it; else None.
    (``str.isdigit`` also admits digits such as "²", which ``int`` refuses.)"""
    if not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if is_storable_id(value) else None


def storable_ids(values: Iterable[int]) -> list[int]:
    """The IDs a row could have; the others can match nothing, so a lookup may drop them."""
    return [value for value in values if 0 < value <= MAX_ID]


def get_row(session: Session, model: type[T], row_id: int) -> T | None:
    """``session.get`` for an ID from a client: None when no row could have it."""
    return session.get(model, row_id) if is_storable_id(row_id) else None
