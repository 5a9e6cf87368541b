"""Test helpers: a seeded realm of named users and request/assertion shortcuts."""

from __future__ import annotations

import asyncio
import base64
import itertools
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from palaver.actions.realm import do_create_realm
from palaver.actions.users import do_create_user
from palaver.events.types import validate_event
from palaver.lib.realm import realm_email_host
from palaver.models import BotType, Realm, Role
from palaver.models.change_log import ChangeLogEntry
from palaver.services import Services
from palaver.timeutil import utcnow
from tests.client import TestClient
from tests.realm_template import clone_realm, template_for

PASSWORD = "secret-password"
_counter = itertools.count(1)


@dataclass(frozen=True)
class TestUser:
    id: int
    email: str
    api_key: str
    full_name: str
    role: int
    is_bot: bool = False
    password: str = PASSWORD


@dataclass
class SeededRealm:
    """A fresh organization per test, reached through its own subdomain."""

    id: int
    string_id: str
    host: str
    users: dict[str, TestUser] = field(default_factory=dict)

    def __getattr__(self, name: str) -> TestUser:
        try:
            return self.users[name]
        except KeyError:
            raise AttributeError(name) from None


# Named users of every role, after Zulip's test fixtures.
SEED_USERS: list[tuple[str, str, int]] = [
    ("iago", "Iago", Role.ADMINISTRATOR),
    ("shiva", "Shiva", Role.MODERATOR),
    ("hamlet", "King Hamlet", Role.MEMBER),
    ("othello", "Othello, the Moor of Venice", Role.MEMBER),
    ("cordelia", "Cordelia, Lear's daughter", Role.MEMBER),
    ("polonius", "Polonius", Role.GUEST),
]


def seed_realm(
    services: Services, *, name: str = "Test Organization", default_channels: bool = False
) -> SeededRealm:
    """A realm of the named users. Without ``default_channels`` it has no channels, as tests
    count and name channels and each makes the ones it needs.

    Without default channels the realm is a copy of a template realm seeded once per database
    through the actions (``tests/realm_template.py``): the same rows, made in a few statements."""
    if default_channels:
        return seed_realm_through_actions(services, name=name, default_channels=True)
    template = template_for(services, lambda: seed_realm_through_actions(services).id)
    string_id = _new_string_id()
    realm_id, users = clone_realm(services, template, string_id, name=name)
    seeded = SeededRealm(realm_id, string_id, f"{string_id}.{services.settings.external_host}")
    for row in users.values():
        short = row["delivery_email"].split("@", 1)[0]
        seeded.users[SEED_USER_KEYS.get(short, short)] = TestUser(
            row["id"], row["email"], row["api_key"], row["full_name"], row["role"], row["is_bot"]
        )
    return seeded


def _new_string_id() -> str:
    return f"r{next(_counter)}-{uuid.uuid4().hex[:6]}"


# The seeded users' keys in ``SeededRealm.users`` where they differ from their email's local part.
SEED_USER_KEYS = {"default-bot": "default_bot"}


def seed_realm_through_actions(
    services: Services, *, name: str = "Test Organization", default_channels: bool = False
) -> SeededRealm:
    """``seed_realm`` made by the actions themselves (the template, and realms with channels)."""
    settings = services.settings
    string_id = _new_string_id()
    host = f"{string_id}.{settings.external_host}"
    email_host = realm_email_host(settings, Realm(string_id=string_id, name=""))
    password_hash = services.passwords.hash(PASSWORD)
    with services.db.session() as session:
        realm, owner = do_create_realm(
            session,
            string_id=string_id,
            name=name,
            owner_email=f"desdemona@{string_id}.example.com",
            owner_full_name="Desdemona",
            owner_password_hash=password_hash,
            email_host=email_host,
            default_channels=default_channels,
        )
        seeded = SeededRealm(realm.id, string_id, host)
        seeded.users["desdemona"] = TestUser(
            owner.id, owner.email, owner.api_key, owner.full_name, owner.role
        )
        for short, full_name, role in SEED_USERS:
            user = do_create_user(
                session,
                realm,
                email=f"{short}@{string_id}.example.com",
                full_name=full_name,
                password_hash=password_hash,
                email_host=email_host,
                role=role,
            )
            seeded.users[short] = TestUser(user.id, user.email, user.api_key, full_name, role)
        hamlet_id = seeded.users["hamlet"].id
        bot = do_create_user(
            session,
            realm,
            email=f"default-bot@{string_id}.example.com",
            full_name="Default Bot",
            password_hash=None,
            email_host=email_host,
            bot_type=BotType.GENERIC,
            bot_owner_id=hamlet_id,
        )
        seeded.users["default_bot"] = TestUser(bot.id, bot.email, bot.api_key, bot.full_name, bot.role, True)
    return seeded


