"""Archived messages: what message retention removed, restorable until purged.

Each archive table mirrors a table whose rows belong to a message (the message itself and
every table with a foreign key to it), with the same columns and IDs but no foreign
keys (the rows they pointed at may go), plus the archive transaction that moved the row.
A table gaining a foreign key to ``message`` needs its archive table here
(``tests/actions/test_retention.py`` checks).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, ForeignKey, Integer, PrimaryKeyConstraint, String, Table
from sqlalchemy.orm import Mapped, mapped_column

from palaver.models import attachments, messages, submessages  # noqa: F401  (their tables first)
from palaver.models.base import Base
from palaver.timeutil import utcnow


class ArchiveTransaction(Base):
    """One batch of messages moved to the archive."""

    __tablename__ = "archive_transaction"

    id: Mapped[int] = mapped_column(primary_key=True)
    realm_id: Mapped[int] = mapped_column(ForeignKey("realm.id", ondelete="CASCADE"), index=True)
    archived_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    restored_at: Mapped[datetime | None] = mapped_column(default=None)
    # "retention" (the background job) is the only kind so far.
    kind: Mapped[str] = mapped_column(String(16), default="retention")


def _archive_of(source: Table) -> Table:
    # SQLite may give a new message the ID of one archived earlier (it reuses the highest
    # IDs), so an ID can be archived twice: the archive batch is part of the key.
    columns = [Column(c.name, c.type, nullable=c.nullable, autoincrement=False) for c in source.columns]
    transaction = Column(
        "archive_transaction_id",
        Integer,
        ForeignKey("archive_transaction.id", ondelete="CASCADE"),
        nullable=False,
    )
    name = f"archived_{source.name}"
    key = PrimaryKeyConstraint(
        "archive_transaction_id", *source.primary_key.columns.keys(), name=f"pk_{name}"
    )
    return Table(name, Base.metadata, *columns, transaction, key)


# Source table -> its archive, parents first (the order rows are restored in).
ARCHIVE_TABLES: dict[str, Table] = {
    name: _archive_of(Base.metadata.tables[name])
    for name in ("message", "user_message", "reaction", "attachment_message", "submessage")
}

# Tables with rows of a message that are work in progress, not content: when the message is
# archived their rows go with it (ON DELETE CASCADE) and are not brought back on restore.
NOT_ARCHIVED = frozenset(
    {
        "service_bot_event",  # a bot's pending call about the message
        "missed_message_email",  # a notification email not yet sent
        "missed_message_address",  # the reply address of an email already sent
    }
)
