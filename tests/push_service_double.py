"""A test double of Zulip's mobile push notification service, on loopback.

The real service (run by Kandra Labs) cannot be reached from here, so this plays its side
of the remote-server API strictly as Zulip documents it and implements it (Zulip's
api_docs/mobile-notifications.md; zilencer/views.py and zilencer/lib/push_notifications.py
for paths, authentication, parameters, answers and error codes), and nothing more:

- every ``/api/v1/remotes/`` request but ``server/register`` carries HTTP basic
  authentication with the registered server UUID and key (``INVALID_ZULIP_SERVER``, 401);
- ``server/register`` takes form fields zulip_org_id (36 characters), zulip_org_key (64),
  hostname, contact_email; answers ``created``;
- ``server/analytics`` takes JSON-encoded form fields; each realm exactly the keys of
  Zulip's ``RealmDataForAnalytics``, each audit-log row those of
  ``RealmAuditLogDataForAnalytics`` with a billing event type and an ID above the last one
  (``server/analytics/status`` tells it); answers each realm's ``can_push``;
- ``push/e2ee/register`` takes realm_uuid, token_id, bouncer_public_key and the sealed
  registration; unknown realm ``MISSING_REMOTE_REALM`` (403), a key that is not the
  service's ``INVALID_BOUNCER_PUBLIC_KEY``, undecryptable or inconsistent
  ``INVALID_ENCRYPTED_PUSH_REGISTRATION``, a registration older than a day
  ``REQUEST_EXPIRED``;
- ``push/e2ee/notify`` takes JSON realm_uuid and push_requests; a realm whose plan does not
  allow pushes ``PUSH_NOTIFICATIONS_DISALLOWED``; answers the sent counts and the token IDs
  it does not (or no longer) know as ``delete_token_ids``. What it would hand FCM (data
  with ``push_key_id`` as a string) or APNs (the payload as given) is recorded.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
from nacl.exceptions import CryptoError
from nacl.public import PrivateKey, SealedBox
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.servers import asgi_on_loopback

REALM_KEYS = {
    "id",
    "host",
    "url",
    "name",
    "org_type",
    "date_created",
    "deactivated",
    "is_system_bot_realm",
    "authentication_methods",
    "uuid",
    "uuid_owner_secret",
}
LIVENESS_SECONDS = 24 * 3600
AUDIT_ROW_KEYS = {"id", "realm", "event_time", "backfilled", "extra_data", "event_type"}
# Zulip's RealmAuditLog.SYNCED_BILLING_EVENTS: user created, activated, deactivated,
# reactivated, role changed (and realm deactivated/reactivated, 201/202).
SYNCED_BILLING_EVENTS = {101, 102, 103, 104, 105, 201, 202}


def error(msg: str, code: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"result": "error", "msg": msg, "code": code}, status)


def success(**data: Any) -> JSONResponse:
    return JSONResponse({"result": "success", "msg": "", **data})


@dataclass
class Delivery:
    kind: str  # "fcm" or "apns"
    token: str
    data: dict[str, Any]  # FCM data, or the APNs payload
    priority: Any


@dataclass
class FakePushService:
    private_key: PrivateKey = field(default_factory=PrivateKey.generate)
    servers: dict[str, dict[str, str]] = field(default_factory=dict)
    realms: dict[str, dict[str, Any]] = field(default_factory=dict)
    can_push: bool = True
    # token_id -> the decrypted registration
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    delivered: list[Delivery] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    notify_bodies: list[bytes] = field(default_factory=list)
    audit_rows: list[dict[str, Any]] = field(default_factory=list)
    fail_with_status: int | None = None
    url: str = ""

    @property
    def public_key(self) -> str:
        return base64.b64encode(bytes(self.private_key.public_key)).decode()

    def seal(self, registration: dict[str, Any]) -> str:
        """What the app sends: the registration sealed to the service's public key."""
        return base64.b64encode(
            SealedBox(self.private_key.public_key).encrypt(orjson.dumps(registration))
        ).decode()

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/api/v1/remotes/server/register", self.register_server, methods=["POST"]),
                Route("/api/v1/remotes/server/analytics/status", self.analytics_status, methods=["GET"]),
                Route("/api/v1/remotes/server/analytics", self.analytics, methods=["POST"]),
                Route("/api/v1/remotes/push/e2ee/register", self.register_device, methods=["POST"]),
                Route("/api/v1/remotes/push/e2ee/notify", self.notify, methods=["POST"]),
            ]
        )

    def _server(self, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        if not header.startswith("Basic "):
            return None
        try:
            uuid, key = base64.b64decode(header[6:]).decode().split(":", 1)
        except (binascii.Error, ValueError, UnicodeDecodeError):
            return None
        server = self.servers.get(uuid)
        return uuid if server is not None and server["key"] == key else None

    async def register_server(self, request: Request) -> JSONResponse:
        self.requests.append(("POST", "server/register"))
        form = await request.form()
        org_id, org_key = str(form.get("zulip_org_id", "")), str(form.get("zulip_org_key", ""))
        hostname, email = str(form.get("hostname", "")), str(form.get("contact_email", ""))
        if len(org_id) != 36 or len(org_key) != 64:
            return error("Invalid zulip_org_id or zulip_org_key", "BAD_REQUEST")
        if not hostname or "/" in hostname:
            return error(f"{hostname} is not a valid hostname", "BAD_REQUEST")
        if "@" not in email:
            return error("Enter a valid email address.", "BAD_REQUEST")
        existing = self.servers.get(org_id)
        if existing is not None and existing["key"] != org_key:
            return error(
                f"Zulip server auth failure: key does not match role {org_id}", "INVALID_ZULIP_SERVER", 401
            )
        self.servers[org_id] = {"key": org_key, "hostname": hostname, "contact_email": email}
        return success(created=existing is None)

    async def analytics_status(self, request: Request) -> JSONResponse:
        self.requests.append(("GET", "server/analytics/status"))
        if self._server(request) is None:
            return error("Zulip server auth failure", "INVALID_ZULIP_SERVER", 401)
        last = self.audit_rows[-1]["id"] if self.audit_rows else 0
        return success(last_realm_count_id=0, last_installation_count_id=0, last_realmauditlog_id=last)

    async def analytics(self, request: Request) -> JSONResponse:
        self.requests.append(("POST", "server/analytics"))
        server = self._server(request)
        if server is None:
            return error("Zulip server auth failure", "INVALID_ZULIP_SERVER", 401)
        form = await request.form()
        for name in ("realm_counts", "installation_counts"):
            if not isinstance(orjson.loads(str(form[name])), list):
                return error(f"{name} is not a list", "BAD_REQUEST")
        last = self.audit_rows[-1]["id"] if self.audit_rows else 0
        for row in orjson.loads(str(form.get("realmauditlog_rows", "[]"))):
            if set(row) != AUDIT_ROW_KEYS:
                return error("realmauditlog_rows: unexpected keys", "BAD_REQUEST")
            if row["event_type"] not in SYNCED_BILLING_EVENTS:
                return error("Invalid event type.", "BAD_REQUEST")
            if row["id"] <= last:
                return error("Data is out of order.", "BAD_REQUEST")
            extra = row["extra_data"]
            self.audit_rows.append(
                {**row, "extra_data": orjson.loads(extra) if isinstance(extra, str) else extra}
            )
            last = row["id"]
        realms = orjson.loads(str(form["realms"]))
        for realm in realms:
            if set(realm) != REALM_KEYS:
                return error(f"realms: unexpected keys {sorted(set(realm) ^ REALM_KEYS)}", "BAD_REQUEST")
            self.realms[realm["uuid"]] = {**realm, "server": server}
        answer = {r["uuid"]: {"can_push": self.can_push, "expected_end_timestamp": None} for r in realms}
        return success(realms=answer)

    async def register_device(self, request: Request) -> JSONResponse:
        self.requests.append(("POST", "push/e2ee/register"))
        server = self._server(request)
        if server is None:
            return error("Zulip server auth failure", "INVALID_ZULIP_SERVER", 401)
        if self.fail_with_status is not None:
            return JSONResponse({}, self.fail_with_status)
        form = await request.form()
        realm = self.realms.get(str(form.get("realm_uuid", "")))
        if realm is None or realm["server"] != server:
            return error("Organization not registered", "MISSING_REMOTE_REALM", 403)
        if form.get("bouncer_public_key") != self.public_key:
            return error("Invalid bouncer_public_key", "INVALID_BOUNCER_PUBLIC_KEY")
        try:
            sealed = base64.b64decode(str(form.get("encrypted_push_registration", "")), validate=True)
            registration = orjson.loads(SealedBox(self.private_key).decrypt(sealed))
        except (binascii.Error, CryptoError, orjson.JSONDecodeError):
            return error("Invalid encrypted_push_registration", "INVALID_ENCRYPTED_PUSH_REGISTRATION")
        token, kind = registration.get("token"), registration.get("token_kind")
        valid = (
            isinstance(token, str)
            and token
            and kind in ("fcm", "apns")
            and (registration.get("ios_app_id") is None) == (kind == "fcm")
            and base64.b64encode(hashlib.sha256(token.encode()).digest()[:8]).decode() == form.get("token_id")
        )
        if not valid:
            return error("Invalid encrypted_push_registration", "INVALID_ENCRYPTED_PUSH_REGISTRATION")
        if time.time() - int(registration.get("timestamp", 0)) > LIVENESS_SECONDS:
            return error("Request expired", "REQUEST_EXPIRED")
        self.devices[str(form["token_id"])] = registration
        return success()

    async def notify(self, request: Request) -> JSONResponse:
        self.requests.append(("POST", "push/e2ee/notify"))
        server = self._server(request)
        if server is None:
            return error("Zulip server auth failure", "INVALID_ZULIP_SERVER", 401)
        if request.headers.get("content-type") != "application/json":
            return error("Expected JSON", "BAD_REQUEST")
        raw = await request.body()
        self.notify_bodies.append(raw)
        body = orjson.loads(raw)
        realm = self.realms.get(body.get("realm_uuid", ""))
        if realm is None or realm["server"] != server:
            return error("Organization not registered", "MISSING_REMOTE_REALM", 403)
        if not self.can_push:
            return error(
                "Your plan doesn't allow sending push notifications. Reason provided by the server: no plan",
                "PUSH_NOTIFICATIONS_DISALLOWED",
            )
        apple = android = 0
        gone: list[str] = []
        for push in body["push_requests"]:
            registration = self.devices.get(push["token_id"])
            if registration is None:
                gone.append(push["token_id"])
                continue
            payload = push["payload"]
            if registration["token_kind"] == "apns":
                headers = push["http_headers"]
                self.delivered.append(Delivery("apns", registration["token"], payload, headers))
                apple += 1
            else:
                data = {
                    "push_key_id": str(payload["push_key_id"]),
                    "encrypted_data": payload["encrypted_data"],
                }
                self.delivered.append(Delivery("fcm", registration["token"], data, push["fcm_priority"]))
                android += 1
        return success(
            apple_successfully_sent_count=apple,
            android_successfully_sent_count=android,
            delete_token_ids=gone,
        )


def run_service() -> Iterator[FakePushService]:
    service = FakePushService()
    with asgi_on_loopback(service.app()) as url:
        service.url = url
        yield service
