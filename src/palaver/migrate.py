"""Schema migrations through Alembic, driven from code (no alembic.ini to find)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def upgrade(engine: Engine, revision: str = "heads") -> None:
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def autogenerate(engine: Engine, message: str) -> None:
    """Developer helper: write a new revision from the difference between models and DB."""
    config = alembic_config()
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.revision(config, message=message, autogenerate=True)


def give_autoincrement(bind: Connection, tables: dict[str, str | None]) -> None:
    """For a migration: on SQLite, rebuild each of ``tables`` with AUTOINCREMENT (the value: an
    archive table whose IDs count as given out, or None); elsewhere nothing, as PostgreSQL's
    sequences never hand out an ID twice.

    The rebuild needs foreign keys off, which only works outside a transaction: Alembic's is
    ended (the migrations before this one are kept), each table is rebuilt in one of its own,
    and a transaction is begun again for Alembic to record the revision and commit.
    """
    if bind.dialect.name != "sqlite":
        return
    raw = bind.connection.driver_connection
    assert raw is not None
    raw.execute("COMMIT")
    try:
        for table, floor_table in tables.items():
            rebuild_with_autoincrement(raw, table, floor_table=floor_table)
    finally:
        raw.execute("BEGIN")


def rebuild_with_autoincrement(raw: Any, table: str, *, floor_table: str | None = None) -> None:
    """Give ``table``'s integer ``id`` SQLite's AUTOINCREMENT, so a deleted row's ID is never
    handed out again (as PostgreSQL's sequences never do). For migrations, on the driver
    connection ``raw``, outside any transaction.

    SQLite cannot add AUTOINCREMENT to a table, so the table is rebuilt by SQLite's own
    procedure for schema changes (https://www.sqlite.org/lang_altertable.html#otheralter),
    with foreign keys off: the old table's implicit DELETE on drop would otherwise cascade to
    every row that references it (the pragma has no effect inside a transaction). The
    sequence starts at the largest ID in the table, or in ``floor_table`` (an archive of
    deleted rows) when that is larger; the IDs of rows deleted without a trace are lost.
    """
    (create_sql,) = raw.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    if "AUTOINCREMENT" in create_sql.upper():
        return
    rebuilt = f"{table}_rebuilt"
    new_sql = _autoincrement_schema(create_sql, table, rebuilt)
    # Indexes and triggers go with the table; they are made again from their own statements.
    dependents = [
        sql
        for (sql,) in raw.execute(
            "SELECT sql FROM sqlite_master WHERE tbl_name = ? AND type IN ('index', 'trigger')"
            " AND sql IS NOT NULL",
            (table,),
        )
    ]
    raw.execute("PRAGMA foreign_keys = OFF")
    try:
        raw.execute("BEGIN IMMEDIATE")
        try:
            raw.execute(new_sql)
            raw.execute(f'INSERT INTO "{rebuilt}" SELECT * FROM "{table}"')
            raw.execute(f'DROP TABLE "{table}"')
            raw.execute(f'ALTER TABLE "{rebuilt}" RENAME TO "{table}"')
            for sql in dependents:
                raw.execute(sql)
            floor = 0
            if floor_table is not None:
                (floor,) = raw.execute(f'SELECT coalesce(max(id), 0) FROM "{floor_table}"').fetchone()
            # The copy made the table's sequence row; the rename renamed it.
            raw.execute("DELETE FROM sqlite_sequence WHERE name = ?", (table,))
            raw.execute(
                "INSERT INTO sqlite_sequence (name, seq)"
                f' SELECT ?, max(coalesce(max(id), 0), ?) FROM "{table}"',
                (table, floor),
            )
            problems = raw.execute("PRAGMA foreign_key_check").fetchall()
            if problems:
                raise RuntimeError(f"foreign keys broken by rebuilding {table}: {problems[:5]}")
            raw.execute("COMMIT")
        except BaseException:
            # Only if BEGIN got that far: a failed BEGIN's error is the one to report.
            if raw.in_transaction:
                raw.execute("ROLLBACK")
            raise
    finally:
        raw.execute("PRAGMA foreign_keys = ON")


def _autoincrement_schema(create_sql: str, table: str, new_name: str) -> str:
    """``table``'s CREATE statement, renamed ``new_name``, with ``id`` an AUTOINCREMENT key."""
    name = re.escape(table)
    rewritten, keys = re.subn(rf",\s*CONSTRAINT pk_{name} PRIMARY KEY \(id\)", "", create_sql)
    rewritten, columns = re.subn(
        r"\(\s*id INTEGER NOT NULL,", "(\n\tid INTEGER NOT NULL PRIMARY KEY AUTOINCREMENT,", rewritten
    )
    # The name may be quoted: SQLite writes it so when a table is renamed.
    rewritten, names = re.subn(
        rf'CREATE TABLE\s+(["`]?){name}\1\s*\(', f'CREATE TABLE "{new_name}" (', rewritten
    )
    if (keys, columns, names) != (1, 1, 1):
        raise RuntimeError(f"unexpected schema of the {table} table: {create_sql}")
    return rewritten
