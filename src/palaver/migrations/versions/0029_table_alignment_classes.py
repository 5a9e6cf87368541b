"""Stored message HTML: table alignment as a class, as the renderer now writes it

The pages' Content-Security-Policy (``style-src 'self'``) drops inline styles, so a column
aligned with ``style="text-align:left"`` showed unaligned, with a CSP violation per cell.
The renderer now writes ``class="text-align-left"`` (lib/markdown/renderer.py); this
rewrites the HTML already stored the same way: messages, archived messages, scheduled
messages, descriptions and the rendered copies inside edit histories (JSON, so there the
quotes are escaped). Only markdown-it's exact attribute is touched: quotes a person typed
are stored escaped (``&quot;``), so no message text can look like it.

Revision ID: 0029_table_alignment_classes
Revises: 0028_passkeys
Create Date: 2026-12-01 22:45:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0029_table_alignment_classes"
down_revision: str | Sequence[str] | None = "0028_passkeys"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

HTML_COLUMNS = (
    ("message", "rendered_content"),
    ("archived_message", "rendered_content"),
    ("scheduled_message", "rendered_content"),
    ("stream", "rendered_description"),
    ("channel_folder", "rendered_description"),
    ("custom_profile_field_value", "rendered_value"),
)
JSON_COLUMNS = (("message", "edit_history"), ("archived_message", "edit_history"))
SIDES = ("left", "center", "right")


def _rewrite(table: str, column: str, quote: str, *, to_classes: bool) -> None:
    value = sa.column(column, sa.Text)
    expression: sa.ColumnElement[str] = value
    for side in SIDES:
        style = f" style={quote}text-align:{side}{quote}"
        css_class = f" class={quote}text-align-{side}{quote}"
        old, new = (style, css_class) if to_classes else (css_class, style)
        expression = sa.func.replace(expression, old, new)
    marker = "text-align:" if to_classes else "text-align-"
    t = sa.table(table, value)
    op.execute(sa.update(t).where(value.like(f"%{marker}%")).values({column: expression}))


def upgrade() -> None:
    for table, column in HTML_COLUMNS:
        _rewrite(table, column, '"', to_classes=True)
    for table, column in JSON_COLUMNS:
        _rewrite(table, column, '\\"', to_classes=True)


def downgrade() -> None:
    for table, column in HTML_COLUMNS:
        _rewrite(table, column, '"', to_classes=False)
    for table, column in JSON_COLUMNS:
        _rewrite(table, column, '\\"', to_classes=False)
