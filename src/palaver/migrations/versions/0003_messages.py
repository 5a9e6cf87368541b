"""messages, user messages (flags), direct-message groups, reactions

Revision ID: 0003_messages
Revises: 0002_channels
Create Date: 2026-11-21 18:15:07.101758
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003_messages"
down_revision: str | None = "0002_channels"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Partial indexes of user_message: (name, condition on flags). The same SQL works on both
# backends; see MessageFlag for the bits.
_USER_MESSAGE_PARTIAL = (
    ("ix_user_message_unread", "(flags & 1) = 0"),
    ("ix_user_message_starred", "(flags & 2) != 0"),
    ("ix_user_message_mentioned", "(flags & 56) != 0"),
    ("ix_user_message_private", "(flags & 256) != 0"),
)


def upgrade() -> None:
    op.create_table(
        "direct_message_group",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("huddle_hash", sa.String(length=40), nullable=False),
        sa.Column("group_size", sa.Integer(), nullable=False),
        sa.Column("recipient_id", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["recipient_id"],
            ["recipient.id"],
            name=op.f("fk_direct_message_group_recipient_id_recipient"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_direct_message_group")),
        sa.UniqueConstraint("huddle_hash", name=op.f("uq_direct_message_group_huddle_hash")),
    )
    op.create_table(
        "message",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("sender_id", sa.Integer(), nullable=False),
        sa.Column("recipient_id", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=60), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("rendered_content", sa.Text(), nullable=True),
        sa.Column("rendered_content_version", sa.Integer(), nullable=True),
        sa.Column("date_sent", sa.DateTime(), nullable=False),
        sa.Column("last_edit_time", sa.DateTime(), nullable=True),
        sa.Column("last_moved_time", sa.DateTime(), nullable=True),
        sa.Column("edit_history", sa.Text(), nullable=True),
        sa.Column("has_attachment", sa.Boolean(), nullable=False),
        sa.Column("has_image", sa.Boolean(), nullable=False),
        sa.Column("has_link", sa.Boolean(), nullable=False),
        sa.Column("is_channel_message", sa.Boolean(), nullable=False),
        sa.Column("sending_client", sa.String(length=30), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_message_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["recipient_id"],
            ["recipient.id"],
            name=op.f("fk_message_recipient_id_recipient"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["sender_id"],
            ["user_profile.id"],
            name=op.f("fk_message_sender_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_message")),
    )
    op.create_index("ix_message_realm_id_id", "message", ["realm_id", "id"])
    op.create_index("ix_message_recipient_id_id", "message", ["recipient_id", "id"])
    op.create_index("ix_message_sender_id_id", "message", ["sender_id", "id"])
    # Expression index: autogenerate cannot see it on SQLite, so it is written by hand.
    op.create_index(
        "ix_message_recipient_id_lower_subject_id",
        "message",
        ["recipient_id", sa.text("lower(subject)"), "id"],
    )

    op.create_table(
        "reaction",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("emoji_name", sa.Text(), nullable=False),
        sa.Column("emoji_code", sa.Text(), nullable=False),
        sa.Column("reaction_type", sa.String(length=30), nullable=False),
        sa.ForeignKeyConstraint(
            ["message_id"], ["message.id"], name=op.f("fk_reaction_message_id_message"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_reaction_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reaction")),
        sa.UniqueConstraint(
            "user_profile_id",
            "message_id",
            "reaction_type",
            "emoji_code",
            name="uq_reaction_user_message_type_code",
        ),
    )
    op.create_index("ix_reaction_message_id", "reaction", ["message_id"])

    op.create_table(
        "user_message",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("flags", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["message_id"],
            ["message.id"],
            name=op.f("fk_user_message_message_id_message"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_user_message_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_message")),
        sa.UniqueConstraint("user_profile_id", "message_id", name="uq_user_message_user_message"),
    )
    op.create_index("ix_user_message_message_id", "user_message", ["message_id"])
    for name, condition in _USER_MESSAGE_PARTIAL:
        op.create_index(
            name,
            "user_message",
            ["user_profile_id", "message_id"],
            sqlite_where=sa.text(condition),
            postgresql_where=sa.text(condition),
        )


def downgrade() -> None:
    for name, _ in _USER_MESSAGE_PARTIAL:
        op.drop_index(name, table_name="user_message")
    op.drop_index("ix_user_message_message_id", table_name="user_message")
    op.drop_table("user_message")
    op.drop_index("ix_reaction_message_id", table_name="reaction")
    op.drop_table("reaction")
    op.drop_index("ix_message_recipient_id_lower_subject_id", table_name="message")
    op.drop_index("ix_message_sender_id_id", table_name="message")
    op.drop_index("ix_message_recipient_id_id", table_name="message")
    op.drop_index("ix_message_realm_id_id", table_name="message")
    op.drop_table("message")
    op.drop_table("direct_message_group")
