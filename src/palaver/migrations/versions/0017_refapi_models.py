"""default channel groups, onboarding steps, legacy push tokens

Revision ID: 0017_refapi_models
Revises: 0001
Create Date: 2026-11-25 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017_refapi_models"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
# default_stream_group_channel refers to stream, made by 0002_channels.
depends_on: str | Sequence[str] | None = "0002_channels"


def upgrade() -> None:
    op.create_table(
        "default_stream_group",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=60), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"],
            ["realm.id"],
            name=op.f("fk_default_stream_group_realm_id_realm"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_default_stream_group")),
        sa.UniqueConstraint("realm_id", "name", name="uq_default_stream_group_realm_id_name"),
    )
    op.create_table(
        "default_stream_group_channel",
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["group_id"],
            ["default_stream_group.id"],
            name=op.f("fk_default_stream_group_channel_group_id_default_stream_group"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["stream_id"],
            ["stream.id"],
            name=op.f("fk_default_stream_group_channel_stream_id_stream"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("group_id", "stream_id", name=op.f("pk_default_stream_group_channel")),
    )
    op.create_table(
        "onboarding_step",
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("onboarding_step", sa.String(length=40), nullable=False),
        sa.Column("timestamp", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_onboarding_step_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_profile_id", "onboarding_step", name=op.f("pk_onboarding_step")),
    )
    op.create_table(
        "legacy_push_token",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("token", sa.String(length=4096), nullable=False),
        sa.Column("ios_app_id", sa.String(length=255), nullable=True),
        sa.Column("last_updated", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_profile_id"],
            ["user_profile.id"],
            name=op.f("fk_legacy_push_token_user_profile_id_user_profile"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_legacy_push_token")),
        sa.UniqueConstraint("user_profile_id", "kind", "token", name="uq_legacy_push_token_user_profile_id"),
    )


def downgrade() -> None:
    op.drop_table("legacy_push_token")
    op.drop_table("onboarding_step")
    op.drop_table("default_stream_group_channel")
    op.drop_table("default_stream_group")
