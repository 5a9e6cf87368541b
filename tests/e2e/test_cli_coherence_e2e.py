"""A change made by a ``palaver`` command run beside a running server takes effect there
within a second: its cache and known credentials, and its clients' event queues, as if the
change had come through the API.

Each command runs as a process of its own against the server's database. Configurations: the
embedded default (SQLite, in-process queues, no Redis: the change reaches the server through
the change log, ``cache/change_log.py``) and, in the suite's PostgreSQL run, PostgreSQL with
Redis (pub/sub invalidations, shared queues) and PostgreSQL without Redis (the change log
again). Each test works in an organization of its own, made with ``create-realm``, warmed
through the API first so that the server caches its users and knows their keys.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests import helpers
from tests.e2e.demo import empty_database
from tests.forked import run_forked
from tests.servers import RunningServer, http_client, server_environment, start_running_server, stop

pytestmark = pytest.mark.e2e

T = TypeVar("T")

# The bound: from the command's exit to its effect on the running server.
EFFECT_SECONDS = 1.0
CONFIGURATIONS = (
    ["embedded"] if os.environ.get("PALAVER_TEST_DATABASE", "sqlite") == "sqlite" else ["redis", "embedded"]
)


@dataclass
class Deployment:
    server: RunningServer
    env: dict[str, str]
    commands: Path
    realms: list[str] = field(default_factory=list)

    def run(self, *args: str, input: str = "") -> str:
        """A ``palaver`` command as a process of its own; its output."""
        result = run_forked(self.env, list(args), self.commands, input=input)
        assert result.returncode == 0, result.stderr
        return result.stdout


@pytest.fixture(scope="module", params=CONFIGURATIONS)
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    with empty_database(tmp_path_factory) as database_url:
        tmp = tmp_path_factory.mktemp(f"cli-coherence-{request.param}")
        extra = {
            "PALAVER_DATABASE_URL": database_url,
            "PALAVER_API_RATE_LIMIT": "100000/60",
            "PALAVER_HEARTBEAT_SECONDS": "20",
        }
        if request.param == "redis":
            extra["PALAVER_REDIS_URL"] = helpers.require_redis()
        env = server_environment(tmp / "data", **extra)
        running = start_running_server(tmp, env)
        # Commands print the organization's address with the server's port.
        env["PALAVER_PORT"] = str(running.port)
        try:
            yield Deployment(running, env, tmp / "commands")
        finally:
            stop(running.process)


@dataclass
class Org:
    """An organization of the deployment, reached through its own Host."""

    deployment: Deployment
    string_id: str
    host: str
    owner: tuple[str, str]

    def call(self, auth: tuple[str, str] | None, method: str, path: str, **data: str) -> httpx.Response:
        # A fresh connection per call, as the other e2e tests make them.
        with http_client(base_url=self.deployment.server.url, auth=auth, timeout=30) as client:
            params = data if method == "GET" else None
            body = None if method == "GET" else data
            return client.request(
                method, f"/api/v1/{path}", params=params, data=body, headers={"host": self.host}
            )

    def ok(self, auth: tuple[str, str] | None, method: str, path: str, **data: str) -> dict[str, Any]:
        response = self.call(auth, method, path, **data)
        assert response.status_code == 200, response.text
        result: dict[str, Any] = response.json()
        return result

    def new_member(self, name: str) -> tuple[tuple[str, str], int]:
        """A member the owner creates through the API: (email, API key) and user ID."""
        email, password = f"{name}@{self.string_id}.test", f"{name}-pw-12345"
        created = self.ok(self.owner, "POST", "users", email=email, password=password, full_name=name.title())
        fetched = self.ok(None, "POST", "fetch_api_key", username=email, password=password)
        return (email, fetched["api_key"]), int(created["user_id"])

    def send(self, auth: tuple[str, str], content: str = "hello") -> httpx.Response:
        return self.call(auth, "POST", "messages", type="stream", to="coherence", topic="t", content=content)

    def warm(self, auth: tuple[str, str]) -> None:
        """Requests that make the server cache the realm's state and know the key."""
        for _ in range(3):
            assert self.send(auth).status_code == 200
            self.ok(auth, "GET", "messages", anchor="newest", num_before="1", num_after="0")


