"""Adding and deactivating custom emoji; every active user hears the realm's whole set."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.cache import realm_settings
from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.emoji import is_valid_emoji_name
from palaver.lib.exceptions import JsonableError, ResourceNotFoundError
from palaver.lib.images import emoji_images
from palaver.lib.realm import active_user_ids
from palaver.lib.realm_emoji import (
    EMOJI_IMAGE_SIZE,
    active_realm_emoji_by_name,
    check_emoji_name,
    emoji_storage_key,
    image_kind,
    normalize_emoji_name,
    realm_emoji_dict,
    still_file_name,
)
from palaver.lib.storage import FileStorage
from palaver.lib.user_groups import is_user_in_group
from palaver.models.realm_emoji import RealmEmoji
from palaver.models.requester import Requester

_DUPLICATE = "A custom emoji with this name already exists."


def _notify(tx: Tx, session: Session, emoji: RealmEmoji, *, added: bool) -> None:
    """Both forms of the change: the whole set for older clients, the one emoji for clients
    with ``individual_emoji_changes`` (the queues give each client one of them)."""
    session.flush()
    everything = realm_emoji_dict(session, emoji.realm_id)
    user_ids = active_user_ids(session, emoji.realm_id)
    payloads = {key: ev.RealmEmojiPayload(**value) for key, value in everything.items()}
    tx.send_event(emoji.realm_id, ev.RealmEmojiUpdate(realm_emoji=payloads), user_ids)
    key = str(emoji.id)
    single: ev.Event
    if added:
        single = ev.RealmEmojiAdd(emoji=payloads[key])
    else:
        single = ev.RealmEmojiUpdateOne(
            emoji_id=key, data=ev.RealmEmojiChangedData(deactivated=emoji.deactivated)
        )
    tx.send_event(emoji.realm_id, single, user_ids)


def do_add_realm_emoji(
    session: Session, storage: FileStorage, user: Requester, name: str, data: bytes
) -> RealmEmoji:
    name = normalize_emoji_name(name)
    check_emoji_name(name)
    realm = realm_settings(session, user.realm_id)
    if not is_user_in_group(session, user.user_id, realm.can_add_custom_emoji_group):
        raise JsonableError("Insufficient permission")
    if is_valid_emoji_name(name) and not user.is_realm_admin:
        raise JsonableError("Only administrators can override default emoji.")
    kind = image_kind(data)
    picture, still = emoji_images(data, kind.extension, EMOJI_IMAGE_SIZE)
    try:
        with transaction(session) as tx:
            if active_realm_emoji_by_name(session, user.realm_id, name) is not None:
                raise JsonableError(_DUPLICATE)
            emoji = RealmEmoji(realm_id=user.realm_id, author_id=user.user_id, name=name)
            session.add(emoji)
            session.flush()
            emoji.file_name = f"{emoji.id}.{kind.extension}"
            emoji.is_animated = still is not None
            # Stored before the commit: if storing fails, no emoji row points at a missing file.
            storage.save(emoji_storage_key(user.realm_id, emoji.file_name), picture, kind.content_type)
            if still is not None:
                storage.save(emoji_storage_key(user.realm_id, still_file_name(emoji)), still, "image/png")
            _notify(tx, session, emoji, added=True)
    except IntegrityError:
        raise JsonableError(_DUPLICATE) from None
    return emoji


def do_deactivate_realm_emoji(session: Session, user: Requester, name: str) -> None:
    """Deactivate by name: the emoji's author or an administrator may.

    The image stays, as old messages and reactions still show the emoji.
    """
    with transaction(session) as tx:
        emoji = active_realm_emoji_by_name(session, user.realm_id, normalize_emoji_name(name))
        if emoji is None:
            raise ResourceNotFoundError(f"Emoji '{name}' does not exist")
        if not user.is_realm_admin and emoji.author_id != user.user_id:
            raise JsonableError("Must be an organization administrator or emoji author")
        emoji.deactivated = True
        _notify(tx, session, emoji, added=False)
