"""Names that must be unique regardless of case, as people read them.

A name's *key* is its NFKC-normalised, Unicode-casefolded form: ``Ärger`` and ``ärger``,
``Straße`` and ``STRASSE``, and a full-width ``general`` and the ASCII one each share one.
SQLite's ``lower()`` folds ASCII only, and PostgreSQL's depends on the collation, so the
database cannot compute the key itself; each table whose names must be unique stores it in
a ``name_key`` column with a unique index, and these helpers keep it in step with ``name``:
the column's default fills it on every insert (ORM or Core, such as an import), and
``keep_name_key`` on every assignment of ``name`` through the ORM.
"""

from __future__ import annotations

import unicodedata
from typing import Any

from sqlalchemy import String
from sqlalchemy.engine.default import DefaultExecutionContext
from sqlalchemy.orm import Mapped, mapped_column, validates

# Names are at most 100 characters; casefolding expands a character to three at most.
NAME_KEY_LENGTH = 300


def name_key(name: str) -> str:
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def _default_key(context: DefaultExecutionContext) -> str | None:
    # SQLAlchemy's stubs leave this one untyped; it is the documented way to read the row.
    name = context.get_current_parameters().get("name")  # type: ignore[no-untyped-call]
    return None if name is None else name_key(name)


def name_key_column(*, nullable: bool = False) -> Mapped[Any]:
    return mapped_column(String(NAME_KEY_LENGTH), default=_default_key, nullable=nullable)


class NameKeyed:
    """Mixin of a model with ``name`` and ``name_key``: assigning ``name`` sets the key."""

    name_key: Any

    @validates("name")
    def _keep_name_key(self, _attribute: str, name: str | None) -> str | None:
        self.name_key = None if name is None else name_key(name)
        return name
