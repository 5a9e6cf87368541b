"""Every narrow operator, and a whole narrow's SQL and in-memory test.

Operators about conversations and people are here; ``is:``/``in:``/``has:`` are in
``narrow_flags.py`` and ``search`` in ``narrow_search.py``. ``OPERATORS`` lists them all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, false, func, literal, select, true
from sqlalchemy.orm import aliased

from palaver.models.base import MAX_ID
from palaver.models.channels import Recipient, RecipientType, Stream, Subscription
from palaver.models.messages import DirectMessageGroup, Message, MessageFlag, UserMessage
from palaver.models.narrow import (
    MatchEnv,
    NarrowOperandError,
    NarrowSyntaxError,
    NarrowTerm,
    Operator,
    SqlContext,
    is_stream,
    message_id_operand,
    parse_terms,
)
from palaver.models.narrow_flags import HasOperator, InOperator, IsOperator
from palaver.models.narrow_search import SearchOperator
from palaver.models.topic_names import topic_for_lookup
from palaver.models.users import UserProfile

# The message table's columns for the operators every page of a conversation compiles
# (channel, topic, dm): the same SQL as the model's attributes without their ORM annotation
# layer, which costs more per request than the database's work.
_message = Message.__table__.c


# Conditions by operand value, built once each: an expression is immutable, building one
# through SQLAlchemy's operators cost more than the rest of a narrow's term, and a page's
# statement is found by its conditions' cache keys, which an expression computes once.
@lru_cache(maxsize=1024)
def _in_conversation(recipient_id: int) -> ColumnElement[bool]:
    return _message.recipient_id == recipient_id


@lru_cache(maxsize=1024)
def _in_topic(topic: str) -> ColumnElement[bool]:
    # Both sides through the database's lower(), so the comparison uses the topic index and
    # folds case the same way on every backend.
    return and_(_message.is_channel_message, func.lower(_message.subject) == func.lower(literal(topic)))


class ChannelOperator(Operator):
    name = "channel"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        stream = ctx.resolver.stream(term.operand)
        ctx.needs_message = True
        ctx.has_channel_term = True
        if not term.negated and ctx.resolver.can_read_history(stream):
            ctx.history_channels.append(stream)
        if stream.recipient_id is None:  # a channel being created has none yet
            return false()
        return _in_conversation(stream.recipient_id)

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        if not is_stream(message):
            return False
        if isinstance(term.operand, int):
            return bool(message.get("stream_id") == term.operand)
        return str(message.get("display_recipient", "")).lower() == str(term.operand).strip().lower()


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


class TopicOperator(Operator):
    name = "topic"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        if not isinstance(term.operand, str):
            raise NarrowOperandError("invalid topic")
        ctx.needs_message = True
        return _in_topic(topic_for_lookup(term.operand))

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        topic = topic_for_lookup(str(term.operand)).lower()
        return is_stream(message) and str(message.get("subject", "")).lower() == topic


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


class DmOperator(Operator):
    """The direct-message conversation of exactly the named users and the user."""

    name = "dm"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        users = _users_from_operand(ctx, term.operand)
        if users is None:
            raise NarrowOperandError(f"unknown user in {term.operand}")
        ctx.needs_message = True
        group = ctx.resolver.dm_group({u.id for u in users} | {ctx.user.user_id})
        if group is None or group.recipient_id is None:
            return false()
        return _in_conversation(group.recipient_id)

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        if is_stream(message):
            return False
        wanted = _ids_or_emails(term.operand)
        keys = _people(message)
        named = [k for k in keys if k & wanted]
        # Every named user is in the conversation, and everyone else in it is the user.
        others = [k for k in keys if not k & wanted]
        return len(named) == len(wanted) and all(env.user_id in k for k in others)


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
        return not is_stream(message) and any(k & wanted for k in _people(message))


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
        if is_stream(message):
            return False
        wanted = _ids_or_emails(term.operand)
        keys = _people(message)
        return len(keys) >= 3 and any(k & wanted for k in keys)


class SenderOperator(Operator):
    name = "sender"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        if term.operand == "me":
            sender_id = ctx.user.user_id
        else:
            sender = ctx.resolver.find_user(term.operand)
            if sender is None:
                raise NarrowOperandError(f"unknown user {term.operand}")
            sender_id = sender.id
        ctx.needs_message = True
        return Message.sender_id == sender_id

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        if term.operand == "me":
            return message.get("sender_id") == env.user_id
        operand = term.operand.strip().lower() if isinstance(term.operand, str) else term.operand
        return operand in {message.get("sender_id"), str(message.get("sender_email", "")).lower()}


class IdOperator(Operator):
    name = "id"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        message_id = message_id_operand(term.operand)
        if message_id is None:
            raise NarrowOperandError("Invalid message ID")
        if message_id > MAX_ID:
            return false()
        ctx.needs_message = True
        return Message.id == message_id

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        return message_id_operand(term.operand) == message.get("id")


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


class NearOperator(Operator):
    """A place to open the view at (``lib/narrow.narrow_anchor``), not a filter."""

    name = "near"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        if message_id_operand(term.operand) is None:
            raise NarrowOperandError("Invalid message ID")
        return true()

    def matches(self, term: NarrowTerm, message: Mapping[str, Any], env: MatchEnv) -> bool | None:
        return True


class WithOperator(Operator):
    """``with:ID``: the conversation the message is in now; ``lib/narrow.py`` replaces a
    positive term by that conversation's terms before compiling, so only a negated one
    reaches here. In memory the conversation is unknown.
    """

    name = "with"

    def to_sql(self, ctx: SqlContext, term: NarrowTerm) -> ColumnElement[bool]:
        raise NarrowOperandError("'with' cannot be negated")


OPERATORS: Mapping[str, Operator] = {
    operator.name: operator
    for operator in (
        ChannelOperator(),
        ChannelsOperator(),
        TopicOperator(),
        DmOperator(),
        DmIncludingOperator(),
        GroupPmWithOperator(),
        SenderOperator(),
        IdOperator(),
        MentionsOperator(),
        NearOperator(),
        WithOperator(),
        IsOperator(),
        InOperator(),
        HasOperator(),
        SearchOperator(),
    )
}

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
