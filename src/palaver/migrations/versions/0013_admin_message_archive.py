"""archive tables for message retention

Revision ID: 0013_admin_message_archive
Revises: 0001
Create Date: 2026-11-25 08:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_admin_message_archive"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "archive_transaction",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("archived_at", sa.DateTime(), nullable=False),
        sa.Column("restored_at", sa.DateTime(), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_archive_transaction_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_archive_transaction")),
    )
    op.create_index(
        op.f("ix_archive_transaction_archived_at"), "archive_transaction", ["archived_at"], unique=False
    )
    op.create_index(
        op.f("ix_archive_transaction_realm_id"), "archive_transaction", ["realm_id"], unique=False
    )
    op.create_table(
        "archived_attachment_message",
        sa.Column("attachment_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("message_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("archive_transaction_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["archive_transaction_id"],
            ["archive_transaction.id"],
            name=op.f("fk_archived_attachment_message_archive_transaction_id_archive_transaction"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "archive_transaction_id",
            "attachment_id",
            "message_id",
            name=op.f("pk_archived_attachment_message"),
        ),
    )
    op.create_table(
        "archived_message",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("realm_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("sender_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("recipient_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("subject", sa.String(length=60), autoincrement=False, nullable=False),
        sa.Column("content", sa.Text(), autoincrement=False, nullable=False),
        sa.Column("rendered_content", sa.Text(), autoincrement=False, nullable=True),
        sa.Column("rendered_content_version", sa.Integer(), autoincrement=False, nullable=True),
        sa.Column("date_sent", sa.DateTime(), autoincrement=False, nullable=False),
        sa.Column("last_edit_time", sa.DateTime(), autoincrement=False, nullable=True),
        sa.Column("last_moved_time", sa.DateTime(), autoincrement=False, nullable=True),
        sa.Column("edit_history", sa.Text(), autoincrement=False, nullable=True),
        sa.Column("has_attachment", sa.Boolean(), autoincrement=False, nullable=False),
        sa.Column("has_image", sa.Boolean(), autoincrement=False, nullable=False),
        sa.Column("has_link", sa.Boolean(), autoincrement=False, nullable=False),
        sa.Column("is_channel_message", sa.Boolean(), autoincrement=False, nullable=False),
        sa.Column("sending_client", sa.String(length=30), autoincrement=False, nullable=False),
        sa.Column("archive_transaction_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["archive_transaction_id"],
            ["archive_transaction.id"],
            name=op.f("fk_archived_message_archive_transaction_id_archive_transaction"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("archive_transaction_id", "id", name=op.f("pk_archived_message")),
    )
    op.create_table(
        "archived_reaction",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("user_profile_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("message_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("emoji_name", sa.Text(), autoincrement=False, nullable=False),
        sa.Column("emoji_code", sa.Text(), autoincrement=False, nullable=False),
        sa.Column("reaction_type", sa.String(length=30), autoincrement=False, nullable=False),
        sa.Column("archive_transaction_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["archive_transaction_id"],
            ["archive_transaction.id"],
            name=op.f("fk_archived_reaction_archive_transaction_id_archive_transaction"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("archive_transaction_id", "id", name=op.f("pk_archived_reaction")),
    )
    op.create_table(
        "archived_user_message",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("user_profile_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("message_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("flags", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("archive_transaction_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["archive_transaction_id"],
            ["archive_transaction.id"],
            name=op.f("fk_archived_user_message_archive_transaction_id_archive_transaction"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("archive_transaction_id", "id", name=op.f("pk_archived_user_message")),
    )


def downgrade() -> None:
    for table in (
        "archived_attachment_message",
        "archived_reaction",
        "archived_user_message",
        "archived_message",
        "archive_transaction",
    ):
        op.drop_table(table)
