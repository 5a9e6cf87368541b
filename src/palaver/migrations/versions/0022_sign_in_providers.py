"""Sign-in providers: identities at providers, the login record, organization choices

Revision ID: 0022_sign_in_providers
Revises: 0021_subscribers_index
Create Date: 2026-12-01 22:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0022_sign_in_providers"
down_revision: str | Sequence[str] | None = "0021_subscribers_index"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "realm", sa.Column("disabled_authentication_methods", sa.Text(), nullable=False, server_default="")
    )
    op.add_column(
        "realm", sa.Column("external_signup", sa.Boolean(), nullable=False, server_default=sa.true())
    )
    op.create_table(
        "external_identity",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("realm_id", sa.Integer(), sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
        sa.Column(
            "user_profile_id",
            sa.Integer(),
            sa.ForeignKey("user_profile.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("date_linked", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("realm_id", "provider", "subject", name="uq_external_identity_realm_id"),
    )
    op.create_index("ix_external_identity_user_profile_id", "external_identity", ["user_profile_id"])
    op.create_table(
        "login_record",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("realm_id", sa.Integer(), sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
        sa.Column(
            "user_profile_id",
            sa.Integer(),
            sa.ForeignKey("user_profile.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("channel", sa.String(16), nullable=False),
        sa.Column("ip_address", sa.String(64), nullable=False),
        sa.Column("user_agent", sa.String(255), nullable=False),
        sa.Column("timestamp", sa.DateTime(), nullable=False),
    )
    op.create_index("ix_login_record_realm_id", "login_record", ["realm_id"])
    op.create_index("ix_login_record_user_profile_id", "login_record", ["user_profile_id"])
    op.create_index("ix_login_record_timestamp", "login_record", ["timestamp"])


def downgrade() -> None:
    op.drop_table("login_record")
    op.drop_table("external_identity")
    # Plain DROP COLUMNs (SQLite 3.35+): a batch rebuild of realm would cascade-delete every
    # row that references it.
    op.drop_column("realm", "external_signup")
    op.drop_column("realm", "disabled_authentication_methods")
