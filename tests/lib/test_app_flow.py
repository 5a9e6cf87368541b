"""The apps' flow: which pad a login URL carries, how it travels, and the desktop's cipher."""

from __future__ import annotations

import secrets

import pytest
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from palaver.lib import app_flow


def test_each_kind_travels_within_64_characters_and_comes_back() -> None:
    pad = secrets.token_hex(32)
    for kind in ("mobile", "desktop"):
        flow = app_flow.from_params({f"{kind}_flow_otp": pad.upper()})
        assert flow == app_flow.AppFlow(kind, pad)
        assert len(flow.stored()) <= 64
        assert app_flow.from_stored(flow.stored()) == flow
    assert app_flow.from_params({"next": "/"}) is None
    assert app_flow.from_stored(None) is None and app_flow.from_stored("dnot-a-pad") is None


@pytest.mark.parametrize(
    "params",
    [
        {"mobile_flow_otp": "xyz"},
        {"desktop_flow_otp": "ab" * 31},
        {"mobile_flow_otp": "a" * 64, "desktop_flow_otp": "a" * 64},
    ],
)
def test_malformed_pads_and_both_at_once_are_refused(params: dict[str, str]) -> None:
    with pytest.raises(app_flow.InvalidAppFlowError):
        app_flow.from_params(params)


def test_the_desktop_token_decrypts_with_the_pad_only() -> None:
    key = secrets.token_bytes(32)
    token = app_flow.new_desktop_token()
    assert len(token) == 32 and token.isalnum()
    data = bytes.fromhex(app_flow.desktop_encrypt(token, key.hex()))
    assert AESGCM(key).decrypt(data[:12], data[12:], b"").decode() == token
    with pytest.raises(InvalidTag):
        AESGCM(secrets.token_bytes(32)).decrypt(data[:12], data[12:], b"")
