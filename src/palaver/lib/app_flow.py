"""The mobile and desktop apps' sign-in through the browser (Zulip's ``mobile_flow_otp``).

The app opens a login URL with a one-time pad of 64 hex digits; once the person has signed
in (by any method), the server answers with a redirect to
``zulip://login?otp_encrypted_api_key=…&email=…&user_id=…&realm=…``, the API key encrypted
as Zulip's apps expect: its ASCII bytes as hex, each hex digit XORed with the pad's. The
pad never leaves the app, so another app registered for ``zulip://`` learns nothing usable.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

_OTP = re.compile(r"^[0-9a-fA-F]{64}$")
APP_URL = "zulip://login"


def valid_otp(otp: str | None) -> bool:
    return otp is not None and bool(_OTP.match(otp))


def otp_encrypt_api_key(api_key: str, otp: str) -> str:
    hex_key = api_key.encode("ascii").hex()
    if len(hex_key) != len(otp):
        raise ValueError("the pad must be as long as the hex-encoded key")
    return "".join(f"{int(a, 16) ^ int(b, 16):x}" for a, b in zip(hex_key, otp, strict=True))


def app_redirect_url(*, api_key: str, otp: str, email: str, user_id: int, realm_url: str) -> str:
    params = {"otp_encrypted_api_key": otp_encrypt_api_key(api_key, otp), "email": email}
    params |= {"user_id": str(user_id), "realm": realm_url}
    return f"{APP_URL}?{urlencode(params)}"
