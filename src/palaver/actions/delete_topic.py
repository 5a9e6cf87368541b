"""Deleting a whole topic, newest messages first, in batches of their own transactions.

A large topic would hold one transaction (and, on SQLite, the write lock) for too long, so
each batch commits on its own and the caller stops after a time budget; the client repeats
the request while the response says ``complete: false``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import ColumnElement, delete, func, literal, select
from sqlalchemy.orm import Session

from palaver.cache import realm_settings
from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.channels import metadata_access_user_ids, subscriber_ids
from palaver.lib.exceptions import JsonableError
from palaver.lib.group_settings import groups_containing_user
from palaver.models.channels import Stream
from palaver.models.messages import Message, Reaction, UserMessage
from palaver.models.requester import Requester

BATCH_SIZE = 1000
# Comfortably below common proxy timeouts (60 s), so the response gets back to the client.
TIME_BUDGET_SECONDS = 20.0


def check_can_delete_topic(session: Session, user: Requester, stream: Stream) -> None:
    groups = groups_containing_user(session, user.user_id)
    if (
        realm_settings(session, user.realm_id).can_delete_any_message_group in groups
        or stream.can_delete_any_message_group in groups
    ):
        return
    raise JsonableError("Must be an organization administrator")


def _topic_condition(stream: Stream, topic: str) -> ColumnElement[bool]:
    return (Message.recipient_id == stream.recipient_id) & (
        func.lower(Message.subject) == func.lower(literal(topic))
    )


def _delete_batch(session: Session, stream_id: int, topic: str, batch_size: int) -> bool:
    """Delete the newest ``batch_size`` messages of the topic; False when none were left."""
    with transaction(session) as tx:
        stream = session.get(Stream, stream_id)
        if stream is None:
            return False
        ids = list(
            session.scalars(
                select(Message.id)
                .where(_topic_condition(stream, topic))
                .order_by(Message.id.desc())
                .limit(batch_size)
            )
        )
        if not ids:
            return False
        audience = set(
            session.scalars(select(UserMessage.user_profile_id).where(UserMessage.message_id.in_(ids)))
        ) | subscriber_ids(session, stream)
        stored_topic = session.scalar(select(Message.subject).where(Message.id == ids[0])) or topic
        session.execute(delete(Reaction).where(Reaction.message_id.in_(ids)))
        session.execute(delete(UserMessage).where(UserMessage.message_id.in_(ids)))
        session.execute(delete(Message).where(Message.id.in_(ids)))
        ids.sort()
        event = ev.DeleteMessage(
            message_type="stream",
            message_ids=ids,
            message_id=ids[0] if len(ids) == 1 else None,
            stream_id=stream.id,
            topic=stored_topic,
        )
        tx.send_event(stream.realm_id, event, audience)
        _update_first_message_id(tx, session, stream, ids[0])
        return True


def _update_first_message_id(tx: Tx, session: Session, stream: Stream, oldest_deleted: int) -> None:
    if stream.first_message_id is None or oldest_deleted > stream.first_message_id:
        return
    first = session.scalar(select(func.min(Message.id)).where(Message.recipient_id == stream.recipient_id))
    stream.first_message_id = first
    session.flush()
    event = ev.StreamUpdate(stream_id=stream.id, name=stream.name, property="first_message_id", value=first)
    tx.send_event(stream.realm_id, event, metadata_access_user_ids(session, stream))


def do_delete_topic(
    session: Session,
    user: Requester,
    stream: Stream,
    topic: str,
    *,
    batch_size: int = BATCH_SIZE,
    time_budget: float = TIME_BUDGET_SECONDS,
    clock: Callable[[], float] = time.monotonic,
) -> bool:
    """Delete the topic's messages; True when none are left, False when time ran out first."""
    check_can_delete_topic(session, user, stream)
    deadline = clock() + time_budget
    while _delete_batch(session, stream.id, topic, batch_size):
        if clock() >= deadline:
            return not session.scalar(select(Message.id).where(_topic_condition(stream, topic)).limit(1))
    return True
