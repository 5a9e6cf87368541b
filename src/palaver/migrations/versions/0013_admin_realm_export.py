"""realm exports requested through the API

Revision ID: 0013_admin_realm_export
Revises: 0001
Create Date: 2026-11-25 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013_admin_realm_export"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "realm_export",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("acting_user_id", sa.Integer(), nullable=False),
        sa.Column("export_type", sa.Integer(), nullable=False),
        sa.Column("date_requested", sa.DateTime(), nullable=False),
        sa.Column("date_started", sa.DateTime(), nullable=True),
        sa.Column("date_succeeded", sa.DateTime(), nullable=True),
        sa.Column("date_failed", sa.DateTime(), nullable=True),
        sa.Column("date_deleted", sa.DateTime(), nullable=True),
        sa.Column("pending", sa.Boolean(), nullable=False),
        sa.Column("storage_key", sa.String(length=200), nullable=True),
        sa.Column("size_bytes", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_realm_export_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["acting_user_id"],
            ["user_profile.id"],
            name=op.f("fk_realm_export_acting_user_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_realm_export")),
    )
    op.create_index("ix_realm_export_pending", "realm_export", ["pending"])
    op.create_index(op.f("ix_realm_export_realm_id"), "realm_export", ["realm_id"])


def downgrade() -> None:
    op.drop_table("realm_export")
