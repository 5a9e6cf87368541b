"""media: uploaded images and their thumbnails

Revision ID: 0016_media_thumbnails
Revises: 0001
Create Date: 2026-11-25 08:30:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016_media_thumbnails"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = "0006_attachments"


def upgrade() -> None:
    op.create_table(
        "image_attachment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("attachment_id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("path_id", sa.String(length=255), nullable=False),
        sa.Column("original_width", sa.Integer(), nullable=False),
        sa.Column("original_height", sa.Integer(), nullable=False),
        sa.Column("frames", sa.Integer(), nullable=False),
        sa.Column("content_type", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("claimed_at", sa.DateTime(), nullable=True),
        sa.Column("thumbnails", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["attachment_id"],
            ["attachment.id"],
            name=op.f("fk_image_attachment_attachment_id_attachment"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_image_attachment_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_image_attachment")),
        sa.UniqueConstraint("attachment_id", name=op.f("uq_image_attachment_attachment_id")),
        sa.UniqueConstraint("path_id", name=op.f("uq_image_attachment_path_id")),
    )
    op.create_index(op.f("ix_image_attachment_status"), "image_attachment", ["status"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_image_attachment_status"), table_name="image_attachment")
    op.drop_table("image_attachment")
