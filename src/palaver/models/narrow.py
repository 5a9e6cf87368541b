"""The narrow model: terms, the one parser, and every operator's two meanings side by side.

A narrow selects messages (GET /messages, flags over a narrow, event queues registered
with one). Clients send terms as objects ``{"operator", "operand", "negated"}`` or as
legacy ``[operator, operand]`` pairs, possibly as JSON text; ``parse_terms`` reads every
form into ``NarrowTerm``s with operators under their current names.

Each operator is one ``Operator`` object in ``OPERATORS`` with:

- ``to_sql``: its SQL condition over ``Message`` and ``UserMessage``, given a
  ``SqlContext`` whose ``NarrowResolver`` looks names up in the database (``lib/narrow.py``
  implements it, with the user's access rules);
- ``matches``: the same meaning for one message dict in memory, for event queues; it
  answers None when it cannot know (full-text search, or state the caller did not give,
  such as the user's muted topics), and the message is then let through.

This module imports only models and SQLAlchemy, so ``events/`` can match messages without
importing ``lib/``. ``tests/lib/test_narrow_property.py`` checks that both meanings agree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from sqlalchemy import (
    ColumnElement,
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
from sqlalchemy.orm import aliased

from palaver.models.channels import Recipient, RecipientType, Stream, Subscription
from palaver.models.messages import (
    ANY_MENTION_FLAGS,
    DirectMessageGroup,
    Message,
    MessageFlag,
    Reaction,
    UserMessage,
)
from palaver.models.topic_names import RESOLVED_TOPIC_PREFIX, topic_for_lookup
from palaver.models.user_topics import UserTopic, VisibilityPolicy
from palaver.models.users import UserProfile

# The largest value a 32-bit ID column holds (``lib/ids.MAX_ID``).
_MAX_ID = 2**31 - 1


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


class NarrowResolver(Protocol):
    """Database lookups the SQL side needs, with the user's access rules (``lib/narrow.py``)."""

    @property
    def user(self) -> UserProfile: ...

    @property
    def dialect(self) -> str: ...

    def stream(self, operand: Any) -> Stream:
        """The channel named (ID or name); NarrowOperandError if unknown or invisible."""
        ...

    def can_read_history(self, stream: Stream) -> bool: ...

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
    history_channels: list[Stream] = field(default_factory=list)
    history_public_channels: bool = False
    has_channel_term: bool = False
    # Words and phrases of positive search terms, for highlighting.
    search_keywords: list[str] = field(default_factory=list)
    # The SQLite full-text query of the first positive search term (``lib/narrow.narrowed_query``).
    fts_match: str | None = None

    @property
    def user(self) -> UserProfile:
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


# Operators ----------------------------------------------------------------------------------------


class Operator:
    """One narrow operator. ``to_sql`` and ``matches`` give its positive meaning;
    negation is applied by the caller (``~condition`` / ``not matched``).
    """

    name = ""

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        raise NotImplementedError

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        return None


OPERATORS: dict[str, Operator] = {}


def narrow_operator(operator: type[Operator]) -> type[Operator]:
    """Register an operator class (one instance) under its ``name``."""
    OPERATORS[operator.name] = operator()
    return operator


def _is_stream(message: Mapping[str, Any]) -> bool:
    return message.get("type") == "stream"


def _flag_set(bits: int) -> ColumnElement[bool]:
    # Written as the partial indexes are, so PostgreSQL can use them.
    return UserMessage.flags.op("&")(int(bits)) != 0


def _flag_clear(bits: int) -> ColumnElement[bool]:
    return UserMessage.flags.op("&")(int(bits)) == 0


@narrow_operator
class ChannelOperator(Operator):
    name = "channel"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        stream = ctx.resolver.stream(term.operand)
        ctx.needs_message = True
        ctx.has_channel_term = True
        if not term.negated and ctx.resolver.can_read_history(stream):
            ctx.history_channels.append(stream)
        return Message.recipient_id == stream.recipient_id

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        if not _is_stream(message):
            return False
        if isinstance(term.operand, int):
            return bool(message.get("stream_id") == term.operand)
        return str(message.get("display_recipient", "")).lower() == str(term.operand).strip().lower()


@narrow_operator
class ChannelsOperator(Operator):
    """``channels:public`` / ``channels:web-public``; the message object does not say whether
    its channel is either, so in memory this is unknown.
    """

    name = "channels"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        query = select(Stream.recipient_id).where(Stream.realm_id == ctx.user.realm_id)
        if term.operand == "public":
            query = query.where(Stream.invite_only.is_(False))
            if not term.negated and not ctx.user.is_guest:
                ctx.history_public_channels = True
        elif term.operand == "web-public":
            query = query.where(Stream.is_web_public)
        else:
            raise NarrowOperandError(f"unknown channels operand {term.operand}")
        ctx.needs_message = True
        ctx.has_channel_term = True
        return Message.recipient_id.in_(query)


