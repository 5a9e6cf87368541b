"""Narrow operators about a message's state for the user: ``is:``, ``in:`` and ``has:``.

``is:`` operands are personal flags (starred, unread, mentioned…), the topic's visibility
for the user (followed, muted) or the topic's name (resolved); ``in:home`` leaves out
what is muted; ``has:`` reads message columns. Each operand's SQL and in-memory test are
one table entry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, func, or_, select, true

from palaver.models.channels import Stream, Subscription
from palaver.models.messages import ANY_MENTION_FLAGS, Message, MessageFlag, Reaction
from palaver.models.narrow import (
    MatchEnv,
    NarrowOperandError,
    NarrowTerm,
    Operator,
    SqlContext,
    flag_clear,
    flag_set,
    is_stream,
)
from palaver.models.topic_names import RESOLVED_TOPIC_PREFIX
from palaver.models.user_topics import UserTopic, VisibilityPolicy

# Topics' visibility for the user: is:followed, is:muted, in:home.


def _topic_policy_sql(ctx: SqlContext, policies: Sequence[int]) -> ColumnElement[bool]:
    """The message's topic has one of these visibility policies for the user."""
    return exists(
        select(UserTopic.id)
        .join(Stream, Stream.id == UserTopic.stream_id)
        .where(
            UserTopic.user_profile_id == ctx.user.user_id,
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
        Subscription.user_profile_id == ctx.user.user_id, Subscription.active, Subscription.is_muted
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
    if not is_stream(message):
        return False
    if env.topic_policies is None or env.muted_stream_ids is None:
        return None
    policy = _topic_policy(message, env)
    if policy == VisibilityPolicy.MUTED:
        return True
    unmuted = policy in (VisibilityPolicy.UNMUTED, VisibilityPolicy.FOLLOWED)
    return message.get("stream_id") in env.muted_stream_ids and not unmuted


def _followed(message: Mapping[str, Any], env: MatchEnv) -> bool | None:
    if not is_stream(message):
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
    "dm": (lambda ctx: flag_set(MessageFlag.IS_PRIVATE), lambda m, env: not is_stream(m)),
    "starred": (lambda ctx: flag_set(MessageFlag.STARRED), _flag_named("starred")),
    "unread": (lambda ctx: flag_clear(MessageFlag.READ), lambda m, env: "read" not in env.flags),
    "mentioned": (lambda ctx: flag_set(ANY_MENTION_FLAGS), _flag_named("mentioned", "wildcard_mentioned")),
    "alerted": (lambda ctx: flag_set(MessageFlag.HAS_ALERT_WORD), _flag_named("has_alert_word")),
    "resolved": (
        _resolved_sql,
        lambda m, env: is_stream(m) and str(m.get("subject", "")).startswith(RESOLVED_TOPIC_PREFIX),
    ),
    "followed": (_followed_sql, _followed),
    "muted": (_is_muted_sql, _muted),
}
# "is" operands that are properties of messages, not of the user's copy: history stays open.
HISTORY_SAFE_IS = frozenset({"resolved", "followed", "muted"})


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
