"""One-time tokens of the desktop app's sign-in (desktop_flow_otp)

Revision ID: 0034_desktop_login_tokens
Revises: 0033_login_record_actor
Create Date: 2026-12-02 02:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0034_desktop_login_tokens"
down_revision: str | Sequence[str] | None = "0033_login_record_actor"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "desktop_login_token",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column(
            "user_profile_id",
            sa.Integer(),
            sa.ForeignKey("user_profile.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("token_hash", name="uq_desktop_login_token_token_hash"),
    )
    op.create_index("ix_desktop_login_token_user_profile_id", "desktop_login_token", ["user_profile_id"])
    op.create_index("ix_desktop_login_token_created", "desktop_login_token", ["created"])


def downgrade() -> None:
    op.drop_table("desktop_login_token")
