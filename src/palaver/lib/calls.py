"""BigBlueButton calls: signed join links for meetings created on first join.

GET /calls/bigbluebutton/create returns a link on this server naming a fresh meeting, the
creator as its moderator and the call's options, signed with an HMAC of the configured
secret, so the link cannot be altered to make someone else moderator.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlencode

from palaver.config import Settings
from palaver.lib.exceptions import JsonableError

JOIN_PATH = "/calls/bigbluebutton/join"


def _secret(settings: Settings) -> str:
    if not settings.big_blue_button_url or not settings.big_blue_button_secret:
        raise JsonableError("BigBlueButton is not configured.")
    return settings.big_blue_button_secret


def sign(secret: str, fields: list[tuple[str, str]]) -> str:
    message = urlencode(fields).encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def big_blue_button_join_url(
    settings: Settings, *, meeting_name: str, moderator_id: int, voice_only: bool
) -> str:
    secret = _secret(settings)
    fields = [
        ("meeting_id", f"palaver-{secrets.token_hex(10)}"),
        ("name", meeting_name),
        ("moderator", str(moderator_id)),
        ("lock_settings_disable_cam", "true" if voice_only else "false"),
    ]
    return f"{JOIN_PATH}?{urlencode([*fields, ('checksum', sign(secret, fields))])}"
