"""service bot events, embedded bot configuration, submessages

Revision ID: 0015_hooks
Revises: 0003_messages
Create Date: 2026-11-25 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015_hooks"
down_revision: str | None = "0003_messages"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "service_bot_event",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_profile_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(), nullable=False),
        sa.Column("claimed_until", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["bot_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_service_bot_event_bot_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["message.id"],
            name=op.f("fk_service_bot_event_message_id_message"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_service_bot_event")),
    )
    op.create_index("ix_service_bot_event_next_attempt_at", "service_bot_event", ["next_attempt_at"])
    op.create_index(op.f("ix_service_bot_event_message_id"), "service_bot_event", ["message_id"])
    op.create_table(
        "bot_config_data",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_profile_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=100), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["bot_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_bot_config_data_bot_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bot_config_data")),
        sa.UniqueConstraint("bot_profile_id", "key", name="uq_bot_config_data_bot_profile_id_key"),
    )
    op.create_table(
        "submessage",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("sender_id", sa.Integer(), nullable=False),
        sa.Column("msg_type", sa.String(length=100), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["message_id"], ["message.id"], name=op.f("fk_submessage_message_id_message"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["sender_id"],
            ["user_profile.id"],
            name=op.f("fk_submessage_sender_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_submessage")),
    )
    op.create_index(op.f("ix_submessage_message_id"), "submessage", ["message_id"])


def downgrade() -> None:
    op.drop_table("submessage")
    op.drop_table("bot_config_data")
    op.drop_index("ix_service_bot_event_next_attempt_at", table_name="service_bot_event")
    op.drop_table("service_bot_event")
