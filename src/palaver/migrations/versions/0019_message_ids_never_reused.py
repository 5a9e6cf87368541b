"""message IDs are never reused on SQLite (AUTOINCREMENT)

SQLite gives a new row the largest ID in the table plus one, so deleting the newest message
handed its ID to the next one: clients that saw it deleted then saw a different message
under the same ID, and a newest message archived by a retention policy could not be
restored once its ID was taken. With AUTOINCREMENT, SQLite remembers the largest ID ever
used (``sqlite_sequence``), as PostgreSQL's sequence always did. It starts here from the
largest ID in the table or in the archive; a deleted message leaves no row, so the IDs of
messages deleted before this migration cannot be known.

SQLite cannot add AUTOINCREMENT to a table: the table is rebuilt, following SQLite's own
procedure for schema changes (https://www.sqlite.org/lang_altertable.html#otheralter).
Foreign keys must be off while the old table is dropped, or the drop's implicit DELETE
would cascade to every row that references a message; that pragma has no effect inside a
transaction, so this migration ends Alembic's transaction, rebuilds in its own, checks the
foreign keys and begins a new one for the migrations after it.

Revision ID: 0019_message_ids_never_reused
Revises: 0007_message_search, 0018_archived_submessage
Create Date: 2026-11-28 06:40:00.000000
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from alembic import op

revision: str = "0019_message_ids_never_reused"
down_revision: str | Sequence[str] | None = ("0007_message_search", "0018_archived_submessage")
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_PRIMARY_KEY = re.compile(r",\s*CONSTRAINT pk_message PRIMARY KEY \(id\)")
_ID_COLUMN = re.compile(r"\(\s*id INTEGER NOT NULL,")
# The name may be quoted: SQLite writes it so when a table is renamed.
_TABLE_NAME = re.compile(r'CREATE TABLE\s+(["`]?)message\1\s*\(')


def _autoincrement_schema(create_sql: str) -> str:
    """The table's CREATE statement with ``id`` as an AUTOINCREMENT primary key."""
    rewritten, keys = _PRIMARY_KEY.subn("", create_sql)
    rewritten, columns = _ID_COLUMN.subn("(\n\tid INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,", rewritten)
    rewritten, names = _TABLE_NAME.subn("CREATE TABLE message_rebuilt (", rewritten)
    if (keys, columns, names) != (1, 1, 1):
        raise RuntimeError(f"unexpected schema of the message table: {create_sql}")
    return rewritten


def _rebuild(raw: Any) -> None:
    """Rebuild ``message`` on the driver connection ``raw``, outside any transaction."""
    (create_sql,) = raw.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'message'"
    ).fetchone()
    if "AUTOINCREMENT" in create_sql.upper():
        return
    # Indexes and triggers go with the table; they are made again from their own statements.
    dependents = [
        sql
        for (sql,) in raw.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = 'message' AND type IN ('index', 'trigger')"
            " AND sql IS NOT NULL"
        )
    ]
    raw.execute("PRAGMA foreign_keys = OFF")
    try:
        raw.execute("BEGIN IMMEDIATE")
        try:
            raw.execute(_autoincrement_schema(create_sql))
            raw.execute("INSERT INTO message_rebuilt SELECT * FROM message")
            raw.execute("DROP TABLE message")
            raw.execute("ALTER TABLE message_rebuilt RENAME TO message")
            for sql in dependents:
                raw.execute(sql)
            # IDs already given out stay given out: deleted messages live on in the archive.
            # (The copy above made the table's row; the rename renamed it.)
            (archived,) = raw.execute("SELECT coalesce(max(id), 0) FROM archived_message").fetchone()
            raw.execute("DELETE FROM sqlite_sequence WHERE name = 'message'")
            raw.execute(
                "INSERT INTO sqlite_sequence (name, seq)"
                " SELECT 'message', max(coalesce(max(id), 0), ?) FROM message",
                (archived,),
            )
            problems = raw.execute("PRAGMA foreign_key_check").fetchall()
            if problems:
                raise RuntimeError(f"foreign keys broken by rebuilding message: {problems[:5]}")
            raw.execute("COMMIT")
        except BaseException:
            # Only if BEGIN got that far: a failed BEGIN's error is the one to report.
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise
    finally:
        raw.execute("PRAGMA foreign_keys = ON")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        # PostgreSQL's sequences never hand out an ID twice.
        return
    raw = bind.connection.driver_connection
    assert raw is not None
    # End Alembic's transaction (the migrations before this one are kept), work in one of
    # our own, then open a transaction again for Alembic to record this revision and commit.
    raw.execute("COMMIT")
    try:
        _rebuild(raw)
    finally:
        raw.execute("BEGIN")


def downgrade() -> None:
    # AUTOINCREMENT only stops reuse; a table with it serves the older code as well.
    pass