@narrow_operator
class TopicOperator(Operator):
    name = "topic"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        if not isinstance(term.operand, str):
            raise NarrowOperandError("invalid topic")
        ctx.needs_message = True
        # Both sides through the database's lower(), so the comparison uses the topic index and
        # folds case the same way on every backend.
        topic = topic_for_lookup(term.operand)
        return and_(Message.is_channel_message, func.lower(Message.subject) == func.lower(literal(topic)))

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        topic = topic_for_lookup(str(term.operand)).lower()
        return _is_stream(message) and str(message.get("subject", "")).lower() == topic


def _ids_or_emails(operand: Any) -> set[int | str]:
    if isinstance(operand, int):
        return {operand}
    if isinstance(operand, str):
        return {part.strip().lower() for part in operand.split(",") if part.strip()}
    if isinstance(operand, list):
        return {i.strip().lower() if isinstance(i, str) else i for i in operand}
    return set()


def _people(message: Mapping[str, Any]) -> list[set[int | str]]:
    """Each member of a direct message's conversation as {ID, lower-cased email}."""
    return [{p["id"], str(p["email"]).lower()} for p in message.get("display_recipient") or []]


def _users_from_operand(ctx: SqlContext, operand: Any) -> list[UserProfile] | None:
    """Users named by IDs or emails (comma-separated); None if any is unknown."""
    if isinstance(operand, int):
        operand = [operand]
    if isinstance(operand, str):
        operand = [part.strip() for part in operand.split(",") if part.strip()]
    if not isinstance(operand, list) or not operand:
        return None
    users: dict[int, UserProfile] = {}
    for item in operand:
        user = ctx.resolver.find_user(item)
        if user is None:
            return None
        users[user.id] = user
    return list(users.values())


def _one_user(ctx: SqlContext, term: NarrowTerm) -> UserProfile:
    users = _users_from_operand(ctx, term.operand)
    if users is None or len(users) != 1:
        raise NarrowOperandError(f"unknown user {term.operand}")
    return users[0]


@narrow_operator
class DmOperator(Operator):
    """The direct-message conversation of exactly the named users and the user."""

    name = "dm"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        users = _users_from_operand(ctx, term.operand)
        if users is None:
            raise NarrowOperandError(f"unknown user in {term.operand}")
        ctx.needs_message = True
        group = ctx.resolver.dm_group({u.id for u in users} | {ctx.user.id})
        if group is None or group.recipient_id is None:
            return false()
        return Message.recipient_id == group.recipient_id

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        if _is_stream(message):
            return False
        wanted = _ids_or_emails(term.operand)
        keys = _people(message)
        named = [k for k in keys if k & wanted]
        # Every named user is in the conversation, and everyone else in it is the user.
        others = [k for k in keys if not k & wanted]
        return len(named) == len(wanted) and all(env.user_id in k for k in others)


@narrow_operator
class DmIncludingOperator(Operator):
    name = "dm-including"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        user = _one_user(ctx, term)
        ctx.needs_message = True
        conversations = (
            select(Subscription.recipient_id)
            .join(Recipient, Recipient.id == Subscription.recipient_id)
            .where(
                Subscription.user_profile_id == user.id,
                Recipient.type == RecipientType.DIRECT_MESSAGE_GROUP,
            )
        )
        return and_(Message.is_channel_message.is_(False), Message.recipient_id.in_(conversations))

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        wanted = _ids_or_emails(term.operand)
        return not _is_stream(message) and any(k & wanted for k in _people(message))


@narrow_operator
class GroupPmWithOperator(Operator):
    """Group conversations (three people or more) including the named user."""

    name = "group-pm-with"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        user = _one_user(ctx, term)
        ctx.needs_message = True
        # Group conversations only: one-on-one ones (and with oneself) are "dm".
        conversations = (
            select(Subscription.recipient_id)
            .join(DirectMessageGroup, DirectMessageGroup.recipient_id == Subscription.recipient_id)
            .where(Subscription.user_profile_id == user.id, DirectMessageGroup.group_size >= 3)
        )
        return and_(Message.is_channel_message.is_(False), Message.recipient_id.in_(conversations))

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        if _is_stream(message):
            return False
        wanted = _ids_or_emails(term.operand)
        keys = _people(message)
        return len(keys) >= 3 and any(k & wanted for k in keys)


