"""Two workers on PostgreSQL + Redis with a read replica, driven by the ``zulip`` client.

The replica is a second URL to the same database whose sessions are read-only and named
``palaver-replica`` (``application_name``): a write through it would fail the request,
and ``pg_stat_activity`` shows whether any read went there. The demo owner writes and
reads back at once on fresh connections, which the kernel spreads over both workers
(read-your-writes: the fence a write sets in one worker holds in the other, through
Redis); a member who has written nothing reads the history from the replica.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import zulip
from sqlalchemy import create_engine, text

from palaver.config import load_settings
from palaver.db.read_fence import fence_key_prefix
from tests import helpers
from tests.e2e.demo import empty_database
from tests.servers import RunningServer, http_post, server_environment, start_running_server, stop
from tests.test_db_replica import replica_url

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        os.environ.get("PALAVER_TEST_DATABASE", "sqlite") != "postgresql",
        reason="read replicas are PostgreSQL's",
    ),
]

CHANNEL = "replicated"
SENDS = 12


@pytest.fixture(scope="module")
def replicated_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RunningServer, str]]:
    redis_url = helpers.require_redis()
    with empty_database(tmp_path_factory) as database_url:
        tmp = tmp_path_factory.mktemp("replica-server")
        env = server_environment(
            tmp / "data",
            PALAVER_DATABASE_URL=database_url,
            PALAVER_DATABASE_REPLICA_URL=replica_url(database_url),
            PALAVER_REDIS_URL=redis_url,
            PALAVER_API_RATE_LIMIT="100000/60",
        )
        running = start_running_server(tmp, env, "--workers", "2")
        try:
            yield running, database_url
        finally:
            stop(running.process)


def _replica_connections(database_url: str) -> int:
    engine = create_engine(database_url)
    try:
        with engine.connect() as conn:
            query = text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name = 'palaver-replica'"
            )
            return int(conn.execute(query).scalar_one())
    finally:
        engine.dispose()


def _newest(client: zulip.Client, count: int) -> list[dict[str, Any]]:
    page = client.get_messages(
        {
            "anchor": "newest",
            "num_before": count,
            "num_after": 0,
            "narrow": [{"operator": "channel", "operand": CHANNEL}],
        }
    )
    assert page["result"] == "success", page
    messages: list[dict[str, Any]] = page["messages"]
    return messages


def test_history_from_the_replica_and_every_write_and_own_read_on_the_primary(
    replicated_server: tuple[RunningServer, str],
) -> None:
    running, database_url = replicated_server

    def owner() -> zulip.Client:
        # A client of its own per call: a fresh connection, which either worker may accept.
        return zulip.Client(config_file=str(running.zuliprc))

    created = owner().create_user(
        {"email": "ann@example.com", "password": "ann-pw-12345", "full_name": "Ann"}
    )
    assert created["result"] == "success", created
    key = http_post(
        f"{running.url}/api/v1/fetch_api_key",
        data={"username": "ann@example.com", "password": "ann-pw-12345"},
        timeout=10,
    ).json()["api_key"]
    me = owner().get_profile()
    subscribed = owner().add_subscriptions([{"name": CHANNEL}], principals=[me["email"], "ann@example.com"])
    assert subscribed["result"] == "success", subscribed

    sent_ids = []
    for n in range(SENDS):
        sent = owner().send_message({"type": "stream", "to": CHANNEL, "topic": "t", "content": f"m {n}"})
        assert sent["result"] == "success", sent
        sent_ids.append(sent["id"])
        # Read back at once, on another fresh connection: the writer always sees its write.
        assert [m["id"] for m in _newest(owner(), 1)] == [sent["id"]]

    # The writer was fenced every time, so no read has touched the replica yet; the fence is
    # one Redis key with an expiry, seen by both workers.
    assert _replica_connections(database_url) == 0
    client = redis.Redis.from_url(helpers.require_redis())
    try:
        prefix = fence_key_prefix(load_settings(env={}, database_url=database_url).database_url)
        assert client.pttl(f"{prefix}{me['user_id']}") > 0
    finally:
        client.close()

    # Ann has written nothing: her history comes from the replica, complete.
    ann = zulip.Client(email="ann@example.com", api_key=key, site=running.url)
    assert [m["id"] for m in _newest(ann, SENDS)] == sent_ids
    assert _replica_connections(database_url) >= 1
    # Nothing anywhere tried to write through the read-only replica.
    assert "read-only transaction" not in running.logs()
