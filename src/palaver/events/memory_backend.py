"""Event queues held in this process: the store for a single-process server.

Queues survive a clean restart: the app's shutdown saves them to a JSON file, and the
next start loads them, appending a ``restart`` event to each so clients learn the server
may have changed. A crash loses them, and clients register again on BAD_EVENT_QUEUE_ID.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson

from palaver.events.bus import EventDict
from palaver.events.delivery import Tailoring, reaches_all_public_streams_clients, restart_event
from palaver.events.descriptor import BadEventQueueIdError, ClientDescriptor, ClientShape
from palaver.events.queue_state import EventQueue, SharedEvent
from palaver.events.queues import FetchRequest, FetchResult, QueueBackend
from palaver.timeutil import Clock, utcnow

logger = logging.getLogger("palaver.events")

T = TypeVar("T")

_STATE_VERSION = 1
# Distinct registrations remembered for sharing (one per client program and version).
_MAX_SHAPES = 1024


@dataclass(slots=True)
class _Entry:
    client: ClientDescriptor
    queue: EventQueue
    # The queue is kept while now < max(last_access + lifespan, held_until).
    held_until: float = 0.0
    poller: str | None = None

    def expired(self, now: float) -> bool:
        return now > max(self.client.last_access + self.client.lifespan_seconds, self.held_until)


class MemoryQueueBackend(QueueBackend):
    def __init__(
        self,
        *,
        idle_timeout_seconds: int,
        heartbeat_seconds: float,
        state_file: Path | None = None,
        gc_interval_seconds: float | None = None,
        clock: Clock = utcnow,
    ) -> None:
        super().__init__(
            idle_timeout_seconds=idle_timeout_seconds,
            heartbeat_seconds=heartbeat_seconds,
            gc_interval_seconds=gc_interval_seconds,
            clock=clock,
        )
        self.state_file = state_file
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        self._by_user: dict[int, set[str]] = {}
        self._all_public_by_realm: dict[int, set[str]] = {}
        self._shapes: dict[ClientShape, ClientShape] = {}

    async def run_blocking(self, func: Callable[..., T], *args: Any) -> T:
        # Every primitive here is a short critical section; a thread hop would cost more.
        return func(*args)

    # Index maintenance (lock held) -------------------------------------------------------

    def _add_entry(self, entry: _Entry) -> None:
        client = entry.client
        self._entries[client.queue_id] = entry
        self._by_user.setdefault(client.user_id, set()).add(client.queue_id)
        if client.all_public_streams:
            self._all_public_by_realm.setdefault(client.realm_id, set()).add(client.queue_id)

    def _remove_entry(self, queue_id: str) -> None:
        entry = self._entries.pop(queue_id, None)
        if entry is None:
            return
        for index, key in (
            (self._by_user, entry.client.user_id),
            (self._all_public_by_realm, entry.client.realm_id),
        ):
            ids = index.get(key)
            if ids is not None:
                ids.discard(queue_id)
                if not ids:
                    del index[key]

    def _live_entry(self, user_id: int, queue_id: str, now: float) -> _Entry:
        entry = self._entries.get(queue_id)
        if entry is None or entry.client.user_id != user_id:
            raise BadEventQueueIdError(queue_id)
        if entry.expired(now):
            # Collection runs periodically; an expired queue is gone from the moment it expires.
            self._remove_entry(queue_id)
            raise BadEventQueueIdError(queue_id)
        return entry

    # Primitives -------------------------------------------------------------------------

    def deliver(self, realm_id: int, event: EventDict, user_ids: Sequence[int]) -> None:
        woken: list[str] = []
        tailoring = Tailoring(event)
        with self._lock:
            targets: set[str] = set()
            by_user = self._by_user
            for user_id in user_ids:
                mine = by_user.get(user_id)
                if mine:
                    targets.update(mine)
            if reaches_all_public_streams_clients(event):
                targets.update(self._all_public_by_realm.get(realm_id, ()))
            entries = self._entries
            for queue_id in targets:
                entry = entries[queue_id]
                if entry.client.realm_id != realm_id:
                    continue
                shared = tailoring.for_client(entry.client)
                if shared is not None:
                    entry.queue.push(shared)
                    woken.append(queue_id)
        self._waiters.wake(woken)

    def create_queue(self, client: ClientDescriptor) -> None:
        client.last_access = self.now()
        # Computed now, not by the first publish to thousands of queues; and one object per
        # distinct shape, however many queues have it.
        if len(self._shapes) >= _MAX_SHAPES:
            self._shapes.clear()  # clients choose their capabilities: bound what they can add
        client.shape = self._shapes.setdefault(client.shape, client.shape)
        with self._lock:
            mine = self._by_user.get(client.user_id, set())
            excess = len(mine) + 1 - self.max_queues_per_user
            evicted = sorted(mine, key=lambda qid: self._entries[qid].client.last_access)[: max(excess, 0)]
            for queue_id in evicted:
                self._remove_entry(queue_id)
            self._add_entry(_Entry(client, EventQueue()))
        # A request parked on an evicted queue answers BAD_EVENT_QUEUE_ID and re-registers.
        self._waiters.wake(evicted)

    def fetch(self, request: FetchRequest) -> FetchResult:
        queue_id, token = request.queue_id, request.token
        now = self.now()
        superseded = False
        with self._lock:
            entry = self._live_entry(request.user_id, queue_id, now)
            if request.last_event_id is not None:
                entry.queue.acknowledge(request.last_event_id)
            if request.claim:
                superseded = entry.poller is not None and entry.poller != token
                entry.poller = token
            events = entry.queue.contents()
            done = request.final or bool(events) or entry.poller != token
            if done:
                if entry.poller == token:
                    entry.poller = None
                entry.held_until = 0.0
            else:
                entry.held_until = max(entry.held_until, now + request.hold_seconds)
            entry.client.last_access = now
        if superseded:
            # The older request (its client gave up or retried) answers now, with what it has.
            self._waiters.wake([queue_id])
        return FetchResult(events, done)

    def append(self, queue_id: str, event: EventDict) -> None:
        with self._lock:
            entry = self._entries.get(queue_id)
            if entry is not None:
                entry.queue.push(SharedEvent(event))
        self._waiters.wake([queue_id])

    def delete_queue(self, user_id: int, queue_id: str) -> None:
        with self._lock:
            self._live_entry(user_id, queue_id, self.now())
            self._remove_entry(queue_id)
        self._waiters.wake([queue_id])

    def collect_garbage(self, now: float | None = None) -> list[str]:
        now = self.now() if now is None else now
        with self._lock:
            expired = [qid for qid, entry in self._entries.items() if entry.expired(now)]
            for queue_id in expired:
                self._remove_entry(queue_id)
        return expired

    def queue_ids_for_user(self, user_id: int) -> list[str]:
        with self._lock:
            return sorted(self._by_user.get(user_id, ()))

    def get_client(self, queue_id: str) -> ClientDescriptor | None:
        with self._lock:
            entry = self._entries.get(queue_id)
            return entry.client if entry is not None else None

    def queue_count(self) -> int:
        with self._lock:
            return len(self._entries)

    def queue_count_for_metrics(self) -> int:
        return self.queue_count()

    # Saving across restarts ---------------------------------------------------------------

    async def start(self) -> None:
        if self.state_file is not None:
            self.restore(self.state_file)
        await super().start()

    async def stop(self) -> None:
        await super().stop()
        if self.state_file is not None:
            try:
                self.save(self.state_file)
            except OSError:
                # Shutdown goes on (clients re-register on BAD_EVENT_QUEUE_ID); say why.
                logger.exception("Could not save event queues to %s", self.state_file)

    def save(self, path: Path) -> int:
        with self._lock:
            queues = [
                {"client": e.client.to_dict(), "queue": e.queue.to_dict()} for e in self._entries.values()
            ]
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written aside and renamed, so a crash mid-write never leaves a truncated file.
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(orjson.dumps({"version": _STATE_VERSION, "queues": queues}))
        os.replace(partial, path)
        logger.info("Saved %d event queue(s) to %s", len(queues), path)
        return len(queues)

    def restore(self, path: Path) -> int:
        """Load saved queues and tell each client the server restarted."""
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return 0
        # Loaded once: a later crash must not resurrect these queues a second time.
        path.unlink(missing_ok=True)
        try:
            data = orjson.loads(raw)
            if data.get("version") != _STATE_VERSION:
                raise ValueError(f"unknown version {data.get('version')!r}")
            entries = [
                _Entry(ClientDescriptor.from_dict(item["client"]), EventQueue.from_dict(item["queue"]))
                for item in data["queues"]
            ]
        except (ValueError, KeyError, TypeError):
            logger.warning("Ignoring unreadable event queue file %s", path, exc_info=True)
            return 0
        now = self.now()
        restart = Tailoring(restart_event(self.server_generation))
        with self._lock:
            for entry in entries:
                # Clients could not poll while the server was down; their idle time restarts.
                entry.client.last_access = now
                shared = restart.for_client(entry.client)
                if shared is not None:
                    entry.queue.push(shared)
                self._add_entry(entry)
        logger.info("Restored %d event queue(s) from %s", len(entries), path)
        return len(entries)