@pytest.fixture
def org(deployment: Deployment) -> Org:
    string_id = f"org{len(deployment.realms)}"
    deployment.realms.append(string_id)
    email = f"boss@{string_id}.test"
    out = deployment.run(
        "create-realm",
        "--name",
        string_id.title(),
        "--string-id",
        string_id,
        "--owner-email",
        email,
        "--owner-name",
        "Boss",
        "--password-stdin",
        input="boss-pw-12345\n",
    )
    owner = (email, out.rsplit("API key ", 1)[1].strip())
    made = Org(deployment, string_id, f"{string_id}.localhost:{deployment.server.port}", owner)
    # A realm made by another process is served at once (nothing was cached for it).
    made.ok(owner, "POST", "users/me/subscriptions", subscriptions='[{"name": "coherence"}]')
    made.warm(owner)
    return made


def within_a_second(check: Callable[[], T | None], what: str) -> T:
    """``check()``'s first truthy answer, asked until EFFECT_SECONDS have passed."""
    deadline = time.monotonic() + EFFECT_SECONDS
    while True:
        answer = check()
        if answer:
            return answer
        if time.monotonic() > deadline:
            pytest.fail(f"not within {EFFECT_SECONDS} s: {what}")
        time.sleep(0.05)


class Queue:
    """An event queue of one user, read without blocking."""

    def __init__(self, org: Org, auth: tuple[str, str], event_types: list[str]) -> None:
        self.org, self.auth = org, auth
        registered = org.ok(auth, "POST", "register", event_types=json.dumps(event_types))
        self.queue_id = str(registered["queue_id"])
        self.last = int(registered["last_event_id"])

    def poll(self) -> list[dict[str, Any]]:
        got = self.org.ok(
            self.auth,
            "GET",
            "events",
            queue_id=self.queue_id,
            last_event_id=str(self.last),
            dont_block="true",
        )
        events: list[dict[str, Any]] = [e for e in got["events"] if e["type"] != "heartbeat"]
        if got["events"]:
            self.last = max(int(e["id"]) for e in got["events"])
        return events

    def wait_for(self, matches: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            return next((e for e in self.poll() if matches(e)), None)

        return within_a_second(found, what)


def _person(event: dict[str, Any], op: str, **fields: object) -> bool:
    person = event.get("person", {})
    return (
        event["type"] == "realm_user"
        and event["op"] == op
        and all(person.get(key) == value for key, value in fields.items())
    )


def test_a_created_user_can_send_at_once_and_is_announced(org: Org) -> None:
    queue = Queue(org, org.owner, ["realm_user"])
    email = f"ann@{org.string_id}.test"
    out = org.deployment.run(
        "create-user", "--realm", org.string_id, "--email", email, "--full-name", "Ann", "--no-password"
    )
    ann = (email, out.rsplit("API key: ", 1)[1].strip())
    added = queue.wait_for(lambda e: _person(e, "add", delivery_email=email), "realm_user add")
    within_a_second(lambda: org.send(ann, "I am new").status_code == 200, "the new user's send")
    members = org.ok(org.owner, "GET", "users")["members"]
    assert added["person"]["user_id"] in {m["user_id"] for m in members}


def test_a_role_change_shows_in_users_and_as_an_event(org: Org) -> None:
    (email, _key), user_id = org.new_member("rita")
    queue = Queue(org, org.owner, ["realm_user"])
    assert org.ok(org.owner, "GET", f"users/{user_id}")["user"]["role"] == 400
    org.deployment.run("change-role", "--realm", org.string_id, "--email", email, "--role", "moderator")
    queue.wait_for(lambda e: _person(e, "update", user_id=user_id, role=300), "realm_user update (role)")
    within_a_second(
        lambda: org.ok(org.owner, "GET", f"users/{user_id}")["user"]["role"] == 300, "role in /users/{id}"
    )
    listed = {m["user_id"]: m["role"] for m in org.ok(org.owner, "GET", "users")["members"]}
    assert listed[user_id] == 300


def test_a_regenerated_key_refuses_the_old_one_at_once(org: Org) -> None:
    (email, old_key), _ = org.new_member("kim")
    old = (email, old_key)
    org.warm(old)
    out = org.deployment.run("regenerate-api-key", "--realm", org.string_id, "--email", email)
    new = (email, out.strip())
    assert new[1] != old_key
    within_a_second(lambda: org.send(old).status_code == 401, "the old key refused")
    assert org.send(old).status_code == 401
    assert org.send(new).status_code == 200


def test_a_reset_password_signs_in_and_the_old_one_does_not(org: Org) -> None:
    (email, _key), _ = org.new_member("pat")
    org.deployment.run(
        "reset-password", "--realm", org.string_id, "--email", email, "--password-stdin", input="new-pw-777\n"
    )
    assert org.call(None, "POST", "fetch_api_key", username=email, password="pat-pw-12345").status_code != 200
    assert org.call(None, "POST", "fetch_api_key", username=email, password="new-pw-777").status_code == 200


def test_a_deactivated_user_is_refused_at_once_and_reactivated(org: Org) -> None:
    (email, key), user_id = org.new_member("dan")
    dan = (email, key)
    org.warm(dan)
    dans_queue = Queue(org, dan, ["message"])
    assert dans_queue.poll() is not None
    queue = Queue(org, org.owner, ["realm_user"])
    org.deployment.run("deactivate-user", "--realm", org.string_id, "--email", email)
    within_a_second(lambda: org.send(dan).status_code == 401, "the deactivated user's send refused")
    refused = [
        org.send(dan),
        org.call(dan, "GET", "events", queue_id=dans_queue.queue_id, last_event_id="-1", dont_block="true"),
    ]
    assert all(r.status_code == 401 and r.json()["code"] == "USER_DEACTIVATED" for r in refused), [
        r.text for r in refused
    ]
    queue.wait_for(
        lambda e: _person(e, "update", user_id=user_id, is_active=False), "realm_user update (deactivated)"
    )
    org.deployment.run("reactivate-user", "--realm", org.string_id, "--email", email)
    within_a_second(lambda: org.send(dan).status_code == 200, "the reactivated user's send")
    queue.wait_for(
        lambda e: _person(e, "update", user_id=user_id, is_active=True), "realm_user update (reactivated)"
    )


def test_a_changed_email_reaches_users_and_admins_queues(org: Org) -> None:
    (email, _key), user_id = org.new_member("eve")
    queue = Queue(org, org.owner, ["realm_user"])
    new_email = f"eve.new@{org.string_id}.test"
    org.deployment.run("change-email", "--realm", org.string_id, "--email", email, "--new-email", new_email)
    queue.wait_for(
        lambda e: _person(e, "update", user_id=user_id, delivery_email=new_email), "realm_user update (email)"
    )
    within_a_second(
        lambda: org.ok(org.owner, "GET", f"users/{user_id}")["user"]["delivery_email"] == new_email,
        "the new email in /users/{id}",
    )


def test_a_deactivated_realm_refuses_at_once_and_tells_its_queues(org: Org) -> None:
    (email, key), _ = org.new_member("ria")
    ria = (email, key)
    org.warm(ria)
    queue = Queue(org, org.owner, ["realm"])
    parked: list[httpx.Response] = []
    done = threading.Event()

    def park() -> None:
        # A long-poll waiting when the organization is deactivated gets the event.
        parked.append(
            org.call(org.owner, "GET", "events", queue_id=queue.queue_id, last_event_id=str(queue.last))
        )
        done.set()

    thread = threading.Thread(target=park, daemon=True)
    thread.start()
    time.sleep(0.2)
    org.deployment.run("deactivate-realm", "--realm", org.string_id)
    ended = time.monotonic()
    within_a_second(lambda: org.send(ria).status_code == 401, "a send in the deactivated realm refused")
    assert done.wait(EFFECT_SECONDS + 1 - (time.monotonic() - ended)), "the parked poll got nothing"
    thread.join()
    events = parked[0].json()["events"]
    assert any(e["type"] == "realm" and e["op"] == "deactivated" for e in events), events
    assert org.call(org.owner, "GET", "users/me").status_code == 401
    org.deployment.run("reactivate-realm", "--realm", org.string_id)
    within_a_second(lambda: org.send(ria).status_code == 200, "a send in the reactivated realm")
