"""The long-lived objects one server process holds, built once by the composition root."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from palaver.config import Settings
from palaver.db.database import Database
from palaver.events.memory_backend import MemoryQueueBackend
from palaver.events.queues import QueueBackend
from palaver.lib.dependencies import OutageMonitor
from palaver.lib.passwords import Passwords
from palaver.lib.push_jobs import PushJobs, forward, push_jobs
from palaver.lib.rate_limit import MemoryRateLimiter, NoRateLimiter, RateLimiter, RedisRateLimiter
from palaver.timeutil import utcnow

EVENT_QUEUE_STATE_FILE = "event_queues.json"


@dataclass
class Services:
    settings: Settings
    # The event bus is the queue backend: committed events go straight into client queues.
    bus: QueueBackend
    db: Database
    passwords: Passwords
    rate_limiter: RateLimiter
    # Turns "database/Redis unreachable" into 503s, logged once per outage (lib/dependencies.py).
    outages: OutageMonitor | None = None
    # Naive-UTC "now" for browser-session expiry; tests replace it to move time.
    clock: Callable[[], datetime] = utcnow
    # Where this process's push notification jobs go, when a push path is set (lib/push_jobs.py).
    push_jobs: PushJobs | None = None

    def close(self) -> None:
        if self.outages is not None:
            self.outages.close()
        if self.push_jobs is not None:
            self.push_jobs.close()
        self.db.dispose()
        self.bus.close()


def build_queue_backend(settings: Settings) -> QueueBackend:
    """Redis when configured (queues shared by every process), else this process's memory."""
    if settings.redis_url:
        # redis-py (~6 MiB) only in servers configured with Redis.
        from palaver.events.redis_backend import RedisQueueBackend  # noqa: PLC0415

        return RedisQueueBackend(
            settings.redis_url,
            idle_timeout_seconds=settings.event_queue_idle_timeout_seconds,
            heartbeat_seconds=settings.heartbeat_seconds,
            key_prefix=RedisQueueBackend.default_key_prefix(settings.database_url),
        )

    return MemoryQueueBackend(
        idle_timeout_seconds=settings.event_queue_idle_timeout_seconds,
        heartbeat_seconds=settings.heartbeat_seconds,
        state_file=settings.data_dir / EVENT_QUEUE_STATE_FILE,
    )


def configure_queue_limits(bus: QueueBackend, settings: Settings) -> QueueBackend:
    bus.max_queues_per_user = settings.max_event_queues_per_user
    return bus


def build_services(settings: Settings, *, one_off: bool = False) -> Services:
    """The services of a serving process, or of a ``one_off`` command run beside the servers
    (whose changes reach them through the change log when there is no Redis: db/database.py)."""
    bus = configure_queue_limits(build_queue_backend(settings), settings)
    limiter: RateLimiter
    if not settings.rate_limiting:
        limiter = NoRateLimiter()
    elif settings.redis_url:
        limiter = RedisRateLimiter(settings.redis_url)
    else:
        limiter = MemoryRateLimiter()
    services = Services(
        settings=settings,
        bus=bus,
        db=Database(settings, bus, one_off=one_off),
        passwords=Passwords(settings.password_time_cost, settings.password_memory_cost_kib),
        rate_limiter=limiter,
    )
    if settings.push_configured:
        services.push_jobs = push_jobs(settings.redis_url, settings.database_url)
        if one_off and services.push_jobs.shared:
            # A command runs no push worker, and with Redis its events reach no server's
            # bus: its jobs go to the servers' shared list (without Redis, the change log
            # publishes its events on the server's bus, where the worker makes the jobs).
            bus.add_listener(forward(services.push_jobs))
    return services
