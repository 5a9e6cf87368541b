"""scheduled messages and reminders

Revision ID: 0009_scheduled_messages
Revises: 0003_messages
Create Date: 2026-12-02 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009_scheduled_messages"
down_revision: str | None = "0003_messages"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scheduled_message",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("sender_id", sa.Integer(), nullable=False),
        sa.Column("delivery_type", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=8), nullable=False),
        sa.Column("stream_id", sa.Integer(), nullable=True),
        sa.Column("to", sa.Text(), nullable=False),
        sa.Column("topic", sa.String(length=60), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("rendered_content", sa.Text(), nullable=False),
        sa.Column("scheduled_timestamp", sa.DateTime(), nullable=False),
        sa.Column("read_by_sender", sa.Boolean(), nullable=True),
        sa.Column("sending_client", sa.String(length=30), nullable=False),
        sa.Column("delivered", sa.Boolean(), nullable=False),
        sa.Column("delivered_message_id", sa.Integer(), nullable=True),
        sa.Column("failed", sa.Boolean(), nullable=False),
        sa.Column("failure_message", sa.Text(), nullable=True),
        sa.Column("reminder_target_message_id", sa.Integer(), nullable=True),
        sa.Column("reminder_note", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_scheduled_message_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["sender_id"],
            ["user_profile.id"],
            name=op.f("fk_scheduled_message_sender_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduled_message")),
    )
    op.create_index(
        "ix_scheduled_message_pending",
        "scheduled_message",
        ["delivered", "failed", "scheduled_timestamp"],
    )
    op.create_index(
        "ix_scheduled_message_sender_id_delivery_type",
        "scheduled_message",
        ["sender_id", "delivery_type", "delivered"],
    )


def downgrade() -> None:
    op.drop_index("ix_scheduled_message_sender_id_delivery_type", table_name="scheduled_message")
    op.drop_index("ix_scheduled_message_pending", table_name="scheduled_message")
    op.drop_table("scheduled_message")
