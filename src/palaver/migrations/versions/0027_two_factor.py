"""Two-factor sign-in: TOTP devices, recovery codes, remembered browsers, pending sign-ins

Revision ID: 0027_two_factor
Revises: 0026_sso_attempts
Create Date: 2026-12-01 22:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0027_two_factor"
down_revision: str | Sequence[str] | None = "0026_sso_attempts"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _user_column() -> sa.Column[int]:
    return sa.Column(
        "user_profile_id", sa.Integer(), sa.ForeignKey("user_profile.id", ondelete="CASCADE"), nullable=False
    )


def upgrade() -> None:
    op.add_column(
        "realm", sa.Column("require_two_factor", sa.Boolean(), nullable=False, server_default=sa.false())
    )
    op.create_table(
        "two_factor_device",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user_column(),
        sa.Column("secret", sa.String(64), nullable=False),
        sa.Column("confirmed", sa.Boolean(), nullable=False),
        sa.Column("last_used_step", sa.Integer(), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("user_profile_id", name="uq_two_factor_device_user_profile_id"),
    )
    op.create_table(
        "recovery_code",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user_column(),
        sa.Column("code_hash", sa.String(64), nullable=False),
    )
    op.create_index("ix_recovery_code_user_profile_id", "recovery_code", ["user_profile_id"])
    op.create_table(
        "trusted_browser",
        sa.Column("id", sa.Integer(), primary_key=True),
        _user_column(),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("expires", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("token_hash", name="uq_trusted_browser_token_hash"),
    )
    op.create_index("ix_trusted_browser_user_profile_id", "trusted_browser", ["user_profile_id"])
    op.create_table(
        "pending_login",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        _user_column(),
        sa.Column("method", sa.String(64), nullable=False),
        sa.Column("next_path", sa.String(2000), nullable=False),
        sa.Column("mobile_flow_otp", sa.String(64), nullable=True),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("token_hash", name="uq_pending_login_token_hash"),
    )
    op.create_index("ix_pending_login_user_profile_id", "pending_login", ["user_profile_id"])


def downgrade() -> None:
    for table in ("pending_login", "trusted_browser", "recovery_code", "two_factor_device"):
        op.drop_table(table)
    # A plain DROP COLUMN (SQLite 3.35+): a batch rebuild of realm would cascade-delete
    # every row that references it.
    op.drop_column("realm", "require_two_factor")
