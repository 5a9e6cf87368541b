"""IDs of drafts, scheduled messages, uploads and other deletable objects are never reused on SQLite

The same fix as 0019 for messages. SQLite gives a new row the largest ID in its table plus
one, so deleting the newest draft, scheduled message or reminder, upload, linkifier, code
playground, saved snippet, custom profile field, default channel group or invitation handed
its ID to the next one made: a client still holding the old ID (another device, a page left
open) then edited or deleted a different object. With AUTOINCREMENT SQLite remembers the
largest ID ever used, as PostgreSQL's sequences always did. IDs of rows deleted before
this migration cannot be known; the sequence starts at each table's largest ID.

Revision ID: 0020_ids_never_reused
Revises: every head (0008_presence_status ... 0019_message_ids_never_reused)
Create Date: 2026-11-28 10:50:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

from palaver.migrate import give_autoincrement

revision: str = "0020_ids_never_reused"
# Every head: the tables it rebuilds are made on several branches, which must all be in.
down_revision: str | Sequence[str] | None = (
    "0008_presence_status",
    "0009_scheduled_messages",
    "0010_announcement_channels",
    "0011_navigation_views",
    "0012_web_sessions",
    "0013_admin_realm_export",
    "0014_email_invites",
    "0016_media_images",
    "0016_media_thumbnails",
    "0017_refapi_models",
    "0017_refapi_read_receipts",
    "0019_message_ids_never_reused",
)
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Tables whose IDs clients see and whose rows are deleted (not deactivated).
TABLES = (
    "attachment",
    "custom_profile_field",
    "default_stream_group",
    "draft",
    "invitation",
    "realm_filter",
    "realm_playground",
    "saved_snippet",
    "scheduled_message",
)


def upgrade() -> None:
    give_autoincrement(op.get_bind(), dict.fromkeys(TABLES))


def downgrade() -> None:
    # AUTOINCREMENT only stops reuse; a table with it serves the older code as well.
    pass
