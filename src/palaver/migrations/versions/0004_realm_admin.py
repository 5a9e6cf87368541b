"""alert words, muted users, user topics; merges the drafts and messages branches

Revision ID: 0004_realm_admin
Revises: 0002_drafts_snippets_devices, 0003_messages
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004_realm_admin"
down_revision: str | Sequence[str] | None = ("0002_drafts_snippets_devices", "0003_messages")
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "alert_word",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("word", sa.String(length=100), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_alert_word_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_alert_word_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alert_word")),
        sa.UniqueConstraint("user_profile_id", "word", name="uq_alert_word_user_profile_id_word"),
    )
    with op.batch_alter_table("alert_word", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_alert_word_realm_id"), ["realm_id"], unique=False)

    op.create_table(
        "muted_user",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("muted_user_id", sa.Integer(), nullable=False),
        sa.Column("date_muted", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["muted_user_id"],
            ["user_profile.id"],
            name=op.f("fk_muted_user_muted_user_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_muted_user_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_muted_user")),
        sa.UniqueConstraint(
            "user_profile_id", "muted_user_id", name="uq_muted_user_user_profile_id_muted_user_id"
        ),
    )
    with op.batch_alter_table("muted_user", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_muted_user_muted_user_id"), ["muted_user_id"], unique=False)

    op.create_table(
        "user_topic",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.Column("topic_name", sa.Text(), nullable=False),
        sa.Column("visibility_policy", sa.Integer(), nullable=False),
        sa.Column("last_updated", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["stream_id"], ["stream.id"], name=op.f("fk_user_topic_stream_id_stream"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_user_topic_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_topic")),
    )
    with op.batch_alter_table("user_topic", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_user_topic_stream_id"), ["stream_id"], unique=False)
    op.create_index(
        "uq_user_topic_user_stream_topic",
        "user_topic",
        ["user_profile_id", "stream_id", sa.text("lower(topic_name)")],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("uq_user_topic_user_stream_topic", table_name="user_topic")
    with op.batch_alter_table("user_topic", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_user_topic_stream_id"))
    op.drop_table("user_topic")
    with op.batch_alter_table("muted_user", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_muted_user_muted_user_id"))
    op.drop_table("muted_user")
    with op.batch_alter_table("alert_word", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_alert_word_realm_id"))
    op.drop_table("alert_word")
