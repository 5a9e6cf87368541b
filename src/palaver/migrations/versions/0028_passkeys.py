"""Passkeys (WebAuthn credentials) and the challenges of their ceremonies

Revision ID: 0028_passkeys
Revises: 0027_two_factor
Create Date: 2026-12-01 22:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0028_passkeys"
down_revision: str | Sequence[str] | None = "0027_two_factor"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "passkey",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "user_profile_id",
            sa.Integer(),
            sa.ForeignKey("user_profile.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("credential_id", sa.String(1400), nullable=False),
        sa.Column("public_key", sa.Text(), nullable=False),
        sa.Column("sign_count", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("last_used", sa.DateTime(), nullable=True),
        sa.UniqueConstraint("credential_id", name="uq_passkey_credential_id"),
    )
    op.create_index("ix_passkey_user_profile_id", "passkey", ["user_profile_id"])
    op.create_table(
        "webauthn_challenge",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("realm_id", sa.Integer(), sa.ForeignKey("realm.id", ondelete="CASCADE"), nullable=False),
        sa.Column(
            "user_profile_id",
            sa.Integer(),
            sa.ForeignKey("user_profile.id", ondelete="CASCADE"),
            nullable=True,
        ),
        sa.Column("purpose", sa.String(16), nullable=False),
        sa.Column("challenge", sa.String(200), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("token_hash", name="uq_webauthn_challenge_token_hash"),
    )
    op.create_index("ix_webauthn_challenge_realm_id", "webauthn_challenge", ["realm_id"])
    op.create_index("ix_webauthn_challenge_user_profile_id", "webauthn_challenge", ["user_profile_id"])


def downgrade() -> None:
    op.drop_table("webauthn_challenge")
    op.drop_table("passkey")
