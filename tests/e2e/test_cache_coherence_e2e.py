"""The realm-state cache stays coherent across processes: two workers on PostgreSQL (when the
run uses it) and Redis, a permission revoked through one honoured by both within 50 ms.

Each worker caches the state it reads (subscriptions, groups, channels), so the test first
warms both: many requests on fresh connections, which the kernel spreads over the workers.
Then the channel's administrator unsubscribes Ann from a private channel, and 50 ms after
that answer every one of many fresh connections must refuse her message.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import helpers
from tests.e2e.demo import empty_database
from tests.servers import http_client, http_post, server_environment, start_running_server, stop

pytestmark = pytest.mark.e2e

# The bound: a permission revoked on one worker is honoured by every worker within it.
COHERENCE_SECONDS = 0.050
# Fresh connections tried on each side of the revocation: enough that both workers serve some.
ATTEMPTS = 24


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """Two workers on an empty database (the server creates the demo organization in it)."""
    redis_url = helpers.require_redis()
    with empty_database(tmp_path_factory) as database_url:
        tmp = tmp_path_factory.mktemp("coherence-server")
        env = server_environment(
            tmp / "data",
            PALAVER_DATABASE_URL=database_url,
            PALAVER_REDIS_URL=redis_url,
            PALAVER_API_RATE_LIMIT="100000/60",
            PALAVER_HEARTBEAT_SECONDS="2",
        )
        running = start_running_server(tmp, env, "--workers", "2")
        try:
            yield running.url, running.data_dir
        finally:
            stop(running.process)


def _call(url: str, auth: tuple[str, str], method: str, path: str, **data: str) -> dict[str, object]:
    # A client of its own per call: a fresh connection, which either worker may accept.
    with http_client(base_url=url, auth=auth, timeout=10) as client:
        response = client.request(method, f"/api/v1/{path}", data=data if method != "GET" else None)
        result: dict[str, object] = response.json()
        return result


def _owner(data_dir: Path) -> tuple[str, str]:
    """The demo organization's owner, from the zuliprc the server wrote."""
    lines = (data_dir / "demo.zuliprc").read_text().splitlines()
    zuliprc = dict(line.split("=", 1) for line in lines if "=" in line)
    return zuliprc["email"], zuliprc["key"]


def _new_user(url: str, owner: tuple[str, str], name: str) -> tuple[tuple[str, str], object]:
    """A member the owner creates: their (email, API key) and user ID."""
    email, password = f"{name}@example.com", f"{name}-pw-12345"
    created = _call(url, owner, "POST", "users", email=email, password=password, full_name=name.title())
    assert created["result"] == "success", created
    fetched = http_post(
        f"{url}/api/v1/fetch_api_key", data={"username": email, "password": password}, timeout=10
    ).json()
    return (email, fetched["api_key"]), created["user_id"]


def test_a_revoked_subscription_is_honoured_by_every_worker_within_50ms(server: tuple[str, Path]) -> None:
    url, data_dir = server
    owner = _owner(data_dir)
    ann, _ = _new_user(url, owner, "ann")
    subscribed = _call(
        url,
        owner,
        "POST",
        "users/me/subscriptions",
        subscriptions='[{"name": "secret"}]',
        principals=f'["{owner[0]}", "ann@example.com"]',
        invite_only="true",
    )
    assert subscribed["result"] == "success", subscribed

    def send(n: int) -> dict[str, object]:
        return _call(
            url, ann, "POST", "messages", type="stream", to="secret", topic="t", content=f"message {n}"
        )

    # Both workers cache Ann's subscriptions and groups and the channel.
    for n in range(ATTEMPTS):
        sent = send(n)
        assert sent["result"] == "success", sent

    revoked = _call(
        url,
        owner,
        "DELETE",
        "users/me/subscriptions",
        subscriptions='["secret"]',
        principals='["ann@example.com"]',
    )
    assert revoked["result"] == "success", revoked
    time.sleep(COHERENCE_SECONDS)
    refused = [send(n) for n in range(ATTEMPTS)]
    assert all(r["result"] == "error" for r in refused), refused


def test_a_deactivated_user_polls_no_worker_within_50ms(server: tuple[str, Path]) -> None:
    """Repeated requests skip the key's look-up once known (api/known_credentials.py):
    deactivating the user through one worker must still end them on both."""
    url, data_dir = server
    owner = _owner(data_dir)
    bob, bob_id = _new_user(url, owner, "poller")
    registered = _call(url, bob, "POST", "register", event_types='["message"]')
    queue_id = str(registered["queue_id"])

    def poll() -> dict[str, object]:
        with http_client(base_url=url, auth=bob, timeout=10) as client:
            params = {"queue_id": queue_id, "last_event_id": "-1", "dont_block": "true"}
            result: dict[str, object] = client.get("/api/v1/events", params=params).json()
            return result

    def fetch() -> dict[str, object]:
        # Any other request by a known key skips the look-up too (a sync view).
        with http_client(base_url=url, auth=bob, timeout=10) as client:
            params = {"anchor": "newest", "num_before": "1", "num_after": "0"}
            result: dict[str, object] = client.get("/api/v1/messages", params=params).json()
            return result

    # Enough requests on fresh connections that both workers know Bob's key.
    for _ in range(ATTEMPTS):
        for request in (poll, fetch):
            answered = request()
            assert answered["result"] == "success", answered
    deactivated = _call(url, owner, "DELETE", f"users/{bob_id}")
    assert deactivated["result"] == "success", deactivated
    time.sleep(COHERENCE_SECONDS)
    refused = [request() for _ in range(ATTEMPTS) for request in (poll, fetch)]
    assert all(r.get("code") == "USER_DEACTIVATED" for r in refused), refused
