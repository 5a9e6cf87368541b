"""The service-bot worker: delivers queued work to outgoing-webhook and embedded bots.

Work is rows of ``service_bot_event`` (``actions/service_bot_queue.py``), written in the
transaction that sent the triggering message, so nothing is lost across restarts. Each
server process runs one worker (``create_app``'s lifespan) that wakes when messages are sent
and every ``max_sleep_seconds`` otherwise (retries, and work other processes queued).

Outgoing webhooks: the request goes out with a timeout and no transaction open. A timeout,
a connection error or a 5xx answer is retried (``MAX_ATTEMPTS`` tries in all, spaced by
``RETRY_DELAYS``); any other failure, or the last retry's, is told once to the bot's owner by
a direct message from the bot. A 2xx answer's ``content`` becomes the bot's reply.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

from sqlalchemy.orm import Session

from palaver.actions.service_bot_queue import (
    MAX_ATTEMPTS,
    do_claim_service_bot_event,
    do_finish_service_bot_event,
    do_retry_service_bot_event,
    due_event_ids,
    next_attempt_time,
)
from palaver.actions.service_bots import do_notify_bot_owner, do_send_bot_message, reply_target
from palaver.lib.bots import get_bot_services
from palaver.lib.exceptions import JsonableError
from palaver.lib.outgoing_webhooks import (
    BadResponseError,
    DeliveryRefusedError,
    OutgoingRequest,
    build_request,
    check_target_allowed,
    outgoing_message,
    reply_content,
)
from palaver.lib.realm import realm_email_host, realm_url
from palaver.models import Realm
from palaver.models.messages import Message
from palaver.models.service_bots import ServiceBotEvent
from palaver.models.users import BotType, UserProfile
from palaver.timeutil import utcnow
from palaver.workers.embedded_bots import run_embedded_bot
from palaver.workers.loop import BackgroundWorker

if TYPE_CHECKING:
    from palaver.services import Services

logger = logging.getLogger("palaver.service_bots")

# Wait before the 2nd and 3rd tries.
RETRY_DELAYS = (timedelta(seconds=10), timedelta(seconds=60))
_EXCERPT = 500


@dataclass(frozen=True)
class _Job:
    """What one delivery needs, read before any network I/O starts."""

    event_id: int
    attempts: int
    bot_id: int
    bot_full_name: str
    message_id: int
    url: str
    interface: int
    request: OutgoingRequest


@dataclass(frozen=True)
class _Failure:
    reason: str
    retry: bool
    status: int | None = None
    body: str | None = None


def _excerpt(body: bytes) -> str:
    text = body.decode("utf-8", errors="replace").strip()
    return text if len(text) <= _EXCERPT else text[:_EXCERPT] + "…"


class ServiceBotWorker(BackgroundWorker):
    name = "palaver-service-bots"
    label = "service bot"
    logger = logger
    waking_events = frozenset({"message"})

    def __init__(
        self,
        services: Services,
        *,
        clock: Callable[[], datetime] = utcnow,
        max_sleep_seconds: float = 5.0,
        batch_size: int = 50,
    ) -> None:
        super().__init__(services)
        self.clock = clock
        self.max_sleep_seconds = max_sleep_seconds
        self.batch_size = batch_size

    @cached_property
    def http(self) -> httpx.Client:
        # httpx (with its CLI's rich and pygments, ~7 MiB) loads with the first bot call, not
        # in every server that has no bot.
        import httpx  # noqa: PLC0415

        from palaver.lib.guarded_http import GuardedTransport  # noqa: PLC0415  (imports httpx)

        settings = self.services.settings
        return httpx.Client(
            timeout=httpx.Timeout(settings.outgoing_webhook_timeout_seconds),
            follow_redirects=False,
            trust_env=False,
            # Connects to the address it checked, whatever the name resolves to next.
            transport=GuardedTransport(allow_private=settings.outgoing_webhooks_allow_private),
        )

    # One round --------------------------------------------------------------------------------

    def run_due(self) -> int:
        """Handle every event due now; returns how many this worker handled."""
        handled = 0
        with self.services.db.session() as session:
            seen: set[int] = set()
            while True:
                now = self.clock()
                ids = [i for i in due_event_ids(session, now, self.batch_size + len(seen)) if i not in seen]
                session.rollback()
                if not ids:
                    return handled
                for event_id in ids:
                    seen.add(event_id)
                    event = do_claim_service_bot_event(session, event_id, now)
                    if event is None:
                        continue
                    handled += 1
                    try:
                        self._handle(session, event)
                    except Exception:
                        # The claim runs out and another round tries again; no crash loop,
                        # since each try counts towards MAX_ATTEMPTS.
                        logger.exception("service bot event %s failed", event_id)
                        session.rollback()

    def _handle(self, session: Session, event: ServiceBotEvent) -> None:
        bot = session.get(UserProfile, event.bot_profile_id)
        message = session.get(Message, event.message_id)
        if bot is None or not bot.is_active or message is None:
            do_finish_service_bot_event(session, event.id)
            return
        if bot.bot_type == BotType.EMBEDDED:
            self._run_embedded(session, event, bot, message)
            return
        job = self._prepare(session, event, bot, message)
        if job is None:
            return
        session.rollback()  # no transaction stays open across the network call
        outcome = self._post(job)
        self._finish(session, job, outcome)

    def _run_embedded(
        self, session: Session, event: ServiceBotEvent, bot: UserProfile, message: Message
    ) -> None:
        try:
            run_embedded_bot(session, self.services.settings, bot, message, event.trigger)
        except Exception as e:
            logger.exception("embedded bot %s failed on message %s", bot.id, message.id)
            session.rollback()
            do_notify_bot_owner(
                session,
                self.services.settings,
                bot,
                f"Your bot @_**{bot.full_name}** failed on {self._message_link(session, message.id)}: "
                f"{type(e).__name__}: {e}",
            )
        do_finish_service_bot_event(session, event.id)

    def _message_link(self, session: Session, message_id: int) -> str:
        message = session.get(Message, message_id)
        if message is None:
            return "a message"
        realm = session.get(Realm, message.realm_id)
        base = realm_url(self.services.settings, realm) if realm is not None else ""
        return f"[a message]({base}/#narrow/id/{message_id})"

    def _prepare(
        self, session: Session, event: ServiceBotEvent, bot: UserProfile, message: Message
    ) -> _Job | None:
        services = get_bot_services(session, bot.id)
        if not services:
            do_finish_service_bot_event(session, event.id)
            return None
        service = services[0]
        host = realm_email_host(self.services.settings, bot.realm)
        try:
            request = build_request(bot, service, outgoing_message(session, message), event.trigger, host)
        except BadResponseError as e:
            self._tell_owner(session, bot.id, message.id, service.base_url, _Failure(str(e), retry=False))
            do_finish_service_bot_event(session, event.id)
            return None
        return _Job(
            event.id,
            event.attempts,
            bot.id,
            bot.full_name,
            message.id,
            service.base_url,
            service.interface,
            request,
        )

    def _post(self, job: _Job) -> bytes | _Failure:
        try:
            check_target_allowed(job.url, self.services.settings.outgoing_webhooks_allow_private)
        except DeliveryRefusedError as e:
            return _Failure(
                f"Refused to call the service: {e} (outgoing_webhooks_allow_private is off)", False
            )
        import httpx  # noqa: PLC0415  (loaded with the client: see ``http``)

        from palaver.lib.guarded_backend import AddressRefusedError  # noqa: PLC0415  (the same)

        try:
            if job.request.json is not None:
                response = self.http.post(job.url, json=job.request.json)
            else:
                response = self.http.post(job.url, data=dict(job.request.form or []))
        except httpx.TimeoutException:
            return _Failure("The request timed out.", retry=True)
        except httpx.ConnectError as e:
            if isinstance(e.__cause__, AddressRefusedError):
                # The name resolved to a private address at connect time (after the check
                # above passed): refused, as the check would have, and not retried.
                return _Failure(
                    f"Refused to call the service: {e} (outgoing_webhooks_allow_private is off)", False
                )
            return _Failure(f"The request failed: {type(e).__name__}: {e}", retry=True)
        except httpx.HTTPError as e:
            return _Failure(f"The request failed: {type(e).__name__}: {e}", retry=True)
        if 200 <= response.status_code < 300:
            return response.content
        return _Failure(
            "The service answered with an error.",
            retry=response.status_code >= 500,
            status=response.status_code,
            body=_excerpt(response.content),
        )

    def _finish(self, session: Session, job: _Job, outcome: bytes | _Failure) -> None:
        settings = self.services.settings
        if isinstance(outcome, _Failure):
            if outcome.retry and job.attempts < MAX_ATTEMPTS:
                delay = RETRY_DELAYS[min(job.attempts, len(RETRY_DELAYS)) - 1]
                logger.info("outgoing webhook of bot %s: %s retrying", job.bot_id, outcome.reason)
                do_retry_service_bot_event(session, job.event_id, self.clock() + delay)
                return
            self._tell_owner(session, job.bot_id, job.message_id, job.url, outcome)
            do_finish_service_bot_event(session, job.event_id)
            return
        try:
            content = reply_content(job.interface, outcome)
        except BadResponseError as e:
            failure = _Failure(str(e), retry=False, body=_excerpt(outcome))
            self._tell_owner(session, job.bot_id, job.message_id, job.url, failure)
            do_finish_service_bot_event(session, job.event_id)
            return
        if content is not None:
            bot = session.get(UserProfile, job.bot_id)
            message = session.get(Message, job.message_id)
            if bot is not None and message is not None:
                try:
                    do_send_bot_message(session, settings, bot, reply_target(session, bot, message), content)
                except JsonableError as e:
                    session.rollback()
                    failure = _Failure(f"Its reply could not be sent: {e.msg}", retry=False)
                    self._tell_owner(session, job.bot_id, job.message_id, job.url, failure)
        do_finish_service_bot_event(session, job.event_id)

    def _tell_owner(
        self, session: Session, bot_id: int, message_id: int, url: str, failure: _Failure
    ) -> None:
        bot = session.get(UserProfile, bot_id)
        if bot is None:
            return
        lines = [
            f"{self._message_link(session, message_id)} to your bot @_**{bot.full_name}** "
            f"triggered an outgoing webhook to `{url}`, which failed.",
            failure.reason,
        ]
        if failure.status is not None:
            lines.append(f"The service answered with status code **{failure.status}**.")
        if failure.body:
            lines.append(f"Its answer began:\n```\n{failure.body}\n```")
        logger.warning("outgoing webhook of bot %s failed: %s", bot_id, failure.reason)
        do_notify_bot_owner(session, self.services.settings, bot, "\n".join(lines))

    def seconds_until_next(self) -> float:
        with self.services.db.session() as session:
            due = next_attempt_time(session)
        if due is None:
            return self.max_sleep_seconds
        return min(max((due - self.clock()).total_seconds(), 0.0), self.max_sleep_seconds)

    # Running in the server ----------------------------------------------------------------------

    def run_round(self) -> float:
        self.run_due()
        return self.seconds_until_next()

    def default_delay(self) -> float:
        return self.max_sleep_seconds

    def wakes_on(self, event: dict[str, Any]) -> bool:
        # Only direct messages and messages with a mention can trigger a bot: plain channel
        # chatter does not cost a round (and its queries) per message.
        message = event.get("message") or {}
        return message.get("type") == "private" or "user-mention" in str(message.get("content", ""))

    async def stop(self) -> None:
        await super().stop()
        if "http" in self.__dict__:  # made on first use
            self.http.close()
