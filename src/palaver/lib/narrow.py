"""Narrows for one user against the database: GET /messages, flags over a narrow, matches_narrow.

The terms, the parser and every operator (its SQL and its in-memory test side by side) are
``models/narrow.py``. This module gives the operators what they look up with the user's
access rules (``DatabaseResolver``), expands ``with:``, turns the model's errors into the
API's, builds the query (``narrowed_query``) and highlights search matches.

A narrow searches the user's own history (their ``UserMessage`` rows) unless it names one
channel whose shared history the user may read; then it searches all of that channel's
messages, and those the user never received count as read and "historical".
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

from sqlalchemy import (
    BindParameter,
    ColumnElement,
    Integer,
    Select,
    and_,
    column,
    func,
    literal_column,
    select,
    table,
)
from sqlalchemy.orm import Session

from palaver.cache import StreamInfo, cached_channel, cached_channel_by_name, realm_channels
from palaver.lib.channels import Viewer, has_metadata_access, viewer_for
from palaver.lib.conversations import conversation_member_ids, get_dm_group
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import is_storable_id
from palaver.lib.message_access import access_message, can_access_stream_history
from palaver.lib.users import can_view_delivery_email, get_realm_user
from palaver.models import UserProfile
from palaver.models.messages import DirectMessageGroup, Message, UserMessage
from palaver.models.narrow import (
    NarrowChannel,
    NarrowOperandError,
    NarrowSyntaxError,
    NarrowTerm,
    SqlContext,
    message_id_operand,
    parse_terms,
)
from palaver.models.narrow_flags import HISTORY_SAFE_IS
from palaver.models.narrow_operators import compile_term
from palaver.models.requester import Requester


class BadNarrowError(JsonableError):
    code = "BAD_NARROW"

    def __init__(self, description: str) -> None:
        super().__init__(f"Invalid narrow operator: {description}")


def invalid_narrow() -> JsonableError:
    return JsonableError("Invalid narrow", code="BAD_NARROW")


@contextmanager
def _api_errors() -> Iterator[None]:
    """The narrow model's errors as the API reports them."""
    try:
        yield
    except NarrowSyntaxError:
        raise invalid_narrow() from None
    except NarrowOperandError as error:
        raise BadNarrowError(error.description) from None


def parse_narrow(raw: str | Sequence[Any] | None) -> list[NarrowTerm]:
    """``models/narrow.parse_terms``, failing with the API's "Invalid narrow"."""
    with _api_errors():
        return parse_terms(raw)


def normalize_narrow(raw: str | Sequence[Any] | None) -> list[dict[str, Any]]:
    """A narrow as event queues keep it (``ClientDescriptor.narrow``): parsed term objects.

    POST /register reports a malformed narrow as a plain bad request, as Zulip does.
    """
    try:
        terms = parse_terms(raw)
    except NarrowSyntaxError:
        raise JsonableError("Invalid narrow") from None
    return [term.to_dict() for term in terms]


class DatabaseResolver:
    """``models/narrow.NarrowResolver`` for one user: names looked up as the user may see them."""

    def __init__(self, session: Session, user: Requester) -> None:
        self.session = session
        self._user = user
        self._viewer: Viewer | None = None

    @property
    def user(self) -> Requester:
        return self._user

    @property
    def dialect(self) -> str:
        return self.session.get_bind().dialect.name

    @property
    def viewer(self) -> Viewer:
        if self._viewer is None:
            self._viewer = viewer_for(self.session, self._user)
        return self._viewer

    def stream(self, operand: Any) -> StreamInfo:
        # From the realm-state cache, as the viewer's subscriptions and groups are.
        stream: StreamInfo | None = None
        if isinstance(operand, int):
            if is_storable_id(operand):
                stream = cached_channel(self.session, self._user.realm_id, operand)
        elif isinstance(operand, str):
            stream = cached_channel_by_name(self.session, self._user.realm_id, operand)
        # A private channel the user cannot see is reported as missing, not as forbidden.
        if stream is None or not has_metadata_access(self.viewer, stream):
            raise NarrowOperandError(f"unknown channel {operand}")
        return stream

    def can_read_history(self, stream: NarrowChannel) -> bool:
        info = cached_channel(self.session, self._user.realm_id, stream.id)
        return info is not None and can_access_stream_history(self.viewer, info)

    def find_user(self, item: Any) -> UserProfile | None:
        if isinstance(item, int):
            return get_realm_user(self.session, self._user.realm_id, item)
        if not isinstance(item, str):
            return None
        lowered = item.strip().lower()
        candidates = self.session.scalars(
            select(UserProfile).where(
                UserProfile.realm_id == self._user.realm_id,
                (func.lower(UserProfile.email) == lowered)
                | (func.lower(UserProfile.delivery_email) == lowered),
            )
        )
        for candidate in candidates:
            if candidate.email.lower() == lowered or can_view_delivery_email(self._user, candidate):
                return candidate
        return None

    def dm_group(self, user_ids: set[int]) -> DirectMessageGroup | None:
        return get_dm_group(self.session, user_ids)


