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

from palaver.db import Tx, transaction
from palaver.events import types as ev
from palaver.lib.channels import subscriber_ids
from palaver.lib.conversations import stream_for_message
from palaver.lib.emoji import (
    REACTION_TYPES,
    REALM_EMOJI,
    UNICODE_EMOJI,
    ZULIP_EXTRA_EMOJI,
    ZULIP_EXTRA_EMOJI_NAMES,
    emoji_code_for_name,
    is_valid_emoji_code,
)
from palaver.lib.exceptions import JsonableError
from palaver.lib.message_access import access_message
from palaver.lib.message_flags import DEFAULT_HISTORICAL_FLAGS
from palaver.lib.realm_emoji import realm_emoji_for_reaction
from palaver.models import UserProfile
from palaver.models.messages import Message, Reaction, UserMessage


class ReactionExistsError(JsonableError):
    code = "REACTION_ALREADY_EXISTS"

    def __init__(self) -> None:
        super().__init__("Reaction already exists.")


class ReactionDoesNotExistError(JsonableError):
    code = "REACTION_DOES_NOT_EXIST"

    def __init__(self) -> None:
        super().__init__("Reaction doesn't exist.")


def emoji_for_name(session: Session, realm_id: int, emoji_name: str) -> tuple[str, str]:
    """(emoji_code, reaction_type) of an emoji given only by name.

    An active custom emoji wins over a Unicode emoji of the same name, as in the emoji
    picker, which lists the organization's own emoji first.
    """
    custom = realm_emoji_for_reaction(session, realm_id, emoji_name=emoji_name, emoji_code=None, adding=True)
    if custom is not None:
        return str(custom.id), REALM_EMOJI
    if emoji_name in ZULIP_EXTRA_EMOJI_NAMES:
        return emoji_name, ZULIP_EXTRA_EMOJI
    code = emoji_code_for_name(emoji_name)
    if code is None:
        raise JsonableError(f"Emoji '{emoji_name}' does not exist")
    return code, UNICODE_EMOJI


def check_emoji(
    session: Session, realm_id: int, emoji_name: str, emoji_code: str, reaction_type: str
) -> None:
    """That a name, code and type given together name one emoji a new reaction may use."""
    if reaction_type == UNICODE_EMOJI:
        if not is_valid_emoji_code(emoji_code):
            raise JsonableError("Invalid emoji code")
        if emoji_code_for_name(emoji_name) != emoji_code:
            raise JsonableError("Invalid emoji name.")
    elif reaction_type == ZULIP_EXTRA_EMOJI:
        if emoji_code not in ZULIP_EXTRA_EMOJI_NAMES:
            raise JsonableError("Invalid emoji code")
        if emoji_name != emoji_code:
            raise JsonableError("Invalid emoji name.")
    elif reaction_type == REALM_EMOJI:
        # Looked up by code alone (deactivated included) to tell the three failures apart.
        custom = realm_emoji_for_reaction(
            session, realm_id, emoji_name=None, emoji_code=emoji_code, adding=False
        )
        if custom is None:
            raise JsonableError("Invalid custom emoji.")
        if custom.name != emoji_name:
            raise JsonableError("Invalid custom emoji name.")
        if custom.deactivated:
            raise JsonableError("This custom emoji has been deactivated.")
    else:
        raise JsonableError("Invalid emoji type.")


def _find_reaction(
    session: Session, user: UserProfile, message: Message, emoji_code: str, reaction_type: str
) -> Reaction | None:
    return session.scalars(
        select(Reaction).where(
            Reaction.user_profile_id == user.id,
            Reaction.message_id == message.id,
            Reaction.emoji_code == emoji_code,
            Reaction.reaction_type == reaction_type,
        )
    ).one_or_none()


def _audience(session: Session, message: Message) -> set[int]:
    user_ids = set(
        session.scalars(select(UserMessage.user_profile_id).where(UserMessage.message_id == message.id))
    )
    if message.is_channel_message:
        stream = stream_for_message(session, message)
        if stream.history_public_to_subscribers:
            user_ids |= subscriber_ids(session, stream)
    return user_ids


def _send_reaction_event(
    tx: Tx, session: Session, user: UserProfile, message: Message, reaction: Reaction, op: str
) -> None:
    fields = {
        "message_id": message.id,
        "emoji_name": reaction.emoji_name,
        "emoji_code": reaction.emoji_code,
        "reaction_type": reaction.reaction_type,
        "user_id": user.id,
        "user": ev.ReactionUser(user_id=user.id, email=user.email, full_name=user.full_name),
    }
    event: ev.Event = ev.ReactionAdd(**fields) if op == "add" else ev.ReactionRemove(**fields)
    tx.send_event(message.realm_id, event, _audience(session, message))


def do_add_reaction(
    session: Session,
    user: UserProfile,
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
                user_profile_id=user.id, message_id=message.id, flags=int(DEFAULT_HISTORICAL_FLAGS)
            )
            try:
                with session.begin_nested():
                    session.add(historical)
            except IntegrityError:
                pass  # made meanwhile by another request of the same user: it is there, as wanted
        reaction = Reaction(
            user_profile_id=user.id,
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
    session: Session, user: UserProfile, message: Message, emoji_name: str
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
                Reaction.user_profile_id == user.id,
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
    user: UserProfile,
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
