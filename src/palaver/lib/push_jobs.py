"""Push jobs: the committed events the push worker acts on (``workers/push.py``), queued where
a server's worker takes them, whichever process committed the event.

- Without Redis, in the memory of the serving process: its own events come from its bus;
  a command's (``palaver`` commands, the email gateway) reach that bus through the change
  log (``cache/change_log.py``).
- With Redis, in one Redis list per database: a command publishes to Redis, and nothing
  reaches a server's bus, so every process queues its jobs there (a server through its
  worker; a command through the listener ``build_services`` registers, ``forward``), and
  each job is taken once by whichever server's worker pops it first.

A job taken by a worker that then stops is dropped, as one in memory is.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from palaver.events.bus import Listener

if TYPE_CHECKING:
    import redis

logger = logging.getLogger("palaver.push")

# Jobs taken per read.
TAKE_BATCH = 100


@dataclass(frozen=True)
class Job:
    kind: str  # "message", "read" or "delete"
    realm_id: int
    event: dict[str, Any]
    user_ids: tuple[int, ...]


def job_for(realm_id: int, event: dict[str, Any], user_ids: Sequence[int]) -> Job | None:
    """The job a committed event makes: a new message, messages read, messages deleted."""
    kind = event.get("type")
    if kind == "message":
        return Job("message", realm_id, event, tuple(user_ids))
    if kind == "update_message_flags":
        if event.get("op") != "add" or event.get("flag") != "read":
            return None
        return Job("read", realm_id, event, tuple(user_ids))
    if kind == "delete_message":
        return Job("delete", realm_id, event, tuple(user_ids))
    return None


class PushJobs(Protocol):
    #: Whether other processes queue jobs here too: the worker then looks for them on its own.
    shared: bool

    def put(self, job: Job) -> None: ...

    def take(self) -> list[Job]:
        """Some of the queued jobs, oldest first; none when none are queued."""
        ...

    def close(self) -> None: ...


class MemoryPushJobs:
    shared = False

    def __init__(self) -> None:
        self._jobs: deque[Job] = deque()

    def put(self, job: Job) -> None:
        self._jobs.append(job)

    def take(self) -> list[Job]:
        taken: list[Job] = []
        while self._jobs and len(taken) < TAKE_BATCH:
            taken.append(self._jobs.popleft())
        return taken

    def close(self) -> None:
        return None


class RedisPushJobs:
    shared = True

    def __init__(self, url: str, key: str) -> None:
        # redis-py only in processes configured with Redis.
        import redis  # noqa: PLC0415

        self._client: redis.Redis = redis.Redis.from_url(url)
        self.key = key

    @staticmethod
    def key_for(database_url: str) -> str:
        """Beside the database's event queues, so deployments sharing a Redis never mix them."""
        from palaver.events.redis_backend import RedisQueueBackend  # noqa: PLC0415

        return RedisQueueBackend.default_key_prefix(database_url) + "push-jobs"

    def put(self, job: Job) -> None:
        self._client.rpush(self.key, orjson.dumps([job.kind, job.realm_id, job.event, job.user_ids]))

    def take(self) -> list[Job]:
        # LPOP of a count is atomic: two workers never take the same job.
        raw: list[bytes] | None = self._client.lpop(self.key, TAKE_BATCH)  # type: ignore[assignment]
        jobs: list[Job] = []
        for item in raw or ():
            kind, realm_id, event, user_ids = orjson.loads(item)
            jobs.append(Job(kind, realm_id, event, tuple(user_ids)))
        return jobs

    def close(self) -> None:
        self._client.close()


def push_jobs(redis_url: str | None, database_url: str) -> PushJobs:
    """Where a process's push jobs go (Redis when configured, else its memory)."""
    if redis_url:
        return RedisPushJobs(redis_url, RedisPushJobs.key_for(database_url))
    return MemoryPushJobs()


def queue(jobs: PushJobs, realm_id: int, event: dict[str, Any], user_ids: Sequence[int]) -> bool:
    """Queue the job an event makes, if any; whether one was queued. Called by bus listeners,
    which run before the event reaches any client queue: a failure is logged, never raised."""
    job = job_for(realm_id, event, user_ids)
    if job is None:
        return False
    try:
        jobs.put(job)
    except Exception:
        logger.exception("Could not queue the push notification job of a %s event", job.kind)
        return False
    return True


def forward(jobs: PushJobs) -> Listener:
    """A bus listener queueing the jobs of every event published in this process: a command's,
    which runs no push worker."""

    def listener(realm_id: int, event: dict[str, Any], user_ids: Sequence[int]) -> None:
        queue(jobs, realm_id, event, user_ids)

    return listener
