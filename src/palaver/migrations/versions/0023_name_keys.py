"""Names unique regardless of case, in every script: a stored casefolded key

Channels and channel folders were unique by ``lower(name)``, which SQLite computes for
ASCII only (``Ärger`` and ``ärger`` coexisted, and the server's own check, which folds in
Python, let a second ``Ärger`` reach the index and fail); user groups and playgrounds were
unique by their exact name. Each now stores ``name_key`` (models/names.py: NFKC,
casefolded), computed here in Python for the rows that exist, with a unique index.

Rows whose names already collide under the new rule (created while only the old one held)
keep their IDs, members and messages; all but the oldest get a suffix, ``Ärger (2)``,
so nothing is lost and an administrator can rename them at leisure.

Revision ID: 0023_name_keys
Revises: 0022_sign_in_providers
Create Date: 2026-12-01 22:10:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

# The application's own rule: keys computed here must equal those it computes for new names.
from palaver.models.names import name_key

revision: str = "0023_name_keys"
down_revision: str | Sequence[str] | None = "0022_sign_in_providers"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

KEY_LENGTH = 300
# table -> (columns besides the key that scope uniqueness, longest name allowed, nullable)
TABLES: dict[str, tuple[tuple[str, ...], int, bool]] = {
    "stream": (("realm_id",), 60, False),
    "channel_folder": (("realm_id",), 60, False),
    "user_group": (("realm_id",), 100, True),
    "realm_playground": (("realm_id", "pygments_language"), 60, False),
}
OLD_INDEXES = {"stream": "uq_stream_realm_name", "channel_folder": "uq_channel_folder_realm_name"}


def _index_name(table: str) -> str:
    return (
        f"uq_{table}_realm_language_name_key" if table == "realm_playground" else f"uq_{table}_realm_name_key"
    )


def _fill(bind: sa.Connection, table: str, scope: tuple[str, ...], longest: int) -> None:
    t = sa.table(table, sa.column("id"), sa.column("name"), sa.column("name_key"), *map(sa.column, scope))
    rows = bind.execute(
        sa.select(t.c.id, t.c.name, *(t.c[c] for c in scope)).where(t.c.name.is_not(None)).order_by(t.c.id)
    ).all()
    taken: set[tuple[object, ...]] = set()
    renamed: dict[int, str] = {}
    keys: dict[int, str] = {}
    for row in rows:
        where = tuple(row[2:])
        name = str(row[1])
        key = name_key(name)
        suffix = 2
        while (*where, key) in taken:
            tail = f" ({suffix})"
            name = str(row[1])[: longest - len(tail)] + tail
            key = name_key(name)
            suffix += 1
        taken.add((*where, key))
        keys[row[0]] = key
        if name != row[1]:
            renamed[row[0]] = name
    for row_id, key in keys.items():
        values: dict[str, str] = {"name_key": key}
        if row_id in renamed:
            values["name"] = renamed[row_id]
        bind.execute(sa.update(t).where(t.c.id == row_id).values(**values))


def upgrade() -> None:
    bind = op.get_bind()
    for table, (scope, longest, nullable) in TABLES.items():
        # A plain ADD COLUMN (no table rebuild on SQLite, which would cascade deletes).
        default = None if nullable else sa.text("''")
        op.add_column(
            table, sa.Column("name_key", sa.String(KEY_LENGTH), nullable=nullable, server_default=default)
        )
        _fill(bind, table, scope, longest)
        if table in OLD_INDEXES:
            op.drop_index(OLD_INDEXES[table], table_name=table)
        op.create_index(_index_name(table), table, [*scope, "name_key"], unique=True)


def downgrade() -> None:
    for table in TABLES:
        op.drop_index(_index_name(table), table_name=table)
        op.drop_column(table, "name_key")
        if table in OLD_INDEXES:
            op.create_index(OLD_INDEXES[table], table, ["realm_id", sa.text("lower(name)")], unique=True)
