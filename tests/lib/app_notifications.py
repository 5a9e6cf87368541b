"""Parses push notifications the way Zulip's mobile app does, from the description of its
models in fixtures/zulip_flutter_notifications.json (derived from the app's source at the
commit named there): decode the FCM or APNs envelope, decrypt with the device's push key,
pick the model by ``type`` and check every key the app reads, with the app's casts."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
from nacl.secret import SecretBox

DESCRIPTION: dict[str, Any] = orjson.loads(
    (Path(__file__).parent / "fixtures" / "zulip_flutter_notifications.json").read_bytes()
)


class Unparsable(AssertionError):
    """The app would drop this notification (an exception, or UnexpectedNotifPayload)."""


@dataclass(frozen=True)
class Parsed:
    model: str  # NotifPayloadNewMessage or NotifPayloadRemove
    recipient: str | None  # NotifPayloadChannelRecipient / NotifPayloadDmRecipient
    payload: dict[str, Any]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _valid(kind: str, v: Any) -> bool:
    if kind == "string":
        return isinstance(v, str)
    if kind == "string?":
        return v is None or isinstance(v, str)
    if kind == "int":
        return _is_int(v)
    if kind == "int_string":
        return isinstance(v, str) and v.isdigit()
    if kind == "int_list":
        return isinstance(v, list) and all(_is_int(i) for i in v)
    if kind == "url":
        return isinstance(v, str) and bool(urlsplit(v).scheme) and bool(urlsplit(v).netloc)
    assert kind == "base64", kind
    return isinstance(v, str)


def _check(kind: str, value: Any, key: str) -> None:
    if not _valid(kind, value):
        raise Unparsable(f"{key}: {value!r} is not {kind}")
    if kind == "base64":
        try:
            base64.b64decode(value, validate=True)
        except binascii.Error:
            raise Unparsable(f"{key}: not Base64") from None


def _fields(model: str, payload: dict[str, Any]) -> None:
    for key, kind in DESCRIPTION["models"][model].items():
        if kind.startswith("NotifPayload"):  # the recipient, read from the whole payload
            continue
        if kind.endswith("?"):
            _check(kind, payload.get(key), key)
        elif key not in payload:
            raise Unparsable(f"{model}: missing {key}")
        else:
            _check(kind, payload[key], key)


def _envelope(name: str, data: dict[str, Any]) -> tuple[int, bytes]:
    for key, kind in DESCRIPTION["envelopes"][name].items():
        if key not in data:
            raise Unparsable(f"{name}: missing {key}")
        _check(kind, data[key], key)
    return int(data["push_key_id"]), base64.b64decode(data["encrypted_data"])


def decrypt(push_key: bytes, ciphertext: bytes) -> dict[str, Any]:
    spec = DESCRIPTION["push_key"]
    if len(push_key) != 1 + spec["key_bytes"] or push_key[0] != spec["tag"]:
        raise Unparsable("bad push key")
    nonce, box = ciphertext[: spec["nonce_bytes"]], ciphertext[spec["nonce_bytes"] :]
    plaintext = SecretBox(push_key[1:]).decrypt(box, nonce)
    parsed = orjson.loads(plaintext)
    if not isinstance(parsed, dict):
        raise Unparsable("not a JSON object")
    return parsed


def parse_payload(payload: dict[str, Any], *, realm_url: str, user_id: int) -> Parsed:
    model = DESCRIPTION["dispatch"].get(payload.get("type"))
    if model is None:
        raise Unparsable(f"UnexpectedNotifPayload: type {payload.get('type')!r}")
    _fields(model, payload)
    recipient = None
    if model == "NotifPayloadNewMessage":
        recipient = "NotifPayloadChannelRecipient" if "channel_id" in payload else "NotifPayloadDmRecipient"
        _fields(recipient, payload)
    # The app shows nothing for a payload whose identity is not the push key's account.
    if urlsplit(payload["realm_url"])[:2] != urlsplit(realm_url)[:2] or payload["user_id"] != user_id:
        raise Unparsable("realm/userId fails to match push key")
    return Parsed(model, recipient, payload)


def parse_fcm(data: dict[str, Any], keys: dict[int, bytes], *, realm_url: str, user_id: int) -> Parsed:
    """FCM data: every value a string (FCM allows no other), then as the app reads it."""
    if not all(isinstance(v, str) for v in data.values()):
        raise Unparsable("FCM data values must be strings")
    key_id, ciphertext = _envelope("EncryptedFcmMessage", data)
    if key_id not in keys:
        raise Unparsable("no such push key")
    return parse_payload(decrypt(keys[key_id], ciphertext), realm_url=realm_url, user_id=user_id)


def parse_apns(payload: dict[str, Any], keys: dict[int, bytes], *, realm_url: str, user_id: int) -> Parsed:
    key_id, ciphertext = _envelope("EncryptedApnsPayload", payload)
    if key_id not in keys:
        raise Unparsable("no such push key")
    return parse_payload(decrypt(keys[key_id], ciphertext), realm_url=realm_url, user_id=user_id)
