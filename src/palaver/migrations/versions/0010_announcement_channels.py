"""realm: channels for new-channel, new-user and server-update announcements

Revision ID: 0010_announcement_channels
Revises: 0005_realm_admin_objects
Create Date: 2026-12-10 10:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_announcement_channels"
down_revision: str | Sequence[str] | None = "0005_realm_admin_objects"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = (
    "new_stream_announcements_stream_id",
    "signup_announcements_stream_id",
    "zulip_update_announcements_stream_id",
)


# Plain ADD/DROP COLUMN, never batch mode: rebuilding the realm table on SQLite would drop it,
# and with foreign keys on that deletes every row referencing a realm.
def upgrade() -> None:
    for name in _COLUMNS:
        op.add_column("realm", sa.Column(name, sa.Integer(), nullable=True))


def downgrade() -> None:
    for name in reversed(_COLUMNS):
        op.drop_column("realm", name)
