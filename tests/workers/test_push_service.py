"""Zulip's push notification service protocol, against a loopback test double of the
service (tests/push_service_double.py: the real service cannot be reached from here, so the
double keeps strictly to Zulip's documented remote-server API). Registration with
``palaver push-register``, an app's device registration forwarded, notifications and
removals through the service, and its refusals."""

from __future__ import annotations

import base64
import hashlib
import os
import time
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from sqlalchemy import select

from palaver.cli import build_parser
from palaver.commands.common import CliError
from palaver.config import Settings
from palaver.lib.push_service import PushServiceClient, service_credentials
from palaver.lib.realm import realm_url
from palaver.models.devices import Device
from palaver.models.push_service import PushServiceRealm, PushServiceServer
from palaver.models.realm import Realm
from palaver.services import Services
from palaver.workers.push import PushWorker
from tests import helpers
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success
from tests.lib.app_notifications import Parsed, decrypt, parse_apns, parse_fcm
from tests.push_service_double import FakePushService, run_service


@pytest.fixture(scope="module")
def push_service_double() -> Iterator[FakePushService]:
    yield from run_service()


@pytest.fixture
def service(push_service_double: FakePushService) -> FakePushService:
    double = push_service_double
    double.servers.clear()
    double.realms.clear()
    double.devices.clear()
    double.delivered.clear()
    double.requests.clear()
    double.notify_bodies.clear()
    double.audit_rows.clear()
    double.can_push = True
    double.fail_with_status = None
    return double


def push_register(settings: Settings, *args: str) -> None:
    argv = [
        "push-register",
        "--database-url",
        settings.database_url,
        "--data-dir",
        str(settings.data_dir),
        *args,
    ]
    parsed = build_parser().parse_args(argv)
    parsed.func(parsed)


@pytest.fixture
def registered(
    services: Services, settings: Settings, service: FakePushService, monkeypatch: pytest.MonkeyPatch
) -> Services:
    """A server registered with the service and configured to use it (as the README says)."""
    push_register(
        settings,
        "--url",
        service.url,
        "--contact-email",
        "admin@chat.example.org",
        "--agree-to-terms-of-service",
    )
    monkeypatch.setattr(
        services, "settings", services.settings.model_copy(update={"push_service_url": service.url})
    )
    return services


@pytest.fixture
def worker(registered: Services) -> Iterator[PushWorker]:
    push = PushWorker(registered)

    def feed(realm_id: int, event: dict[str, Any], user_ids: Sequence[int]) -> None:
        push.accept(realm_id, event, user_ids)

    registered.bus.add_listener(feed)
    yield push
    registered.bus.remove_listener(feed)
    push.on_stop()


class App:
    """What zulip-flutter does to register for notifications (lib/model/push_device.dart):
    a device record, a secret-box push key, and its token sealed to the service's key."""

    def __init__(
        self, api: Api, user: helpers.TestUser, service: FakePushService, *, kind: str = "fcm"
    ) -> None:
        self.api, self.user, self.service, self.kind = api, user, service, kind
        self.key = b"\x31" + os.urandom(32)
        self.key_id = int.from_bytes(os.urandom(4), "big")
        self.token = os.urandom(16).hex() if kind == "apns" else "fcm-" + os.urandom(12).hex()
        self.token_id = base64.b64encode(hashlib.sha256(self.token.encode()).digest()[:8]).decode()
        self.device_id = int(assert_json_success(api.post(user, "register_client_device"))["device_id"])

    def register(self, *, public_key: str | None = None, timestamp: int | None = None) -> Any:
        registration: dict[str, Any] = {
            "token_kind": self.kind,
            "token": self.token,
            "timestamp": int(time.time()) if timestamp is None else timestamp,
        }
        if self.kind == "apns":
            registration["ios_app_id"] = "com.zulip.flutter"
        # Every value a string, as the app's form-encoded request has them.
        return self.api.post(
            self.user,
            "mobile_push/register",
            {
                "device_id": str(self.device_id),
                "push_key_id": str(self.key_id),
                "push_key": base64.b64encode(self.key).decode(),
                "token_kind": self.kind,
                "token_id": self.token_id,
                "bouncer_public_key": public_key or self.service.public_key,
                "encrypted_push_registration": self.service.seal(registration),
            },
        )

    def received(self, realm_url: str) -> list[Parsed]:
        keys = {self.key_id: self.key}
        parse = parse_apns if self.kind == "apns" else parse_fcm
        return [
            parse(d.data, keys, realm_url=realm_url, user_id=self.user.id)
            for d in self.service.delivered
            if d.token == self.token
        ]


def url_of(services: Services, realm: SeededRealm) -> str:
    with services.db.session() as session:
        r = session.get(Realm, realm.id)
        assert r is not None
        return realm_url(services.settings, r)


def device(services: Services, device_id: int) -> Device:
    with services.db.session() as session:
        row = session.get(Device, device_id)
        assert row is not None
        session.expunge(row)
        return row


