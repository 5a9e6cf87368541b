"""Message retention: moving expired messages to the archive, restoring and purging it.

A batch of messages moves with every row that belongs to them (the tables of
``models.message_archive.ARCHIVE_TABLES``) in one transaction, which also tells the
clients that had the messages (``delete_message``, grouped by conversation). Restoring
moves rows back with their original IDs; purging deletes archives past their grace period.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Table, delete, func, insert, literal, select, update
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.channels import subscriber_ids_by_stream
from palaver.models import Realm
from palaver.models.attachments import Attachment
from palaver.models.channels import Stream
from palaver.models.message_archive import ARCHIVE_TABLES, ArchiveTransaction
from palaver.models.messages import Message, UserMessage

# Message IDs per delete_message event: clients handle lists, not unbounded ones.
EVENT_CHUNK = 1000


@dataclass
class Outcome:
    messages: int = 0
    transactions: int = 0


def _children(source: str) -> str:
    """The column of a message-owned table naming its message."""
    return "id" if source == "message" else "message_id"


def do_archive_batch(
    session: Session,
    realm: Realm,
    expired: ColumnElement[bool],
    now: datetime,
    batch_size: int,
    *,
    is_sqlite: bool,
) -> int:
    """Archive up to ``batch_size`` expired messages of the realm; how many were."""
    with transaction(session) as tx:
        query = select(Message.id).where(expired).order_by(Message.id).limit(batch_size)
        if not is_sqlite:
            # Several processes may run retention at once: each takes different rows.
            query = query.with_for_update(skip_locked=True)
        ids = list(session.scalars(query))
        if not ids:
            return 0
        archive = ArchiveTransaction(realm_id=realm.id, archived_at=now)
        session.add(archive)
        session.flush()
        _send_deletions(tx, session, realm.id, ids)
        for source, target in ARCHIVE_TABLES.items():
            _move(session, Message.metadata.tables[source], target, _children(source), ids, archive.id)
        # Children first: their rows go before the message they point at.
        for source in reversed(ARCHIVE_TABLES):
            table = Message.metadata.tables[source]
            session.execute(delete(table).where(table.c[_children(source)].in_(ids)))
    return len(ids)


def _move(session: Session, source: Table, target: Table, key: str, ids: list[int], archive_id: int) -> None:
    names = [c.name for c in source.columns]
    rows = select(*[source.c[n] for n in names], literal(archive_id)).where(source.c[key].in_(ids))
    session.execute(insert(target).from_select([*names, "archive_transaction_id"], rows))


def _send_deletions(tx: Tx, session: Session, realm_id: int, ids: list[int]) -> None:
    rows = session.execute(
        select(Message.id, Message.recipient_id, Message.subject, Message.is_channel_message).where(
            Message.id.in_(ids)
        )
    ).all()
    holders: dict[int, set[int]] = defaultdict(set)
    for message_id, user_id in session.execute(
        select(UserMessage.message_id, UserMessage.user_profile_id).where(UserMessage.message_id.in_(ids))
    ):
        holders[message_id].add(user_id)
    recipients = {r.recipient_id for r in rows if r.is_channel_message}
    stream_of = dict(
        session.execute(
            select(Stream.recipient_id, Stream.id).where(Stream.recipient_id.in_(recipients))
        ).all()
    )
    subscribers = subscriber_ids_by_stream(session, stream_of.values())
    groups: dict[tuple[int | None, str | None], list[int]] = defaultdict(list)
    for row in rows:
        stream_id = stream_of.get(row.recipient_id) if row.is_channel_message else None
        groups[(stream_id, row.subject if stream_id is not None else None)].append(row.id)
    for (stream_id, topic), message_ids in groups.items():
        for start in range(0, len(message_ids), EVENT_CHUNK):
            chunk = message_ids[start : start + EVENT_CHUNK]
            audience = set().union(*(holders[i] for i in chunk))
            if stream_id is not None:
                audience |= subscribers.get(stream_id, set())
            event = ev.DeleteMessage(
                message_type="stream" if stream_id is not None else "private",
                message_ids=chunk,
                message_id=chunk[0] if len(chunk) == 1 else None,
                stream_id=stream_id,
                topic=topic,
            )
            tx.send_event(realm_id, event, audience)


def do_restore_archive(session: Session, realm: Realm, since: datetime | None, now: datetime) -> Outcome:
    """Put archived messages of the realm back (those archived at or after ``since``).

    A message whose ID was taken again meanwhile (possible on SQLite, which may reuse
    the highest IDs) stays in the archive until purged; a file link whose file is gone
    is dropped.
    """
    outcome = Outcome()
    archived = ARCHIVE_TABLES["message"]
    with transaction(session):
        query = select(ArchiveTransaction.id).where(
            ArchiveTransaction.realm_id == realm.id, ArchiveTransaction.restored_at.is_(None)
        )
        if since is not None:
            query = query.where(ArchiveTransaction.archived_at >= since)
        archive_ids = list(session.scalars(query.order_by(ArchiveTransaction.id)))
        if not archive_ids:
            return outcome
        in_batches = archived.c.archive_transaction_id.in_(archive_ids)
        taken = list(
            session.scalars(select(archived.c.id).where(in_batches, archived.c.id.in_(select(Message.id))))
        )
        # An ID archived twice (reused in between) is ambiguous: both stay archived.
        twice = select(archived.c.id).where(in_batches).group_by(archived.c.id).having(func.count() > 1)
        taken += list(session.scalars(twice))
        restorable = select(archived.c.id).where(in_batches, archived.c.id.not_in(taken))
        for source, target in ARCHIVE_TABLES.items():
            table = Message.metadata.tables[source]
            # Rows owned by a message get new IDs (nothing refers to them; SQLite may
            # have reused the old ones); messages keep theirs, which clients know.
            names = [c.name for c in table.columns if source == "message" or c.name != "id"]
            key = target.c[_children(source)]
            rows = select(*[target.c[n] for n in names]).where(
                target.c.archive_transaction_id.in_(archive_ids), key.in_(restorable)
            )
            if source == "attachment_message":
                rows = rows.where(target.c.attachment_id.in_(select(Attachment.id)))
            if source == "message":
                outcome.messages = int(session.scalar(select(func.count()).select_from(rows.subquery())) or 0)
            session.execute(insert(table).from_select(names, rows))
        for source, target in reversed(ARCHIVE_TABLES.items()):
            key = target.c[_children(source)]
            session.execute(
                delete(target).where(target.c.archive_transaction_id.in_(archive_ids), key.not_in(taken))
            )
        session.execute(
            update(ArchiveTransaction).where(ArchiveTransaction.id.in_(archive_ids)).values(restored_at=now)
        )
        outcome.transactions = len(archive_ids)
    return outcome


def do_purge_archive(session: Session, older_than: datetime) -> int:
    """Delete archives made before ``older_than`` for good; how many batches went."""
    with transaction(session):
        old = list(
            session.scalars(select(ArchiveTransaction.id).where(ArchiveTransaction.archived_at < older_than))
        )
        for target in reversed(ARCHIVE_TABLES.values()):
            session.execute(delete(target).where(target.c.archive_transaction_id.in_(old)))
        session.execute(delete(ArchiveTransaction).where(ArchiveTransaction.id.in_(old)))
    return len(old)


def archive_cutoff(now: datetime, archive_retention_days: int) -> datetime:
    return now - timedelta(days=archive_retention_days)
