"""Push notifications through a fake relay that decrypts what it receives."""

from __future__ import annotations

import base64
import dataclasses
import logging
import os
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
import uvicorn
from nacl.secret import SecretBox
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from palaver.actions.devices import do_register_device, do_register_push_device
from palaver.lib.devices import PushKey, PushToken
from palaver.lib.push import PushDispatcher, encrypt_payload, send_push_to_user
from palaver.models import UserProfile
from palaver.services import Services
from tests.helpers import Api, SeededRealm, assert_json_success, wait_until

PAYLOAD = {"event": "message", "sender_full_name": "Othello", "content": "Hi ✓"}


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
    config = uvicorn.Config(
        relay.app, host="127.0.0.1", port=0, log_level="warning", ws="none", lifespan="off"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_until(lambda: server.started)
    port = server.servers[0].sockets[0].getsockname()[1]
    relay.url = f"http://127.0.0.1:{port}/notify"
    yield relay
    server.should_exit = True
    thread.join(timeout=10)


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
    services: Services, user_id: int, *, key: PushKey | None = None, push_token: PushToken | None = None
) -> int:
    with services.db.session() as session:
        user = session.get(UserProfile, user_id)
        assert user is not None
        device = do_register_device(session, user)
        if key is not None or push_token is not None:
            do_register_push_device(session, user, device.id, key=key, token=push_token)
        return device.id


def decrypt(key: bytes, notification: dict[str, Any]) -> Any:
    plaintext = SecretBox(key[1:]).decrypt(base64.b64decode(notification["encrypted_data"], validate=True))
    return orjson.loads(plaintext)


def test_each_registered_device_gets_its_own_ciphertext(
    push_services: Services, realm: SeededRealm, relay: FakeRelay
) -> None:
    hamlet = realm.hamlet.id
    key_a, key_b = new_key(), new_key()
    add_device(push_services, hamlet, key=PushKey(key_a, 11), push_token=token(b"aaaaaaaa"))
    add_device(push_services, hamlet, key=PushKey(key_b, 2**32 - 1), push_token=token(b"bbbbbbbb", "apns"))
    # Not pushed to: a device without push registration, and other users' devices.
    add_device(push_services, hamlet)
    add_device(push_services, realm.othello.id, key=PushKey(new_key(), 5), push_token=token())

    assert send_push_to_user(push_services.db, push_services.settings.push_relay_url, hamlet, PAYLOAD) == 2
    first, second = relay.received
    assert first["push_key_id"] == 11 and second["push_key_id"] == 2**32 - 1
    assert decrypt(key_a, first) == PAYLOAD
    assert decrypt(key_b, second) == PAYLOAD
    assert first["encrypted_data"] != second["encrypted_data"]
    assert first["token_kind"] == "fcm" and second["token_kind"] == "apns"
    assert first["token_id"] == base64.b64encode(b"aaaaaaaa").decode()
    assert first["bouncer_public_key"] == base64.b64encode(b"relay public key").decode()
    assert first["encrypted_push_registration"] == base64.b64encode(b"sealed registration").decode()
    # Nothing in the clear: neither the key nor the content.
    assert set(first) == {
        "push_key_id",
        "token_kind",
        "token_id",
        "bouncer_public_key",
        "encrypted_push_registration",
        "encrypted_data",
    }
    assert "Othello" not in orjson.dumps(first).decode()


def test_rotated_key_is_used(push_services: Services, realm: SeededRealm, relay: FakeRelay) -> None:
    hamlet = realm.hamlet.id
    old_key, new = new_key(), new_key()
    device_id = add_device(push_services, hamlet, key=PushKey(old_key, 1), push_token=token())
    with push_services.db.session() as session:
        user = session.get(UserProfile, hamlet)
        assert user is not None
        do_register_push_device(session, user, device_id, key=PushKey(new, 2), token=None)
    assert send_push_to_user(push_services.db, push_services.settings.push_relay_url, hamlet, PAYLOAD) == 1
    (notification,) = relay.received
    assert notification["push_key_id"] == 2
    assert decrypt(new, notification) == PAYLOAD


def test_user_without_devices(push_services: Services, realm: SeededRealm, relay: FakeRelay) -> None:
    assert (
        send_push_to_user(push_services.db, push_services.settings.push_relay_url, realm.hamlet.id, PAYLOAD)
        == 0
    )
    assert relay.received == []


def test_nothing_is_sent_without_a_relay(services: Services, realm: SeededRealm, relay: FakeRelay) -> None:
    add_device(services, realm.hamlet.id, key=PushKey(new_key(), 1), push_token=token())
    assert services.settings.push_relay_url is None
    assert send_push_to_user(services.db, services.settings.push_relay_url, realm.hamlet.id, PAYLOAD) == 0
    assert relay.received == []


