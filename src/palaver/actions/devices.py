"""Writes to client devices and their push registrations; the user's own clients get device
events. Also the bookkeeping of which messages' notifications may still show on devices."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.devices import PushKey, PushToken, access_device, format_device
from palaver.lib.exceptions import JsonableError, MissingArgumentError
from palaver.models.devices import Device
from palaver.models.legacy_push import LegacyPushToken
from palaver.models.messages import MessageFlag, UserMessage
from palaver.models.requester import Requester
from palaver.models.users import UserProfile
from palaver.timeutil import utcnow


def do_register_device(session: Session, user: Requester) -> Device:
    with transaction(session) as tx:
        device = Device(user_profile_id=user.user_id, date_created=utcnow())
        session.add(device)
        session.flush()
        tx.send_event(user.realm_id, ev.DeviceAdd(**format_device(device)), [user.user_id])
    return device


def do_remove_device(session: Session, user: Requester, device_id: int) -> None:
    with transaction(session) as tx:
        device = access_device(session, user, device_id)
        session.delete(device)
        tx.send_event(user.realm_id, ev.DeviceRemove(device_id=device_id), [user.user_id])


def legacy_token_id(token: str) -> str:
    """The ``token_id`` an app sends for a provider token: Base64 of its SHA-256's first 8 bytes."""
    return base64.b64encode(hashlib.sha256(token.encode()).digest()[:8]).decode()


def _drop_matching_legacy_tokens(session: Session, user_id: int, token_id: str) -> None:
    # The app registered the same provider token the old way too; notifications now reach it
    # encrypted, so the plaintext registration goes (the spec's rule for a successful one).
    for row in session.scalars(select(LegacyPushToken).where(LegacyPushToken.user_profile_id == user_id)):
        if legacy_token_id(row.token) == token_id:
            session.delete(row)


def do_register_push_device(
    session: Session,
    user: Requester,
    device_id: int,
    *,
    key: PushKey | None,
    token: PushToken | None,
    via_service: bool = False,
) -> None:
    """Register a device for push notifications, or rotate its key or its token.

    The first registration needs both, as a notification can be sent only with a key to
    encrypt it and a token to address it; afterwards either may change alone. Through Zulip's
    push service a new token is pending until the push worker has forwarded it and the
    service accepted it (``do_finish_push_registration``); notifications meanwhile go to
    the token in use, if any. Registering what is already registered changes nothing.
    """
    with transaction(session) as tx:
        device = access_device(session, user, device_id)
        registered = device.push_key is not None and (device.token_id or device.pending_token_id) is not None
        if not registered and key is None:
            raise MissingArgumentError("push_key")
        if not registered and token is None:
            raise MissingArgumentError("token_kind")
        if key is None and token is None:
            raise JsonableError("Nothing to update: send the push key fields, the token fields, or both.")
        changed = False
        if key is not None and (device.push_key != key.key or device.push_key_id != key.key_id):
            device.push_key, device.push_key_id = key.key, key.key_id
            changed = True
        if token is not None and not _same_token(device, token, via_service=via_service):
            device.token_kind = token.kind
            device.bouncer_public_key = token.bouncer_public_key
            device.encrypted_push_registration = token.encrypted_push_registration
            device.push_token_last_updated = utcnow()
            device.push_registration_error_code = None
            if via_service:
                device.pending_token_id = token.token_id
            else:
                device.token_id, device.pending_token_id = token.token_id, None
                _drop_matching_legacy_tokens(session, user.user_id, token.token_id)
            changed = True
        if not changed:
            return
        session.flush()
        tx.send_event(user.realm_id, ev.DeviceUpdate(**format_device(device)), [user.user_id])


def _same_token(device: Device, token: PushToken, *, via_service: bool) -> bool:
    current = device.pending_token_id or device.token_id if via_service else device.token_id
    return (
        current == token.token_id
        and device.push_registration_error_code is None
        and device.encrypted_push_registration == token.encrypted_push_registration
    )


def do_finish_push_registration(
    session: Session, device_id: int, token_id: str, *, error_code: str | None = None
) -> None:
    """The push service's answer to a forwarded token: in use from now on, or refused with
    ``error_code`` (the app sees it and registers again). A token superseded meanwhile is
    left alone."""
    with transaction(session) as tx:
        device = session.get(Device, device_id)
        if device is None or device.pending_token_id != token_id:
            return
        if error_code is None:
            device.token_id, device.pending_token_id = token_id, None
            device.push_registration_error_code = None
            _drop_matching_legacy_tokens(session, device.user_profile_id, token_id)
        else:
            device.push_registration_error_code = error_code
        session.flush()
        realm_id = session.scalar(
            select(UserProfile.realm_id).where(UserProfile.id == device.user_profile_id)
        )
        assert realm_id is not None
        tx.send_event(realm_id, ev.DeviceUpdate(**format_device(device)), [device.user_profile_id])


def do_drop_push_tokens(session: Session, token_ids: Iterable[str]) -> int:
    """Forget tokens the push service says are gone (the app was uninstalled, or FCM or
    APNs refused the token): those devices get no notifications until they register again."""
    ids = list(set(token_ids))
    if not ids:
        return 0
    with transaction(session) as tx:
        rows = session.execute(
            select(Device, UserProfile.realm_id)
            .join(UserProfile, UserProfile.id == Device.user_profile_id)
            .where(Device.token_id.in_(ids))
        ).all()
        for device, realm_id in rows:
            device.token_id = None
            device.token_kind = None if device.pending_token_id is None else device.token_kind
            session.flush()
            tx.send_event(realm_id, ev.DeviceUpdate(**format_device(device)), [device.user_profile_id])
    return len(rows)


_NOTIFIED = int(MessageFlag.ACTIVE_MOBILE_PUSH_NOTIFICATION)


def do_mark_push_notified(session: Session, user_id: int, message_ids: Iterable[int]) -> None:
    """Remember that these messages' notifications went to the user's devices."""
    _set_notified(session, user_id, message_ids, UserMessage.flags.op("|")(_NOTIFIED))


def do_clear_push_notified(session: Session, user_id: int, message_ids: Iterable[int]) -> None:
    _set_notified(session, user_id, message_ids, UserMessage.flags.op("&")(~_NOTIFIED))


def _set_notified(session: Session, user_id: int, message_ids: Iterable[int], flags: Any) -> None:
    ids = list(message_ids)
    if not ids:
        return
    with transaction(session):
        session.execute(
            update(UserMessage)
            .where(UserMessage.user_profile_id == user_id, UserMessage.message_id.in_(ids))
            .values(flags=flags)
        )
