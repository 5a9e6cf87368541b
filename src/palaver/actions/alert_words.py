"""Adding and removing a user's alert words; their clients get the whole new list."""

from __future__ import annotations

from sqlalchemy import delete, func
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.alert_words import clean_alert_words, user_alert_words
from palaver.models.alert_words import AlertWord
from palaver.models.requester import Requester


def do_add_alert_words(session: Session, user: Requester, words: list[str]) -> list[str]:
    with transaction(session) as tx:
        existing = {w.lower() for w in user_alert_words(session, user.user_id)}
        # Words differ only beyond case; of several spellings in one request the last wins.
        new: dict[str, str] = {}
        for word in clean_alert_words(words):
            if word.lower() not in existing:
                new[word.lower()] = word
        session.add_all(
            AlertWord(realm_id=user.realm_id, user_profile_id=user.user_id, word=w) for w in new.values()
        )
        session.flush()
        result = user_alert_words(session, user.user_id)
        tx.send_event(user.realm_id, ev.AlertWords(alert_words=result), [user.user_id])
    return result


def do_remove_alert_words(session: Session, user: Requester, words: list[str]) -> list[str]:
    with transaction(session) as tx:
        lowered = {w.lower() for w in clean_alert_words(words)}
        if lowered:
            session.execute(
                delete(AlertWord).where(
                    AlertWord.user_profile_id == user.user_id, func.lower(AlertWord.word).in_(lowered)
                )
            )
        result = user_alert_words(session, user.user_id)
        tx.send_event(user.realm_id, ev.AlertWords(alert_words=result), [user.user_id])
    return result
