"""Alert words: reading a user's words, and finding whose words a message contains."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.cache import realm_alert_words
from palaver.models.alert_words import AlertWord

# A match must stand on its own: preceded by one of these (or the start of the message) and
# followed by one of those (or its end), so "cat" alerts in "(cat)" but not in "concatenate".
_ALLOWED_BEFORE = frozenset(" \n(\".,';[*`>")
_ALLOWED_AFTER = frozenset(" \n)\"?:.,';]!*`")


def user_alert_words(session: Session, user_id: int) -> list[str]:
    return list(
        session.scalars(
            select(AlertWord.word).where(AlertWord.user_profile_id == user_id).order_by(AlertWord.id)
        )
    )


def clean_alert_words(words: Iterable[str]) -> list[str]:
    """Words without surrounding blanks; blank ones mean nothing and are dropped."""
    return [w.strip() for w in words if w.strip()]


def _contains_word(content: str, word: str) -> bool:
    start = content.find(word)
    while start != -1:
        end = start + len(word)
        if (start == 0 or content[start - 1] in _ALLOWED_BEFORE) and (
            end == len(content) or content[end] in _ALLOWED_AFTER
        ):
            return True
        start = content.find(word, start + 1)
    return False


def user_ids_with_alert_words_in(
    session: Session, realm_id: int, user_ids: Iterable[int], content: str
) -> set[int]:
    """Those of ``user_ids`` with an alert word in the message's Markdown source (any case)."""
    ids = set(user_ids)
    if not ids or not content:
        return set()
    words_by_user = realm_alert_words(session, realm_id)
    if not words_by_user:
        return set()
    lowered = content.lower()
    return {
        user_id
        for user_id in ids
        if (words := words_by_user.get(user_id)) and any(_contains_word(lowered, w) for w in words)
    }