@dataclass
class NarrowFilter:
    terms: list[NarrowTerm]
    conditions: list[ColumnElement[bool]]
    # Search the named channel's whole history rather than the user's own.
    include_history: bool
    needs_message: bool
    has_channel_term: bool
    # Set when the narrow has a search term: responses then carry match_content/match_subject.
    is_search: bool = False
    search_keywords: list[str] = field(default_factory=list)
    fts_match: str | None = None


def build_narrow_filter(
    session: Session, user: Requester, narrow_terms: str | Sequence[Any] | None
) -> NarrowFilter:
    resolver = DatabaseResolver(session, user)
    ctx = SqlContext(resolver)
    with _api_errors():
        terms = _expand_with(resolver, parse_terms(narrow_terms))
        conditions = [compile_term(ctx, term) for term in terms]
    include_history = bool(ctx.history_channels) or ctx.history_public_channels
    if any(t.operator == "is" and t.operand not in HISTORY_SAFE_IS for t in terms):
        # Flags live on the user's own rows: there is no historical message to find.
        include_history = False
    return NarrowFilter(
        terms,
        conditions,
        include_history,
        ctx.needs_message,
        ctx.has_channel_term,
        is_search=any(t.operator == "search" for t in terms),
        search_keywords=ctx.search_keywords,
        fts_match=ctx.fts_match,
    )


# SQLite's full-text index (migration 0007): its rowid is the message ID.
_MESSAGE_FTS = table("message_fts", column("rowid", Integer))
IdColumn = ColumnElement[int]
# Table columns rather than the models' attributes: the same SQL, but each comparison and
# join built per request skips the ORM's annotation layer (a page's statement is built anew
# for every GET /messages).
_message_table = Message.__table__
_user_message_table = UserMessage.__table__
_message = _message_table.c
_user_message = _user_message_table.c


def narrowed_query(user: Requester, nf: NarrowFilter) -> tuple[Select[int, int | None], IdColumn]:
    """Rows of (message ID, the user's flags or None) matching the filter, and the ID column.

    The two columns are named ``id`` and ``flags`` (``lib/message_fetch`` reads a page of
    them as a subquery by those names).

    Callers order and bound the rows by the ID column. For a SQLite search it is the
    full-text index's rowid, so the query walks the matches from the anchor outwards and
    stops at the page's end, instead of collecting every match of a common word first.
    """
    return narrowed_statement(nf, user.user_id, user.realm_id)


UserOrRealmId = int | BindParameter[int]


def narrowed_statement(
    nf: NarrowFilter, user_id: UserOrRealmId, realm_id: UserOrRealmId
) -> tuple[Select[int, int | None], IdColumn]:
    """``narrowed_query`` for a user and realm given by value or as bound parameters
    (``lib/message_fetch`` keeps statements of the latter for any user's request)."""
    query: Select[int, int | None]
    if nf.include_history:
        query = (
            select(_message.id, _user_message.flags)
            .select_from(
                _message_table.outerjoin(
                    _user_message_table,
                    and_(_user_message.message_id == _message.id, _user_message.user_profile_id == user_id),
                )
            )
            .where(_message.realm_id == realm_id)
        )
        id_column: IdColumn = _message.id
    else:
        query = select(_user_message.message_id.label("id"), _user_message.flags).where(
            _user_message.user_profile_id == user_id
        )
        if nf.needs_message:
            query = query.join_from(
                _user_message_table, _message_table, _message.id == _user_message.message_id
            )
        id_column = _user_message.message_id
    if nf.fts_match is not None:
        # (The model's attribute keeps the join written as it always was: rowid = message.id.)
        query = query.join(_MESSAGE_FTS, _MESSAGE_FTS.c.rowid == Message.id).where(
            literal_column("message_fts").op("MATCH")(nf.fts_match)
        )
        id_column = _MESSAGE_FTS.c.rowid
    return query.where(*nf.conditions), id_column


