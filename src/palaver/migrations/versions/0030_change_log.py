"""The change log: changes committed by one-off commands, for the serving process to apply

Without Redis, a command run beside the server (``palaver deactivate-user``, an import)
could not reach the server's realm-state cache, known credentials or event queues. It now
writes what changed and the events to deliver in ``change_log``, in the same transaction as
the change; the server follows the table. AUTOINCREMENT on SQLite: old rows are deleted,
and a follower's position must never see an ID again.

Revision ID: 0030_change_log
Revises: 0029_table_alignment_classes
Create Date: 2026-12-01 22:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0030_change_log"
down_revision: str | Sequence[str] | None = "0029_table_alignment_classes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "change_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_change_log")),
        sqlite_autoincrement=True,
    )


def downgrade() -> None:
    op.drop_table("change_log")
