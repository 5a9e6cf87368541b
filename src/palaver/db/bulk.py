"""Bulk writes: many small rows of one table in one round trip, by the fastest path of each
database.

``insert_rows`` writes what ``conn.execute(insert(table), [dict(zip(columns, row)), ...])``
writes (``tests/test_db_bulk.py`` compares the two on both databases):

- SQLite: the driver's own ``executemany`` of positional rows, one prepared statement run
  for every row. SQLAlchemy's per-row parameter processing of a Core insert cost a third
  as much again as SQLite's own work (~0.3 ms per send to 50 recipients).
- PostgreSQL: one ``INSERT … SELECT`` over the columns unnested from arrays. psycopg runs an
  ``executemany`` as one statement execution per row (parse, bind, execute, each with its
  own overhead on both ends); one statement cost the backend ~1 ms less per send to 50
  recipients, and psycopg ~0.7 ms less.

Neither path runs SQLAlchemy's Python-side column defaults, so a table's omitted columns
must have none (checked when the statement is first built).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from sqlalchemy import ARRAY, Connection, Insert, Table, bindparam, func, insert, select

from palaver.db.transaction import Tx


def insert_rows(
    tx: Tx, conn: Connection, table: Table, columns: tuple[str, ...], rows: Sequence[tuple[Any, ...]]
) -> None:
    """Insert ``rows`` (values in the order of ``columns``) into ``table`` on ``tx``'s connection."""
    if not rows:
        return
    if conn.dialect.name == "postgresql":
        arrays = {f"c{i}": [row[i] for row in rows] for i in range(len(columns))}
        conn.execute(_unnested_insert(table, columns), arrays)
        return
    conn.exec_driver_sql(_positional_insert(table, columns), rows)
    # SQLAlchemy fires no ``before_execute`` for driver SQL: the table is recorded as
    # written here (after commit, the realm-state cache drops what was read from it).
    tx.written.add(table.name)


def _check_defaults(table: Table, columns: tuple[str, ...]) -> None:
    for column in table.columns:
        if column.name not in columns and column.default is not None:
            raise ValueError(
                f"{table.name}.{column.name} has a Python-side default that a bulk insert would skip: "
                "pass it among the columns"
            )


@cache
def _positional_insert(table: Table, columns: tuple[str, ...]) -> str:
    _check_defaults(table, columns)
    marks = ", ".join("?" for _ in columns)
    return f"INSERT INTO {table.name} ({', '.join(columns)}) VALUES ({marks})"


@cache
def _unnested_insert(table: Table, columns: tuple[str, ...]) -> Insert:
    _check_defaults(table, columns)
    names = [f"c{i}" for i in range(len(columns))]
    arrays = [bindparam(f"c{i}", type_=ARRAY(table.c[column].type)) for i, column in enumerate(columns)]
    rows = func.unnest(*arrays).table_valued(*names).render_derived()
    return insert(table).from_select(list(columns), select(*(rows.c[name] for name in names)))
