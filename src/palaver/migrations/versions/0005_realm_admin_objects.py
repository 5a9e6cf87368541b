"""realm administration objects: playgrounds, allowed domains, custom emoji, linkifiers, bots

Revision ID: 0005_realm_admin_objects
Revises: 0004_realm_admin, 0006_attachments
Create Date: 2026-11-22 10:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005_realm_admin_objects"
down_revision: str | Sequence[str] | None = ("0004_realm_admin", "0006_attachments")
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "realm_domain",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("domain", sa.String(length=255), nullable=False),
        sa.Column("allow_subdomains", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_realm_domain_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_realm_domain")),
        sa.UniqueConstraint("realm_id", "domain", name="uq_realm_domain_realm_domain"),
    )
    op.create_index(op.f("ix_realm_domain_realm_id"), "realm_domain", ["realm_id"], unique=False)
    op.create_table(
        "realm_filter",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("pattern", sa.String(length=1000), nullable=False),
        sa.Column("url_template", sa.Text(), nullable=False),
        sa.Column("order", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_realm_filter_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_realm_filter")),
        sa.UniqueConstraint("realm_id", "pattern", name="uq_realm_filter_realm_pattern"),
    )
    op.create_index(op.f("ix_realm_filter_realm_id"), "realm_filter", ["realm_id"], unique=False)
    op.create_table(
        "realm_playground",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=60), nullable=False),
        sa.Column("pygments_language", sa.String(length=40), nullable=False),
        sa.Column("url_template", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_realm_playground_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_realm_playground")),
        sa.UniqueConstraint(
            "realm_id", "pygments_language", "name", name="uq_realm_playground_realm_language_name"
        ),
    )
    op.create_index(op.f("ix_realm_playground_realm_id"), "realm_playground", ["realm_id"], unique=False)
    op.create_table(
        "bot_service",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_profile_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("base_url", sa.Text(), nullable=False),
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("interface", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["bot_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_bot_service_bot_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bot_service")),
    )
    op.create_index(op.f("ix_bot_service_bot_profile_id"), "bot_service", ["bot_profile_id"], unique=False)
    op.create_table(
        "bot_storage_data",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("bot_profile_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("value", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["bot_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_bot_storage_data_bot_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_bot_storage_data")),
        sa.UniqueConstraint("bot_profile_id", "key", name="uq_bot_storage_data_bot_key"),
    )
    op.create_table(
        "realm_emoji",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("author_id", sa.Integer(), nullable=True),
        sa.Column("name", sa.String(length=60), nullable=False),
        sa.Column("file_name", sa.String(length=80), nullable=False),
        sa.Column("is_animated", sa.Boolean(), nullable=False),
        sa.Column("deactivated", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["author_id"],
            ["user_profile.id"],
            name=op.f("fk_realm_emoji_author_id_user_profile"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_realm_emoji_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_realm_emoji")),
    )
    op.create_index(op.f("ix_realm_emoji_realm_id"), "realm_emoji", ["realm_id"], unique=False)
    op.create_index(
        "uq_realm_emoji_realm_active_name",
        "realm_emoji",
        ["realm_id", "name"],
        unique=True,
        sqlite_where=sa.text("deactivated = 0"),
        postgresql_where=sa.text("NOT deactivated"),
    )
    op.create_table(
        "bot_defaults",
        sa.Column("bot_profile_id", sa.Integer(), nullable=False),
        sa.Column("default_sending_stream_id", sa.Integer(), nullable=True),
        sa.Column("default_events_register_stream_id", sa.Integer(), nullable=True),
        sa.Column("default_all_public_streams", sa.Boolean(), nullable=False),
        sa.ForeignKeyConstraint(
            ["bot_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_bot_defaults_bot_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["default_events_register_stream_id"],
            ["stream.id"],
            name=op.f("fk_bot_defaults_default_events_register_stream_id_stream"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["default_sending_stream_id"],
            ["stream.id"],
            name=op.f("fk_bot_defaults_default_sending_stream_id_stream"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("bot_profile_id", name=op.f("pk_bot_defaults")),
    )


def downgrade() -> None:
    op.drop_table("bot_defaults")
    op.drop_index(
        "uq_realm_emoji_realm_active_name",
        table_name="realm_emoji",
        sqlite_where=sa.text("deactivated = 0"),
        postgresql_where=sa.text("NOT deactivated"),
    )
    op.drop_index(op.f("ix_realm_emoji_realm_id"), table_name="realm_emoji")
    op.drop_table("realm_emoji")
    op.drop_table("bot_storage_data")
    op.drop_index(op.f("ix_bot_service_bot_profile_id"), table_name="bot_service")
    op.drop_table("bot_service")
    op.drop_index(op.f("ix_realm_playground_realm_id"), table_name="realm_playground")
    op.drop_table("realm_playground")
    op.drop_index(op.f("ix_realm_filter_realm_id"), table_name="realm_filter")
    op.drop_table("realm_filter")
    op.drop_index(op.f("ix_realm_domain_realm_id"), table_name="realm_domain")
    op.drop_table("realm_domain")
