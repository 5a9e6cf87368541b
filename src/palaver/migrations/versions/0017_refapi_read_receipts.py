"""realm.enable_read_receipts

Revision ID: 0017_refapi_read_receipts
Revises: 0001
Create Date: 2026-11-25 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_refapi_read_receipts"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain ADD COLUMN: rebuilding realm (batch mode) on SQLite would cascade deletes.
    op.add_column(
        "realm", sa.Column("enable_read_receipts", sa.Boolean(), nullable=False, server_default=sa.true())
    )


def downgrade() -> None:
    op.drop_column("realm", "enable_read_receipts")
