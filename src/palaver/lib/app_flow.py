"""The mobile and desktop apps' sign-in through the browser (Zulip's ``mobile_flow_otp`` and
``desktop_flow_otp``): one flow, two ways of handing the result back.

The app opens a login URL with a one-time pad of 64 hex digits. Once the person has signed
in (by any method), the server answers

- ``mobile_flow_otp``: a redirect to ``zulip://login?otp_encrypted_api_key=…&email=…
  &user_id=…&realm=…``, the API key encrypted as Zulip's apps expect: its ASCII bytes as hex,
  each hex digit XORed with the pad's;
- ``desktop_flow_otp``: a page showing ``hex(iv + AES-256-GCM(pad, token))``, which the
  person copies; the desktop app, which made the pad, decrypts its clipboard and opens
  ``/accounts/login/subdomain/<token>`` in its own window, where the token (single use, one
  minute) becomes a browser session there.

Either way the pad never leaves the app, so whoever else sees the answer learns nothing
usable. Between the login URL and the answer the flow travels as ``stored()``: the mobile
pad as it is, the desktop pad as ``d`` and its base64url bytes (at most 64 characters, as
the columns that carry it allow).
"""

from __future__ import annotations

import base64
import binascii
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal
from urllib.parse import urlencode

_OTP = re.compile(r"^[0-9a-fA-F]{64}$")
APP_URL = "zulip://login"
# Long enough to press "Copy" on the page; the token is spent by its first use anyway.
DESKTOP_TOKEN_LIFETIME = timedelta(seconds=60)
FlowKind = Literal["mobile", "desktop"]


class InvalidAppFlowError(ValueError):
    """A pad that is not 64 hex digits, or both kinds at once."""


@dataclass(frozen=True)
class AppFlow:
    kind: FlowKind
    otp: str

    @property
    def param(self) -> str:
        """The query or form parameter that carries it (``mobile_flow_otp``, ``desktop_flow_otp``)."""
        return f"{self.kind}_flow_otp"

    def stored(self) -> str:
        if self.kind == "mobile":
            return self.otp
        return "d" + base64.urlsafe_b64encode(bytes.fromhex(self.otp)).decode().rstrip("=")


def valid_otp(otp: str | None) -> bool:
    return otp is not None and bool(_OTP.match(otp))


def from_params(params: Mapping[str, object]) -> AppFlow | None:
    """The flow a login URL or form asks for; None for a browser sign-in.

    Raises InvalidAppFlowError for a malformed pad, or for both kinds at once (Zulip refuses
    those too).
    """
    given = [
        (kind, value)
        for kind in ("mobile", "desktop")
        if isinstance(value := params.get(f"{kind}_flow_otp"), str) and value
    ]
    if len(given) > 1:
        raise InvalidAppFlowError("Can't use both mobile_flow_otp and desktop_flow_otp together.")
    if not given:
        return None
    kind, otp = given[0]
    if not valid_otp(otp):
        raise InvalidAppFlowError(f"Invalid {kind}_flow_otp.")
    return AppFlow(kind, otp.lower())  # type: ignore[arg-type]


def from_stored(value: str | None) -> AppFlow | None:
    if not value:
        return None
    if valid_otp(value):
        return AppFlow("mobile", value)
    if value.startswith("d"):
        try:
            pad = base64.urlsafe_b64decode(value[1:] + "=" * (-len(value[1:]) % 4))
        except (binascii.Error, ValueError):
            return None
        if len(pad) == 32:
            return AppFlow("desktop", pad.hex())
    return None


def otp_encrypt_api_key(api_key: str, otp: str) -> str:
    hex_key = api_key.encode("ascii").hex()
    if len(hex_key) != len(otp):
        raise ValueError("the pad must be as long as the hex-encoded key")
    return "".join(f"{int(a, 16) ^ int(b, 16):x}" for a, b in zip(hex_key, otp, strict=True))


def app_redirect_url(*, api_key: str, otp: str, email: str, user_id: int, realm_url: str) -> str:
    params = {"otp_encrypted_api_key": otp_encrypt_api_key(api_key, otp), "email": email}
    params |= {"user_id": str(user_id), "realm": realm_url}
    return f"{APP_URL}?{urlencode(params)}"


def new_desktop_token() -> str:
    """A one-time login token, shaped like an API key (32 letters and digits), as Zulip's."""
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    return "".join(secrets.choice(alphabet) for _ in range(32))


def desktop_encrypt(token: str, otp: str) -> str:
    """``hex(iv + ciphertext + tag)``: AES-256-GCM with the pad as key, a fresh 12-byte IV and
    no associated data, as the desktop app's clipboard decrypter reads it."""
    # cryptography (~9 MB) loads with the first desktop sign-in, not at start-up.
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: PLC0415

    iv = secrets.token_bytes(12)
    return (iv + AESGCM(bytes.fromhex(otp)).encrypt(iv, token.encode(), b"")).hex()
