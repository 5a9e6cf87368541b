"""Fetching messages: GET /messages (a range around an anchor in a narrow, or by ID),
GET /messages/{id} and GET /messages/matches_narrow.

The narrow's SQL comes from ``lib/narrow.py``; message objects from ``lib/message_format.py``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Hashable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    bindparam,
    exists,
    literal_column,
    null,
    or_,
    select,
)
from sqlalchemy.orm import Session

from palaver.cache import realm_settings
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import storable_ids
from palaver.lib.message_access import access_message
from palaver.lib.message_flags import DEFAULT_HISTORICAL_FLAGS, flag_names
from palaver.lib.message_format import (
    FormatOptions,
    finalize_message,
    format_message_rows,
    wide_message_dicts,
)
from palaver.lib.narrow import (
    NarrowFilter,
    build_narrow_filter,
    match_fields,
    narrowed_query,
    narrowed_statement,
)
from palaver.models.base import MAX_ID
from palaver.models.channels import Subscription
from palaver.models.messages import Message, MessageFlag, Reaction, UserMessage
from palaver.models.requester import Requester
from palaver.models.submessages import SubMessage

# "newest" as an anchor: past any message ID that will ever exist (Zulip's value).
LARGER_THAN_MAX_MESSAGE_ID = 10_000_000_000_000_000


MAX_MESSAGES_PER_FETCH = 5000


def parse_anchor(anchor: str | int | None, use_first_unread_anchor: bool) -> int | None:
    """The anchor message ID a client asked for; None means "first unread"."""
    if use_first_unread_anchor:
        return None
    if anchor is None:
        raise JsonableError("Missing 'anchor' argument.")
    if anchor == "oldest":
        return 0
    if anchor == "newest":
        return LARGER_THAN_MAX_MESSAGE_ID
    if anchor == "first_unread":
        return None
    if isinstance(anchor, str):
        text = anchor.strip()
        if not re.fullmatch(r"-?\d+", text):
            raise JsonableError("Invalid anchor")
        anchor = int(text)
    # Negative anchors once meant "the oldest"; very large ones "the newest".
    return min(max(anchor, 0), LARGER_THAN_MAX_MESSAGE_ID)


IdsAndFlags = Select[int, int | None]
AnyColumns = Select[*tuple[Any, ...]]


@dataclass(frozen=True)
class WithMessages:
    """Read each page's messages with it (``PageRow``), edit histories only if asked for."""

    edit_history: bool


class PageRow(NamedTuple):
    """A message's columns with the user's flags (``MessageRow``), as GET /messages reads them,
    and whether it has reactions or widget data (``has_extras``).

    A plain tuple rather than the database row: formatting reads each field once or twice,
    and a named tuple's fields cost a fraction of a row's named lookups.
    """

    id: int
    flags: int | None
    realm_id: int
    sender_id: int
    recipient_id: int
    subject: str
    content: str
    rendered_content: str | None
    date_sent: datetime
    sending_client: str
    is_channel_message: bool
    edit_history: str | None
    last_edit_time: datetime | None
    last_moved_time: datetime | None
    # Read with the page, so a page none of whose messages has any (most pages) runs no
    # statement for them (``format_message_rows``' ``extras_of``).
    has_extras: bool


_message_table = Message.__table__
_message = _message_table.c
# The page's columns by name (``narrowed_query`` names them): asking the subquery for its
# column objects builds its whole column collection, per request.
_PAGE_ID = literal_column("page.id", Integer)
_PAGE_FLAGS = literal_column("page.flags", Integer)
_PAGE_JOIN = _message.id == _PAGE_ID
_HAS_EXTRAS = or_(
    exists().where(Reaction.__table__.c.message_id == _message.id),
    exists().where(SubMessage.__table__.c.message_id == _message.id),
).label("has_extras")


def _page_columns(edit_history: bool) -> tuple[ColumnElement[Any], ...]:
    return (
        _PAGE_ID.label("id"),
        _PAGE_FLAGS.label("flags"),
        *(_page_column(name, edit_history) for name in PageRow._fields[2:]),
    )


def _page_column(name: str, edit_history: bool) -> ColumnElement[Any]:
    if name == "has_extras":
        return _HAS_EXTRAS
    if name == "edit_history":
        return (_message.edit_history if edit_history else null()).label(name)
    return _message[name]


# Built once (with and without edit histories): only the page and the order vary.
_PAGE_COLUMNS = {edit_history: _page_columns(edit_history) for edit_history in (False, True)}
_PAGE_ORDER = {True: _PAGE_ID.desc(), False: _PAGE_ID.asc()}


def with_message_columns(page: IdsAndFlags, descending: bool, *, edit_history: bool) -> AnyColumns:
    """A page of (ID, flags) rows with the message's columns (``PageRow``), in one query.

    The page stays a subquery of its own, so the narrow's plan is the same as without the
    columns; each of its rows then finds its message by primary key.
    """
    return (
        select(*_PAGE_COLUMNS[edit_history])
        .join_from(page.subquery("page"), _message_table, _PAGE_JOIN)
        .order_by(_PAGE_ORDER[descending])
    )


