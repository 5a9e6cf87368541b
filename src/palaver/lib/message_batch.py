"""What surrounds a batch of messages, looked up once for the batch: senders' facts, channel
names, conversation members, reactions and widget data (``lib/message_format.py`` builds
message objects from it).

Messages are anything with a message's columns (an ORM ``Message`` or a row of the same
names, ``MessageColumns``); people and channels come from the realm-state cache, the rest
from two statements of table columns, so a page of messages loads no ORM objects.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, NamedTuple, Protocol

import orjson
from sqlalchemy import (
    ARRAY,
    ColumnElement,
    Executable,
    Integer,
    Select,
    String,
    any_,
    bindparam,
    func,
    literal_column,
    null,
    select,
    union_all,
)
from sqlalchemy.orm import Session

from palaver.cache import cached_users, realm_channels, realm_settings
from palaver.lib.avatars import (
    GRAVATAR,
    UPLOADED,
    avatar_url,
    avatar_url_for,
    gravatar_enabled,
    hosted_by_gravatar,
)
from palaver.lib.conversations import conversation_member_ids
from palaver.lib.widgets import format_submessage
from palaver.models import Realm, UserProfile
from palaver.models.channels import Stream
from palaver.models.messages import Reaction
from palaver.models.submessages import SubMessage


class MessageColumns(Protocol):
    """What a message object is built from: a ``Message`` or a row with these columns."""

    @property
    def id(self) -> int: ...
    @property
    def sender_id(self) -> int: ...
    @property
    def realm_id(self) -> int: ...
    @property
    def recipient_id(self) -> int: ...
    @property
    def subject(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def rendered_content(self) -> str | None: ...
    @property
    def date_sent(self) -> datetime: ...
    @property
    def sending_client(self) -> str: ...
    @property
    def is_channel_message(self) -> bool: ...
    @property
    def edit_history(self) -> str | None: ...
    @property
    def last_edit_time(self) -> datetime | None: ...
    @property
    def last_moved_time(self) -> datetime | None: ...


class ReactionColumns(Protocol):
    @property
    def emoji_name(self) -> str: ...
    @property
    def emoji_code(self) -> str: ...
    @property
    def reaction_type(self) -> str: ...
    @property
    def user_profile_id(self) -> int: ...


@dataclass(frozen=True, slots=True)
class UserFacts:
    """What message objects show of a person: the sender, or a member of a conversation."""

    id: int
    full_name: str
    email: str
    realm_str: str
    avatar_url: str
    # Clients computing Gravatar URLs need the real address, shown as sender_email.
    avatar_computable: bool

    def display_recipient(self) -> dict[str, Any]:
        return {"id": self.id, "email": self.email, "full_name": self.full_name, "is_mirror_dummy": False}


def user_facts(user: UserProfile, realm_str: str) -> UserFacts:
    """The facts of a user already loaded, of the realm whose string ID is ``realm_str``."""
    return UserFacts(
        user.id,
        user.full_name,
        user.email,
        realm_str,
        avatar_url(user),
        hosted_by_gravatar(user) and user.email == user.delivery_email,
    )


# Statements built once: constructing one costs more per request than running its cached
# compiled form does.
# Users the realm-state cache does not hold (none, unless a message's sender left the realm).
_USER_FACTS = (
    select(
        UserProfile.id,
        UserProfile.full_name,
        UserProfile.email,
        UserProfile.delivery_email,
        UserProfile.realm_id,
        Realm.string_id,
        UserProfile.avatar_source,
        UserProfile.avatar_version,
        UserProfile.avatar_hash,
    )
    .join(Realm, Realm.id == UserProfile.realm_id)
    .where(UserProfile.id.in_(bindparam("ids", expanding=True)))
)
_AVATAR_HASHES = select(UserProfile.id, UserProfile.avatar_hash).where(
    UserProfile.id.in_(bindparam("ids", expanding=True))
)
_CHANNEL_NAMES = select(Stream.recipient_id, Stream.id, Stream.name).where(
    Stream.recipient_id.in_(bindparam("ids", expanding=True))
)
_reaction = Reaction.__table__.c
_submessage = SubMessage.__table__.c


def _reactions_and_submessages_of(where: Callable[[ColumnElement[int]], ColumnElement[bool]]) -> Executable:
    """Reactions (kind 0) and widget data (kind 1) of a batch of messages (``where`` picks
    them by message ID) in one statement of table columns, run on the session's connection:
    most pages have neither, and each statement costs more in its execution than in the
    database."""
    return union_all(
        select(
            literal_column("0").label("kind"),
            _reaction.message_id,
            _reaction.id,
            _reaction.emoji_name.label("name"),
            _reaction.emoji_code.label("code"),
            _reaction.reaction_type.label("reaction_type"),
            _reaction.user_profile_id.label("user_id"),
        ).where(where(_reaction.message_id)),
        select(
            literal_column("1"),
            _submessage.message_id,
            _submessage.id,
            _submessage.msg_type,
            _submessage.content,
            null(),
            _submessage.sender_id,
        ).where(where(_submessage.message_id)),
    ).order_by("kind", "id")


# The batch's IDs as one parameter where the database takes a list as one value (a JSON
# array on SQLite, an array on PostgreSQL): an expanding IN list is rewritten into the SQL
# for every execution, which cost more than the statement's work in the database.
_JSON_IDS: Select[Any] = select(literal_column("value")).select_from(
    func.json_each(bindparam("ids", type_=String))
)
_ARRAY_IDS = bindparam("ids", type_=ARRAY(Integer))
_BATCH_STATEMENTS = {
    "sqlite": _reactions_and_submessages_of(lambda column: column.in_(_JSON_IDS)),
    "postgresql": _reactions_and_submessages_of(lambda column: column == any_(_ARRAY_IDS)),
}
_EXPANDING = _reactions_and_submessages_of(lambda column: column.in_(bindparam("ids", expanding=True)))


class _Submessage(NamedTuple):
    id: int
    message_id: int
    sender_id: int
    msg_type: str
    content: str


def _reactions_and_submessages(
    session: Session, message_ids: list[int]
) -> tuple[dict[int, list[dict[str, Any]]], dict[int, list[dict[str, Any]]]]:
    reactions: dict[int, list[dict[str, Any]]] = defaultdict(list)
    submessages: dict[int, list[dict[str, Any]]] = defaultdict(list)
    connection = session.connection()
    dialect = connection.dialect.name
    ids: Any = orjson.dumps(message_ids).decode() if dialect == "sqlite" else message_ids
    statement = _BATCH_STATEMENTS.get(dialect, _EXPANDING)
    for kind, message_id, row_id, name, code, reaction_type, user_id in connection.execute(
        statement, {"ids": ids}
    ):
        if kind == 0:
            reactions[message_id].append(
                {"emoji_name": name, "emoji_code": code, "reaction_type": reaction_type, "user_id": user_id}
            )
        else:
            submessages[message_id].append(
                format_submessage(_Submessage(row_id, message_id, user_id, name, code))
            )
    return reactions, submessages


# The same user gives the same facts; computing an avatar URL (initials, a hash) is the
# costly part, so facts are remembered by every column they are made of.
@lru_cache(maxsize=4096)
def _facts(
    user_id: int,
    full_name: str,
    email: str,
    delivery_email: str,
    realm_id: int,
    realm_str: str,
    avatar_source: str,
    avatar_version: int,
    avatar_hash: str | None,
    gravatar: bool,
) -> UserFacts:
    url = avatar_url_for(
        realm_id=realm_id,
        user_id=user_id,
        full_name=full_name,
        delivery_email=delivery_email,
        source=avatar_source,
        version=avatar_version,
        avatar_hash=avatar_hash,
        gravatar=gravatar,
    )
    computable = avatar_source == GRAVATAR and gravatar and email == delivery_email
    return UserFacts(user_id, full_name, email, realm_str, url, computable)


def user_facts_by_id(session: Session, realm_id: int, user_ids: Collection[int]) -> dict[int, UserFacts]:
    """Facts of the users among these, read from the realm-state cache where it has them."""
    if not user_ids:
        return {}
    gravatar = gravatar_enabled(session)
    cached = cached_users(session, realm_id, user_ids)
    # The cache leaves out the random part of uploaded pictures' URLs.
    uploaded = [u.id for u in cached.values() if u.avatar_source == UPLOADED]
    hashes: dict[int, str | None] = {}
    if uploaded:
        hashes = {user_id: h for user_id, h in session.execute(_AVATAR_HASHES, {"ids": uploaded})}
    realm_str = str(realm_settings(session, realm_id)["string_id"])
    result = {
        u.id: _facts(
            u.id,
            u.full_name,
            u.email,
            u.delivery_email,
            u.realm_id,
            realm_str,
            u.avatar_source,
            u.avatar_version,
            hashes.get(u.id),
            gravatar,
        )
        for u in cached.values()
    }
    missing = [user_id for user_id in user_ids if user_id not in result]
    if missing:
        for row in session.execute(_USER_FACTS, {"ids": missing}):
            result[row.id] = _facts(*row, gravatar)
    return result


def format_reactions(reactions: Iterable[ReactionColumns]) -> list[dict[str, Any]]:
    return [
        {
            "emoji_name": r.emoji_name,
            "emoji_code": r.emoji_code,
            "reaction_type": r.reaction_type,
            "user_id": r.user_profile_id,
        }
        for r in reactions
    ]


@dataclass(frozen=True)
class Surroundings:
    """Everything around a batch of messages, looked up once for the batch."""

    users: Mapping[int, UserFacts]
    # Channel messages: recipient ID -> (channel ID, channel name).
    channels: Mapping[int, tuple[int, str]]
    # Direct messages: recipient ID -> member IDs, in ID order.
    members: Mapping[int, list[int]]
    reactions: Mapping[int, list[dict[str, Any]]]
    submessages: Mapping[int, list[dict[str, Any]]]


def surroundings(
    session: Session, messages: Sequence[MessageColumns], extras_of: Collection[int] | None = None
) -> Surroundings:
    """What surrounds these messages; reactions and widget data are read for those of
    ``extras_of`` (None: all of them), which a caller that knows the others have none gives."""
    user_ids = {m.sender_id for m in messages}
    members = conversation_member_ids(session, {m.recipient_id for m in messages if not m.is_channel_message})
    for ids in members.values():
        user_ids.update(ids)
    users: dict[int, UserFacts] = {}
    channels: dict[int, tuple[int, str]] = {}
    for realm_id in {m.realm_id for m in messages}:
        users.update(user_facts_by_id(session, realm_id, user_ids))
        by_recipient = realm_channels(session, realm_id).by_recipient
        for m in messages:
            if m.is_channel_message and (info := by_recipient.get(m.recipient_id)) is not None:
                channels[m.recipient_id] = (info.id, info.name)
    unknown = list({m.recipient_id for m in messages if m.is_channel_message} - channels.keys())
    if unknown:
        # A channel another process made a moment ago, before its invalidation arrived.
        for recipient_id, stream_id, name in session.execute(_CHANNEL_NAMES, {"ids": unknown}):
            if recipient_id is not None:
                channels[recipient_id] = (stream_id, name)
    with_extras = [m.id for m in messages] if extras_of is None else list(extras_of)
    reactions, submessages = _reactions_and_submessages(session, with_extras) if with_extras else ({}, {})
    return Surroundings(users, channels, members, reactions, submessages)
