"""Emoji reactions on messages.

A reaction is identified by (user, message, reaction_type, emoji_code); the name is only
how it is shown. Clients such as bots may send just a name, and the server finds the code.

Events go to everyone who has the message in their history, plus, for channels whose
history subscribers can read, the current subscribers (as for deletions). Reacting to a
message from shared channel history gives the reactor a "historical" row for it, so they
keep hearing about the reactions they took part in.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.emoji import (
    REACTION_TYPES,
    REALM_EMOJI,
    UNICODE_EMOJI,
)
from palaver.lib.emoji_choice import check_emoji, emoji_for_name
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_access import access_message
from palaver.lib.message_audience import message_audience
from palaver.lib.message_flags import DEFAULT_HISTORICAL_FLAGS
from palaver.models.messages import Message, Reaction, UserMessage
from palaver.models.requester import Requester


class ReactionExistsError(JsonableError):
    code = "REACTION_ALREADY_EXISTS"

    def __init__(self) -> None:
        super().__init__("Reaction already exists.")


class ReactionDoesNotExistError(JsonableError):
    code = "REACTION_DOES_NOT_EXIST"

    def __init__(self) -> None:
        super().__init__("Reaction doesn't exist.")


def _find_reaction(
    session: Session, user: Requester, message: Message, emoji_code: str, reaction_type: str
) -> Reaction | None:
    return session.scalars(
        select(Reaction).where(
            Reaction.user_profile_id == user.user_id,
            Reaction.message_id == message.id,
            Reaction.emoji_code == emoji_code,
            Reaction.reaction_type == reaction_type,
        )
    ).one_or_none()


def _send_reaction_event(
    tx: Tx, session: Session, user: Requester, message: Message, reaction: Reaction, op: str
) -> None:
    fields = {
        "message_id": message.id,
        "emoji_name": reaction.emoji_name,
        "emoji_code": reaction.emoji_code,
        "reaction_type": reaction.reaction_type,
        "user_id": user.user_id,
        "user": ev.ReactionUser(user_id=user.user_id, email=user.email, full_name=user.full_name),
    }
    event: ev.Event = ev.ReactionAdd(**fields) if op == "add" else ev.ReactionRemove(**fields)
    tx.send_event(message.realm_id, event, message_audience(session, message))


def do_add_reaction(
    session: Session,
    user: Requester,
    message_id: int,
    emoji_name: str,
    emoji_code: str | None = None,
    reaction_type: str | None = None,
) -> None:
    with transaction(session) as tx:
        message, user_message = access_message(session, user, message_id)
        if emoji_code is None or reaction_type is None:
            emoji_code, reaction_type = emoji_for_name(session, message.realm_id, emoji_name)
        elif reaction_type not in REACTION_TYPES:
            raise JsonableError("Invalid emoji type.")
        if _find_reaction(session, user, message, emoji_code, reaction_type) is not None:
            raise ReactionExistsError()
        same_emoji = session.scalars(
            select(Reaction)
            .where(
                Reaction.message_id == message.id,
                Reaction.emoji_code == emoji_code,
                Reaction.reaction_type == reaction_type,
            )
            .order_by(Reaction.id)
            .limit(1)
        ).first()
        if same_emoji is not None:
            # Joining a reaction: shown under the name it already has, whatever alias this
            # client used, so the two count as one. Not validated again: a custom emoji
            # deactivated since may still gain votes on the reactions it already has.
            emoji_name = same_emoji.emoji_name
        else:
            check_emoji(session, message.realm_id, emoji_name, emoji_code, reaction_type)

        if user_message is None:
            historical = UserMessage(
                user_profile_id=user.user_id, message_id=message.id, flags=int(DEFAULT_HISTORICAL_FLAGS)
            )
            try:
                with session.begin_nested():
                    session.add(historical)
            except IntegrityError:
                pass  # made meanwhile by another request of the same user: it is there, as wanted
        reaction = Reaction(
            user_profile_id=user.user_id,
            message_id=message.id,
            emoji_name=emoji_name,
            emoji_code=emoji_code,
            reaction_type=reaction_type,
        )
        try:
            with session.begin_nested():
                session.add(reaction)
        except IntegrityError:
            # The same reaction added by a concurrent request between our check and insert.
            raise ReactionExistsError() from None
        _send_reaction_event(tx, session, user, message, reaction, "add")


def _emoji_for_removal(
    session: Session, user: Requester, message: Message, emoji_name: str
) -> tuple[str, str]:
    """(emoji_code, reaction_type) of a reaction to remove, given only by name."""
    try:
        return emoji_for_name(session, message.realm_id, emoji_name)
    except JsonableError:
        # A deactivated custom emoji no longer resolves by name, yet the user's reaction
        # with it stays until removed.
        existing = session.scalars(
            select(Reaction)
            .where(
                Reaction.user_profile_id == user.user_id,
                Reaction.message_id == message.id,
                Reaction.emoji_name == emoji_name,
                Reaction.reaction_type == REALM_EMOJI,
            )
            .limit(1)
        ).first()
        if existing is None:
            raise
        return existing.emoji_code, REALM_EMOJI


def do_remove_reaction(
    session: Session,
    user: Requester,
    message_id: int,
    emoji_name: str | None = None,
    emoji_code: str | None = None,
    reaction_type: str | None = None,
) -> None:
    with transaction(session) as tx:
        message, _ = access_message(session, user, message_id)
        if emoji_code is None:
            if emoji_name is None:
                raise JsonableError(
                    "At least one of the following arguments must be present: emoji_name, emoji_code"
                )
            emoji_code, type_for_name = _emoji_for_removal(session, user, message, emoji_name)
            reaction_type = reaction_type or type_for_name
        reaction_type = reaction_type or UNICODE_EMOJI
        # No validity check of the emoji: an existing row proves it was valid when added.
        reaction = _find_reaction(session, user, message, emoji_code, reaction_type)
        if reaction is None:
            raise ReactionDoesNotExistError()
        session.delete(reaction)
        session.flush()
        _send_reaction_event(tx, session, user, message, reaction, "remove")
