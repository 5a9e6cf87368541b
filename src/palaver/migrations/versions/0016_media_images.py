"""media: uploaded avatars, realm logos, preview settings

Revision ID: 0016_media_images
Revises: 0001
Create Date: 2026-11-25 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_media_images"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _realm_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("logo_source", sa.String(length=1), nullable=False, server_default="D"),
        sa.Column("logo_version", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("night_logo_source", sa.String(length=1), nullable=False, server_default="D"),
        sa.Column("night_logo_version", sa.Integer(), nullable=False, server_default="1"),
        sa.Column("inline_image_preview", sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column("inline_url_embed_preview", sa.Boolean(), nullable=False, server_default=sa.false()),
    ]


def upgrade() -> None:
    # Plain ADD COLUMN on both databases (no table rebuild), defaults filling existing rows.
    op.add_column("user_profile", sa.Column("avatar_hash", sa.String(length=40), nullable=True))
    for column in _realm_columns():
        op.add_column("realm", column)


def downgrade() -> None:
    with op.batch_alter_table("realm") as batch:
        for column in reversed(_realm_columns()):
            batch.drop_column(column.name)
    with op.batch_alter_table("user_profile") as batch:
        batch.drop_column("avatar_hash")
