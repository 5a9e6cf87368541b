"""archived submessages: widget data archived and restored with its message

Revision ID: 0018_archived_submessage
Revises: 0013_admin_message_archive, 0015_hooks
Create Date: 2026-11-25 09:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0018_archived_submessage"
down_revision: str | Sequence[str] | None = ("0013_admin_message_archive", "0015_hooks")
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "archived_submessage",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("message_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("sender_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("msg_type", sa.String(length=100), autoincrement=False, nullable=False),
        sa.Column("content", sa.Text(), autoincrement=False, nullable=False),
        sa.Column("archive_transaction_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["archive_transaction_id"],
            ["archive_transaction.id"],
            name=op.f("fk_archived_submessage_archive_transaction_id_archive_transaction"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("archive_transaction_id", "id", name=op.f("pk_archived_submessage")),
    )


def downgrade() -> None:
    op.drop_table("archived_submessage")