def test_push_register_needs_the_terms_accepted(
    settings: Settings, service: FakePushService, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(CliError, match="agree-to-terms-of-service"):
        push_register(settings, "--url", service.url, "--contact-email", "admin@chat.example.org")
    assert "Terms of Service" in capsys.readouterr().out
    assert service.servers == {}
    with pytest.raises(CliError, match="contact-email"):
        push_register(settings, "--url", service.url, "--agree-to-terms-of-service")


def test_push_register_registers_and_reports_organizations(
    services: Services,
    settings: Settings,
    service: FakePushService,
    realm: SeededRealm,
    capsys: pytest.CaptureFixture[str],
) -> None:
    push_register(
        settings,
        "--url",
        service.url,
        "--contact-email",
        "admin@chat.example.org",
        "--agree-to-terms-of-service",
    )
    [(uuid, server)] = service.servers.items()
    assert len(uuid) == 36 and len(server["key"]) == 64
    assert server["contact_email"] == "admin@chat.example.org"
    with services.db.session() as session:
        row = session.scalar(select(PushServiceServer))
        assert row is not None and (row.server_uuid, row.server_key) == (uuid, server["key"])
        assert row.terms_accepted_at is not None
        realms = {r.realm_id: r for r in session.scalars(select(PushServiceRealm))}
    assert realms[realm.id].uuid in service.realms and realms[realm.id].can_push is True
    # The users the plan is priced by: this organization's, by role (Zulip's ROLE_COUNT).
    [row] = [r for r in service.audit_rows if r["realm"] == realm.id]
    humans, bots = row["extra_data"]["10"]["11"], row["extra_data"]["10"]["12"]
    assert sum(humans.values()) == len([u for u in realm.users.values() if not u.is_bot])
    assert bots == len([u for u in realm.users.values() if u.is_bot]) and humans["600"] == 1  # one guest
    out = capsys.readouterr().out
    assert "Registered" in out and "push_service_url" in out
    # Again: the same identity, updated there.
    push_register(
        settings,
        "--url",
        service.url,
        "--contact-email",
        "ops@chat.example.org",
        "--agree-to-terms-of-service",
    )
    assert (
        list(service.servers) == [uuid] and service.servers[uuid]["contact_email"] == "ops@chat.example.org"
    )
    assert "Updated" in capsys.readouterr().out
    ids = [r["id"] for r in service.audit_rows]
    assert ids == sorted(set(ids))  # each report numbered after the last


def test_the_apps_registration_is_forwarded_and_notifications_flow(
    api: Api,
    registered: Services,
    realm: SeededRealm,
    service: FakePushService,
    worker: PushWorker,
    events: EventRecorder,
) -> None:
    phone = App(api, realm.othello, service)
    iphone = App(api, realm.othello, service, kind="apns")
    events.clear()
    assert_json_success(phone.register())
    assert_json_success(iphone.register())
    # Pending until the service took it: the app sees the token as pending.
    ((update, _), _) = events.of_type("device", "update")
    assert update["pending_push_token_id"] == phone.token_id and update["push_token_id"] is None
    assert device(registered, phone.device_id).pending_token_id == phone.token_id
    events.clear()
    worker.run_round()
    assert set(service.devices) == {phone.token_id, iphone.token_id}
    forwarded = device(registered, phone.device_id)
    assert (forwarded.token_id, forwarded.pending_token_id) == (phone.token_id, None)
    updates = [e for e, _ in events.of_type("device", "update")]
    assert {u["push_token_id"] for u in updates} == {phone.token_id, iphone.token_id}
    assert all(u["pending_push_token_id"] is None for u in updates)

    dm = int(
        assert_json_success(
            api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "hi"})
        )["id"]
    )
    worker.run_round()
    url = url_of(registered, realm)
    [android] = phone.received(url)
    [ios] = iphone.received(url)
    for parsed in (android, ios):
        assert parsed.model == "NotifPayloadNewMessage" and parsed.payload["message_id"] == dm
        assert parsed.payload["content"] == "hi"
    fcm, apns = (next(d for d in service.delivered if d.kind == k) for k in ("fcm", "apns"))
    assert fcm.priority == "high" and apns.priority == {"apns_priority": 10, "apns_push_type": "alert"}
    assert apns.data["aps"]["mutable-content"] == 1

    service.delivered.clear()
    assert_json_success(
        api.post(realm.othello, "messages/flags", {"messages": [dm], "op": "add", "flag": "read"})
    )
    worker.run_round()
    [removal] = phone.received(url)
    assert removal.model == "NotifPayloadRemove" and removal.payload["message_ids"] == [dm]
    apns_removal = next(d for d in service.delivered if d.kind == "apns")
    assert apns_removal.priority == {"apns_priority": 5, "apns_push_type": "background"}
    # Only ciphertext went to the service: no names, content or keys in the clear.
    assert service.notify_bodies and all(
        b"King Hamlet" not in b and b'push_key"' not in b for b in service.notify_bodies
    )


def test_tokens_the_service_no_longer_knows_are_dropped(
    api: Api, registered: Services, realm: SeededRealm, service: FakePushService, worker: PushWorker
) -> None:
    phone = App(api, realm.othello, service)
    assert_json_success(phone.register())
    worker.run_round()
    # FCM said the app was uninstalled: the service forgot the token.
    del service.devices[phone.token_id]
    api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "anyone?"})
    worker.run_round()
    assert device(registered, phone.device_id).token_id is None
    service.requests.clear()
    api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "again"})
    worker.run_round()
    assert ("POST", "push/e2ee/notify") not in service.requests


