"""Legacy push tokens (FCM/APNs tokens registered unencrypted) and test notifications.

Older mobile apps register a bare token; the server sends their notifications to the relay
in plain JSON (the relay forwards to FCM or APNs), as the token alone gives no key for
end-to-end encryption:

    legacy_token_kind   "fcm" or "apns"
    token               the device's token
    ios_app_id          APNs only: the app's bundle ID
    data                the notification payload
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
from palaver.models.users import UserProfile

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


def get_token(session: Session, user: UserProfile, kind: str, token: str) -> LegacyPushToken | None:
    return session.scalar(
        select(LegacyPushToken).where(
            LegacyPushToken.user_profile_id == user.id,
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


def legacy_relay_request(target: LegacyTarget, payload: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"legacy_token_kind": target.kind, "token": target.token, "data": payload}
    if target.ios_app_id is not None:
        body["ios_app_id"] = target.ios_app_id
    return body


def send_to_legacy_targets(
    url: str, targets: list[LegacyTarget], payload: dict[str, Any], client: httpx.Client
) -> int:
    """Post the payload for each token to the relay at ``url``; returns how many it accepted.
    Never raises."""
    import httpx  # noqa: PLC0415  (loaded by the caller's client: push.py)

    delivered = 0
    for target in targets:
        try:
            response = client.post(url, json=legacy_relay_request(target, payload))
        except httpx.HTTPError as e:
            logger.warning("push relay unreachable for a legacy %s token: %s", target.kind, e)
            continue
        if response.is_success:
            delivered += 1
        else:
            logger.warning("push relay refused a legacy %s token: HTTP %d", target.kind, response.status_code)
    return delivered
