"""Declarative base shared by every model, with constraint names Alembic can rely on."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Index, MetaData, text
from sqlalchemy.orm import DeclarativeBase

# Explicit naming keeps constraint names identical on SQLite and PostgreSQL, so later
# migrations can drop or alter them by name.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


# The largest value an ID column holds (32-bit integer keys); client-supplied IDs past it are
# refused before they reach the database (lib/ids.py).
MAX_ID = 2**31 - 1


# The table option of tables whose deleted rows' IDs are never handed out again. SQLite
# otherwise gives a new row the largest ID plus one; PostgreSQL's sequences never reuse.
# Migrations 0019 and 0020 rebuilt the existing tables with it.
NEVER_REUSED_IDS = {"sqlite_autoincrement": True}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


# Partial indexes and their PostgreSQL conditions. A dialect's keyword argument on a schema
# item (``postgresql_where=``) imports that dialect's package and every driver module in it
# (~2 MB), which a SQLite server never uses; so the PostgreSQL condition is attached when a
# PostgreSQL engine is made (``use_postgresql_index_conditions``, from db/engine.py), before
# anything can emit or compare the index's DDL on PostgreSQL.
class _PostgresqlConditions:
    def __init__(self) -> None:
        self.indexes: list[tuple[Index, str]] = []
        self.in_use = False

    def add(self, index: Index, condition: str) -> None:
        self.indexes.append((index, condition))
        if self.in_use:
            self.attach(index, condition)

    def attach(self, index: Index, condition: str) -> None:
        index.dialect_options["postgresql"]["where"] = text(condition)

    def use(self) -> None:
        self.in_use = True
        for index, condition in self.indexes:
            self.attach(index, condition)


_postgresql_conditions = _PostgresqlConditions()


def partial_index(name: str, *columns: str, sqlite_where: str, postgresql_where: str, **kwargs: Any) -> Index:
    """``Index(name, *columns, sqlite_where=text(…), postgresql_where=text(…), **kwargs)``,
    with the PostgreSQL condition attached once PostgreSQL is in use."""
    index = Index(name, *columns, sqlite_where=text(sqlite_where), **kwargs)
    _postgresql_conditions.add(index, postgresql_where)
    return index


def use_postgresql_index_conditions() -> None:
    """Give every partial index its PostgreSQL condition (idempotent)."""
    _postgresql_conditions.use()
