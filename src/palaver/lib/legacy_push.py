"""Legacy push tokens (FCM/APNs tokens registered unencrypted) and test notifications.

Older mobile apps register a bare token; the server sends their notifications to the relay
in plain JSON (the relay forwards to FCM or APNs), as the token alone gives no key for
end-to-end encryption:

    legacy_token_kind   "fcm" or "apns"
    token               the device's token
    ios_app_id          APNs only: the app's bundle ID
    data                the notification in the legacy plaintext format (``legacy_payload``)
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.models.legacy_push import LegacyPushToken

if TYPE_CHECKING:
    import httpx
from palaver.models.requester import Requester

logger = logging.getLogger("palaver.push")

MAX_TOKEN_LENGTH = 4096
# Reverse-DNS bundle IDs such as org.zulip.Zulip.
_APP_ID = re.compile(r"^[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")


class InvalidPushDeviceTokenError(JsonableError):
    code = "INVALID_PUSH_DEVICE_TOKEN"

    def __init__(self) -> None:
        super().__init__("Device not recognized")


@dataclass(frozen=True)
class LegacyTarget:
    kind: str
    token: str
    ios_app_id: str | None


def check_token(kind: str, token: str) -> str:
    if not token or len(token) > MAX_TOKEN_LENGTH:
        raise JsonableError("Empty or invalid length token")
    if kind == "apns":
        # APNs tokens are hexadecimal; anything else cannot address an Apple device.
        try:
            bytes.fromhex(token)
        except ValueError:
            raise JsonableError("Invalid APNS token") from None
    return token


def check_app_id(appid: str) -> str:
    if not _APP_ID.match(appid):
        raise JsonableError("appid has invalid format")
    return appid


def get_token(session: Session, user: Requester, kind: str, token: str) -> LegacyPushToken | None:
    return session.scalar(
        select(LegacyPushToken).where(
            LegacyPushToken.user_profile_id == user.user_id,
            LegacyPushToken.kind == kind,
            LegacyPushToken.token == token,
        )
    )


def legacy_targets(session: Session, user_id: int, token: str | None = None) -> list[LegacyTarget]:
    query = select(LegacyPushToken).where(LegacyPushToken.user_profile_id == user_id)
    if token is not None:
        query = query.where(LegacyPushToken.token == token)
    return [
        LegacyTarget(t.kind, t.token, t.ios_app_id)
        for t in session.scalars(query.order_by(LegacyPushToken.id))
    ]


def legacy_payload(payload: dict[str, Any]) -> dict[str, str]:
    """A notification in the plaintext format apps registered this way parse (Zulip's
    pre-E2EE FCM data: ``event`` for the type, every value a string, IDs comma-joined)."""
    kind = payload["type"]
    data = {
        "event": kind,
        "realm_url": payload["realm_url"],
        "realm_uri": payload["realm_url"],
        "realm_name": payload["realm_name"],
        "user_id": str(payload["user_id"]),
    }
    if kind == "remove":
        ids = [str(i) for i in payload["message_ids"]]
        data["zulip_message_ids"] = ",".join(ids)
        data["zulip_message_id"] = ids[0] if ids else ""
        return data
    data["time"] = str(payload["time"])
    if kind != "message":
        return data
    data.update(
        sender_id=str(payload["sender_id"]),
        sender_avatar_url=payload["sender_avatar_url"],
        sender_full_name=payload["sender_full_name"],
        zulip_message_id=str(payload["message_id"]),
        content=payload["content"],
    )
    if "channel_id" in payload:
        data.update(
            recipient_type="stream",
            stream_id=str(payload["channel_id"]),
            stream=payload["channel_name"],
            topic=payload["topic"],
        )
    else:
        data["recipient_type"] = "private"
        ids = payload["recipient_user_ids"]
        if len(ids) > 2:
            data["pm_users"] = ",".join(str(i) for i in ids)
    return data


def legacy_relay_request(target: LegacyTarget, payload: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {
        "legacy_token_kind": target.kind,
        "token": target.token,
        "data": legacy_payload(payload),
    }
    if target.ios_app_id is not None:
        body["ios_app_id"] = target.ios_app_id
    return body


def post_to_relay(client: httpx.Client, url: str, body: dict[str, Any], what: str) -> bool:
    """POST one notification to the relay; whether it took it. Failures are logged, never
    raised (``what`` names the device in the log)."""
    import httpx  # noqa: PLC0415  (loaded by the caller's client)

    try:
        response = client.post(url, json=body)
    except httpx.HTTPError as e:
        logger.warning("push relay unreachable for %s: %s", what, e)
        return False
    if not response.is_success:
        logger.warning("push relay refused %s: HTTP %d", what, response.status_code)
    return response.is_success


def send_to_legacy_targets(
    url: str, targets: list[LegacyTarget], payload: dict[str, Any], client: httpx.Client
) -> int:
    """Post the payload for each token to the relay at ``url``; returns how many it accepted."""
    return sum(
        post_to_relay(client, url, legacy_relay_request(t, payload), f"a legacy {t.kind} token")
        for t in targets
    )
