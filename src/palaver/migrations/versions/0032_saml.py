"""SAML 2.0 sign-in: assertions already accepted (replay), and the IdP sessions of browser sessions

Revision ID: 0032_saml
Revises: 0031_provider_sync
Create Date: 2026-12-02 01:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0032_saml"
down_revision: str | Sequence[str] | None = "0031_provider_sync"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "saml_assertion",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("assertion_key", sa.String(600), nullable=False),
        sa.Column("expires", sa.DateTime(), nullable=False),
        sa.UniqueConstraint("assertion_key", name="uq_saml_assertion_assertion_key"),
    )
    op.create_index("ix_saml_assertion_expires", "saml_assertion", ["expires"])
    op.create_table(
        "saml_session",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column(
            "web_session_id",
            sa.Integer(),
            sa.ForeignKey("web_session.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("provider", sa.String(64), nullable=False),
        sa.Column("name_id", sa.Text(), nullable=False),
        sa.Column("session_index", sa.String(255), nullable=False),
        sa.UniqueConstraint("web_session_id", name="uq_saml_session_web_session_id"),
    )


def downgrade() -> None:
    op.drop_table("saml_session")
    op.drop_table("saml_assertion")