# Page statements by shape. Building a page's statement and its cache key costs more than
# SQLite's work on it, and most pages are one of a few shapes: the same narrow conditions
# (structure and values, as SQLAlchemy's cache key gives them) with another user, anchor or
# size. A page's statement is kept per shape with those four as bound parameters, so a
# request whose narrow resolves to a known shape runs a statement SQLAlchemy has already
# keyed and compiled. The narrow itself is still resolved per request (access checks).
_USER_ID = bindparam("page_user_id", type_=Integer)
_REALM_ID = bindparam("page_realm_id", type_=Integer)
_BOUND = bindparam("page_bound", type_=Integer)
_LIMIT = bindparam("page_limit", type_=Integer)
_MAX_SHAPES = 256
_shapes: dict[Hashable, AnyColumns] = {}


def _hashable(value: Any) -> Hashable:
    return tuple(value) if isinstance(value, list) else value


def _shape_key(nf: NarrowFilter, descending: bool, edit_history: bool) -> Hashable | None:
    """What decides a page's statement apart from the four parameters; None: not keyable."""
    conditions = []
    for condition in nf.conditions:
        key = condition._generate_cache_key()
        if key is None:
            return None
        conditions.append((key.key, tuple(_hashable(p.effective_value) for p in key.bindparams)))
    return (tuple(conditions), nf.include_history, nf.needs_message, nf.fts_match, descending, edit_history)


def _page_statement(nf: NarrowFilter, descending: bool, edit_history: bool) -> AnyColumns | None:
    """The statement of a page of ``PageRow``s for this narrow's shape (``_shapes``)."""
    key = _shape_key(nf, descending, edit_history)
    try:
        statement = None if key is None else _shapes.get(key)
    except TypeError:  # a parameter value that cannot be a key (none does today)
        key = None
    if key is None:
        return None
    if statement is None:
        query, id_column = narrowed_statement(nf, _USER_ID, _REALM_ID)
        bounded = query.where(id_column <= _BOUND if descending else id_column >= _BOUND)
        page = bounded.order_by(id_column.desc() if descending else id_column.asc()).limit(_LIMIT)
        statement = with_message_columns(page, descending, edit_history=edit_history)
        if len(_shapes) >= _MAX_SHAPES:
            _shapes.clear()  # bounded; statements are rebuilt as they are asked for
        _shapes[key] = statement
    return statement


@dataclass
class FetchResult:
    # (message ID, the user's flags or None) pairs, or ``PageRow``s, oldest first.
    rows: list[Any]
    anchor: int
    found_anchor: bool
    found_oldest: bool
    found_newest: bool
    history_limited: bool = False


def first_unread_anchor(session: Session, user: Requester, nf: NarrowFilter) -> int:
    """The oldest unread message in the narrow (outside muted channels unless it names one)."""
    query, id_column = narrowed_query(user, replace(nf, needs_message=True))
    query = query.where(UserMessage.flags.op("&")(int(MessageFlag.READ)) == 0)
    if not nf.has_channel_term:
        muted = select(Subscription.recipient_id).where(
            Subscription.user_profile_id == user.user_id, Subscription.active, Subscription.is_muted
        )
        query = query.where(Message.recipient_id.not_in(muted))
    found = session.scalar(query.order_by(id_column.asc()).limit(1).with_only_columns(id_column))
    return LARGER_THAN_MAX_MESSAGE_ID if found is None else int(found)


def fetch_message_rows(
    session: Session,
    user: Requester,
    nf: NarrowFilter,
    *,
    anchor: int | None,
    include_anchor: bool,
    num_before: int,
    num_after: int,
    with_messages: WithMessages | None = None,
) -> FetchResult:
    """Up to ``num_before`` messages before the anchor, it, and ``num_after`` after, oldest first.

    Each side fetches one row more than asked for, to tell whether more exist.
    """
    if anchor is None:
        anchor = first_unread_anchor(session, user, nf)
    anchored_to_left = anchor == 0
    anchored_to_right = anchor >= LARGER_THAN_MAX_MESSAGE_ID

    def page(bound: int, limit: int, descending: bool) -> list[Any]:
        if with_messages is not None:
            edit_history = with_messages.edit_history
            statement = _page_statement(nf, descending, edit_history)
            if statement is not None:
                parameters = {
                    "page_user_id": user.user_id,
                    "page_realm_id": user.realm_id,
                    "page_bound": bound,
                    "page_limit": limit,
                }
                rows = session.connection().execute(statement, parameters).all()
                return list(map(PageRow._make, rows))
        query, id_column = narrowed_query(user, nf)
        bounded = query.where(id_column <= bound if descending else id_column >= bound)
        ordered = bounded.order_by(id_column.desc() if descending else id_column.asc()).limit(limit)
        if with_messages is None:
            return list(session.execute(ordered))
        return _page_rows(session, with_messages, ordered, descending)

    before: list[Any] = []
    if num_before > 0 and not anchored_to_left:
        before = page(min(anchor - 1, MAX_ID), num_before + 1, True)
    anchor_rows: list[Any] = []
    after: list[Any] = []
    lowest = anchor if include_anchor else anchor + 1
    # IDs are 32-bit columns; PostgreSQL refuses to compare them with larger numbers.
    if not anchored_to_right and lowest <= MAX_ID and (num_after > 0 or include_anchor):
        limit = num_after + 1 + (1 if include_anchor else 0)
        for r in page(lowest, limit, False):
            (anchor_rows if r[0] == anchor else after).append(r)

    found_oldest = anchored_to_left or (num_before > 0 and len(before) <= num_before)
    found_newest = anchored_to_right or (num_after > 0 and len(after) <= num_after)
    rows = [*reversed(before[:num_before]), *anchor_rows, *after[:num_after]]
    return FetchResult(rows, anchor, bool(anchor_rows), found_oldest, found_newest)


