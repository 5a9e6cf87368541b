"""What a provider's sync remembers per identity: the photo last made the avatar, and
whether the provider (not an administrator) deactivated the account

Revision ID: 0031_provider_sync
Revises: 0030_change_log
Create Date: 2026-12-02 01:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0031_provider_sync"
down_revision: str | Sequence[str] | None = "0030_change_log"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("external_identity", sa.Column("avatar_digest", sa.String(64), nullable=True))
    op.add_column(
        "external_identity",
        sa.Column("deactivated_by_provider", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    # Plain DROP COLUMNs (SQLite 3.35+), as a batch rebuild would reflect its neighbours.
    op.drop_column("external_identity", "deactivated_by_provider")
    op.drop_column("external_identity", "avatar_digest")
