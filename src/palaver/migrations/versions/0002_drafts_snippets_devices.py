"""drafts, saved snippets, client devices

Revision ID: 0002_drafts_snippets_devices
Revises: 0001
Create Date: 2026-11-21 18:04:37.727678
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002_drafts_snippets_devices"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "device",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("date_created", sa.DateTime(), nullable=False),
        sa.Column("push_key", sa.LargeBinary(), nullable=True),
        sa.Column("push_key_id", sa.BigInteger(), nullable=True),
        sa.Column("token_kind", sa.String(length=8), nullable=True),
        sa.Column("token_id", sa.String(length=16), nullable=True),
        sa.Column("bouncer_public_key", sa.Text(), nullable=True),
        sa.Column("encrypted_push_registration", sa.Text(), nullable=True),
        sa.Column("push_token_last_updated", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_device_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_device")),
    )
    with op.batch_alter_table("device", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_device_user_profile_id"), ["user_profile_id"], unique=False)

    op.create_table(
        "draft",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=8), nullable=False),
        sa.Column("to", sa.Text(), nullable=False),
        sa.Column("topic", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("last_edit_time", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_draft_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_draft")),
    )
    with op.batch_alter_table("draft", schema=None) as batch_op:
        batch_op.create_index(
            "ix_draft_user_profile_id_last_edit_time", ["user_profile_id", "last_edit_time"], unique=False
        )

    op.create_table(
        "saved_snippet",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=60), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("date_created", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_saved_snippet_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_saved_snippet")),
    )
    with op.batch_alter_table("saved_snippet", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_saved_snippet_user_profile_id"), ["user_profile_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("saved_snippet", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_saved_snippet_user_profile_id"))
    op.drop_table("saved_snippet")

    with op.batch_alter_table("draft", schema=None) as batch_op:
        batch_op.drop_index("ix_draft_user_profile_id_last_edit_time")
    op.drop_table("draft")

    with op.batch_alter_table("device", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_device_user_profile_id"))
    op.drop_table("device")
