"""email outbox, missed-message emails, email gateway addresses, invitations, confirmations

Revision ID: 0014_email_invites
Revises: 0001
Create Date: 2026-11-25 08:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014_email_invites"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _fk(table: str, column: str, target: str, ondelete: str = "CASCADE") -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.id"], name=f"fk_{table}_{column}_{target}", ondelete=ondelete
    )


def upgrade() -> None:
    op.create_table(
        "email_outbox",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=True),
        sa.Column("to_address", sa.String(length=254), nullable=False),
        sa.Column("template", sa.String(length=60), nullable=False),
        sa.Column("context", sa.Text(), nullable=False),
        sa.Column("from_name", sa.String(length=100), nullable=True),
        sa.Column("reply_to", sa.String(length=254), nullable=True),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("claimed_until", sa.DateTime(), nullable=True),
        sa.Column("sent_at", sa.DateTime(), nullable=True),
        sa.Column("failed", sa.Boolean(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("message_id_header", sa.String(length=254), nullable=True),
        _fk("email_outbox", "realm_id", "realm"),
        sa.PrimaryKeyConstraint("id", name="pk_email_outbox"),
    )
    op.create_index("ix_email_outbox_due", "email_outbox", ["sent_at", "failed", "next_attempt_at"])

    op.create_table(
        "missed_message_email",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("trigger", sa.String(length=40), nullable=False),
        sa.Column("scheduled_at", sa.DateTime(), nullable=False),
        _fk("missed_message_email", "user_profile_id", "user_profile"),
        _fk("missed_message_email", "message_id", "message"),
        sa.PrimaryKeyConstraint("id", name="pk_missed_message_email"),
    )
    op.create_index("ix_missed_message_email_scheduled_at", "missed_message_email", ["scheduled_at"])
    op.create_index("ix_missed_message_email_user_profile_id", "missed_message_email", ["user_profile_id"])

    op.create_table(
        "email_digest_state",
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("last_sent", sa.DateTime(), nullable=False),
        _fk("email_digest_state", "user_profile_id", "user_profile"),
        sa.PrimaryKeyConstraint("user_profile_id", name="pk_email_digest_state"),
    )

    op.create_table(
        "missed_message_address",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=40), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("message_id", sa.Integer(), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        _fk("missed_message_address", "user_profile_id", "user_profile"),
        _fk("missed_message_address", "message_id", "message"),
        sa.PrimaryKeyConstraint("id", name="pk_missed_message_address"),
        sa.UniqueConstraint("token", name="uq_missed_message_address_token"),
    )

    op.create_table(
        "channel_email_address",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("stream_id", sa.Integer(), nullable=False),
        sa.Column("creator_id", sa.Integer(), nullable=False),
        sa.Column("sender_id", sa.Integer(), nullable=False),
        sa.Column("token", sa.String(length=40), nullable=False),
        sa.Column("created", sa.DateTime(), nullable=False),
        _fk("channel_email_address", "realm_id", "realm"),
        _fk("channel_email_address", "stream_id", "stream"),
        _fk("channel_email_address", "creator_id", "user_profile"),
        _fk("channel_email_address", "sender_id", "user_profile"),
        sa.PrimaryKeyConstraint("id", name="pk_channel_email_address"),
        sa.UniqueConstraint("token", name="uq_channel_email_address_token"),
    )

    op.create_table(
        "invitation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("is_multiuse", sa.Boolean(), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=True),
        sa.Column("referred_by_id", sa.Integer(), nullable=False),
        sa.Column("invited_at", sa.DateTime(), nullable=False),
        sa.Column("expiry_date", sa.DateTime(), nullable=True),
        sa.Column("invited_as", sa.Integer(), nullable=False),
        sa.Column("stream_ids", sa.Text(), nullable=False),
        sa.Column("include_realm_default_subscriptions", sa.Boolean(), nullable=False),
        sa.Column("notify_referrer_on_join", sa.Boolean(), nullable=False),
        sa.Column("key", sa.String(length=40), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        _fk("invitation", "realm_id", "realm"),
        _fk("invitation", "referred_by_id", "user_profile"),
        sa.PrimaryKeyConstraint("id", name="pk_invitation"),
        sa.UniqueConstraint("key", name="uq_invitation_key"),
    )
    op.create_index("ix_invitation_realm_id", "invitation", ["realm_id"])

    op.create_table(
        "confirmation",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=40), nullable=False),
        sa.Column("kind", sa.Integer(), nullable=False),
        sa.Column("user_profile_id", sa.Integer(), nullable=False),
        sa.Column("new_email", sa.String(length=254), nullable=True),
        sa.Column("created", sa.DateTime(), nullable=False),
        sa.Column("expires", sa.DateTime(), nullable=False),
        sa.Column("used", sa.Boolean(), nullable=False),
        _fk("confirmation", "user_profile_id", "user_profile"),
        sa.PrimaryKeyConstraint("id", name="pk_confirmation"),
        sa.UniqueConstraint("key", name="uq_confirmation_key"),
    )


def downgrade() -> None:
    for table in (
        "confirmation",
        "invitation",
        "channel_email_address",
        "missed_message_address",
        "email_digest_state",
        "missed_message_email",
        "email_outbox",
    ):
        op.drop_table(table)