@narrow_operator
class SenderOperator(Operator):
    name = "sender"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        sender = ctx.user if term.operand == "me" else ctx.resolver.find_user(term.operand)
        if sender is None:
            raise NarrowOperandError(f"unknown user {term.operand}")
        ctx.needs_message = True
        return Message.sender_id == sender.id

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        if term.operand == "me":
            return message.get("sender_id") == env.user_id
        operand = term.operand.strip().lower() if isinstance(term.operand, str) else term.operand
        return operand in {message.get("sender_id"), str(message.get("sender_email", "")).lower()}


@narrow_operator
class IdOperator(Operator):
    name = "id"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        message_id = message_id_operand(term.operand)
        if message_id is None:
            raise NarrowOperandError("Invalid message ID")
        if message_id > _MAX_ID:
            return false()
        ctx.needs_message = True
        return Message.id == message_id

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        return message_id_operand(term.operand) == message.get("id")


# Topics' visibility for the user: is:followed, is:muted, in:home.


def _topic_policy_sql(ctx: SqlContext, policies: Sequence[int]) -> ColumnElement[bool]:
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


def _topic_policy(message: Mapping[str, Any], env: MatchEnv) -> int | None:
    assert env.topic_policies is not None
    key = (int(message.get("stream_id", 0)), str(message.get("subject", "")).lower())
    return env.topic_policies.get(key)


def _muted_sql(ctx: SqlContext) -> ColumnElement[bool]:
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
                ~_topic_policy_sql(ctx, [VisibilityPolicy.UNMUTED, VisibilityPolicy.FOLLOWED]),
            ),
            _topic_policy_sql(ctx, [VisibilityPolicy.MUTED]),
        ),
    )


def _muted(message: Mapping[str, Any], env: MatchEnv) -> bool | None:
    if not _is_stream(message):
        return False
    if env.topic_policies is None or env.muted_stream_ids is None:
        return None
    policy = _topic_policy(message, env)
    if policy == VisibilityPolicy.MUTED:
        return True
    unmuted = policy in (VisibilityPolicy.UNMUTED, VisibilityPolicy.FOLLOWED)
    return message.get("stream_id") in env.muted_stream_ids and not unmuted


def _followed(message: Mapping[str, Any], env: MatchEnv) -> bool | None:
    if not _is_stream(message):
        return False
    if env.topic_policies is None:
        return None
    return _topic_policy(message, env) == VisibilityPolicy.FOLLOWED


def _flag_named(*names: str) -> Callable[[Mapping[str, Any], MatchEnv], bool | None]:
    return lambda message, env: any(name in env.flags for name in names)


_SqlOf = Callable[[SqlContext], ColumnElement[bool]]
_MatchOf = Callable[[Mapping[str, Any], MatchEnv], bool | None]


def _resolved_sql(ctx: SqlContext) -> ColumnElement[bool]:
    ctx.needs_message = True
    return and_(Message.is_channel_message, Message.subject.startswith(RESOLVED_TOPIC_PREFIX))


def _followed_sql(ctx: SqlContext) -> ColumnElement[bool]:
    ctx.needs_message = True
    return _topic_policy_sql(ctx, [VisibilityPolicy.FOLLOWED])


def _is_muted_sql(ctx: SqlContext) -> ColumnElement[bool]:
    ctx.needs_message = True
    return _muted_sql(ctx)


# is:<operand>: the SQL and the in-memory test of each, side by side.
IS_OPERANDS: dict[str, tuple[_SqlOf, _MatchOf]] = {
    "dm": (lambda ctx: _flag_set(MessageFlag.IS_PRIVATE), lambda m, env: not _is_stream(m)),
    "starred": (lambda ctx: _flag_set(MessageFlag.STARRED), _flag_named("starred")),
    "unread": (lambda ctx: _flag_clear(MessageFlag.READ), lambda m, env: "read" not in env.flags),
    "mentioned": (lambda ctx: _flag_set(ANY_MENTION_FLAGS), _flag_named("mentioned", "wildcard_mentioned")),
    "alerted": (lambda ctx: _flag_set(MessageFlag.HAS_ALERT_WORD), _flag_named("has_alert_word")),
    "resolved": (
        _resolved_sql,
        lambda m, env: _is_stream(m) and str(m.get("subject", "")).startswith(RESOLVED_TOPIC_PREFIX),
    ),
    "followed": (_followed_sql, _followed),
    "muted": (_is_muted_sql, _muted),
}
# "is" operands that are properties of messages, not of the user's copy: history stays open.
HISTORY_SAFE_IS = frozenset({"resolved", "followed", "muted"})


