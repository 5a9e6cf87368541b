"""full-text search over message content and topic

Revision ID: 0007_message_search
Revises: 0003_messages
Create Date: 2026-11-23 10:02:41.000000

SQLite gets an external-content FTS5 table kept in sync by triggers (the text lives once,
in ``message``); PostgreSQL gets a GIN index over the same tsvector expression that
``lib/narrow.py`` searches with, so the planner can use it. Neither is expressible as a
SQLAlchemy model, hence the raw SQL per dialect.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007_message_search"
down_revision: str | None = "0003_messages"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_SQLITE_UP = (
    # porter: "messages" finds "message", as PostgreSQL's english configuration does.
    """CREATE VIRTUAL TABLE message_fts USING fts5(
        subject, content, content='message', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER message_fts_insert AFTER INSERT ON message BEGIN
        INSERT INTO message_fts(rowid, subject, content) VALUES (new.id, new.subject, new.content);
    END""",
    """CREATE TRIGGER message_fts_delete AFTER DELETE ON message BEGIN
        INSERT INTO message_fts(message_fts, rowid, subject, content)
        VALUES ('delete', old.id, old.subject, old.content);
    END""",
    """CREATE TRIGGER message_fts_update AFTER UPDATE OF subject, content ON message BEGIN
        INSERT INTO message_fts(message_fts, rowid, subject, content)
        VALUES ('delete', old.id, old.subject, old.content);
        INSERT INTO message_fts(rowid, subject, content) VALUES (new.id, new.subject, new.content);
    END""",
    "INSERT INTO message_fts(message_fts) VALUES ('rebuild')",
)
_SQLITE_DOWN = (
    "DROP TRIGGER IF EXISTS message_fts_update",
    "DROP TRIGGER IF EXISTS message_fts_delete",
    "DROP TRIGGER IF EXISTS message_fts_insert",
    "DROP TABLE IF EXISTS message_fts",
)
# Must stay textually the expression lib/narrow.py builds, or the index is not used.
_POSTGRES_UP = (
    "CREATE INDEX ix_message_search ON message USING gin "
    "(to_tsvector('english'::regconfig, (subject || ' ') || content))",
)
_POSTGRES_DOWN = ("DROP INDEX IF EXISTS ix_message_search",)


def _run(statements: Sequence[str]) -> None:
    for statement in statements:
        op.execute(statement)


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        _run(_SQLITE_UP)
    elif dialect == "postgresql":
        _run(_POSTGRES_UP)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        _run(_SQLITE_DOWN)
    elif dialect == "postgresql":
        _run(_POSTGRES_DOWN)
