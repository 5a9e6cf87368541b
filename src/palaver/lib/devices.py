"""Client devices: push registration checks, reads, and the device record clients see."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import InvalidArgumentError, JsonableError, MissingArgumentError
from palaver.models.devices import Device
from palaver.models.requester import Requester
from palaver.timeutil import to_timestamp

# First byte of a push key: which cryptosystem the rest is a key for.
SECRETBOX_KEY_PREFIX = 0x31
SECRETBOX_KEY_LENGTH = 32
TOKEN_ID_LENGTH = 8
TOKEN_KINDS = ("fcm", "apns")
MAX_PUSH_KEY_ID = 2**32 - 1


class PushServiceNotConfiguredError(JsonableError):
    code = "PUSH_SERVICE_NOT_CONFIGURED"

    def __init__(self) -> None:
        super().__init__("Server is not configured to use push notification service.")


@dataclass(frozen=True)
class PushKey:
    key: bytes  # prefix byte and key, as the client sent them
    key_id: int

    @property
    def secret(self) -> bytes:
        return self.key[1:]


@dataclass(frozen=True)
class PushToken:
    kind: str
    token_id: str
    bouncer_public_key: str
    encrypted_push_registration: str


def _b64decode(name: str, value: str) -> bytes:
    try:
        # validate=True: standard alphabet and padding only, no characters skipped silently.
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgumentError(name) from None


def _complete_group(fields: Mapping[str, object]) -> bool:
    """Whether a group of fields that belong together was sent; a partial group is an error."""
    given = [name for name, value in fields.items() if value is not None]
    if given and len(given) < len(fields):
        missing = next(name for name, value in fields.items() if value is None)
        raise MissingArgumentError(missing)
    return bool(given)


def parse_push_key(push_key: str | None, push_key_id: int | None) -> PushKey | None:
    if not _complete_group({"push_key": push_key, "push_key_id": push_key_id}):
        return None
    assert push_key is not None and push_key_id is not None
    key = _b64decode("push_key", push_key)
    if len(key) != 1 + SECRETBOX_KEY_LENGTH or key[0] != SECRETBOX_KEY_PREFIX:
        raise InvalidArgumentError("push_key")
    if not 0 <= push_key_id <= MAX_PUSH_KEY_ID:
        raise InvalidArgumentError("push_key_id")
    return PushKey(key, push_key_id)


def parse_push_token(
    token_kind: str | None,
    token_id: str | None,
    bouncer_public_key: str | None,
    encrypted_push_registration: str | None,
) -> PushToken | None:
    fields = {
        "token_kind": token_kind,
        "token_id": token_id,
        "bouncer_public_key": bouncer_public_key,
        "encrypted_push_registration": encrypted_push_registration,
    }
    if not _complete_group(fields):
        return None
    assert token_kind is not None and token_id is not None
    assert bouncer_public_key is not None and encrypted_push_registration is not None
    if token_kind not in TOKEN_KINDS:
        raise InvalidArgumentError("token_kind")
    if len(_b64decode("token_id", token_id)) != TOKEN_ID_LENGTH:
        raise InvalidArgumentError("token_id")
    # Only the relay can read these; the server checks they are Base64 and passes them on.
    for name in ("bouncer_public_key", "encrypted_push_registration"):
        if not _b64decode(name, fields[name] or ""):
            raise InvalidArgumentError(name)
    return PushToken(token_kind, token_id, bouncer_public_key, encrypted_push_registration)


def access_device(session: Session, user: Requester, device_id: int) -> Device:
    """The user's own device; another user's looks exactly like a missing one."""
    device = session.get(Device, device_id)
    if device is None or device.user_profile_id != user.user_id:
        raise JsonableError("Invalid device ID")
    return device


def get_devices(session: Session, user_id: int) -> list[Device]:
    return list(session.scalars(select(Device).where(Device.user_profile_id == user_id).order_by(Device.id)))


def format_device(device: Device) -> dict[str, Any]:
    """The device record clients see: never the push key or the encrypted token."""
    updated = device.push_token_last_updated
    return {
        "device_id": device.id,
        "push_key_id": device.push_key_id,
        "push_token_id": device.token_id,
        "push_token_last_updated_timestamp": to_timestamp(updated) if updated else None,
        "pending_push_token_id": device.pending_token_id,
        "push_registration_error_code": device.push_registration_error_code,
    }
