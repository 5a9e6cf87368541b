"""PostgreSQL and Redis as dependencies: waiting for them at start, and living without them.

At start (``wait_for_dependencies``): each is tried with exponential backoff for
``startup_dependency_timeout_seconds``; the operator reads one line naming the setting and
the address while it waits, and one more if it gives up (the process exits non-zero).

While serving (``OutageMonitor``): a request that fails because one is unreachable answers
503 with ``retry-after`` (``routing.py`` asks ``unavailable_error``); the monitor logs one
line when an outage starts and one when it ends, however many requests fail in between.
Recovery needs nothing: the connection pools reconnect on their own. A full disk (the
database's or the uploads') is an outage of ``storage`` the same way, answered 507: the
failed write's transaction rolled back and uploads are written to a temporary file and
renamed, so nothing half-written stays, and a probe notices when there is room again.
"""

from __future__ import annotations

import errno
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit

from sqlalchemy import Engine, create_engine, literal, select
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from palaver.config import Settings
from palaver.lib import metrics
from palaver.lib.operational_errors import ServiceUnavailableError, StorageFullError

logger = logging.getLogger("palaver.dependencies")

# What a client is told to wait before retrying a request that met an outage.
RETRY_AFTER_SECONDS = 2


class DependencyUnavailableError(ConnectionError):
    """Start-up gave up waiting; the message is one line for stderr."""


def describe_address(url: str) -> str:
    """host:port/database of a URL, without credentials."""
    parts = urlsplit(url)
    if parts.scheme.startswith("unix"):
        return parts.path
    host = parts.hostname or "localhost"
    port = f":{parts.port}" if parts.port else ""
    path = parts.path if parts.path not in ("", "/") else ""
    return f"{host}{port}{path}"


def check_database(engine: Engine) -> None:
    with engine.connect() as conn:
        conn.execute(select(literal(1)))


def check_redis(url: str, timeout: float = 1.0) -> None:
    import redis  # noqa: PLC0415  (~6 MiB, only in servers configured with Redis)

    client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        client.ping()
    finally:
        client.close()


def _reason(error: BaseException) -> str:
    original = getattr(error, "orig", None) or error
    lines = [line.strip() for line in str(original).splitlines() if line.strip()]
    return lines[0] if lines else type(original).__name__


