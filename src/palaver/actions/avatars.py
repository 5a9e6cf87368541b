"""Changing a user's avatar and the organization's icon and logos."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.actions.user_creation import bot_event_recipients
from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.avatars import (
    GRAVATAR,
    UPLOADED,
    avatar_images,
    avatar_url,
    new_avatar_hash,
    uploaded_avatar_key,
)
from palaver.lib.exceptions import OrganizationAdministratorRequiredError
from palaver.lib.images import fit_png, square_png
from palaver.lib.realm import active_user_ids, get_realm
from palaver.lib.realm_images import (
    DEFAULT_ICON,
    DEFAULT_LOGO,
    ICON_SIZE,
    LOGO_MAX_HEIGHT,
    LOGO_MAX_WIDTH,
    icon_key,
    logo_key,
    realm_icon_url,
    realm_logo_url,
)
from palaver.lib.storage import FileStorage
from palaver.lib.users import user_ids_who_can_access
from palaver.models import Realm, UserProfile
from palaver.models.requester import Requester


def _send_avatar_event(session: Session, user: UserProfile) -> None:
    with transaction(session) as tx:
        person = ev.PersonAvatar(
            user_id=user.id,
            avatar_source=user.avatar_source,
            avatar_url=avatar_url(user),
            avatar_url_medium=avatar_url(user, medium=True),
            avatar_version=user.avatar_version,
        )
        recipients = user_ids_who_can_access(session, user)
        tx.send_event(user.realm_id, ev.RealmUserUpdate(person=person), recipients)
        if user.is_bot:
            # Bot settings lists (realm_bots) carry the avatar too.
            change = ev.BotChange(user_id=user.id, avatar_url=avatar_url(user))
            tx.send_event(user.realm_id, ev.RealmBotUpdate(bot=change), bot_event_recipients(session, user))


def do_upload_avatar(session: Session, storage: FileStorage, user: UserProfile, data: bytes) -> str:
    """Store the picture (cropped square, 100 and 500 px) and switch the user to it."""
    # Decoding errors surface before anything changes.
    return do_store_avatar(session, storage, user, avatar_images(data))


def do_store_avatar(
    session: Session, storage: FileStorage, user: UserProfile, images: tuple[bytes, bytes]
) -> str:
    """Switch the user to a picture already decoded by ``avatar_images`` (normal, medium):
    what a request that changes more than the avatar decodes first, so a picture that is
    not an image refuses the whole request."""
    normal, medium = images
    old_hash = user.avatar_hash
    new_hash = new_avatar_hash()
    # Stored before the commit, under a new name: readers of the old URL keep their picture
    # until the event tells them of the new one.
    storage.save(uploaded_avatar_key(user.realm_id, new_hash), normal, "image/png")
    storage.save(uploaded_avatar_key(user.realm_id, new_hash, medium=True), medium, "image/png")
    with transaction(session):
        user.avatar_source = UPLOADED
        user.avatar_hash = new_hash
        user.avatar_version += 1
        _send_avatar_event(session, user)
    if old_hash:
        _delete_avatar_files(storage, user.realm_id, old_hash)
    return avatar_url(user)


def do_delete_avatar(session: Session, storage: FileStorage, user: UserProfile) -> str:
    """Back to the default picture (Gravatar or generated)."""
    old_hash = user.avatar_hash
    with transaction(session):
        user.avatar_source = GRAVATAR
        user.avatar_hash = None
        user.avatar_version += 1
        _send_avatar_event(session, user)
    if old_hash:
        _delete_avatar_files(storage, user.realm_id, old_hash)
    return avatar_url(user)


def _delete_avatar_files(storage: FileStorage, realm_id: int, avatar_hash: str) -> None:
    storage.delete(uploaded_avatar_key(realm_id, avatar_hash))
    storage.delete(uploaded_avatar_key(realm_id, avatar_hash, medium=True))


# Organization icon and logos ------------------------------------------------------------------


def _check_admin(user: Requester) -> None:
    if not user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()


def _send_realm_images(session: Session, realm: Realm, data: dict[str, str | bool | int | None]) -> None:
    with transaction(session) as tx:
        tx.send_event(realm.id, ev.RealmUpdateDict(data=data), active_user_ids(session, realm.id))


def do_change_realm_icon(session: Session, storage: FileStorage, user: Requester, data: bytes | None) -> str:
    """Upload (``data``) or remove (None) the icon; returns its new URL."""
    _check_admin(user)
    realm = get_realm(session, user.realm_id)
    if data is not None:
        storage.save(icon_key(realm.id), square_png(data, ICON_SIZE), "image/png")
    settings = session.info["db"].settings
    with transaction(session):
        realm.icon_source = UPLOADED if data is not None else DEFAULT_ICON
        realm.icon_version += 1
        url = realm_icon_url(settings, realm)
        _send_realm_images(session, realm, {"icon_url": url, "icon_source": realm.icon_source})
    if data is None:
        storage.delete(icon_key(realm.id))
    return url


def do_change_realm_logo(
    session: Session, storage: FileStorage, user: Requester, data: bytes | None, *, night: bool
) -> str:
    """Upload (``data``) or remove (None) the day or night logo; returns its new URL."""
    _check_admin(user)
    realm = get_realm(session, user.realm_id)
    key = logo_key(realm.id, night=night)
    if data is not None:
        storage.save(key, fit_png(data, LOGO_MAX_WIDTH, LOGO_MAX_HEIGHT), "image/png")
    settings = session.info["db"].settings
    source = UPLOADED if data is not None else DEFAULT_LOGO
    prefix = "night_logo" if night else "logo"
    with transaction(session):
        if night:
            realm.night_logo_source = source
            realm.night_logo_version += 1
        else:
            realm.logo_source = source
            realm.logo_version += 1
        url = realm_logo_url(settings, realm, night=night)
        _send_realm_images(session, realm, {f"{prefix}_url": url, f"{prefix}_source": source})
    if data is None:
        storage.delete(key)
    return url
