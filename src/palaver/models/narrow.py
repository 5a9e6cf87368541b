"""The narrow model: terms, the one parser, and what every operator is given.

A narrow selects messages (GET /messages, flags over a narrow, event queues registered
with one). Clients send terms as objects ``{"operator", "operand", "negated"}`` or as
legacy ``[operator, operand]`` pairs, possibly as JSON text; ``parse_terms`` reads every
form into ``NarrowTerm``s with operators under their current names.

Each operator (``models/narrow_operators.OPERATORS``) is one ``Operator`` object with its
two meanings side by side:

- ``to_sql``: its SQL condition over ``Message`` and ``UserMessage``, given a
  ``SqlContext`` whose ``NarrowResolver`` looks names up in the database (``lib/narrow.py``
  implements it, with the user's access rules);
- ``matches``: the same meaning for one message dict in memory, for event queues; it
  answers None when it cannot know (full-text search, or state the caller did not give,
  such as the user's muted topics), and the message is then let through.

These modules import only models and SQLAlchemy, so ``events/`` can match messages without
importing ``lib/``. ``tests/lib/test_narrow_property.py`` checks that both meanings agree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from sqlalchemy import ColumnElement

from palaver.models.messages import DirectMessageGroup, UserMessage
from palaver.models.requester import Requester
from palaver.models.users import UserProfile


class NarrowSyntaxError(ValueError):
    """A term in no form a client may send (the API's "Invalid narrow")."""


class NarrowOperandError(ValueError):
    """An operator or operand the server does not know ("Invalid narrow operator: …")."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


# Parsing --------------------------------------------------------------------------------------

_OPERATOR_ALIASES = {
    "stream": "channel",
    "streams": "channels",
    "subject": "topic",
    "pm-with": "dm",
    "pm-including": "dm-including",
}
_IS_ALIASES = {"private": "dm"}


@dataclass(frozen=True)
class NarrowTerm:
    operator: str
    operand: Any
    negated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"operator": self.operator, "operand": self.operand, "negated": self.negated}


def _valid_operand(operand: Any) -> bool:
    if isinstance(operand, bool):
        return False
    if isinstance(operand, str | int):
        return True
    return isinstance(operand, list) and all(
        isinstance(i, int | str) and not isinstance(i, bool) for i in operand
    )


def _canonical(operator: str, operand: Any, negated: bool) -> NarrowTerm:
    if operator.startswith("-"):
        # Search strings write negation as a leading minus; accept it here too.
        operator, negated = operator[1:], not negated
    operator = _OPERATOR_ALIASES.get(operator, operator)
    if operator == "is" and isinstance(operand, str):
        operand = _IS_ALIASES.get(operand, operand)
    return NarrowTerm(operator, operand, negated)


def _parse_term(item: Any) -> NarrowTerm:
    if isinstance(item, NarrowTerm):
        return _canonical(item.operator, item.operand, item.negated)
    if isinstance(item, list | tuple):
        if len(item) != 2 or not isinstance(item[0], str) or not _valid_operand(item[1]):
            raise NarrowSyntaxError(item)
        return _canonical(item[0], item[1], False)
    if isinstance(item, Mapping):
        operator, operand, negated = item.get("operator"), item.get("operand"), item.get("negated", False)
        if (
            not isinstance(operator, str)
            or "operand" not in item
            or not _valid_operand(operand)
            or not isinstance(negated, bool)
            or set(item) - {"operator", "operand", "negated"}
        ):
            raise NarrowSyntaxError(item)
        return _canonical(operator, operand, negated)
    raise NarrowSyntaxError(item)


def parse_terms(raw: str | Sequence[Any] | None) -> list[NarrowTerm]:
    """Validate terms in any wire form and give operators their current names.

    ``raw`` is a list of objects or pairs, or the JSON text of one; None is no narrow.
    """
    if isinstance(raw, str | bytes):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            raise NarrowSyntaxError(raw) from error
        if raw is not None and not isinstance(raw, list):
            raise NarrowSyntaxError(raw)
    return [_parse_term(item) for item in raw or ()]


def message_id_operand(operand: Any) -> int | None:
    """A message ID operand (``near``, ``id``, ``with``): an integer or its digits."""
    if isinstance(operand, str) and operand.strip().isdigit():
        operand = int(operand.strip())
    if isinstance(operand, int) and not isinstance(operand, bool) and operand >= 0:
        return operand
    return None


# What each side is given ------------------------------------------------------------------------


class NarrowChannel(Protocol):
    """A channel as a narrow needs it: a ``Stream`` row or a cached copy of its columns."""

    @property
    def id(self) -> int: ...

    @property
    def recipient_id(self) -> int | None: ...


class NarrowResolver(Protocol):
    """Database lookups the SQL side needs, with the user's access rules (``lib/narrow.py``)."""

    @property
    def user(self) -> Requester: ...

    @property
    def dialect(self) -> str: ...

    def stream(self, operand: Any) -> NarrowChannel:
        """The channel named (ID or name); NarrowOperandError if unknown or invisible."""
        ...

    def can_read_history(self, stream: NarrowChannel) -> bool: ...

    def find_user(self, item: Any) -> UserProfile | None:
        """A user of the realm by ID or email, as the user may name them."""
        ...

    def dm_group(self, user_ids: set[int]) -> DirectMessageGroup | None: ...


@dataclass
class SqlContext:
    """What ``to_sql`` may use, and what it records while compiling a narrow."""

    resolver: NarrowResolver
    # Set when a condition reads Message columns (so the query must join it).
    needs_message: bool = False
    # Channels named positively whose shared history the user may read.
    history_channels: list[NarrowChannel] = field(default_factory=list)
    history_public_channels: bool = False
    has_channel_term: bool = False
    # Words and phrases of positive search terms, for highlighting.
    search_keywords: list[str] = field(default_factory=list)
    # The SQLite full-text query of the first positive search term (``lib/narrow.narrowed_query``).
    fts_match: str | None = None

    @property
    def user(self) -> Requester:
        return self.resolver.user


@dataclass(frozen=True)
class MatchEnv:
    """What the in-memory side knows besides the message dict.

    Event queues give the recipient and their flags only; terms that need more (the user's
    muted channels and topic policies, has:link…) then answer None. Anything given must be
    what the database holds for the message and user.
    """

    user_id: int | None
    flags: Sequence[str] = ()
    # (stream ID, lower-cased topic) -> VisibilityPolicy, for is:followed/is:muted/in:home.
    topic_policies: Mapping[tuple[int, str], int] | None = None
    muted_stream_ids: frozenset[int] | None = None
    # Message columns not in the client's message object: has_link, has_image, has_attachment.
    facts: Mapping[str, bool] | None = None


# The operator interface --------------------------------------------------------------------


class Operator:
    """One narrow operator. ``to_sql`` and ``matches`` give its positive meaning;
    negation is applied by the caller (``~condition`` / ``not matched``).
    """

    name = ""

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        raise NotImplementedError

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        return None


def is_stream(message: Mapping[str, Any]) -> bool:
    return message.get("type") == "stream"


def flag_set(bits: int) -> ColumnElement[bool]:
    # Written as the partial indexes are, so PostgreSQL can use them.
    return UserMessage.flags.op("&")(int(bits)) != 0


def flag_clear(bits: int) -> ColumnElement[bool]:
    return UserMessage.flags.op("&")(int(bits)) == 0
