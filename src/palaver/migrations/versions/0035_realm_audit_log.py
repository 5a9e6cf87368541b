"""The organization's audit log (Zulip's RealmAuditLog shape); imports are recorded in it

Revision ID: 0035_realm_audit_log
Revises: 0034_desktop_login_tokens
Create Date: 2026-12-02 02:05:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0035_realm_audit_log"
down_revision: str | Sequence[str] | None = "0034_desktop_login_tokens"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "realm_audit_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("realm_id", sa.Integer(), nullable=False),
        sa.Column("acting_user_id", sa.Integer(), nullable=True),
        sa.Column("event_type", sa.Integer(), nullable=False),
        sa.Column("event_time", sa.DateTime(), nullable=False),
        sa.Column("extra_data", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["realm_id"], ["realm.id"], name=op.f("fk_realm_audit_log_realm_id_realm"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["acting_user_id"],
            ["user_profile.id"],
            name=op.f("fk_realm_audit_log_acting_user_id_user_profile"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_realm_audit_log")),
    )
    op.create_index(op.f("ix_realm_audit_log_realm_id"), "realm_audit_log", ["realm_id"])
    op.create_index(op.f("ix_realm_audit_log_event_time"), "realm_audit_log", ["event_time"])


def downgrade() -> None:
    op.drop_index(op.f("ix_realm_audit_log_event_time"), table_name="realm_audit_log")
    op.drop_index(op.f("ix_realm_audit_log_realm_id"), table_name="realm_audit_log")
    op.drop_table("realm_audit_log")
