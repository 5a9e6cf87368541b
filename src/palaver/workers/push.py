"""The push worker: mobile notifications after commit, through Zulip's push notification
service or the operator's relay.

It listens on the event bus of its process (each committed event is published once, in the
process that committed it) and queues what it needs from ``message``, ``update_message_flags``
(read) and ``delete_message`` events as jobs (``lib/push_jobs.py``: in memory, or with Redis
in a list every process of the deployment queues to, commands included, and every server's
worker takes from); the work runs in the worker's own thread, so a send never waits for it
and a slow service delays only notifications. A process that stops drops the notifications
it had taken and not sent yet.

- A new message: for recipients with a device (one indexed probe says whether anyone in
  the organization has one, remembered for a few seconds, so organizations without devices
  cost nothing per send), Zulip's rules decide who is notified (``lib/push.py``,
  ``push_trigger``); a message read meanwhile is skipped. Each device gets its own
  ciphertext, and the message is marked as notified.
- Read messages that were notified, and deleted messages: a ``remove`` notification per
  user, naming up to the 200 newest.
- Through the service: tokens that apps registered are forwarded (``push/e2ee/register``)
  and become the device's token once accepted; refusals reach the app as the device's
  ``push_registration_error_code``; tokens the service reports gone drop from their devices;
  organizations are reported to it daily (and when it says it does not know one), and one
  whose plan does not allow pushes sends none.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from palaver.actions.devices import (
    do_clear_push_notified,
    do_drop_push_tokens,
    do_finish_push_registration,
    do_mark_push_notified,
)
from palaver.actions.push_service import do_ensure_push_realms, do_record_push_realm_status
from palaver.lib.legacy_push import legacy_targets, post_to_relay, send_to_legacy_targets
from palaver.lib.push import (
    MENTION,
    Identity,
    PushTarget,
    encrypt_payload,
    is_alert,
    mentioned_groups,
    mentioned_ids,
    message_payload,
    notified_message_ids,
    push_targets,
    push_trigger,
    realm_has_devices,
    recipient_facts,
    relay_client,
    relay_request,
    remove_payload,
    unread_message_ids,
    users_with_devices,
)
from palaver.lib.push_jobs import Job, MemoryPushJobs, PushJobs, queue
from palaver.lib.push_service import (
    FINAL_REGISTRATION_ERRORS,
    PushServiceClient,
    PushServiceError,
    ServiceCredentials,
    pending_registrations,
    push_request,
    realm_report,
    realm_uuid,
    role_counts,
    service_credentials,
)
from palaver.lib.realm import realm_url
from palaver.models.push_service import PushServiceRealm
from palaver.models.realm import Realm
from palaver.timeutil import utcnow
from palaver.workers.loop import BackgroundWorker

if TYPE_CHECKING:
    import httpx

    from palaver.services import Services

logger = logging.getLogger("palaver.push")

# How long "nobody in this organization has a device" is believed without asking again.
REALM_PROBE_SECONDS = 10.0
# Organizations are reported to the service this often (and its answer on pushes renewed).
REALM_SYNC_SECONDS = 24 * 3600.0
# Pending registrations are retried this often while the service cannot be reached.
RETRY_SECONDS = 60.0
# How often a worker looks for the jobs other processes queued (with Redis): the bound on
# how late a command's message is pushed. Its own process's jobs wake it at once.
SHARED_POLL_SECONDS = 0.25


class Deliverer:
    """Sends one user's notification to each of their devices, by the configured path."""

    def __init__(self, services: Services, client: httpx.Client) -> None:
        self.services = services
        self.client = client
        # Set when the service did not know an organization: report them before retrying.
        self.realms_unknown = False

    def identity(self, realm: Realm, user_id: int) -> Identity:
        return Identity(realm_url(self.services.settings, realm), realm.name, user_id)

    def send(
        self, realm_id: int, user_id: int, payload: dict[str, Any], *, token_id: str | None = None
    ) -> int:
        """How many devices the notification went to. Raises ``PushServiceError`` only for
        a service refusal of the whole request, which callers log (or report, for tests)."""
        settings = self.services.settings
        with self.services.db.session() as session:
            targets = push_targets(session, user_id, token_id)
            if settings.push_relay_url is not None:
                legacy = legacy_targets(session, user_id, token_id)
                if not targets and not legacy:
                    return 0
                return self._send_to_relay(settings.push_relay_url, targets, legacy, payload)
            credentials = service_credentials(session, settings.push_service_url)
            row = session.get(PushServiceRealm, realm_id)
            uuid, can_push = (row.uuid, row.can_push) if row is not None else (None, None)
        if not targets or credentials is None:
            return 0
        if uuid is None:
            self.realms_unknown = True
            raise PushServiceError(
                "organization not reported to the push service yet", "MISSING_REMOTE_REALM"
            )
        if can_push is False:
            raise PushServiceError("the push service's plan for this organization does not allow pushes")
        return self._send_to_service(credentials, uuid, targets, payload)

    def _send_to_relay(
        self, url: str, targets: Sequence[PushTarget], legacy: Sequence[Any], payload: dict[str, Any]
    ) -> int:
        delivered = send_to_legacy_targets(url, list(legacy), payload, self.client)
        for target in targets:
            body = relay_request(target, payload)
            delivered += post_to_relay(self.client, url, body, f"device {target.device_id}")
        return delivered

    def _send_to_service(
        self,
        credentials: ServiceCredentials,
        uuid: str,
        targets: Sequence[PushTarget],
        payload: dict[str, Any],
    ) -> int:
        alert = is_alert(payload)
        requests = [
            push_request(
                t.token_kind, t.token_id, t.push_key_id, encrypt_payload(t.push_key, payload), alert=alert
            )
            for t in targets
        ]
        try:
            result = PushServiceClient(credentials, self.client).notify(uuid, requests)
        except PushServiceError as e:
            if e.code == "MISSING_REMOTE_REALM":
                self.realms_unknown = True
            raise
        if result.delete_token_ids:
            with self.services.db.session() as session:
                dropped = do_drop_push_tokens(session, result.delete_token_ids)
            logger.info(
                "push service dropped %d expired tokens (%d devices)", len(result.delete_token_ids), dropped
            )
        return result.apple_sent + result.android_sent


