"""Push notification test doubles: a relay on loopback that records what it receives, and
devices registered with known keys. A pytest plugin (tests/conftest.py), so its fixtures
``fake_relay``, ``relay`` and ``push_services`` serve every test module."""

from __future__ import annotations

import base64
import dataclasses
import os
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from nacl.secret import SecretBox
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from palaver.actions.devices import do_register_device, do_register_push_device
from palaver.lib.devices import PushKey, PushToken
from palaver.models import UserProfile
from palaver.models.requester import Requester
from palaver.services import Services
from tests.helpers import wait_until
from tests.servers import asgi_on_loopback


class FakeRelay:
    """A relay on 127.0.0.1 that records requests, answering with ``status``."""

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        # Each request's client address: which connection it came on.
        self.peers: list[tuple[str, int]] = []
        self.status = 200
        self.app = Starlette(routes=[Route("/notify", self.notify, methods=["POST"])])
        self.url = ""

    async def notify(self, request: Request) -> JSONResponse:
        self.received.append(await request.json())
        if request.client is not None:
            self.peers.append((request.client.host, request.client.port))
        return JSONResponse({"result": "success" if self.status == 200 else "error"}, self.status)

    def wait_for(self, count: int) -> list[dict[str, Any]]:
        wait_until(lambda: len(self.received) >= count)
        return self.received


@pytest.fixture(scope="module")
def fake_relay() -> Iterator[FakeRelay]:
    relay = FakeRelay()
    with asgi_on_loopback(relay.app) as url:
        relay.url = f"{url}/notify"
        yield relay


@pytest.fixture
def relay(fake_relay: FakeRelay) -> FakeRelay:
    fake_relay.received.clear()
    fake_relay.peers.clear()
    fake_relay.status = 200
    return fake_relay


@pytest.fixture
def push_services(services: Services, relay: FakeRelay) -> Services:
    return dataclasses.replace(
        services, settings=services.settings.model_copy(update={"push_relay_url": relay.url})
    )


def new_key() -> bytes:
    return b"\x31" + os.urandom(32)


def token(token_id: bytes = b"12345678", kind: str = "fcm") -> PushToken:
    return PushToken(
        kind=kind,
        token_id=base64.b64encode(token_id).decode(),
        bouncer_public_key=base64.b64encode(b"relay public key").decode(),
        encrypted_push_registration=base64.b64encode(b"sealed registration").decode(),
    )


def add_device(
    services: Services,
    user_id: int,
    *,
    key: PushKey | None = None,
    push_token: PushToken | None = None,
    via_service: bool = False,
) -> int:
    with services.db.session() as session:
        user = session.get(UserProfile, user_id)
        assert user is not None
        requester = Requester.of(user)
        device = do_register_device(session, requester)
        if key is not None or push_token is not None:
            do_register_push_device(
                session, requester, device.id, key=key, token=push_token, via_service=via_service
            )
        return device.id


def decrypt(key: bytes, notification: dict[str, Any]) -> Any:
    plaintext = SecretBox(key[1:]).decrypt(base64.b64decode(notification["encrypted_data"], validate=True))
    return orjson.loads(plaintext)
