"""Client devices: POST /register_client_device, /remove_client_device, /mobile_push/register."""

from __future__ import annotations

import base64
import os
import time
from typing import Any

import pytest

from palaver.services import Services
from tests import helpers
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

RELAY_URL = "http://127.0.0.1:9/relay"


@pytest.fixture
def relay_configured(services: Services, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        services, "settings", services.settings.model_copy(update={"push_relay_url": RELAY_URL})
    )


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def key_fields(key_id: int = 7, key: bytes | None = None) -> dict[str, Any]:
    return {"push_key_id": key_id, "push_key": b64(b"\x31" + (key or os.urandom(32)))}


def token_fields(token_id: bytes = b"12345678", kind: str = "fcm") -> dict[str, Any]:
    return {
        "token_kind": kind,
        "token_id": b64(token_id),
        "bouncer_public_key": b64(os.urandom(32)),
        "encrypted_push_registration": b64(os.urandom(80)),
    }


def register_device(api: Api, user: helpers.TestUser) -> int:
    device_id: int = assert_json_success(api.post(user, "register_client_device"))["device_id"]
    return device_id


def push_register(api: Api, user: helpers.TestUser, device_id: int, **fields: Any) -> Any:
    return api.post(user, "mobile_push/register", {"device_id": device_id, **fields})


def test_register_and_remove_device(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    first = register_device(api, realm.hamlet)
    second = register_device(api, realm.hamlet)
    assert second != first
    adds = events.of_type("device", "add")
    assert adds[0] == (
        {
            "type": "device",
            "op": "add",
            "device_id": first,
            "push_key_id": None,
            "push_token_id": None,
            "push_token_last_updated_timestamp": None,
            "pending_push_token_id": None,
            "push_registration_error_code": None,
        },
        [realm.hamlet.id],
    )
    events.clear()
    assert_json_success(api.post(realm.hamlet, "remove_client_device", {"device_id": first}))
    ((event, users),) = events.of_type("device", "remove")
    assert event == {"type": "device", "op": "remove", "device_id": first} and users == [realm.hamlet.id]

    body = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["device"]}))
    assert list(body["devices"]) == [str(second)]


def test_remove_device_errors(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    device_id = register_device(api, realm.hamlet)
    events.clear()
    for user, payload in [
        (realm.hamlet, {"device_id": 999999999}),
        # Another user's device is as good as missing.
        (realm.othello, {"device_id": device_id}),
    ]:
        response = api.post(user, "remove_client_device", payload)
        assert_json_error(response, "Invalid device ID", code="BAD_REQUEST")
    assert_json_error(api.post(realm.hamlet, "remove_client_device", {}), "Missing 'device_id' argument")
    assert_json_error(
        api.post(realm.hamlet, "remove_client_device", {"device_id": "x"}),
        'Argument "device_id" is not valid JSON.',
    )
    assert events.of_type("device") == []
    # A removed device is gone for good.
    assert_json_success(api.post(realm.hamlet, "remove_client_device", {"device_id": device_id}))
    assert_json_error(
        api.post(realm.hamlet, "remove_client_device", {"device_id": device_id}), "Invalid device ID"
    )


def test_push_service_not_configured(api: Api, realm: SeededRealm) -> None:
    device_id = register_device(api, realm.hamlet)
    response = push_register(api, realm.hamlet, device_id, **key_fields(), **token_fields())
    assert_json_error(
        response,
        "Server is not configured to use push notification service.",
        code="PUSH_SERVICE_NOT_CONFIGURED",
    )


@pytest.mark.usefixtures("relay_configured")
def test_initial_registration_and_rotations(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    device_id = register_device(api, realm.hamlet)
    events.clear()
    before = int(time.time())
    assert_json_success(
        push_register(api, realm.hamlet, device_id, **key_fields(key_id=2**32 - 1), **token_fields())
    )
    ((event, users),) = events.of_type("device", "update")
    assert users == [realm.hamlet.id]
    assert event["device_id"] == device_id
    assert event["push_key_id"] == 2**32 - 1
    assert event["push_token_id"] == b64(b"12345678")
    registered_at = event["push_token_last_updated_timestamp"]
    assert before <= registered_at <= int(time.time())
    # The key itself never leaves the server.
    assert "push_key" not in event

    events.clear()
    assert_json_success(push_register(api, realm.hamlet, device_id, **key_fields(key_id=0)))
    ((event, _),) = events.of_type("device", "update")
    assert event["push_key_id"] == 0
    assert event["push_token_id"] == b64(b"12345678")
    assert event["push_token_last_updated_timestamp"] == registered_at

    events.clear()
    assert_json_success(
        push_register(api, realm.hamlet, device_id, **token_fields(token_id=b"abcdefgh", kind="apns"))
    )
    ((event, _),) = events.of_type("device", "update")
    assert event["push_key_id"] == 0
    assert event["push_token_id"] == b64(b"abcdefgh")

    body = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["device"]}))
    assert body["devices"] == {
        str(device_id): {
            "push_key_id": 0,
            "push_token_id": b64(b"abcdefgh"),
            "push_token_last_updated_timestamp": event["push_token_last_updated_timestamp"],
            "pending_push_token_id": None,
            "push_registration_error_code": None,
        }
    }


