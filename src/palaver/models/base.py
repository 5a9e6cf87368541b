"""Declarative base shared by every model, with constraint names Alembic can rely on."""

from __future__ import annotations

from sqlalchemy import MetaData
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