def report_realms(services: Services, client: PushServiceClient) -> dict[str, dict[str, Any]]:
    """Tell the service of every organization; its answers (may each push?) are stored."""
    settings = services.settings
    with services.db.session() as session:
        reports = [realm_report(settings, realm, row) for realm, row in do_ensure_push_realms(session)]
        counts = role_counts(session)
    answers = client.report_realms(reports, counts)
    with services.db.session() as session:
        do_record_push_realm_status(session, answers)
    return answers


class PushWorker(BackgroundWorker):
    name = "palaver-push"
    label = "push notifications"
    logger: ClassVar[logging.Logger] = logger
    daemon_thread = True
    waking_events = frozenset({"message", "update_message_flags", "delete_message", "device"})

    def __init__(self, services: Services, *, transport: httpx.BaseTransport | None = None) -> None:
        super().__init__(services)
        self.jobs: PushJobs = services.push_jobs or MemoryPushJobs()
        self._transport = transport
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()
        self._realm_probe: dict[int, tuple[float, bool]] = {}
        self._last_sync = 0.0
        self._clock: Callable[[], float] = time.monotonic
        # Whether the next round attends to the service (registrations, organizations):
        # after a device event (``_service_due_now``).
        self._service_due = True
        self._last_service_round = 0.0

    async def start(self) -> None:
        # Without a push path there is nothing to listen for.
        if self.services.settings.push_configured:
            await super().start()

    # In the publishing thread ----------------------------------------------------------------

    def accept(self, realm_id: int, event: dict[str, Any], user_ids: Sequence[int]) -> bool:
        if event.get("type") == "device":
            # A device that may now be reachable, or a token to forward.
            self.forget_probes()
            self._service_due = True
            return self.services.settings.push_service_url is not None and bool(
                event.get("pending_push_token_id")
            )
        return queue(self.jobs, realm_id, event, user_ids)

    # In the worker's thread -----------------------------------------------------------------

    def default_delay(self) -> float | None:
        return SHARED_POLL_SECONDS if self.jobs.shared else RETRY_SECONDS

    def http_client(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                self._client = relay_client(self._transport)
            return self._client

    def on_stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def run_round(self) -> float | None:
        deliverer: Deliverer | None = None
        while jobs := self.jobs.take():
            deliverer = deliverer or Deliverer(self.services, self.http_client())
            for job in jobs:
                try:
                    self.process(deliverer, job)
                except PushServiceError as e:
                    logger.warning("push service refused a notification: %s", e)
                except Exception:
                    logger.exception("push notification job (%s) failed", job.kind)
        if self.services.settings.push_service_url is not None and self._service_due_now(deliverer):
            self.service_round(deliverer)
        return SHARED_POLL_SECONDS if self.jobs.shared else None

    def _service_due_now(self, deliverer: Deliverer | None) -> bool:
        """Whether this round attends to the service: every round that was woken or is due
        (RETRY_SECONDS apart). With shared jobs most rounds only look for other processes'
        jobs: those attend to it only after jobs, a device event, or RETRY_SECONDS."""
        now = self._clock()
        due = (
            not self.jobs.shared
            or self._service_due
            or deliverer is not None
            or now - self._last_service_round >= RETRY_SECONDS
        )
        if due:
            self._service_due = False
            self._last_service_round = now
        return due

    def has_devices(self, realm_id: int) -> bool:
        now = self._clock()
        checked = self._realm_probe.get(realm_id)
        if checked is not None and now - checked[0] < REALM_PROBE_SECONDS:
            return checked[1]
        with self.services.db.session() as session:
            found = realm_has_devices(session, realm_id)
        self._realm_probe[realm_id] = (now, found)
        return found

    def forget_probes(self) -> None:
        """A device was just registered: probe again at the next message."""
        self._realm_probe.clear()

    def process(self, deliverer: Deliverer, job: Job) -> None:
        if not self.has_devices(job.realm_id):
            return
        if job.kind == "message":
            self.notify_message(deliverer, job)
        elif job.kind == "read":
            self.remove_read(deliverer, job)
        else:
            self.remove_deleted(deliverer, job)

    def notify_message(self, deliverer: Deliverer, job: Job) -> None:
        message = job.event["message"]
        flags = list(job.event.get("flags", ()))
        bus = self.services.bus
        with self.services.db.session() as session:
            candidates = users_with_devices(session, (u for u in job.user_ids if u != message["sender_id"]))
            if not candidates:
                return
            facts = recipient_facts(
                session,
                message,
                {u: flags for u in candidates},
                now=utcnow(),
                has_queues=lambda user_id: bool(bus.queue_ids_for_user(user_id)),
            )
            triggered = [(f.user_id, trigger) for f in facts if (trigger := push_trigger(f)) is not None]
            if not triggered:
                return
            unread = {u for u, _ in triggered if unread_message_ids(session, u, [message["id"]])}
            realm = session.get(Realm, job.realm_id)
            assert realm is not None
            personal, groups = mentioned_ids(message.get("content", ""))
            group_of = mentioned_groups(session, groups) if groups else []
        for user_id, trigger in triggered:
            if user_id not in unread:
                continue
            group = None
            if trigger == MENTION and "mentioned" in flags and user_id not in personal:
                group = next(((gid, name) for gid, name, members in group_of if user_id in members), None)
            payload = message_payload(deliverer.identity(realm, user_id), message, group=group)
            try:
                sent = deliverer.send(job.realm_id, user_id, payload)
            except PushServiceError as e:
                logger.warning("push service refused a notification for user %d: %s", user_id, e)
                continue
            if sent:
                with self.services.db.session() as session:
                    do_mark_push_notified(session, user_id, [message["id"]])

    def remove_read(self, deliverer: Deliverer, job: Job) -> None:
        message_ids = [int(m) for m in job.event.get("messages", ())]
        if not message_ids:
            return
        with self.services.db.session() as session:
            users = users_with_devices(session, job.user_ids)
            notified = {u: notified_message_ids(session, u, message_ids) for u in users}
            realm = session.get(Realm, job.realm_id)
        assert realm is not None
        for user_id, ids in notified.items():
            if ids:
                self._send_remove(deliverer, realm, user_id, ids)
                with self.services.db.session() as session:
                    do_clear_push_notified(session, user_id, ids)

    def remove_deleted(self, deliverer: Deliverer, job: Job) -> None:
        # The rows are gone, so whether a notification went out is unknown: every recipient
        # with a device is told (the app ignores IDs it shows nothing for).
        message_ids = [int(m) for m in job.event.get("message_ids", ())]
        if not message_ids:
            return
        with self.services.db.session() as session:
            users = users_with_devices(session, job.user_ids)
            realm = session.get(Realm, job.realm_id)
        assert realm is not None
        for user_id in sorted(users):
            self._send_remove(deliverer, realm, user_id, message_ids)

    def _send_remove(self, deliverer: Deliverer, realm: Realm, user_id: int, message_ids: list[int]) -> None:
        try:
            deliverer.send(realm.id, user_id, remove_payload(deliverer.identity(realm, user_id), message_ids))
        except PushServiceError as e:
            logger.warning("push service refused a removal for user %d: %s", user_id, e)

    # Zulip's push service: organizations and device registrations --------------------------

    def service_round(self, deliverer: Deliverer | None) -> None:
        settings = self.services.settings
        with self.services.db.session() as session:
            credentials = service_credentials(session, settings.push_service_url)
        if credentials is None:
            return
        client = PushServiceClient(credentials, self.http_client())
        due = self._clock() - self._last_sync >= REALM_SYNC_SECONDS or self._last_sync == 0.0
        if due or (deliverer is not None and deliverer.realms_unknown):
            self.sync_realms(client)
        self.forward_registrations(client)

    def sync_realms(self, client: PushServiceClient) -> None:
        try:
            report_realms(self.services, client)
        except PushServiceError as e:
            logger.error("reporting organizations to the push service failed: %s", e)
            return
        self._last_sync = self._clock()

    def forward_registrations(self, client: PushServiceClient) -> None:
        with self.services.db.session() as session:
            pending = pending_registrations(session)
        synced = False
        for registration in pending:
            device_id, token_id, uuid = registration.device_id, registration.token_id, registration.realm_uuid
            if uuid is None and not synced:
                self.sync_realms(client)
                synced = True
                with self.services.db.session() as session:
                    uuid = realm_uuid(session, registration.realm_id)
            if uuid is None:
                continue
            try:
                client.register_device(
                    uuid, token_id, registration.bouncer_public_key, registration.encrypted_push_registration
                )
            except PushServiceError as e:
                if e.code in FINAL_REGISTRATION_ERRORS:
                    with self.services.db.session() as session:
                        do_finish_push_registration(session, device_id, token_id, error_code=e.code)
                    if e.code == "REQUEST_EXPIRED":
                        logger.error(
                            "push registration of device %d expired before the service took it", device_id
                        )
                    continue
                if e.code == "MISSING_REMOTE_REALM" and not synced:
                    self.sync_realms(client)
                    synced = True
                logger.error("push registration of device %d failed (will retry): %s", device_id, e)
                continue
            with self.services.db.session() as session:
                do_finish_push_registration(session, device_id, token_id)
            self.forget_probes()