_CONVERSATION_OPERATORS = frozenset({"channel", "topic", "dm", "dm-including", "group-pm-with"})


def _expand_with(resolver: DatabaseResolver, terms: list[NarrowTerm]) -> list[NarrowTerm]:
    """Replace ``with:ID`` by the conversation the message is in now (it may have moved).

    The conversation terms it brings replace any the client sent; a message the user cannot
    read leaves the rest of the narrow as it was, as Zulip does.
    """
    with_terms = [t for t in terms if t.operator == "with" and not t.negated]
    if not with_terms:
        return terms
    if len(with_terms) > 1:
        raise NarrowOperandError("Duplicate 'with' operators.")
    message_id = message_id_operand(with_terms[0].operand)
    if message_id is None:
        raise NarrowOperandError("Invalid 'with' operand")
    rest = [t for t in terms if t is not with_terms[0]]
    session, user = resolver.session, resolver.user
    try:
        message, _ = access_message(session, user, message_id)
    except JsonableError:
        return rest
    rest = [t for t in rest if t.operator not in _CONVERSATION_OPERATORS]
    if message.is_channel_message:
        stream = realm_channels(session, message.realm_id).by_recipient[message.recipient_id]
        return [NarrowTerm("channel", stream.id), NarrowTerm("topic", message.subject), *rest]
    members = conversation_member_ids(session, [message.recipient_id])[message.recipient_id]
    return [NarrowTerm("dm", members or [user.user_id]), *rest]


def narrow_anchor(raw: Sequence[Any] | None) -> int | None:
    """The message a ``near`` (or ``id``) term names, for requests that give no anchor."""
    try:
        terms = parse_terms(raw)
    except NarrowSyntaxError:
        return None
    for term in reversed(terms):
        if term.operator in ("near", "id") and not term.negated:
            return message_id_operand(term.operand)
    return None


# Search highlights ------------------------------------------------------------------------------

_WORD = re.compile(r"\w+")
_HTML_PIECES = re.compile(r"(<[^>]*>|&#?\w+;)")


def _highlighter(keywords: Sequence[str]) -> Callable[[str], str]:
    """Wraps words starting with a search word in ``<span class="highlight">``.

    Its argument is HTML; only text between tags (and outside entities) is touched. Prefixes
    stand in for the stemming the database does, so "message" also marks "messages".
    Built once per search, for all the messages it highlights.
    """
    words = sorted({w.lower() for k in keywords for w in _WORD.findall(k)}, key=len, reverse=True)
    if not words:
        return lambda escaped: escaped
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\w*", re.IGNORECASE)

    def mark(match: re.Match[str]) -> str:
        return f'<span class="highlight">{match.group(0)}</span>'

    def highlight(escaped: str) -> str:
        pieces = _HTML_PIECES.split(escaped)
        for i in range(0, len(pieces), 2):
            pieces[i] = pattern.sub(mark, pieces[i])
        return "".join(pieces)

    return highlight


def highlight(escaped: str, keywords: Sequence[str]) -> str:
    """Highlight one piece of HTML (``_highlighter``)."""
    return _highlighter(keywords)(escaped)


class SearchedText(Protocol):
    @property
    def subject(self) -> str: ...
    @property
    def rendered_content(self) -> str | None: ...


def match_fields(nf: NarrowFilter, messages: Iterable[SearchedText]) -> list[dict[str, str]]:
    """``match_content`` and ``match_subject`` of each message, highlighted for a search."""
    mark = _highlighter(nf.search_keywords)
    return [
        {
            "match_content": mark(message.rendered_content or ""),
            "match_subject": mark(html.escape(message.subject, quote=False)),
        }
        for message in messages
    ]