def wait_for_dependencies(
    settings: Settings,
    *,
    out: TextIO | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Return once PostgreSQL (if used) and Redis (if set) answer; else raise after the timeout."""
    out = out or sys.stderr
    checks: list[tuple[str, str, str, Callable[[], None]]] = []
    if not settings.is_sqlite:

        def database() -> None:
            engine = create_engine(settings.database_url, poolclass=None, connect_args={"connect_timeout": 3})
            try:
                check_database(engine)
            finally:
                engine.dispose()

        checks.append(("PostgreSQL", "database_url", describe_address(settings.database_url), database))
    if settings.redis_url:
        url = settings.redis_url
        checks.append(("Redis", "redis_url", describe_address(url), lambda: check_redis(url)))
    # The time allowed runs from the first failure: a first attempt slowed down by a busy
    # machine (importing the driver, say) does not use up the wait before it is announced.
    deadline: float | None = None
    for name, setting, address, check in checks:
        delay = 0.2
        announced = False
        while True:
            try:
                check()
                break
            except Exception as error:
                reason = _reason(error)
                if deadline is None:
                    deadline = clock() + settings.startup_dependency_timeout_seconds
                remaining = deadline - clock()
                if remaining <= 0:
                    raise DependencyUnavailableError(
                        f"{name} at {address} ({setting}) is unreachable: {reason}; gave up after "
                        f"{settings.startup_dependency_timeout_seconds:g} s "
                        "(startup_dependency_timeout_seconds)"
                    ) from None
                if not announced:
                    announced = True
                    out.write(
                        f"palaver: waiting for {name} at {address} ({setting}): {reason}; "
                        f"retrying for up to {remaining:.0f} s\n"
                    )
                    out.flush()
                sleep(min(delay, remaining))
                delay = min(delay * 2, 5.0)
        if announced:
            out.write(f"palaver: {name} at {address} is reachable\n")
            out.flush()


# While serving -----------------------------------------------------------------------------

STORAGE = "storage"
# ENOSPC and EDQUOT: no room on the device, or in the user's quota.
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
SQLITE_FULL = 13
# PostgreSQL's SQLSTATE for "disk full" (class 53, insufficient resources).
POSTGRES_DISK_FULL = "53100"


def storage_full(error: BaseException) -> bool:
    """Whether ``error`` (or what caused it) says a disk is full.

    SQLite reports it as "database or disk is full" (SQLITE_FULL), PostgreSQL by SQLSTATE
    53100, files by ENOSPC; SQLAlchemy wraps the drivers' errors in its own.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _FULL_ERRNOS:
            return True
        original = getattr(current, "orig", None)
        for candidate in (current, original):
            if candidate is None:
                continue
            if getattr(candidate, "sqlite_errorcode", None) == SQLITE_FULL:
                return True
            if getattr(candidate, "sqlstate", None) == POSTGRES_DISK_FULL:
                return True
        if original is not None and "database or disk is full" in str(original):
            return True
        current = current.__cause__ or current.__context__
    return False


def probe_free_space(directories: list[Path], needed_bytes: int = 1024 * 1024) -> Callable[[], None]:
    """A probe that passes once each directory takes a file of ``needed_bytes`` again."""

    def probe() -> None:
        for directory in directories:
            if not directory.is_dir():
                continue
            with tempfile.TemporaryFile(dir=directory) as f:
                f.write(b"\0" * needed_bytes)
                f.flush()
                os.fsync(f.fileno())

    return probe


def dependency_of(error: BaseException) -> str | None:
    """Which dependency an exception says is unreachable: "database", "redis", or None."""
    # No Redis error can exist before redis-py is imported, and it is only where Redis is used.
    redis_errors = sys.modules.get("redis.exceptions")
    if redis_errors is not None and isinstance(
        error, redis_errors.ConnectionError | redis_errors.TimeoutError
    ):
        return "redis"
    if isinstance(error, PoolTimeoutError):
        return "database"
    if isinstance(error, OperationalError) or (
        isinstance(error, DBAPIError) and error.connection_invalidated
    ):
        # Includes SQLite's "database is locked": contention rather than an outage, but a
        # retry is the right answer to it too.
        return "database"
    return None


class OutageMonitor:
    """One log line when a dependency starts failing, one when it answers again.

    Whether it answers again is learnt by probing it (once a second, on a thread of its
    own, only during an outage): a request that happens to succeed may not have needed it.
    """

    PROBE_INTERVAL = 1.0

    def __init__(
        self, probes: dict[str, Callable[[], None]], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._probes = probes
        self._down_since: dict[str, float] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self._closed = threading.Event()

    @property
    def down(self) -> frozenset[str]:
        return frozenset(self._down_since)

    def failed(self, dependency: str, error: BaseException) -> None:
        metrics.DEPENDENCY_ERRORS.labels(dependency).inc()
        with self._lock:
            if dependency in self._down_since:
                return
            self._down_since[dependency] = self._clock()
        if dependency == STORAGE:
            logger.error("storage full: %s; answering 507 until there is room", _reason(error))
        else:
            logger.error("%s unreachable: %s; answering 503 until it returns", dependency, _reason(error))
        probe = self._probes.get(dependency)
        if probe is not None:
            threading.Thread(
                target=self._probe_until_up,
                args=(dependency, probe),
                name=f"palaver-probe-{dependency}",
                daemon=True,
            ).start()

    def _probe_until_up(self, dependency: str, probe: Callable[[], None]) -> None:
        while not self._closed.wait(self.PROBE_INTERVAL):
            try:
                probe()
            except Exception:
                continue
            self.recovered(dependency)
            return

    def recovered(self, dependency: str) -> None:
        # Logged under the lock, before anyone can see the dependency as up: whoever waits
        # for `down` to clear then also sees the line that says so.
        with self._lock:
            since = self._down_since.get(dependency)
            if since is None:
                return
            elapsed = self._clock() - since
            if dependency == STORAGE:
                logger.warning("storage has room again after %.1f s", elapsed)
            else:
                logger.warning("%s reachable again after %.1f s", dependency, elapsed)
            del self._down_since[dependency]

    def close(self) -> None:
        self._closed.set()

    def unavailable_error(self, error: BaseException) -> ServiceUnavailableError | StorageFullError | None:
        """The 503 to answer for ``error``, if it means a dependency is unreachable, or the
        507 if a disk is full (SQLite's full disk is an OperationalError too: asked first)."""
        if storage_full(error):
            self.failed(STORAGE, error)
            return StorageFullError(retry_after=RETRY_AFTER_SECONDS)
        dependency = dependency_of(error)
        if dependency is None:
            return None
        self.failed(dependency, error)
        return ServiceUnavailableError(
            f"Service temporarily unavailable ({dependency} unreachable); retry shortly",
            retry_after=RETRY_AFTER_SECONDS,
        )