def fetch_rows_by_ids(
    session: Session,
    user: Requester,
    nf: NarrowFilter,
    message_ids: Collection[int],
    with_messages: WithMessages | None = None,
) -> list[Any]:
    """Rows as ``fetch_message_rows`` gives them, for the messages among these in the narrow."""
    ids = set(storable_ids(message_ids))
    if not ids:
        return []
    query, id_column = narrowed_query(user, nf)
    statement = query.where(id_column.in_(ids)).order_by(id_column.asc())
    if with_messages is None:
        return list(session.execute(statement))
    return _page_rows(session, with_messages, statement, False)


def _page_rows(
    session: Session, with_messages: WithMessages, page: IdsAndFlags, descending: bool
) -> list[PageRow]:
    # Rows for message objects, read by requests that write nothing: the session's
    # connection runs the statement without the ORM's layer around it (flushing, loading).
    statement = with_message_columns(page, descending, edit_history=with_messages.edit_history)
    # All rows at once: the result's per-row iteration costs more than fetching them together.
    return list(map(PageRow._make, session.connection().execute(statement).all()))


def get_messages(
    session: Session,
    user: Requester,
    *,
    narrow: Sequence[Any] | None,
    anchor: int | None,
    include_anchor: bool,
    num_before: int,
    num_after: int,
    message_ids: Collection[int] | None,
    options: FormatOptions,
) -> dict[str, Any]:
    """The body of GET /messages."""
    nf = build_narrow_filter(session, user, narrow)
    allow_edit_history = realm_settings(session, user.realm_id).allow_edit_history
    with_messages = WithMessages(edit_history=allow_edit_history)

    rows: Sequence[PageRow]
    result: dict[str, Any]
    if message_ids is not None:
        rows = fetch_rows_by_ids(session, user, nf, message_ids, with_messages)
        result = {"found_anchor": False, "found_oldest": False, "found_newest": False}
    else:
        fetched = fetch_message_rows(
            session,
            user,
            nf,
            anchor=anchor,
            include_anchor=include_anchor,
            num_before=num_before,
            num_after=num_after,
            with_messages=with_messages,
        )
        rows = fetched.rows
        result = {
            "anchor": fetched.anchor,
            "found_anchor": fetched.found_anchor,
            "found_oldest": fetched.found_oldest,
            "found_newest": fetched.found_newest,
        }
    result["history_limited"] = False
    messages = format_message_rows(
        session,
        rows,
        options,
        allow_edit_history=allow_edit_history,
        extras_of=[row.id for row in rows if row.has_extras],
    )
    if nf.is_search:
        for message, fields in zip(messages, match_fields(nf, rows), strict=True):
            message.update(fields)
    result["messages"] = messages
    return result


def get_message(
    session: Session, user: Requester, message_id: int, options: FormatOptions
) -> tuple[dict[str, Any], str]:
    """One message as GET /messages/{id} returns it, and its raw Markdown."""
    message, user_message = access_message(session, user, message_id)
    wide = wide_message_dicts(
        session, [message], allow_edit_history=realm_settings(session, user.realm_id).allow_edit_history
    )
    bits = DEFAULT_HISTORICAL_FLAGS if user_message is None else user_message.flags
    formatted = finalize_message(
        wide[message.id],
        apply_markdown=options.apply_markdown,
        client_gravatar=options.client_gravatar,
        allow_empty_topic_name=options.allow_empty_topic_name,
        flags=flag_names(bits),
    )
    return formatted, message.content


def messages_matching_narrow(
    session: Session, user: Requester, message_ids: Collection[int], narrow: Sequence[Any]
) -> dict[str, dict[str, str]]:
    """For GET /messages/matches_narrow: which of the user's received messages match."""
    # Only messages the user received, as the narrow applies to their own history.
    nf = replace(build_narrow_filter(session, user, narrow), include_history=False)
    rows = fetch_rows_by_ids(session, user, nf, message_ids, WithMessages(edit_history=False))
    return {str(row.id): fields for row, fields in zip(rows, match_fields(nf, rows), strict=True)}
