"""Writes to a bot's storage. Only the bot itself sees its storage, so no events are sent."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.lib.bot_storage import STORAGE_SIZE_LIMIT, check_is_bot, check_key, storage_size
from palaver.lib.exceptions import JsonableError
from palaver.models.bot_storage import BotStorageData
from palaver.models.requester import Requester


def do_set_bot_storage(session: Session, bot: Requester, entries: dict[str, str]) -> None:
    check_is_bot(bot)
    for key in entries:
        check_key(key)
    try:
        _set_entries(session, bot, entries)
    except IntegrityError:
        # A concurrent request of the same bot inserted one of the keys first; this time
        # the key exists and is updated.
        _set_entries(session, bot, entries)


def _set_entries(session: Session, bot: Requester, entries: dict[str, str]) -> None:
    with transaction(session):
        replaced = storage_size(session, bot.user_id, entries)
        new_size = (
            storage_size(session, bot.user_id) - replaced + sum(len(k) + len(v) for k, v in entries.items())
        )
        if new_size > STORAGE_SIZE_LIMIT:
            raise JsonableError(
                f"Request exceeds storage limit by {new_size - STORAGE_SIZE_LIMIT} characters. "
                f"The limit is {STORAGE_SIZE_LIMIT} characters."
            )
        existing = {
            row.key: row
            for row in session.scalars(
                select(BotStorageData).where(
                    BotStorageData.bot_profile_id == bot.user_id, BotStorageData.key.in_(list(entries))
                )
            )
        }
        for key, value in entries.items():
            if key in existing:
                existing[key].value = value
            else:
                session.add(BotStorageData(bot_profile_id=bot.user_id, key=key, value=value))


def do_remove_bot_storage(session: Session, bot: Requester, keys: list[str] | None) -> None:
    """Remove the given keys (all of them must exist), or everything when ``keys`` is None."""
    check_is_bot(bot)
    with transaction(session):
        query = delete(BotStorageData).where(BotStorageData.bot_profile_id == bot.user_id)
        if keys is not None:
            for key in keys:
                check_key(key)
            present = set(
                session.scalars(
                    select(BotStorageData.key).where(
                        BotStorageData.bot_profile_id == bot.user_id, BotStorageData.key.in_(keys)
                    )
                )
            )
            if present != set(keys):
                raise JsonableError("Key does not exist.")
            query = query.where(BotStorageData.key.in_(keys))
        session.execute(query)
