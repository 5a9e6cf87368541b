"""Sign-ins begun at an OpenID Connect or OAuth provider, awaiting its callback

Revision ID: 0026_sso_attempts
Revises: 0025_moderation_request_channel
Create Date: 2026-12-01 22:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0026_sso_attempts"
down_revision: str | Sequence[str] | None = "0025_moderation_request_channel"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "sso_attempt",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("state_hash", sa.String(64), nullable=False),
        sa.Column("browser_hash", sa.String(64), nullable=False),
        sa.Column("realm_id", sa.Integer(), sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("nonce", sa.String(128), nullable=False),
        sa.Column("code_verifier", sa.String(128), nullable=False),
        sa.Column("next_path", sa.String(2000), nullable=False),
        sa.Column("mobile_flow_otp", sa.String(64), nullable=True),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("state_hash", name="uq_sso_attempt_state_hash"),
    )
    op.create_index("ix_sso_attempt_realm_id", "sso_attempt", ["realm_id"])
    op.create_index("ix_sso_attempt_created", "sso_attempt", ["created"])


def downgrade() -> None:
    op.drop_table("sso_attempt")