# Where the Redis tests find Redis. With PALAVER_TEST_REDIS_URL set (CI's PostgreSQL + Redis
# run) Redis is required; without it the Redis tests run when a local Redis answers.
REDIS_URL = os.environ.get("PALAVER_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


def require_redis(url: str = REDIS_URL) -> str:
    """``url`` if a Redis answers there. Otherwise the test is skipped, or fails when the run
    was told to use Redis (PALAVER_TEST_REDIS_URL): a Redis test must not vanish silently."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as error:
        if os.environ.get("PALAVER_TEST_REDIS_URL"):
            pytest.fail(f"PALAVER_TEST_REDIS_URL is set but no Redis answers at {url}: {error}")
        pytest.skip(f"no Redis at {url} (set PALAVER_TEST_REDIS_URL to require one)")
    finally:
        client.close()
    return url


def basic_auth(user: TestUser) -> str:
    token = base64.b64encode(f"{user.email}:{user.api_key}".encode()).decode()
    return f"Basic {token}"


class Api:
    """Requests as a seeded user (or anonymously) against the realm's subdomain."""

    def __init__(self, client: TestClient, realm: SeededRealm) -> None:
        self.client = client
        self.realm = realm

    def request(
        self,
        method: str,
        user: TestUser | None,
        path: str,
        data: dict[str, Any] | None = None,
        *,
        headers: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> httpx.Response:
        all_headers = {"host": self.realm.host, **(headers or {})}
        if user is not None:
            all_headers["authorization"] = basic_auth(user)
        url = path if path.startswith("/") else f"/api/v1/{path}"
        encoded = encode_params(data or {})
        response: httpx.Response
        if method in ("GET", "DELETE") and "files" not in kwargs:
            response = self.client.request(method, url, params=encoded, headers=all_headers, **kwargs)
        else:
            response = self.client.request(method, url, data=encoded, headers=all_headers, **kwargs)
        return response

    def get(
        self, user: TestUser | None, path: str, data: dict[str, Any] | None = None, **kw: Any
    ) -> httpx.Response:
        return self.request("GET", user, path, data, **kw)

    def post(
        self, user: TestUser | None, path: str, data: dict[str, Any] | None = None, **kw: Any
    ) -> httpx.Response:
        return self.request("POST", user, path, data, **kw)

    def patch(
        self, user: TestUser | None, path: str, data: dict[str, Any] | None = None, **kw: Any
    ) -> httpx.Response:
        return self.request("PATCH", user, path, data, **kw)

    def put(
        self, user: TestUser | None, path: str, data: dict[str, Any] | None = None, **kw: Any
    ) -> httpx.Response:
        return self.request("PUT", user, path, data, **kw)

    def delete(
        self, user: TestUser | None, path: str, data: dict[str, Any] | None = None, **kw: Any
    ) -> httpx.Response:
        return self.request("DELETE", user, path, data, **kw)


def encode_params(data: dict[str, Any]) -> dict[str, str]:
    """Encode like Zulip clients: strings as they are, everything else as JSON text."""
    import json

    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in data.items()}


def assert_json_success(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    assert body["result"] == "success", body
    assert body["msg"] == ""
    return body


def assert_json_error(
    response: httpx.Response, msg: str, status: int = 400, code: str | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert response.status_code == status, (response.status_code, body)
    assert body["result"] == "error", body
    assert body["msg"] == msg, body
    assert isinstance(body["code"], str)
    if code is not None:
        assert body["code"] == code, body
    return body


class EventRecorder:
    """Collects every event the bus publishes, validating each against its model."""

    def __init__(self) -> None:
        self.published: list[tuple[int, dict[str, Any], list[int]]] = []

    def __call__(self, realm_id: int, event: dict[str, Any], user_ids: Any) -> None:
        validate_event(event)
        self.published.append((realm_id, event, list(user_ids)))

    def clear(self) -> None:
        self.published.clear()

    def of_type(self, type_: str, op: str | None = None) -> list[tuple[dict[str, Any], list[int]]]:
        return [
            (e, users)
            for _, e, users in self.published
            if e["type"] == type_ and (op is None or e.get("op") == op)
        ]

    def for_user(self, user_id: int) -> list[dict[str, Any]]:
        return [e for _, e, users in self.published if user_id in users]


class Clock:
    """The real time moved forward by ``advance`` (work is queued at the real time)."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return utcnow() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


class FrozenClock(Clock):
    """A clock that moves only by ``advance``: for deadlines that real time, on a loaded
    machine, must not reach by itself between two steps of a test."""

    def __init__(self) -> None:
        super().__init__()
        self.start = utcnow()

    def __call__(self) -> datetime:
        return self.start + self.offset


# How long a bounded wait for another thread or task gives up after: far beyond what any
# of them needs, so only a real failure reaches it.
UNTIL_TIMEOUT = 10.0


def wait_until(
    condition: Callable[[], object], timeout: float = UNTIL_TIMEOUT, interval: float = 0.002
) -> None:
    """Return once ``condition()`` holds (another thread brings it about); fail after ``timeout``.

    A bounded poll, checked every ``interval`` seconds (longer for a condition that costs a
    request)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not met within {timeout} s"
        time.sleep(interval)


async def until(condition: Callable[[], object], timeout: float = UNTIL_TIMEOUT) -> None:
    """``wait_until`` for the event loop: other tasks run while it waits."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not met within {timeout} s"
        await asyncio.sleep(0.002)


def wait_for_change_log(services: Services, timeout: float = 10) -> None:
    """Until ``services``' serving app has applied every change one-off processes committed
    to its database (it follows the change log a few times a second: cache/change_log.py);
    at once when no app of it follows the log."""
    follower = services.db.cache.change_log
    if follower is None or follower.position is None:
        return
    with services.db.engine.connect() as conn:
        newest = conn.execute(select(func.max(ChangeLogEntry.id))).scalar() or 0
    wait_until(lambda: (follower.position or 0) >= newest, timeout=timeout, interval=0.01)
