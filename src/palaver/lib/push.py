"""Mobile push notifications, end-to-end encrypted for each device, sent through the relay.

For each of the user's devices with a complete push registration the server encrypts the
notification with the device's own key (libsodium secret box) and POSTs one JSON object
to the relay (``Settings.push_relay_url``):

    push_key_id                    which of the device's keys the notification is for
    token_kind, token_id, bouncer_public_key, encrypted_push_registration
                                   the device's token registration; only the relay reads it
    encrypted_data                 standard Base64 of nonce + ciphertext of the JSON payload

The relay decrypts the registration to address the device and forwards the ciphertext, which
only the device can read. Sending goes over the network, so it must never happen inside a
database transaction (a rollback cannot recall a notification), and a relay failure must
never fail the write that caused it: failures are logged.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.devices import SECRETBOX_KEY_PREFIX
from palaver.lib.legacy_push import legacy_targets, send_to_legacy_targets
from palaver.models.devices import Device

if TYPE_CHECKING:
    import httpx

    from palaver.db import Database

logger = logging.getLogger("palaver.push")

# Seconds: the whole request, and connecting.
RELAY_TIMEOUT_SECONDS = 10.0
RELAY_CONNECT_TIMEOUT_SECONDS = 5.0

JsonDict = dict[str, Any]


@dataclass(frozen=True)
class PushTarget:
    """What sending to one device needs, read before any network I/O starts."""

    device_id: int
    push_key: bytes
    push_key_id: int
    token_kind: str
    token_id: str
    bouncer_public_key: str
    encrypted_push_registration: str


def encrypt_payload(push_key: bytes, payload: JsonDict) -> bytes:
    """Nonce and ciphertext of the payload's JSON under the device's push key."""
    if push_key[0] != SECRETBOX_KEY_PREFIX:
        raise ValueError(f"unsupported push key type 0x{push_key[0]:02x}")
    from nacl.secret import SecretBox  # noqa: PLC0415  (idle servers need no PyNaCl)

    return bytes(SecretBox(push_key[1:]).encrypt(orjson.dumps(payload)))


def relay_request(target: PushTarget, payload: JsonDict) -> JsonDict:
    return {
        "push_key_id": target.push_key_id,
        "token_kind": target.token_kind,
        "token_id": target.token_id,
        "bouncer_public_key": target.bouncer_public_key,
        "encrypted_push_registration": target.encrypted_push_registration,
        "encrypted_data": base64.b64encode(encrypt_payload(target.push_key, payload)).decode(),
    }


def push_targets(session: Session, user_id: int, token_id: str | None = None) -> list[PushTarget]:
    query = select(Device).where(
        Device.user_profile_id == user_id, Device.push_key.is_not(None), Device.token_id.is_not(None)
    )
    if token_id is not None:
        query = query.where(Device.token_id == token_id)
    devices = session.scalars(query.order_by(Device.id))
    return [
        PushTarget(
            device_id=d.id,
            push_key=d.push_key or b"",
            push_key_id=d.push_key_id or 0,
            token_kind=d.token_kind or "",
            token_id=d.token_id or "",
            bouncer_public_key=d.bouncer_public_key or "",
            encrypted_push_registration=d.encrypted_push_registration or "",
        )
        for d in devices
    ]


def relay_client(transport: httpx.BaseTransport | None = None) -> httpx.Client:
    """A client for the relay. Each new one loads the CA bundle (~30 ms of CPU) and opens its
    own connection, so the dispatcher keeps one for every notification it sends."""
    # httpx (with its CLI's rich and pygments, ~7 MiB) only once there is a device to notify.
    import httpx  # noqa: PLC0415

    timeout = httpx.Timeout(RELAY_TIMEOUT_SECONDS, connect=RELAY_CONNECT_TIMEOUT_SECONDS)
    return httpx.Client(timeout=timeout, transport=transport)


def send_push_to_user(
    db: Database,
    relay_url: str | None,
    user_id: int,
    payload: JsonDict,
    *,
    transport: httpx.BaseTransport | None = None,
    token: str | None = None,
    client: httpx.Client | None = None,
) -> int:
    """Send a notification to every registered device of the user, now.

    Returns how many devices the relay accepted it for. Never raises: a caller's write has
    already happened, and a notification that cannot be delivered is only worth a log line.
    Call it outside transactions: ``PushDispatcher`` does so for committed messages.
    """
    if relay_url is None:
        return 0
    try:
        with db.session() as session:
            targets = push_targets(session, user_id, token)
            legacy = legacy_targets(session, user_id, token)
        if not targets and not legacy:
            return 0
        delivered = 0
        import httpx  # noqa: PLC0415

        # A client of the caller's is reused and left open; otherwise one for this call.
        owned = relay_client(transport) if client is None else contextlib.nullcontext(client)
        with owned as http:
            delivered += send_to_legacy_targets(relay_url, legacy, payload, http)
            for target in targets:
                try:
                    response = http.post(relay_url, json=relay_request(target, payload))
                except httpx.HTTPError as e:
                    logger.warning("push relay unreachable for device %d: %s", target.device_id, e)
                    continue
                if response.is_success:
                    delivered += 1
                else:
                    logger.warning(
                        "push relay refused device %d: HTTP %d", target.device_id, response.status_code
                    )
        return delivered
    except Exception:
        logger.exception("push notification to user %d failed", user_id)
        return 0


# Which committed messages notify devices ---------------------------------------------------

# Flags that make a channel message worth a notification; direct messages always are.
_NOTIFYING_FLAGS = frozenset({"mentioned", "stream_wildcard_mentioned", "topic_wildcard_mentioned"})


def notification_payload(realm_id: int, message: JsonDict) -> JsonDict:
    """What a device needs to show a notification; the relay sees only ciphertext of it."""
    payload: JsonDict = {
        "event": "message",
        "realm_id": realm_id,
        "realm_name": message.get("sender_realm_str", ""),
        "message_id": message["id"],
        "sender_id": message["sender_id"],
        "sender_full_name": message["sender_full_name"],
        "time": message["timestamp"],
        "type": message["type"],
        "content": message.get("content", ""),
    }
    if message["type"] == "stream":
        payload["stream_id"] = message.get("stream_id")
        payload["stream"] = message.get("display_recipient")
        payload["topic"] = message.get("subject")
    return payload


class PushDispatcher:
    """Listens on the bus for committed message events and pushes DMs and mentions.

    It runs as a bus listener so actions stay unaware of push; the work (a database read
    and one relay request per device) goes to a small pool so publishing never waits on it.
    """

    def __init__(self, db: Database, relay_url: str, *, max_workers: int = 4) -> None:
        self._db = db
        self._relay_url = relay_url
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="palaver-push")
        # One client shared by the pool's threads (httpx clients may be), made with the first
        # notification: a server whose users register no device never loads httpx.
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    def __call__(self, realm_id: int, event: JsonDict, user_ids: Sequence[int]) -> None:
        if event.get("type") != "message":
            return
        message = event["message"]
        if message["type"] != "private" and not _NOTIFYING_FLAGS.intersection(event.get("flags", ())):
            return
        payload = notification_payload(realm_id, message)
        for user_id in user_ids:
            if user_id != message["sender_id"]:
                self._pool.submit(self._send, user_id, payload)

    def _send(self, user_id: int, payload: JsonDict) -> int:
        with self._client_lock:
            if self._client is None:
                self._client = relay_client()
        return send_push_to_user(self._db, self._relay_url, user_id, payload, client=self._client)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=False)
        if self._client is not None:
            self._client.close()