@pytest.mark.usefixtures("relay_configured")
def test_initial_registration_needs_key_and_token(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    device_id = register_device(api, realm.hamlet)
    events.clear()
    missing_token = push_register(api, realm.hamlet, device_id, **key_fields())
    assert_json_error(missing_token, "Missing 'token_kind' argument", code="REQUEST_VARIABLE_MISSING")
    missing_key = push_register(api, realm.hamlet, device_id, **token_fields())
    assert_json_error(missing_key, "Missing 'push_key' argument", code="REQUEST_VARIABLE_MISSING")
    assert_json_error(push_register(api, realm.hamlet, device_id), "Missing 'push_key' argument")
    assert events.of_type("device") == []


@pytest.mark.usefixtures("relay_configured")
@pytest.mark.parametrize("dropped", ["push_key", "push_key_id"])
def test_partial_key_fields(api: Api, realm: SeededRealm, dropped: str) -> None:
    device_id = register_device(api, realm.hamlet)
    fields = {**key_fields(), **token_fields()}
    del fields[dropped]
    assert_json_error(push_register(api, realm.hamlet, device_id, **fields), f"Missing '{dropped}' argument")


@pytest.mark.usefixtures("relay_configured")
@pytest.mark.parametrize(
    "dropped", ["token_kind", "token_id", "bouncer_public_key", "encrypted_push_registration"]
)
def test_partial_token_fields(api: Api, realm: SeededRealm, dropped: str) -> None:
    device_id = register_device(api, realm.hamlet)
    assert_json_success(push_register(api, realm.hamlet, device_id, **key_fields(), **token_fields()))
    # Even a rotation must send the token fields together.
    fields = token_fields()
    del fields[dropped]
    assert_json_error(push_register(api, realm.hamlet, device_id, **fields), f"Missing '{dropped}' argument")


@pytest.mark.usefixtures("relay_configured")
def test_nothing_to_rotate(api: Api, realm: SeededRealm) -> None:
    device_id = register_device(api, realm.hamlet)
    assert_json_success(push_register(api, realm.hamlet, device_id, **key_fields(), **token_fields()))
    assert_json_error(
        push_register(api, realm.hamlet, device_id),
        "Nothing to update: send the push key fields, the token fields, or both.",
    )


@pytest.mark.usefixtures("relay_configured")
@pytest.mark.parametrize(
    ("fields", "msg"),
    [
        ({"push_key": "not base64!"}, "Invalid push_key"),
        ({"push_key": b64(b"\x31" + bytes(32))[:-2]}, "Invalid push_key"),  # padding cut off
        ({"push_key": b64(b"\x31" + bytes(31))}, "Invalid push_key"),
        ({"push_key": b64(b"\x31" + bytes(33))}, "Invalid push_key"),
        ({"push_key": b64(b"\x32" + bytes(32))}, "Invalid push_key"),
        ({"push_key": b64(b"\x31" + b"\xfb" * 32).replace("+", "-")}, "Invalid push_key"),  # URL-safe
        ({"push_key_id": -1}, "Invalid push_key_id"),
        ({"push_key_id": 2**32}, "Invalid push_key_id"),
        ({"push_key_id": "seven"}, 'Argument "push_key_id" is not valid JSON.'),
        ({"push_key_id": 1.5}, "push_key_id is not an integer"),
        ({"token_kind": "gcm"}, "Invalid token_kind"),
        ({"token_id": b64(b"1234567")}, "Invalid token_id"),
        ({"token_id": b64(b"123456789")}, "Invalid token_id"),
        ({"token_id": "%%%"}, "Invalid token_id"),
        ({"bouncer_public_key": ""}, "Invalid bouncer_public_key"),
        ({"bouncer_public_key": "abc"}, "Invalid bouncer_public_key"),
        ({"encrypted_push_registration": "@@@@"}, "Invalid encrypted_push_registration"),
        ({"device_id": 999999999}, "Invalid device ID"),
    ],
)
def test_invalid_fields(
    api: Api, realm: SeededRealm, events: EventRecorder, fields: dict[str, Any], msg: str
) -> None:
    device_id = register_device(api, realm.hamlet)
    events.clear()
    data = {"device_id": device_id, **key_fields(), **token_fields(), **fields}
    response = api.post(realm.hamlet, "mobile_push/register", data)
    assert_json_error(response, msg)
    assert events.of_type("device") == []


@pytest.mark.usefixtures("relay_configured")
def test_cannot_register_another_users_device(api: Api, realm: SeededRealm) -> None:
    device_id = register_device(api, realm.hamlet)
    response = push_register(api, realm.othello, device_id, **key_fields(), **token_fields())
    assert_json_error(response, "Invalid device ID", code="BAD_REQUEST")


def test_devices_need_authentication(api: Api, realm: SeededRealm) -> None:
    response = api.post(None, "register_client_device")
    assert response.status_code == 401