@narrow_operator
class IsOperator(Operator):
    name = "is"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        meaning = IS_OPERANDS.get(term.operand) if isinstance(term.operand, str) else None
        if meaning is None:
            raise NarrowOperandError(f"unknown 'is' operand {term.operand}")
        return meaning[0](ctx)

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        meaning = IS_OPERANDS.get(term.operand) if isinstance(term.operand, str) else None
        return None if meaning is None else meaning[1](message, env)


@narrow_operator
class InOperator(Operator):
    name = "in"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        if term.operand == "home":
            ctx.needs_message = True
            return ~_muted_sql(ctx)
        if term.operand == "all":
            return true()
        raise NarrowOperandError(f"unknown 'in' operand {term.operand}")

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        if term.operand == "all":
            return True
        if term.operand == "home":
            muted = _muted(message, env)
            return None if muted is None else not muted
        return None


def _has_fact(name: str) -> _MatchOf:
    return lambda message, env: None if env.facts is None or name not in env.facts else bool(env.facts[name])


# has:<operand>: link, image and attachment are columns the message object lacks (MatchEnv.facts).
HAS_OPERANDS: dict[str, tuple[Callable[[], ColumnElement[bool]], _MatchOf]] = {
    "attachment": (lambda: Message.has_attachment.is_(True), _has_fact("has_attachment")),
    "image": (lambda: Message.has_image.is_(True), _has_fact("has_image")),
    "link": (lambda: Message.has_link.is_(True), _has_fact("has_link")),
    "reaction": (
        lambda: exists(select(Reaction.id).where(Reaction.message_id == Message.id)),
        lambda message, env: bool(message.get("reactions")),
    ),
}


@narrow_operator
class HasOperator(Operator):
    name = "has"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        ctx.needs_message = True
        meaning = HAS_OPERANDS.get(term.operand) if isinstance(term.operand, str) else None
        if meaning is None:
            raise NarrowOperandError(f"unknown 'has' operand {term.operand}")
        return meaning[0]()

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        meaning = HAS_OPERANDS.get(term.operand) if isinstance(term.operand, str) else None
        return None if meaning is None else meaning[1](message, env)


@narrow_operator
class MentionsOperator(Operator):
    """Messages mentioning the named user (personally); in memory only knowable for the user."""

    name = "mentions"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        user = _one_user(ctx, term)
        ctx.needs_message = True
        # Mentions are recorded on the mentioned user's own copy of the message.
        theirs = aliased(UserMessage)
        return exists(
            select(theirs.id).where(
                theirs.message_id == Message.id,
                theirs.user_profile_id == user.id,
                theirs.flags.op("&")(int(MessageFlag.MENTIONED)) != 0,
            )
        )

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        if isinstance(term.operand, int) and term.operand == env.user_id:
            return "mentioned" in env.flags
        return None


@narrow_operator
class NearOperator(Operator):
    """A place to open the view at (``lib/narrow.narrow_anchor``), not a filter."""

    name = "near"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        if message_id_operand(term.operand) is None:
            raise NarrowOperandError("Invalid message ID")
        return true()

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        return True


@narrow_operator
class WithOperator(Operator):
    """``with:ID``: the conversation the message is in now; ``lib/narrow.py`` replaces a
    positive term by that conversation's terms before compiling, so only a negated one
    reaches here. In memory the conversation is unknown.
    """

    name = "with"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        raise NarrowOperandError("'with' cannot be negated")


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


@narrow_operator
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


# The whole narrow -------------------------------------------------------------------------------


def compile_term(ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
    """A term's SQL condition, negated if the term is."""
    operator = OPERATORS.get(term.operator)
    if operator is None:
        raise NarrowOperandError(f"unknown operator {term.operator}")
    condition = operator.to_sql(ctx, term)
    return ~condition if term.negated else condition


def term_matches(term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
    """Whether the message matches the term (negation applied); None when unknown here."""
    operator = OPERATORS.get(term.operator)
    matched = None if operator is None else operator.matches(term, message, env)
    return None if matched is None else matched != term.negated


def message_matches(terms: Sequence[NarrowTerm], message: Mapping[str, Any], env: MatchEnv) -> bool:
    """Whether a message dict passes every term; terms unknown in memory let it through."""
    return all(term_matches(term, message, env) is not False for term in terms)


def message_matches_narrow(
    narrow: Sequence[Any], message: Mapping[str, Any], flags: Sequence[str], user_id: int | None = None
) -> bool:
    """``message_matches`` for a narrow as clients send it; a malformed one lets all through."""
    try:
        terms = parse_terms(narrow)
    except NarrowSyntaxError:
        return True
    return message_matches(terms, message, MatchEnv(user_id=user_id, flags=flags))
