"""presence, presence sequence and user status

Revision ID: 0008_presence_status
Revises: 0001
Create Date: 2026-12-01 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_presence_status"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "user_presence",
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("last_connected_time", sa.DateTime(), nullable=False),
        sa.Column("last_active_time", sa.DateTime(), nullable=True),
        sa.Column("last_update_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_user_presence_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_user_presence_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("user_profile_id", name=op.f("pk_user_presence")),
    )
    op.create_index(
        "ix_user_presence_realm_id_last_update_id", "user_presence", ["realm_id", "last_update_id"]
    )
    op.create_table(
        "presence_sequence",
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("last_update_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_presence_sequence_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("realm_id", name=op.f("pk_presence_sequence")),
    )
    op.create_table(
        "user_status",
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("status_text", sa.String(length=60), nullable=False),
        sa.Column("emoji_name", sa.String(length=100), nullable=False),
        sa.Column("emoji_code", sa.String(length=100), nullable=False),
        sa.Column("reaction_type", sa.String(length=30), nullable=False),
        sa.Column("timestamp", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_user_status_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_profile_id", name=op.f("pk_user_status")),
    )


def downgrade() -> None:
    op.drop_table("user_status")
    op.drop_table("presence_sequence")
    op.drop_index("ix_user_presence_realm_id_last_update_id", table_name="user_presence")
    op.drop_table("user_presence")
