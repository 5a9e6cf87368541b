"""The client side of Zulip's mobile push notification service ("the bouncer").

Zulip's official apps receive notifications only from this service (it holds the FCM and
APNs credentials of the apps). A self-hosted server registers once, then calls it with HTTP
basic authentication (server UUID and key) under ``<push_service_url>/api/v1/remotes/``:

    POST server/register          zulip_org_id, zulip_org_key, hostname, contact_email
                                  (form-encoded) -> {"created": bool}
    GET  server/analytics/status  -> last_realm_count_id, last_installation_count_id,
                                  last_realmauditlog_id
    POST server/analytics         realm_counts, installation_counts, realmauditlog_rows,
                                  realms, version, merge_base, api_feature_level (each a
                                  JSON-encoded form field) -> {"realms": {uuid: {"can_push",
                                  "expected_end_timestamp"}}}: the organizations the service
                                  knows, and whether their plan lets them push. The plan
                                  counts users: each report carries one audit-log row per
                                  organization with its users by role (Zulip's ROLE_COUNT
                                  extra data), numbered after the last row the service has
    POST push/e2ee/register       realm_uuid, token_id, bouncer_public_key,
                                  encrypted_push_registration (form-encoded): the app's
                                  token, sealed to the service's public key
    POST push/e2ee/notify         JSON {"realm_uuid", "push_requests": [{"token_id",
                                  "payload": {"push_key_id", "encrypted_data", "aps"?},
                                  "http_headers": {"apns_priority", "apns_push_type"}} (APNs)
                                  or {"token_id", "fcm_priority", "payload"} (FCM)]}
                                  -> apple_successfully_sent_count,
                                  android_successfully_sent_count, delete_token_ids

Errors come in Zulip's envelope: 4xx with ``code`` (``INVALID_ZULIP_SERVER``: unknown server
or wrong key; ``MISSING_REMOTE_REALM``: organization not reported yet;
``PUSH_NOTIFICATIONS_DISALLOWED``: the plan does not allow pushes;
``INVALID_BOUNCER_PUBLIC_KEY``, ``INVALID_ENCRYPTED_PUSH_REGISTRATION``, ``REQUEST_EXPIRED``:
a device registration that will never succeed), 5xx or no answer: try again later. Only
ciphertext, token registrations sealed by the app, organization names, URLs and UUIDs, and
this server's version leave the server; never message content in the clear.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

import orjson
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from palaver import FEATURE_LEVEL, SERVICE_VERSION
from palaver.config import Settings
from palaver.lib.push import apns_payload, fcm_data
from palaver.lib.realm import realm_url
from palaver.models.devices import Device
from palaver.models.push_service import PushServiceRealm, PushServiceServer
from palaver.models.realm import Realm
from palaver.models.users import Role, UserProfile
from palaver.timeutil import to_timestamp

if TYPE_CHECKING:
    import httpx

logger = logging.getLogger("palaver.push")

API_PREFIX = "/api/v1/remotes/"
# The service's own timeout for a notify request is 30 s; registration and sync are light.
SERVICE_TIMEOUT_SECONDS = 30.0
# Zulip's service registers org IDs of exactly this many characters, and keys of this many.
SERVER_UUID_LENGTH = 36
SERVER_KEY_LENGTH = 64

# Zulip's audit-log event "a user's role changed" (one of those it syncs for billing), whose
# extra data holds the organization's users by role: {"10": {"11": {role: n}, "12": bots}}.
ROLE_COUNT_EVENT = 105
ROLE_COUNT, ROLE_COUNT_HUMANS, ROLE_COUNT_BOTS = "10", "11", "12"

# Errors after which a device registration is abandoned (the app is told the code).
FINAL_REGISTRATION_ERRORS = frozenset(
    {"INVALID_BOUNCER_PUBLIC_KEY", "INVALID_ENCRYPTED_PUSH_REGISTRATION", "REQUEST_EXPIRED", "BAD_REQUEST"}
)


class PushServiceError(Exception):
    """The service refused a request (``code`` as it named it) or could not be reached."""

    def __init__(self, message: str, code: str | None = None, *, retry: bool = False) -> None:
        super().__init__(message)
        self.code = code
        # Whether trying again later may succeed (network, 5xx), as opposed to a refusal.
        self.retry = retry


@dataclass(frozen=True)
class ServiceCredentials:
    url: str
    server_uuid: str
    server_key: str


@dataclass(frozen=True)
class NotifyResult:
    apple_sent: int
    android_sent: int
    # Tokens the service no longer has (expired or refused by FCM/APNs): drop the devices.
    delete_token_ids: list[str]


class PushServiceClient:
    def __init__(self, credentials: ServiceCredentials, client: httpx.Client) -> None:
        self.credentials = credentials
        self._client = client

    def _request(
        self, method: str, endpoint: str, *, data: dict[str, Any] | None = None, json: Any = None
    ) -> dict[str, Any]:
        import httpx  # noqa: PLC0415  (loaded with the client)

        url = urljoin(self.credentials.url.rstrip("/") + "/", API_PREFIX.lstrip("/") + endpoint)
        try:
            response = self._client.request(
                method,
                url,
                data=data,
                content=orjson.dumps(json) if json is not None else None,
                headers={"Content-Type": "application/json"} if json is not None else None,
                auth=(self.credentials.server_uuid, self.credentials.server_key),
                timeout=SERVICE_TIMEOUT_SECONDS,
            )
        except httpx.HTTPError as e:
            raise PushServiceError(
                f"{type(e).__name__} while connecting to the push service", retry=True
            ) from e
        if response.status_code >= 500:
            raise PushServiceError(f"push service answered HTTP {response.status_code}", retry=True)
        try:
            body = orjson.loads(response.content)
        except orjson.JSONDecodeError:
            raise PushServiceError(
                f"push service answered HTTP {response.status_code} without JSON", retry=True
            ) from None
        if response.status_code >= 400 or not isinstance(body, dict):
            msg = body.get("msg", "") if isinstance(body, dict) else ""
            code = body.get("code") if isinstance(body, dict) else None
            raise PushServiceError(msg or f"HTTP {response.status_code}", code)
        if response.status_code != 200:
            raise PushServiceError(f"push service answered HTTP {response.status_code}")
        return body

    def register_server(self, hostname: str, contact_email: str) -> bool:
        """Register (or update) this server; whether the service created it anew."""
        body = self._request(
            "POST",
            "server/register",
            data={
                "zulip_org_id": self.credentials.server_uuid,
                "zulip_org_key": self.credentials.server_key,
                "hostname": hostname,
                "contact_email": contact_email,
            },
        )
        return bool(body.get("created"))

    def report_realms(
        self, realms: list[dict[str, Any]], role_counts: dict[int, dict[str, Any]]
    ) -> dict[str, dict[str, Any]]:
        """Report the organizations and how many users of each role they have (the usage
        the service's plans are priced by; Palaver keeps no other statistics to send). The
        service answers whether each may push."""
        status = self._request("GET", "server/analytics/status")
        last_id = int(status.get("last_realmauditlog_id") or 0)
        now = time.time()
        rows = [
            {
                "id": last_id + index,
                "realm": realm_id,
                "event_time": now,
                "backfilled": False,
                "extra_data": orjson.dumps(counts).decode(),
                "event_type": ROLE_COUNT_EVENT,
            }
            for index, (realm_id, counts) in enumerate(sorted(role_counts.items()), start=1)
        ]
        body = self._request(
            "POST",
            "server/analytics",
            data={
                "realm_counts": orjson.dumps([]).decode(),
                "installation_counts": orjson.dumps([]).decode(),
                "realmauditlog_rows": orjson.dumps(rows).decode(),
                "realms": orjson.dumps(realms).decode(),
                "version": orjson.dumps(f"Palaver {SERVICE_VERSION}").decode(),
                "merge_base": orjson.dumps("").decode(),
                "api_feature_level": orjson.dumps(FEATURE_LEVEL).decode(),
            },
        )
        realms_answer = body.get("realms")
        return realms_answer if isinstance(realms_answer, dict) else {}

    def register_device(
        self, realm_uuid: str, token_id: str, bouncer_public_key: str, encrypted_push_registration: str
    ) -> None:
        self._request(
            "POST",
            "push/e2ee/register",
            data={
                "realm_uuid": realm_uuid,
                "token_id": token_id,
                "bouncer_public_key": bouncer_public_key,
                "encrypted_push_registration": encrypted_push_registration,
            },
        )

    def notify(self, realm_uuid: str, push_requests: list[dict[str, Any]]) -> NotifyResult:
        body = self._request(
            "POST", "push/e2ee/notify", json={"realm_uuid": realm_uuid, "push_requests": push_requests}
        )
        return NotifyResult(
            apple_sent=int(body.get("apple_successfully_sent_count", 0)),
            android_sent=int(body.get("android_successfully_sent_count", 0)),
            delete_token_ids=[str(t) for t in body.get("delete_token_ids", [])],
        )


def push_request(
    token_kind: str, token_id: str, push_key_id: int, ciphertext: bytes, *, alert: bool
) -> dict[str, Any]:
    """One device's entry of a notify request, in the shape FCM or APNs gets it."""
    if token_kind == "apns":
        return {
            "token_id": token_id,
            "http_headers": {
                "apns_priority": 10 if alert else 5,
                "apns_push_type": "alert" if alert else "background",
            },
            "payload": apns_payload(push_key_id, ciphertext, alert=alert),
        }
    data = fcm_data(push_key_id, ciphertext)
    return {
        "token_id": token_id,
        "fcm_priority": "high" if alert else "normal",
        # The service stringifies push_key_id for FCM itself.
        "payload": {"push_key_id": push_key_id, "encrypted_data": data["encrypted_data"]},
    }


def get_registration(session: Session) -> PushServiceServer | None:
    return session.scalar(select(PushServiceServer).order_by(PushServiceServer.id).limit(1))


def service_credentials(session: Session, service_url: str | None) -> ServiceCredentials | None:
    """The credentials to call the configured service with; None until registered with it."""
    if service_url is None:
        return None
    row = get_registration(session)
    if row is None or row.url.rstrip("/") != service_url.rstrip("/"):
        return None
    return ServiceCredentials(url=service_url, server_uuid=row.server_uuid, server_key=row.server_key)


def realm_uuid(session: Session, realm_id: int) -> str | None:
    return session.scalar(select(PushServiceRealm.uuid).where(PushServiceRealm.realm_id == realm_id))


@dataclass(frozen=True)
class PendingRegistration:
    """A token an app registered that the service has not been given yet."""

    device_id: int
    token_id: str
    bouncer_public_key: str
    encrypted_push_registration: str
    realm_id: int
    # The UUID the service knows the organization by; None until it is reported.
    realm_uuid: str | None


def pending_registrations(session: Session) -> list[PendingRegistration]:
    """Tokens waiting to be forwarded, oldest device first (refused ones wait for the app)."""
    rows = session.execute(
        select(
            Device.id,
            Device.pending_token_id,
            Device.bouncer_public_key,
            Device.encrypted_push_registration,
            UserProfile.realm_id,
            PushServiceRealm.uuid,
        )
        .join(UserProfile, UserProfile.id == Device.user_profile_id)
        .outerjoin(PushServiceRealm, PushServiceRealm.realm_id == UserProfile.realm_id)
        .where(Device.pending_token_id.is_not(None), Device.push_registration_error_code.is_(None))
        .order_by(Device.id)
    ).all()
    return [
        PendingRegistration(device_id, token_id, public_key or "", sealed or "", realm_id, uuid)
        for device_id, token_id, public_key, sealed, realm_id, uuid in rows
        if token_id is not None
    ]


def realm_report(settings: Settings, realm: Realm, row: PushServiceRealm) -> dict[str, Any]:
    """An organization as the service's analytics endpoint takes it (exactly these keys)."""
    url = realm_url(settings, realm)
    return {
        "id": realm.id,
        "host": url.split("://", 1)[1],
        "url": url,
        "name": realm.name,
        "org_type": realm.org_type,
        "date_created": float(to_timestamp(realm.date_created)),
        "deactivated": realm.deactivated,
        "is_system_bot_realm": False,
        "authentication_methods": {},
        "uuid": row.uuid,
        "uuid_owner_secret": row.uuid_owner_secret,
    }


def role_counts(session: Session) -> dict[int, dict[str, Any]]:
    """Each organization's active users by role, and its bots, as the service reads them."""

    def empty() -> dict[str, Any]:
        return {ROLE_COUNT: {ROLE_COUNT_HUMANS: {str(int(r)): 0 for r in Role}, ROLE_COUNT_BOTS: 0}}

    counts = {realm_id: empty() for realm_id in session.scalars(select(Realm.id))}
    rows = session.execute(
        select(UserProfile.realm_id, UserProfile.is_bot, UserProfile.role, func.count())
        .where(UserProfile.is_active.is_(True))
        .group_by(UserProfile.realm_id, UserProfile.is_bot, UserProfile.role)
    ).all()
    for realm_id, is_bot, role, n in rows:
        entry = counts.setdefault(realm_id, empty())[ROLE_COUNT]
        if is_bot:
            entry[ROLE_COUNT_BOTS] += n
        else:
            humans = entry[ROLE_COUNT_HUMANS]
            humans[str(role)] = humans.get(str(role), 0) + n
    return counts
