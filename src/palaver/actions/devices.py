"""Writes to client devices; the user's own clients get device events."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.db import transaction
from palaver.events import types as ev
from palaver.lib.devices import PushKey, PushToken, access_device, format_device
from palaver.lib.exceptions import JsonableError, MissingArgumentError
from palaver.models.devices import Device
from palaver.models.users import UserProfile
from palaver.timeutil import utcnow


def do_register_device(session: Session, user: UserProfile) -> Device:
    with transaction(session) as tx:
        device = Device(user_profile_id=user.id, date_created=utcnow())
        session.add(device)
        session.flush()
        tx.send_event(user.realm_id, ev.DeviceAdd(**format_device(device)), [user.id])
    return device


def do_remove_device(session: Session, user: UserProfile, device_id: int) -> None:
    with transaction(session) as tx:
        device = access_device(session, user, device_id)
        session.delete(device)
        tx.send_event(user.realm_id, ev.DeviceRemove(device_id=device_id), [user.id])


def do_register_push_device(
    session: Session, user: UserProfile, device_id: int, *, key: PushKey | None, token: PushToken | None
) -> None:
    """Register a device for push notifications, or rotate its key or its token.

    The first registration needs both, as a notification can be sent only with a key to
    encrypt it and a token to address it; afterwards either may change alone.
    """
    with transaction(session) as tx:
        device = access_device(session, user, device_id)
        registered = device.push_key is not None and device.token_id is not None
        if not registered and key is None:
            raise MissingArgumentError("push_key")
        if not registered and token is None:
            raise MissingArgumentError("token_kind")
        if key is None and token is None:
            raise JsonableError("Nothing to update: send the push key fields, the token fields, or both.")
        if key is not None:
            device.push_key, device.push_key_id = key.key, key.key_id
        if token is not None:
            device.token_kind = token.kind
            device.token_id = token.token_id
            device.bouncer_public_key = token.bouncer_public_key
            device.encrypted_push_registration = token.encrypted_push_registration
            device.push_token_last_updated = utcnow()
        session.flush()
        tx.send_event(user.realm_id, ev.DeviceUpdate(**format_device(device)), [user.id])
