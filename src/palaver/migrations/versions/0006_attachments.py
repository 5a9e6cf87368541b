"""attachments and the messages linking them

Revision ID: 0006_attachments
Revises: 0003_messages
Create Date: 2026-11-28 10:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006_attachments"
down_revision: str | None = "0003_messages"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "attachment",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("path_id", sa.String(length=255), nullable=False),
        sa.Column("file_name", sa.Text(), nullable=False),
        sa.Column("content_type", sa.String(length=255), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("create_time", sa.DateTime(), nullable=False),
        sa.Column("url_secret", sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["user_profile.id"],
            name=op.f("fk_attachment_owner_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_attachment_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_attachment")),
        sa.UniqueConstraint("path_id", name=op.f("uq_attachment_path_id")),
    )
    op.create_index("ix_attachment_owner_id_id", "attachment", ["owner_id", "id"], unique=False)
    op.create_index(op.f("ix_attachment_realm_id"), "attachment", ["realm_id"], unique=False)
    op.create_table(
        "attachment_message",
        sa.Column("attachment_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["attachment_id"],
            ["attachment.id"],
            name=op.f("fk_attachment_message_attachment_id_attachment"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["message.id"],
            name=op.f("fk_attachment_message_message_id_message"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("attachment_id", "message_id", name=op.f("pk_attachment_message")),
    )
    op.create_index("ix_attachment_message_message_id", "attachment_message", ["message_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_attachment_message_message_id", table_name="attachment_message")
    op.drop_table("attachment_message")
    op.drop_index(op.f("ix_attachment_realm_id"), table_name="attachment")
    op.drop_index("ix_attachment_owner_id_id", table_name="attachment")
    op.drop_table("attachment")
