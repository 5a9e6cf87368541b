"""A channel's subscribers are read from the index alone

The index on ``subscription (recipient_id, active)`` found a channel's rows, and each row's
user was then read from the table. Every cached subscriber list (a send's recipients, the
/register channel list: ~100,000 rows in an organization of 10,000 users) asks for the user,
so the index now carries it: ``(recipient_id, active, user_profile_id)``, which serves every
query the old one served. Reading a large organization's subscriptions took half as long.

Revision ID: 0021_subscribers_index
Revises: 0020_ids_never_reused
Create Date: 2026-11-28 22:55:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0021_subscribers_index"
down_revision: str | Sequence[str] | None = "0020_ids_never_reused"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_subscription_recipient_active_user", "subscription", ["recipient_id", "active", "user_profile_id"]
    )
    op.drop_index("ix_subscription_recipient_active", table_name="subscription")


def downgrade() -> None:
    op.create_index("ix_subscription_recipient_active", "subscription", ["recipient_id", "active"])
    op.drop_index("ix_subscription_recipient_active_user", table_name="subscription")