@pytest.mark.parametrize(
    ("case", "code"),
    [("foreign public key", "INVALID_BOUNCER_PUBLIC_KEY"), ("expired", "REQUEST_EXPIRED")],
)
def test_refused_registrations_reach_the_app(
    api: Api,
    registered: Services,
    realm: SeededRealm,
    service: FakePushService,
    worker: PushWorker,
    events: EventRecorder,
    case: str,
    code: str,
) -> None:
    phone = App(api, realm.othello, service)
    if case == "expired":
        assert_json_success(phone.register(timestamp=int(time.time()) - 3 * 24 * 3600))
    else:
        other = base64.b64encode(os.urandom(32)).decode()
        assert_json_success(phone.register(public_key=other))
    events.clear()
    worker.run_round()
    row = device(registered, phone.device_id)
    assert row.push_registration_error_code == code and row.token_id is None
    ((update, _),) = events.of_type("device", "update")
    assert update["push_registration_error_code"] == code
    # Not retried; the app registers again (it does, seeing the code), and that succeeds.
    service.requests.clear()
    worker.run_round()
    assert ("POST", "push/e2ee/register") not in service.requests
    assert_json_success(phone.register())
    worker.run_round()
    row = device(registered, phone.device_id)
    assert (row.token_id, row.push_registration_error_code) == (phone.token_id, None)


def test_an_unreachable_or_failing_service_is_retried(
    api: Api, registered: Services, realm: SeededRealm, service: FakePushService, worker: PushWorker
) -> None:
    phone = App(api, realm.othello, service)
    assert_json_success(phone.register())
    service.fail_with_status = 502
    worker.run_round()
    assert device(registered, phone.device_id).pending_token_id == phone.token_id
    service.fail_with_status = None
    worker.run_round()
    assert device(registered, phone.device_id).token_id == phone.token_id


def test_a_plan_without_pushes_sends_nothing(
    api: Api,
    registered: Services,
    realm: SeededRealm,
    service: FakePushService,
    worker: PushWorker,
    caplog: pytest.LogCaptureFixture,
) -> None:
    phone = App(api, realm.othello, service)
    assert_json_success(phone.register())
    worker.run_round()
    service.can_push = False
    with caplog.at_level("WARNING", logger="palaver.push"):
        api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "x"})
        worker.run_round()
    assert "allow" in caplog.text
    assert phone.received(url_of(registered, realm)) == []


def test_an_organization_the_service_does_not_know_is_reported_first(
    api: Api, registered: Services, realm: SeededRealm, service: FakePushService, worker: PushWorker
) -> None:
    phone = App(api, realm.othello, service)
    # The service lost track of the organization (or it was created after push-register).
    service.realms.clear()
    assert_json_success(phone.register())
    worker.run_round()
    assert phone.token_id in service.devices
    assert service.requests.index(("POST", "server/analytics")) < service.requests.index(
        ("POST", "push/e2ee/register")
    )


def test_test_notification_through_the_service(
    api: Api, registered: Services, realm: SeededRealm, service: FakePushService, worker: PushWorker
) -> None:
    phone = App(api, realm.othello, service)
    assert_json_success(phone.register())
    worker.run_round()
    assert_json_success(api.post(realm.othello, "mobile_push/test_notification", {"token": phone.token_id}))
    [delivery] = service.delivered
    assert int(delivery.data["push_key_id"]) == phone.key_id
    payload = decrypt(phone.key, base64.b64decode(delivery.data["encrypted_data"]))
    assert payload["type"] == "test" and payload["user_id"] == realm.othello.id
    service.can_push = False
    worker.sync_realms(worker_client(worker))
    assert_json_error(
        api.post(realm.othello, "mobile_push/test_notification"),
        "The push notification service refused the test notification: "
        "the push service's plan for this organization does not allow pushes",
    )


def worker_client(worker: PushWorker) -> PushServiceClient:
    with worker.services.db.session() as session:
        credentials = service_credentials(session, worker.services.settings.push_service_url)
    assert credentials is not None
    return PushServiceClient(credentials, worker.http_client())


def test_register_accepts_exactly_what_the_app_sends(
    api: Api, registered: Services, realm: SeededRealm, service: FakePushService
) -> None:
    """zulip-flutter's registerPushDevice: the key and token groups, every value a string;
    a key rotation alone; the same registration again changes nothing."""
    phone = App(api, realm.othello, service)
    assert_json_success(phone.register())
    new_key = b"\x31" + os.urandom(32)
    assert_json_success(
        api.post(
            realm.othello,
            "mobile_push/register",
            {
                "device_id": str(phone.device_id),
                "push_key_id": "7",
                "push_key": base64.b64encode(new_key).decode(),
            },
        )
    )
    row = device(registered, phone.device_id)
    assert (row.push_key, row.push_key_id) == (new_key, 7)
    assert row.pending_token_id == phone.token_id
