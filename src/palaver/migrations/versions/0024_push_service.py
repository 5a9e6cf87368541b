"""Zulip's push notification service: the server's registration, organization UUIDs, and
devices' pending push tokens

Revision ID: 0024_push_service
Revises: 0023_name_keys
Create Date: 2026-12-01 21:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0024_push_service"
down_revision: str | Sequence[str] | None = "0023_name_keys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "push_service_server",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("url", sa.String(length=255), nullable=False),
        sa.Column("server_uuid", sa.String(length=36), nullable=False),
        sa.Column("server_key", sa.String(length=64), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=False),
        sa.Column("contact_email", sa.String(length=254), nullable=False),
        sa.Column("terms_accepted_at", sa.DateTime(), nullable=False),
        sa.Column("registered_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_push_service_server")),
    )
    op.create_table(
        "push_service_realm",
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("uuid", sa.String(length=36), nullable=False),
        sa.Column("uuid_owner_secret", sa.String(length=64), nullable=False),
        sa.Column("can_push", sa.Boolean(), nullable=True),
        sa.Column("expected_end_timestamp", sa.Integer(), nullable=True),
        sa.Column("last_synced", sa.DateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_push_service_realm_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("realm_id", name=op.f("pk_push_service_realm")),
        sa.UniqueConstraint("uuid", name=op.f("uq_push_service_realm_uuid")),
    )
    # Plain ADD COLUMN (nullable): no table rebuild, which would reflect user_profile too.
    op.add_column("device", sa.Column("pending_token_id", sa.String(length=16), nullable=True))
    op.add_column("device", sa.Column("push_registration_error_code", sa.String(length=64), nullable=True))


def downgrade() -> None:
    op.drop_column("device", "push_registration_error_code")
    op.drop_column("device", "pending_token_id")
    op.drop_table("push_service_realm")
    op.drop_table("push_service_server")