def test_relay_errors_are_logged_not_raised(
    push_services: Services, realm: SeededRealm, relay: FakeRelay, caplog: pytest.LogCaptureFixture
) -> None:
    add_device(push_services, realm.hamlet.id, key=PushKey(new_key(), 1), push_token=token())
    relay.status = 500
    with caplog.at_level(logging.WARNING, logger="palaver.push"):
        assert (
            send_push_to_user(
                push_services.db, push_services.settings.push_relay_url, realm.hamlet.id, PAYLOAD
            )
            == 0
        )
    assert len(relay.received) == 1
    assert "HTTP 500" in caplog.text


def test_unreachable_relay_is_logged_not_raised(
    services: Services, realm: SeededRealm, caplog: pytest.LogCaptureFixture
) -> None:
    unreachable = dataclasses.replace(
        services, settings=services.settings.model_copy(update={"push_relay_url": "http://127.0.0.1:9/x"})
    )
    add_device(unreachable, realm.hamlet.id, key=PushKey(new_key(), 1), push_token=token())
    with caplog.at_level(logging.WARNING, logger="palaver.push"):
        assert (
            send_push_to_user(unreachable.db, unreachable.settings.push_relay_url, realm.hamlet.id, PAYLOAD)
            == 0
        )
    assert "unreachable" in caplog.text


def test_unexpected_failures_are_logged_not_raised(
    push_services: Services, realm: SeededRealm, caplog: pytest.LogCaptureFixture
) -> None:
    add_device(push_services, realm.hamlet.id, key=PushKey(new_key(), 1), push_token=token())

    def broken(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("boom")

    with caplog.at_level(logging.WARNING, logger="palaver.push"):
        sent = send_push_to_user(
            push_services.db,
            push_services.settings.push_relay_url,
            realm.hamlet.id,
            PAYLOAD,
            transport=httpx.MockTransport(broken),
        )
    assert sent == 0
    assert "push notification to user" in caplog.text


def test_mock_transport_sees_the_same_request(push_services: Services, realm: SeededRealm) -> None:
    key = new_key()
    add_device(push_services, realm.hamlet.id, key=PushKey(key, 9), push_token=token())
    seen: list[httpx.Request] = []

    def relay_handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"result": "success"})

    transport = httpx.MockTransport(relay_handler)
    assert (
        send_push_to_user(
            push_services.db,
            push_services.settings.push_relay_url,
            realm.hamlet.id,
            PAYLOAD,
            transport=transport,
        )
        == 1
    )
    (request,) = seen
    assert str(request.url) == push_services.settings.push_relay_url
    assert request.method == "POST"
    assert decrypt(key, orjson.loads(request.content)) == PAYLOAD


def test_encrypt_payload_rejects_unknown_cryptosystems() -> None:
    with pytest.raises(ValueError, match="unsupported push key type 0x32"):
        encrypt_payload(b"\x32" + bytes(32), PAYLOAD)


# Messages reach devices through the dispatcher ------------------------------------------


@pytest.fixture
def dispatcher(push_services: Services, relay: FakeRelay) -> Iterator[PushDispatcher]:
    listening = PushDispatcher(push_services.db, relay.url)
    push_services.bus.add_listener(listening)
    yield listening
    push_services.bus.remove_listener(listening)
    listening.close()


def test_direct_messages_and_mentions_are_pushed_encrypted(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, dispatcher: PushDispatcher
) -> None:
    key = new_key()
    add_device(push_services, realm.othello.id, key=PushKey(key, 77), push_token=token())
    stream_id = assert_json_success(
        api.post(realm.hamlet, "channels/create", {"name": "push-test", "subscribers": [realm.othello.id]})
    )["id"]

    assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "psst"})
    )
    relay.wait_for(1)
    # A channel message that mentions nobody is not worth waking a phone for.
    assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "stream", "to": stream_id, "topic": "t", "content": "hi"})
    )
    mention = f"@**{realm.othello.full_name}** look"
    assert_json_success(
        api.post(
            realm.hamlet, "messages", {"type": "stream", "to": stream_id, "topic": "t", "content": mention}
        )
    )
    relay.wait_for(2)
    # Waits for every push the dispatcher started: none beyond these two.
    dispatcher.close()
    assert [body["push_key_id"] for body in relay.received] == [77, 77]
    # The second notification reused the first one's connection (and TLS context): the
    # dispatcher keeps one client.
    assert len(set(relay.peers)) == 1, relay.peers
    # Pushes go out from the dispatcher's threads, so they may reach the relay in either order.
    first, second = sorted(
        (decrypt(key, body) for body in relay.received), key=lambda p: p["type"] != "private"
    )
    assert first["type"] == "private" and "psst" in first["content"]
    assert first["sender_id"] == realm.hamlet.id
    assert second["type"] == "stream" and second["topic"] == "t" and second["stream_id"] == stream_id


def test_the_sender_is_not_pushed_their_own_message(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, dispatcher: PushDispatcher
) -> None:
    add_device(push_services, realm.hamlet.id, key=PushKey(new_key(), 1), push_token=token())
    assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "hello"})
    )
    dispatcher.close()  # waits for every push it started
    assert relay.received == []
