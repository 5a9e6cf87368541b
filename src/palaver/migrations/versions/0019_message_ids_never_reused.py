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

from collections.abc import Sequence

from alembic import op

from palaver.migrate import give_autoincrement

revision: str = "0019_message_ids_never_reused"
down_revision: str | Sequence[str] | None = ("0007_message_search", "0018_archived_submessage")
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # IDs already given out stay given out: deleted messages live on in the archive.
    give_autoincrement(op.get_bind(), {"message": "archived_message"})


def downgrade() -> None:
    # AUTOINCREMENT only stops reuse; a table with it serves the older code as well.
    pass
