"""Bot storage reads and limits.

Each bot keeps string keys mapped to string values. As in Zulip, the limit is on the
total size: the characters of all keys and values of one bot together.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.models.bot_storage import BotStorageData
from palaver.models.requester import Requester
from palaver.models.users import UserProfile

# Zulip's USER_STATE_SIZE_LIMIT.
STORAGE_SIZE_LIMIT = 10_000_000
# Keys are indexed, so each is bounded (in characters) to keep the index entry small.
MAX_KEY_LENGTH = 200


def check_is_bot(user: UserProfile | Requester) -> None:
    if not user.is_bot:
        raise JsonableError("This endpoint is only available to bots.")


def check_key(key: str) -> None:
    if len(key) > MAX_KEY_LENGTH:
        raise JsonableError(f"Key is too long (limit: {MAX_KEY_LENGTH} characters)")


def storage_size(session: Session, bot_id: int, keys: Iterable[str] | None = None) -> int:
    """Characters used by the bot's entries (or by those of ``keys``)."""
    query = select(
        func.coalesce(func.sum(func.length(BotStorageData.key) + func.length(BotStorageData.value)), 0)
    )
    query = query.where(BotStorageData.bot_profile_id == bot_id)
    if keys is not None:
        query = query.where(BotStorageData.key.in_(list(keys)))
    return int(session.scalar(query) or 0)


def get_storage(session: Session, bot_id: int, keys: list[str] | None) -> dict[str, str]:
    query = select(BotStorageData).where(BotStorageData.bot_profile_id == bot_id)
    if keys is not None:
        for key in keys:
            check_key(key)
        query = query.where(BotStorageData.key.in_(keys))
    found = {row.key: row.value for row in session.scalars(query.order_by(BotStorageData.key))}
    if keys is None:
        return found
    missing = [k for k in keys if k not in found]
    if missing:
        raise JsonableError("Key does not exist.")
    return {k: found[k] for k in keys}
