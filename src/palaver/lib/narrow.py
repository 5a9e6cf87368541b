"""Narrows: the filters clients select messages with (GET /messages, flags, event queues).

Terms arrive as objects ``{"operator", "operand", "negated"}`` or as legacy
``[operator, operand]`` pairs. ``build_narrow_filter`` turns them into SQL conditions over
``Message`` and ``UserMessage``; ``message_matches_narrow`` checks one message dict in
memory, for event queues registered with a narrow.

Each operator is a function registered in ``OPERATORS`` by ``@narrow_operator``: features
that add operators (search, ``has:``, ``near``, ``with``) register their own.

A narrow searches the user's own history (their ``UserMessage`` rows) unless it names one
channel whose shared history the user may read; then it searches all of that channel's
messages, and those the user never received count as read and "historical".
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import (
    ColumnClause,
    ColumnElement,
    Integer,
    Select,
    and_,
    column,
    exists,
    false,
    func,
    literal,
    literal_column,
    or_,
    select,
    table,
    true,
)
from sqlalchemy.orm import InstrumentedAttribute, Session, aliased

from palaver.lib.channels import Viewer, get_stream_by_id, get_stream_by_name, has_metadata_access, viewer_for
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import MAX_ID, is_storable_id
from palaver.lib.messages import (
    access_message,
    can_access_stream_history,
    conversation_member_ids,
    get_dm_group,
    messages_by_id,
    topic_for_lookup,
)
from palaver.models import UserProfile
from palaver.models.channels import Recipient, RecipientType, Stream, Subscription
from palaver.models.messages import (
    ANY_MENTION_FLAGS,
    DirectMessageGroup,
    Message,
    MessageFlag,
    Reaction,
    UserMessage,
)
from palaver.models.user_topics import UserTopic, VisibilityPolicy

_OPERATOR_ALIASES = {
    "stream": "channel",
    "streams": "channels",
    "subject": "topic",
    "pm-with": "dm",
    "pm-including": "dm-including",
}
_IS_ALIASES = {"private": "dm"}
# "is" operands that are properties of messages, not of the user's copy: history stays open.
_HISTORY_SAFE_IS = frozenset({"resolved", "followed", "muted"})

RESOLVED_TOPIC_PREFIX = "✔ "


class BadNarrowError(JsonableError):
    code = "BAD_NARROW"

    def __init__(self, description: str) -> None:
        super().__init__(f"Invalid narrow operator: {description}")


def invalid_narrow() -> JsonableError:
    return JsonableError("Invalid narrow", code="BAD_NARROW")


@dataclass(frozen=True)
class NarrowTerm:
    operator: str
    operand: Any
    negated: bool = False


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


def parse_narrow(raw: Sequence[Any] | None) -> list[NarrowTerm]:
    """Validate terms in either form and give operators their current names."""
    terms: list[NarrowTerm] = []
    for item in raw or ():
        if isinstance(item, NarrowTerm):
            terms.append(_canonical(item.operator, item.operand, item.negated))
            continue
        if isinstance(item, list | tuple):
            if len(item) != 2 or not isinstance(item[0], str) or not _valid_operand(item[1]):
                raise invalid_narrow()
            terms.append(_canonical(item[0], item[1], False))
        elif isinstance(item, Mapping):
            operator, operand, negated = item.get("operator"), item.get("operand"), item.get("negated", False)
            if (
                not isinstance(operator, str)
                or "operand" not in item
                or not _valid_operand(operand)
                or not isinstance(negated, bool)
                or set(item) - {"operator", "operand", "negated"}
            ):
                raise invalid_narrow()
            terms.append(_canonical(operator, operand, negated))
        else:
            raise invalid_narrow()
    return terms


@dataclass
class NarrowContext:
    """What operator functions may use and record while building a filter."""

    session: Session
    user: UserProfile
    _viewer: Viewer | None = None
    # Set when a condition reads Message columns (so the query must join it).
    needs_message: bool = False
    # Channels named positively whose shared history the user may read.
    history_channels: list[Stream] = field(default_factory=list)
    history_public_channels: bool = False
    has_channel_term: bool = False
    # Words and phrases of positive search terms, for highlighting.
    search_keywords: list[str] = field(default_factory=list)
    # The SQLite full-text query of the first positive search term (see narrowed_query).
    fts_match: str | None = None

    @property
    def viewer(self) -> Viewer:
        if self._viewer is None:
            self._viewer = viewer_for(self.session, self.user)
        return self._viewer


Operator = Callable[[NarrowContext, NarrowTerm], ColumnElement[bool]]
OPERATORS: dict[str, Operator] = {}


def narrow_operator(name: str) -> Callable[[Operator], Operator]:
    def register(function: Operator) -> Operator:
        OPERATORS[name] = function
        return function

    return register


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
    session: Session, user: UserProfile, narrow_terms: Sequence[Any] | None
) -> NarrowFilter:
    terms = parse_narrow(narrow_terms)
    ctx = NarrowContext(session, user)
    terms = _expand_with(ctx, terms)
    conditions: list[ColumnElement[bool]] = []
    for term in terms:
        function = OPERATORS.get(term.operator)
        if function is None:
            raise BadNarrowError(f"unknown operator {term.operator}")
        condition = function(ctx, term)
        conditions.append(~condition if term.negated else condition)
    include_history = bool(ctx.history_channels) or ctx.history_public_channels
    if any(t.operator == "is" and t.operand not in _HISTORY_SAFE_IS for t in terms):
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
IdColumn = InstrumentedAttribute[int] | ColumnClause[int]


def narrowed_query(user: UserProfile, nf: NarrowFilter) -> tuple[Select[int, int | None], IdColumn]:
    """Rows of (message ID, the user's flags or None) matching the filter, and the ID column.

    Callers order and bound the rows by the ID column. For a SQLite search it is the
    full-text index's rowid, so the query walks the matches from the anchor outwards and
    stops at the page's end, instead of collecting every match of a common word first.
    """
    if nf.include_history:
        query = (
            select(Message.id, UserMessage.flags)
            .select_from(Message)
            .outerjoin(
                UserMessage,
                and_(UserMessage.message_id == Message.id, UserMessage.user_profile_id == user.id),
            )
            .where(Message.realm_id == user.realm_id)
        )
        id_column: IdColumn = Message.id
    else:
        query = select(UserMessage.message_id, UserMessage.flags).where(
            UserMessage.user_profile_id == user.id
        )
        if nf.needs_message:
            query = query.join(Message, Message.id == UserMessage.message_id)
        id_column = UserMessage.message_id
    if nf.fts_match is not None:
        query = query.join(_MESSAGE_FTS, _MESSAGE_FTS.c.rowid == Message.id).where(
            literal_column("message_fts").op("MATCH")(nf.fts_match)
        )
        id_column = _MESSAGE_FTS.c.rowid
    return query.where(*nf.conditions), id_column


# Operators ----------------------------------------------------------------------------------


def _flag_set(bits: int) -> ColumnElement[bool]:
    # Written as the partial indexes are, so PostgreSQL can use them.
    return UserMessage.flags.op("&")(int(bits)) != 0


def _flag_clear(bits: int) -> ColumnElement[bool]:
    return UserMessage.flags.op("&")(int(bits)) == 0


def _find_stream(ctx: NarrowContext, operand: Any) -> Stream:
    stream: Stream | None = None
    if isinstance(operand, int):
        if is_storable_id(operand):
            stream = get_stream_by_id(ctx.session, ctx.user.realm_id, operand)
    elif isinstance(operand, str):
        stream = get_stream_by_name(ctx.session, ctx.user.realm_id, operand)
    # A private channel the user cannot see is reported as missing, not as forbidden.
    if stream is None or not has_metadata_access(ctx.viewer, stream):
        raise BadNarrowError(f"unknown channel {operand}")
    return stream


@narrow_operator("channel")
def _channel(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    stream = _find_stream(ctx, term.operand)
    ctx.needs_message = True
    ctx.has_channel_term = True
    if not term.negated and can_access_stream_history(ctx.viewer, stream):
        ctx.history_channels.append(stream)
    return Message.recipient_id == stream.recipient_id


@narrow_operator("channels")
def _channels(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    query = select(Stream.recipient_id).where(Stream.realm_id == ctx.user.realm_id)
    if term.operand == "public":
        query = query.where(Stream.invite_only.is_(False))
        if not term.negated and not ctx.user.is_guest:
            ctx.history_public_channels = True
    elif term.operand == "web-public":
        query = query.where(Stream.is_web_public)
    else:
        raise BadNarrowError(f"unknown channels operand {term.operand}")
    ctx.needs_message = True
    ctx.has_channel_term = True
    return Message.recipient_id.in_(query)


@narrow_operator("topic")
def _topic(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    if not isinstance(term.operand, str):
        raise BadNarrowError("invalid topic")
    ctx.needs_message = True
    # Both sides through the database's lower(), so the comparison uses the topic index and
    # folds case the same way on every backend.
    topic = topic_for_lookup(term.operand)
    return and_(Message.is_channel_message, func.lower(Message.subject) == func.lower(literal(topic)))


def _users_from_operand(ctx: NarrowContext, operand: Any) -> list[UserProfile] | None:
    """Users named by IDs or emails (comma-separated); None if any is unknown."""
    if isinstance(operand, int):
        operand = [operand]
    if isinstance(operand, str):
        operand = [part.strip() for part in operand.split(",") if part.strip()]
    if not isinstance(operand, list) or not operand:
        return None
    users: dict[int, UserProfile] = {}
    for item in operand:
        user = _find_user(ctx, item)
        if user is None:
            return None
        users[user.id] = user
    return list(users.values())


def _find_user(ctx: NarrowContext, item: Any) -> UserProfile | None:
    from palaver.lib.users import can_view_delivery_email, get_realm_user

    if isinstance(item, int):
        return get_realm_user(ctx.session, ctx.user.realm_id, item)
    if not isinstance(item, str):
        return None
    lowered = item.strip().lower()
    candidates = ctx.session.scalars(
        select(UserProfile).where(
            UserProfile.realm_id == ctx.user.realm_id,
            (func.lower(UserProfile.email) == lowered) | (func.lower(UserProfile.delivery_email) == lowered),
        )
    )
    for candidate in candidates:
        if candidate.email.lower() == lowered or can_view_delivery_email(ctx.user, candidate):
            return candidate
    return None


@narrow_operator("dm")
def _dm(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    users = _users_from_operand(ctx, term.operand)
    if users is None:
        raise BadNarrowError(f"unknown user in {term.operand}")
    ctx.needs_message = True
    group = get_dm_group(ctx.session, {u.id for u in users} | {ctx.user.id})
    if group is None or group.recipient_id is None:
        return false()
    return Message.recipient_id == group.recipient_id


@narrow_operator("dm-including")
def _dm_including(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    users = _users_from_operand(ctx, term.operand)
    if users is None or len(users) != 1:
        raise BadNarrowError(f"unknown user {term.operand}")
    ctx.needs_message = True
    conversations = (
        select(Subscription.recipient_id)
        .join(Recipient, Recipient.id == Subscription.recipient_id)
        .where(
            Subscription.user_profile_id == users[0].id,
            Recipient.type == RecipientType.DIRECT_MESSAGE_GROUP,
        )
    )
    return and_(Message.is_channel_message.is_(False), Message.recipient_id.in_(conversations))


@narrow_operator("is")
def _is(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    match term.operand:
        case "dm":
            return _flag_set(MessageFlag.IS_PRIVATE)
        case "starred":
            return _flag_set(MessageFlag.STARRED)
        case "unread":
            return _flag_clear(MessageFlag.READ)
        case "mentioned":
            return _flag_set(ANY_MENTION_FLAGS)
        case "alerted":
            return _flag_set(MessageFlag.HAS_ALERT_WORD)
        case "resolved":
            ctx.needs_message = True
            return and_(Message.is_channel_message, Message.subject.startswith(RESOLVED_TOPIC_PREFIX))
        case "followed":
            ctx.needs_message = True
            return _topic_policy(ctx, [VisibilityPolicy.FOLLOWED])
        case "muted":
            ctx.needs_message = True
            return _muted(ctx)
    raise BadNarrowError(f"unknown 'is' operand {term.operand}")


@narrow_operator("sender")
def _sender(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    if term.operand == "me":
        sender: UserProfile | None = ctx.user
    else:
        sender = _find_user(ctx, term.operand)
    if sender is None:
        raise BadNarrowError(f"unknown user {term.operand}")
    ctx.needs_message = True
    return Message.sender_id == sender.id


@narrow_operator("id")
def _id(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    operand = term.operand
    if isinstance(operand, str) and operand.strip().isdigit():
        operand = int(operand.strip())
    if not isinstance(operand, int) or isinstance(operand, bool) or operand < 0:
        raise BadNarrowError("Invalid message ID")
    if operand > MAX_ID:
        return false()
    ctx.needs_message = True
    return Message.id == operand


def _topic_policy(ctx: NarrowContext, policies: Sequence[int]) -> ColumnElement[bool]:
    """The message's topic has one of these visibility policies for the user."""
    return exists(
        select(UserTopic.id)
        .join(Stream, Stream.id == UserTopic.stream_id)
        .where(
            UserTopic.user_profile_id == ctx.user.id,
            Stream.recipient_id == Message.recipient_id,
            func.lower(UserTopic.topic_name) == func.lower(Message.subject),
            UserTopic.visibility_policy.in_([int(p) for p in policies]),
        )
    )


def _muted(ctx: NarrowContext) -> ColumnElement[bool]:
    # As the web client's home view: a muted channel hides its topics unless the user
    # unmuted or follows them; a muted topic is hidden anywhere.
    muted_channels = select(Subscription.recipient_id).where(
        Subscription.user_profile_id == ctx.user.id, Subscription.active, Subscription.is_muted
    )
    return and_(
        Message.is_channel_message,
        or_(
            and_(
                Message.recipient_id.in_(muted_channels),
                ~_topic_policy(ctx, [VisibilityPolicy.UNMUTED, VisibilityPolicy.FOLLOWED]),
            ),
            _topic_policy(ctx, [VisibilityPolicy.MUTED]),
        ),
    )


@narrow_operator("in")
def _in(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    if term.operand == "home":
        ctx.needs_message = True
        return ~_muted(ctx)
    if term.operand == "all":
        return true()
    raise BadNarrowError(f"unknown 'in' operand {term.operand}")


@narrow_operator("has")
def _has(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    ctx.needs_message = True
    match term.operand:
        case "attachment":
            return Message.has_attachment.is_(True)
        case "image":
            return Message.has_image.is_(True)
        case "link":
            return Message.has_link.is_(True)
        case "reaction":
            return exists(select(Reaction.id).where(Reaction.message_id == Message.id))
    raise BadNarrowError(f"unknown 'has' operand {term.operand}")


@narrow_operator("mentions")
def _mentions(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    users = _users_from_operand(ctx, term.operand)
    if users is None or len(users) != 1:
        raise BadNarrowError(f"unknown user {term.operand}")
    ctx.needs_message = True
    # Mentions are recorded on the mentioned user's own copy of the message.
    theirs = aliased(UserMessage)
    return exists(
        select(theirs.id).where(
            theirs.message_id == Message.id,
            theirs.user_profile_id == users[0].id,
            theirs.flags.op("&")(int(MessageFlag.MENTIONED)) != 0,
        )
    )


@narrow_operator("group-pm-with")
def _group_pm_with(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    users = _users_from_operand(ctx, term.operand)
    if users is None or len(users) != 1:
        raise BadNarrowError(f"unknown user {term.operand}")
    ctx.needs_message = True
    # Group conversations only: one-on-one ones (and with oneself) are "dm".
    conversations = (
        select(Subscription.recipient_id)
        .join(DirectMessageGroup, DirectMessageGroup.recipient_id == Subscription.recipient_id)
        .where(Subscription.user_profile_id == users[0].id, DirectMessageGroup.group_size >= 3)
    )
    return and_(Message.is_channel_message.is_(False), Message.recipient_id.in_(conversations))


@narrow_operator("near")
def _near(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    # A place to open the view at (see narrow_anchor), not a filter.
    if _message_id_operand(term.operand) is None:
        raise BadNarrowError("Invalid message ID")
    return true()


@narrow_operator("with")
def _with(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    # Positive terms were replaced by their conversation in _expand_with.
    raise BadNarrowError("'with' cannot be negated")


def _message_id_operand(operand: Any) -> int | None:
    if isinstance(operand, str) and operand.strip().isdigit():
        operand = int(operand.strip())
    if isinstance(operand, int) and not isinstance(operand, bool) and operand >= 0:
        return operand
    return None


_CONVERSATION_OPERATORS = frozenset({"channel", "topic", "dm", "dm-including", "group-pm-with"})


def _expand_with(ctx: NarrowContext, terms: list[NarrowTerm]) -> list[NarrowTerm]:
    """Replace ``with:ID`` by the conversation the message is in now (it may have moved).

    The conversation terms it brings replace any the client sent; a message the user cannot
    read leaves the rest of the narrow as it was, as Zulip does.
    """
    with_terms = [t for t in terms if t.operator == "with" and not t.negated]
    if not with_terms:
        return terms
    if len(with_terms) > 1:
        raise BadNarrowError("Duplicate 'with' operators.")
    message_id = _message_id_operand(with_terms[0].operand)
    if message_id is None:
        raise BadNarrowError("Invalid 'with' operand")
    rest = [t for t in terms if t is not with_terms[0]]
    try:
        message, _ = access_message(ctx.session, ctx.user, message_id)
    except JsonableError:
        return rest
    rest = [t for t in rest if t.operator not in _CONVERSATION_OPERATORS]
    if message.is_channel_message:
        stream = ctx.session.scalars(select(Stream).where(Stream.recipient_id == message.recipient_id)).one()
        return [NarrowTerm("channel", stream.id), NarrowTerm("topic", message.subject), *rest]
    members = conversation_member_ids(ctx.session, [message.recipient_id])[message.recipient_id]
    return [NarrowTerm("dm", members or [ctx.user.id]), *rest]


def narrow_anchor(raw: Sequence[Any] | None) -> int | None:
    """The message a ``near`` (or ``id``) term names, for requests that give no anchor."""
    try:
        terms = parse_narrow(raw)
    except JsonableError:
        return None
    for term in reversed(terms):
        if term.operator in ("near", "id") and not term.negated:
            return _message_id_operand(term.operand)
    return None


# Search -------------------------------------------------------------------------------------

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


def _fts_query(tokens: list[str]) -> str:
    # Each token quoted, so FTS5 reads user input as phrases, never as query syntax.
    return " AND ".join('"' + token.replace('"', '""') + '"' for token in tokens)


def _sqlite_search(tokens: list[str]) -> ColumnElement[bool]:
    query = _fts_query(tokens)
    matches: Select[Any] = (
        select(column("rowid"))
        .select_from(table("message_fts"))
        .where(literal_column("message_fts").op("MATCH")(query))
    )
    return Message.id.in_(matches)


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


@narrow_operator("search")
def _search(ctx: NarrowContext, term: NarrowTerm) -> ColumnElement[bool]:
    if not isinstance(term.operand, str):
        raise BadNarrowError("invalid search operand")
    tokens = search_tokens(term.operand)
    if not tokens:
        return true()
    ctx.needs_message = True
    if not term.negated:
        ctx.search_keywords.extend(tokens)
    if ctx.session.get_bind().dialect.name == "postgresql":
        return _postgresql_search(tokens)
    if not term.negated and ctx.fts_match is None:
        # Joined rather than tested per message: see narrowed_query.
        ctx.fts_match = _fts_query(tokens)
        return true()
    return _sqlite_search(tokens)


_HTML_PIECES = re.compile(r"(<[^>]*>|&#?\w+;)")


def highlight(escaped: str, keywords: Sequence[str]) -> str:
    """Wrap words starting with a search word in ``<span class="highlight">``.

    ``escaped`` is HTML; only text between tags (and outside entities) is touched. Prefixes
    stand in for the stemming the database does, so "message" also marks "messages".
    """
    words = sorted({w.lower() for k in keywords for w in _WORD.findall(k)}, key=len, reverse=True)
    if not words:
        return escaped
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(w) for w in words) + r")\w*", re.IGNORECASE)
    pieces = _HTML_PIECES.split(escaped)
    for i in range(0, len(pieces), 2):
        pieces[i] = pattern.sub(lambda m: f'<span class="highlight">{m.group(0)}</span>', pieces[i])
    return "".join(pieces)


def match_fields(
    session: Session,
    nf: NarrowFilter,
    message_ids: Sequence[int],
    *,
    messages: Mapping[int, Message] | None = None,
) -> dict[int, dict[str, str]]:
    """``match_content`` and ``match_subject`` of each message, highlighted for a search."""
    if messages is None:
        messages = messages_by_id(session, message_ids)
    return {
        message_id: {
            "match_content": highlight(messages[message_id].rendered_content or "", nf.search_keywords),
            "match_subject": highlight(
                html.escape(messages[message_id].subject, quote=False), nf.search_keywords
            ),
        }
        for message_id in message_ids
        if message_id in messages
    }


# In-memory matching (event queues) -----------------------------------------------------------


def _ids_or_emails(operand: Any) -> set[int | str]:
    if isinstance(operand, int):
        return {operand}
    if isinstance(operand, str):
        return {part.strip().lower() for part in operand.split(",") if part.strip()}
    if isinstance(operand, list):
        return {i.strip().lower() if isinstance(i, str) else i for i in operand}
    return set()


def _matches(
    term: NarrowTerm, message: Mapping[str, Any], flags: Sequence[str], user_id: int | None
) -> bool | None:
    """Whether the message matches the (positive) term; None for operators not known here."""
    operand = term.operand
    is_stream = message.get("type") == "stream"
    match term.operator:
        case "channel":
            if not is_stream:
                return False
            if isinstance(operand, int):
                return bool(message.get("stream_id") == operand)
            return str(message.get("display_recipient", "")).lower() == str(operand).strip().lower()
        case "topic":
            return (
                is_stream
                and str(message.get("subject", "")).lower() == topic_for_lookup(str(operand)).lower()
            )
        case "dm" | "dm-including":
            if is_stream:
                return False
            people = message.get("display_recipient") or []
            wanted = _ids_or_emails(operand)
            keys: list[set[int | str]] = [{p["id"], str(p["email"]).lower()} for p in people]
            if term.operator == "dm-including":
                return any(k & wanted for k in keys)
            named = [k for k in keys if k & wanted]
            # Every named user is in the conversation, and everyone else in it is the user.
            others = [k for k in keys if not k & wanted]
            return len(named) == len(wanted) and all(user_id in k for k in others)
        case "sender":
            sender = {message.get("sender_id"), str(message.get("sender_email", "")).lower()}
            if operand == "me":
                return message.get("sender_id") == user_id
            return (operand.strip().lower() if isinstance(operand, str) else operand) in sender
        case "id":
            return str(message.get("id")) == str(operand).strip()
        case "is":
            if operand == "dm":
                return not is_stream
            if operand == "mentioned":
                return "mentioned" in flags or "wildcard_mentioned" in flags
            if operand == "unread":
                return "read" not in flags
            if operand == "starred":
                return "starred" in flags
            if operand == "alerted":
                return "has_alert_word" in flags
            if operand == "resolved":
                return is_stream and str(message.get("subject", "")).startswith(RESOLVED_TOPIC_PREFIX)
    return None


def message_matches_narrow(
    narrow: Sequence[Any], message: Mapping[str, Any], flags: Sequence[str], user_id: int | None = None
) -> bool:
    try:
        terms = parse_narrow(narrow)
    except JsonableError:
        return True
    for term in terms:
        matched = _matches(term, message, flags, user_id)
        # Operators this check does not know (search, has:) let the message through.
        if matched is not None and matched == term.negated:
            return False
    return True


__all__ = [
    "OPERATORS",
    "BadNarrowError",
    "NarrowContext",
    "NarrowFilter",
    "NarrowTerm",
    "build_narrow_filter",
    "highlight",
    "match_fields",
    "message_matches_narrow",
    "narrow_anchor",
    "narrow_operator",
    "narrowed_query",
    "parse_narrow",
    "search_tokens",
]
