"""The sign-in audit log records administrators' changes too: who made each

Revision ID: 0033_login_record_actor
Revises: 0032_saml
Create Date: 2026-12-02 01:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0033_login_record_actor"
down_revision: str | Sequence[str] | None = "0032_saml"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("login_record", sa.Column("acting_user_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    # A plain DROP COLUMN (SQLite 3.35+), as a batch rebuild would reflect its neighbours.
    op.drop_column("login_record", "acting_user_id")
