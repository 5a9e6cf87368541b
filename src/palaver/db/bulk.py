"""Bulk writes: many small rows through the driver's own ``executemany``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection

from palaver.db.transaction import Tx


def driver_executemany(tx: Tx, conn: Connection, table: str, sql: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert or update ``rows`` of ``table`` through the driver's own executemany (``sql`` in
    its parameter style): for many small rows, SQLAlchemy's per-row parameter processing of
    a Core statement costs a third as much again as SQLite's own work. SQLAlchemy fires no
    ``before_execute`` for driver SQL, so the table is recorded as written here."""
    conn.exec_driver_sql(sql, rows)
    tx.written.add(table)
