"""Every token-bearing URL answers only on the host of the organization that issued it.

Two organizations on one server, A and B (each on its own subdomain). Everything B issues —
upload URLs and their temporary and thumbnail forms, avatars, custom emoji, organization
icons, export archives, invitation, password-reset and email-change links, API keys, the
session cookie, email-gateway addresses — is opened on B's host (it works: the sweep is
not vacuous) and on A's host (it must not: 401 or 404, and nothing of B's in the body).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

import httpx
import pytest
from sqlalchemy import select

from palaver.actions.email_gateway import GatewayError, do_receive_email
from palaver.lib.storage import make_storage
from palaver.lib.web_sessions import SESSION_COOKIE
from palaver.models.email_outbox import ChannelEmailAddress, MissedMessageAddress
from palaver.models.invites import Confirmation, ConfirmationKind
from palaver.services import Services
from tests.api.test_messages_send import create_channel, send_stream
from tests.client import TestClient
from tests.helpers import Api, SeededRealm, assert_json_success, basic_auth, seed_realm
from tests.images import image_bytes
from tests.web.web_helpers import log_in


@dataclass
class Issued:
    """One URL organization B issued, and the credentials (if any) it is opened with."""

    name: str
    url: str
    # Sent with the request: B's own credentials where the URL needs some.
    headers: dict[str, str]
    # Bytes only B's answer holds (so A's answer can be checked not to leak them).
    marker: bytes | None = None


@pytest.fixture
def two(client: TestClient, services: Services, realm: SeededRealm) -> tuple[SeededRealm, SeededRealm]:
    return realm, seed_realm(services)


def _session_cookie(client: TestClient, realm: SeededRealm) -> str:
    browser = TestClient(client.app, base_url=f"http://{realm.host}")
    try:
        log_in(browser, realm.hamlet)
        return str(browser.cookies[SESSION_COOKIE])
    finally:
        browser.close()


def _issued_by(client: TestClient, services: Services, b: SeededRealm) -> list[Issued]:
    api = Api(client, b)
    picture = image_bytes(40, 30)
    auth = {"authorization": basic_auth(b.hamlet)}
    cookie = {"cookie": f"{SESSION_COOKIE}={_session_cookie(client, b)}"}
    upload = assert_json_success(
        api.post(b.hamlet, "user_uploads", files={"file": ("photo.png", picture, "image/png")})
    )["url"]
    path = upload.removeprefix("/user_uploads/")
    temporary = assert_json_success(api.get(b.hamlet, f"user_uploads/{path}"))["url"]
    thumbnail = f"/user_uploads/thumbnail/{path}/840x560.webp"
    avatar = assert_json_success(
        api.post(b.hamlet, "users/me/avatar", files={"file": ("me.png", picture, "image/png")})
    )["avatar_url"]
    assert_json_success(
        api.post(b.iago, "realm/emoji/b_emoji", files={"file": ("e.png", picture, "image/png")})
    )
    emoji = assert_json_success(api.get(b.iago, "realm/emoji"))["emoji"]
    [emoji_url] = [e["source_url"] for e in emoji.values() if e["name"] == "b_emoji"]
    icon = assert_json_success(
        api.post(b.iago, "realm/icon", files={"file": ("icon.png", picture, "image/png")})
    )["icon_url"]
    export_key = f"{b.id}/exports/{secrets.token_urlsafe(24)[:32]}/export.zip"
    make_storage(services.settings).save(export_key, b"PK\x05\x06B-export" + bytes(14))
    invite = assert_json_success(api.post(b.iago, "invites/multiuse", {"invite_expires_in_minutes": None}))
    join = httpx.URL(invite["invite_link"]).path
    client.post("/accounts/password/reset/", data={"email": b.othello.email}, headers={"host": b.host})
    new_email = f"cordelia-new@{b.string_id}.example.com"
    assert_json_success(api.patch(b.cordelia, "settings", {"email": new_email}))
    with services.db.session() as session:
        reset_key = session.scalars(
            select(Confirmation.key).where(
                Confirmation.user_profile_id == b.othello.id,
                Confirmation.kind == ConfirmationKind.PASSWORD_RESET,
            )
        ).one()
        change_key = session.scalars(
            select(Confirmation.key).where(
                Confirmation.user_profile_id == b.cordelia.id,
                Confirmation.kind == ConfirmationKind.EMAIL_CHANGE,
            )
        ).one()
    return [
        # An upload with each credential a client sends for it.
        Issued("upload, HTTP Basic", upload, auth, picture),
        Issued("upload, api_key", f"{upload}?api_key={b.hamlet.api_key}", {}, picture),
        Issued("upload, session cookie", upload, cookie, picture),
        Issued("temporary upload URL", temporary, {}, picture),
        Issued("thumbnail, HTTP Basic", thumbnail, auth, picture),
        Issued("thumbnail, session cookie", thumbnail, cookie, picture),
        Issued("thumbnail, api_key", f"{thumbnail}?api_key={b.hamlet.api_key}", {}, picture),
        Issued("avatar", avatar, {}),
        Issued("/avatar/ redirect, api_key", f"/avatar/{b.hamlet.id}?api_key={b.hamlet.api_key}", {}),
        Issued("custom emoji", emoji_url, {}),
        Issued("organization icon", icon, {}),
        Issued("export archive", f"/exports/{export_key}", {}, b"B-export"),
        Issued("invitation link", join, {}),
        Issued("password-reset link", f"/accounts/password/reset/{reset_key}/", {}, b.othello.email.encode()),
        Issued("email-change link", f"/accounts/confirm_new_email/{change_key}/", {}, new_email.encode()),
        Issued("API, HTTP Basic", "/api/v1/users/me", auth, b.hamlet.email.encode()),
        Issued("web API, session cookie", "/json/users/me", cookie, b.hamlet.email.encode()),
    ]


def test_every_token_answers_only_on_its_organizations_host(
    client: TestClient, services: Services, two: tuple[SeededRealm, SeededRealm]
) -> None:
    a, b = two
    issued = _issued_by(client, services, b)
    refused = []
    for item in issued:
        # The email-change link is spent by opening it, so it is tried on A's host first.
        on_a = client.get(item.url, headers={**item.headers, "host": a.host}, follow_redirects=False)
        on_b = client.get(item.url, headers={**item.headers, "host": b.host}, follow_redirects=False)
        assert on_b.status_code in (200, 302), (item.name, on_b.status_code, on_b.text[:200])
        if item.marker is not None and on_b.status_code == 200:
            assert item.marker in on_b.content, item.name
        if on_a.status_code not in (401, 404) or (item.marker is not None and item.marker in on_a.content):
            refused.append(f"{item.name}: {on_a.status_code} on A's host")
    assert refused == []


def test_email_gateway_addresses_stay_in_their_organization(
    client: TestClient, services: Services, two: tuple[SeededRealm, SeededRealm]
) -> None:
    """The gateway has one domain for the server; an address is bound to its organization by
    what it names: a row mixing two organizations' people, channels or messages is refused."""
    a, b = two
    create_channel(Api(client, a), a.hamlet, "a-channel", [a.hamlet])
    b_channel = create_channel(Api(client, b), b.hamlet, "b-channel", [b.hamlet])
    a_message = send_stream(Api(client, a), a.hamlet, "a-channel", "t", "in A")
    mail = b"From: someone@example.com\r\nSubject: hello\r\n\r\nposted by mail\r\n"
    with services.db.session() as session:
        mixed_channel = ChannelEmailAddress(
            realm_id=b.id,
            stream_id=b_channel,
            creator_id=a.hamlet.id,
            sender_id=a.hamlet.id,
            token=secrets.token_hex(16),
        )
        mixed_reply = MissedMessageAddress(
            token=secrets.token_hex(16), user_profile_id=b.hamlet.id, message_id=a_message
        )
        own_reply = MissedMessageAddress(
            token=secrets.token_hex(16), user_profile_id=a.hamlet.id, message_id=a_message
        )
        session.add_all([mixed_channel, mixed_reply, own_reply])
        session.commit()
        tokens = (mixed_channel.token, mixed_reply.token, own_reply.token)
    with pytest.raises(GatewayError):
        do_receive_email(services.settings, services.db, mail, f"b-channel.{tokens[0]}@gateway.example.com")
    with pytest.raises(GatewayError):
        do_receive_email(services.settings, services.db, mail, f"mm{tokens[1]}@gateway.example.com")
    # The address of A's own person and conversation works.
    assert do_receive_email(services.settings, services.db, mail, f"mm{tokens[2]}@gateway.example.com") > 0
