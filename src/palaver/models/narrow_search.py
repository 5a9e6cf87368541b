"""The ``search`` narrow operator: full-text search over topic and content."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, column, func, literal_column, select, table, true

from palaver.models.messages import Message
from palaver.models.narrow import NarrowOperandError, NarrowTerm, Operator, SqlContext

# Search ---------------------------------------------------------------------------------------

_TOKEN = re.compile(r'"([^"]*)"|(\S+)')
_WORD = re.compile(r"\w+")


def search_tokens(operand: str) -> list[str]:
    """Words and quoted phrases of a search string; ones without letters or digits are dropped."""
    tokens = []
    for match in _TOKEN.finditer(operand):
        token = (match.group(1) if match.group(1) is not None else match.group(2)).strip()
        if _WORD.search(token):
            tokens.append(token)
    return tokens


def fts_query(tokens: list[str]) -> str:
    """SQLite FTS5 query text: each token quoted, so user input is phrases, never syntax."""
    return " AND ".join('"' + token.replace('"', '""') + '"' for token in tokens)


# The GIN index of migration 0007 is on exactly this expression.
_PG_CONFIG = "'english'::regconfig"


def _postgresql_search(tokens: list[str]) -> ColumnElement[bool]:
    document = func.to_tsvector(
        literal_column(_PG_CONFIG),
        Message.subject.op("||")(literal_column("' '")).op("||")(Message.content),
    )
    return and_(
        *(
            document.bool_op("@@")(func.phraseto_tsquery(literal_column(_PG_CONFIG), token))
            for token in tokens
        )
    )


def _sqlite_search(tokens: list[str]) -> ColumnElement[bool]:
    matches: Select[Any] = (
        select(column("rowid"))
        .select_from(table("message_fts"))
        .where(literal_column("message_fts").op("MATCH")(fts_query(tokens)))
    )
    return Message.id.in_(matches)


class SearchOperator(Operator):
    """Full-text search: SQLite FTS5 or PostgreSQL's text search, both with their own
    tokenizers and (PostgreSQL) English stemming, which no in-memory test reproduces exactly:
    in memory it is unknown, and queues let messages through.
    """

    name = "search"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        if not isinstance(term.operand, str):
            raise NarrowOperandError("invalid search operand")
        tokens = search_tokens(term.operand)
        if not tokens:
            return true()
        ctx.needs_message = True
        if not term.negated:
            ctx.search_keywords.extend(tokens)
        if ctx.resolver.dialect == "postgresql":
            return _postgresql_search(tokens)
        if not term.negated and ctx.fts_match is None:
            # Joined rather than tested per message: see lib/narrow.narrowed_query.
            ctx.fts_match = fts_query(tokens)
            return true()
        return _sqlite_search(tokens)
