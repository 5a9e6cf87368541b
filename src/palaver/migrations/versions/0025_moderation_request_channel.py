"""The realm's moderation request channel, where message reports go

``realm.moderation_request_channel_id`` names a private channel (no foreign key, like the
announcement channels); NULL turns message reporting off.

Revision ID: 0025_moderation_request_channel
Revises: 0024_push_service
Create Date: 2026-12-01 22:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0025_moderation_request_channel"
down_revision: str | Sequence[str] | None = "0024_push_service"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# Plain ADD/DROP COLUMN, never batch mode: rebuilding the realm table on SQLite would drop it,
# and with foreign keys on that deletes every row referencing a realm.
def upgrade() -> None:
    op.add_column("realm", sa.Column("moderation_request_channel_id", sa.Integer(), nullable=True))


def downgrade() -> None:
    op.drop_column("realm", "moderation_request_channel_id")
