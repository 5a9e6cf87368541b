"""web sessions

Revision ID: 0012_web_sessions
Revises: 0001
Create Date: 2026-11-25 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012_web_sessions"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "web_session",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("csrf_token", sa.String(length=64), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("last_seen", sa.DateTime(), nullable=False),
        sa.Column("expires", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_web_session_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_web_session")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_web_session_token_hash")),
    )
    op.create_index(op.f("ix_web_session_user_profile_id"), "web_session", ["user_profile_id"])
    op.create_index(op.f("ix_web_session_expires"), "web_session", ["expires"])


def downgrade() -> None:
    op.drop_index(op.f("ix_web_session_expires"), table_name="web_session")
    op.drop_index(op.f("ix_web_session_user_profile_id"), table_name="web_session")
    op.drop_table("web_session")
