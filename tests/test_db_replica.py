"""The read replica (``database_replica_url``): lag-tolerant reads go there, nothing else does.

The "replica" is a second URL to the run's own PostgreSQL database whose sessions are
read-only (``default_transaction_read_only=on``), so any write through it fails loudly.
Statements are counted per engine, which shows where each read went.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import Engine, event, literal, select, text
from sqlalchemy.exc import InternalError

from palaver.app import create_app
from palaver.cache.table_map import ALL_REALMS, REALM_STATE_TABLES
from palaver.db.database import Database
from palaver.db.transaction import is_replica_session, set_actor, transaction
from palaver.events.bus import InProcessEventBus
from palaver.services import Services, build_services
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import Api, SeededRealm, assert_json_success, seed_realm
from tests.helpers import TestUser as User

pytestmark = pytest.mark.skipif(
    os.environ.get("PALAVER_TEST_DATABASE", "sqlite") != "postgresql",
    reason="read replicas are PostgreSQL's (the SQLite run checks the settings in test_config.py)",
)

# Read-only sessions on the same database: a write through this URL is an error.
READ_ONLY = "options=-c%20default_transaction_read_only%3Don&application_name=palaver-replica"


def replica_url(database_url: str) -> str:
    return f"{database_url}{'&' if '?' in database_url else '?'}{READ_ONLY}"


@dataclass
class Statements:
    """The SQL each engine ran since the last ``clear``."""

    primary: list[str] = field(default_factory=list)
    replica: list[str] = field(default_factory=list)

    def clear(self) -> None:
        self.primary.clear()
        self.replica.clear()


def _record(engine: Engine, into: list[str]) -> None:
    def before(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        into.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", before)


@pytest.fixture
def replicated(services: Services) -> Iterator[tuple[Services, Statements]]:
    settings = make_test_settings(
        services.settings.database_url,
        services.settings.data_dir,
        database_replica_url=replica_url(services.settings.database_url),
    )
    built = build_services(settings)
    assert built.db.replica_engine is not None
    statements = Statements()
    _record(built.db.engine, statements.primary)
    # Realm-state loads have a pool of their own, on the primary too.
    assert built.db.load_engine.url == built.db.engine.url
    _record(built.db.load_engine, statements.primary)
    _record(built.db.replica_engine, statements.replica)
    yield built, statements
    built.close()


@pytest.fixture
def replica_api(replicated: tuple[Services, Statements]) -> Iterator[tuple[Api, SeededRealm, Statements]]:
    built, statements = replicated
    seeded = seed_realm(built)
    with TestClient(create_app(built.settings, built), base_url="http://palaver.test") as client:
        api = Api(client, seeded)
        # Iago subscribes everyone: the others have written nothing yet, so none is fenced.
        members = [seeded.iago.id, seeded.hamlet.id, seeded.othello.id]
        channel = api.post(
            seeded.iago,
            "users/me/subscriptions",
            {"subscriptions": [{"name": "hall"}], "principals": members},
        )
        assert_json_success(channel)
        statements.clear()
        yield api, seeded, statements


def _reads_messages(statements: list[str]) -> bool:
    return any(s.startswith("SELECT") and " FROM message " in f"{s} " for s in statements)


NEWEST = {"anchor": "newest", "num_before": 20, "num_after": 0, "narrow": [["channel", "hall"]]}


def _send_to_hall(api: Api, user: User, content: str) -> dict[str, Any]:
    """A message to the channel NEWEST reads (topic "t"), as ``user``."""
    return assert_json_success(
        api.post(user, "messages", {"type": "stream", "to": "hall", "topic": "t", "content": content})
    )


def test_a_write_through_the_replica_fails_loudly(replicated: tuple[Services, Statements]) -> None:
    built, _ = replicated
    db = built.db
    with db.session() as primary, db.read_session(primary, user_id=1) as replica:
        assert replica is not primary and is_replica_session(replica)
        assert replica.execute(text("SHOW default_transaction_read_only")).scalar() == "on"
        with pytest.raises(InternalError, match="read-only transaction"):
            replica.execute(text("CREATE TEMPORARY TABLE replica_probe (x int)"))
        replica.rollback()
        # A write transaction is refused before it starts: writes belong to the primary.
        with pytest.raises(RuntimeError, match="read-replica"), transaction(replica):
            pass


def test_history_is_read_from_the_replica_by_a_user_who_has_not_written(
    replica_api: tuple[Api, SeededRealm, Statements],
) -> None:
    api, realm, statements = replica_api
    sent = _send_to_hall(api, realm.iago, "hi")
    statements.clear()
    page = assert_json_success(api.get(realm.othello, "messages", NEWEST))
    assert [m["id"] for m in page["messages"]] == [sent["id"]]
    assert _reads_messages(statements.replica)
    assert not _reads_messages(statements.primary)
    # Topics of a channel are a history read too.
    statements.clear()
    stream_id = page["messages"][0]["stream_id"]
    topics = assert_json_success(api.get(realm.othello, f"users/me/{stream_id}/topics"))
    assert [t["name"] for t in topics["topics"]] == ["t"]
    assert statements.replica


def test_a_user_reads_their_own_write_from_the_primary(
    replica_api: tuple[Api, SeededRealm, Statements],
) -> None:
    api, realm, statements = replica_api
    sent = _send_to_hall(api, realm.hamlet, "mine")
    # The send itself wrote nothing through the replica (every write is the primary's).
    assert not any(s.split(" ", 1)[0] in ("INSERT", "UPDATE", "DELETE") for s in statements.replica)
    statements.clear()
    page = assert_json_success(api.get(realm.hamlet, "messages", NEWEST))
    assert [m["id"] for m in page["messages"]] == [sent["id"]]
    assert statements.replica == []
    assert _reads_messages(statements.primary)


def test_a_fetch_by_message_id_stays_on_the_primary(replica_api: tuple[Api, SeededRealm, Statements]) -> None:
    api, realm, statements = replica_api
    sent = _send_to_hall(api, realm.iago, "by id")
    statements.clear()
    # A client that has just been told of a message fetches it by ID: the replica may lack it.
    assert_json_success(api.get(realm.othello, f"messages/{sent['id']}"))
    assert_json_success(api.get(realm.othello, "messages", {"message_ids": [sent["id"]]}))
    assert statements.replica == []


def test_realm_state_is_loaded_from_the_primary_during_a_replica_read(
    replica_api: tuple[Api, SeededRealm, Statements],
) -> None:
    api, realm, statements = replica_api
    db = api.client.app.state.services.db  # type: ignore[attr-defined]
    db.realm_state.invalidate(ALL_REALMS, REALM_STATE_TABLES)
    statements.clear()
    assert_json_success(api.get(realm.othello, "messages", NEWEST))
    assert _reads_messages(statements.replica)
    # The channel named in the narrow and the realm's users were loaded into the cache,
    # on the primary: a replica's lag must never be cached as current.
    loaded_on_primary = " ".join(statements.primary)
    assert " FROM stream " in loaded_on_primary
    assert not any(" FROM stream " in f"{s} " and "JOIN" not in s for s in statements.replica)


def test_the_fence_follows_the_acting_user_only(replicated: tuple[Services, Statements]) -> None:
    built, _ = replicated
    db = built.db
    with db.session() as session:
        set_actor(session, 41)
        with transaction(session):
            session.execute(select(literal(1)))  # reads only: nothing written, nothing fenced
        with db.read_session(session, 41) as read:
            assert is_replica_session(read)
        with transaction(session):
            session.execute(text("CREATE TEMPORARY TABLE fence_probe (x int)"))
        with db.read_session(session, 41) as read:
            assert read is session
        with db.read_session(session, 42) as read:
            assert is_replica_session(read)
        # Inside a write transaction, every read is the transaction's own.
        with transaction(session), db.read_session(session, 42) as read:
            assert read is session


def test_without_a_replica_every_read_uses_the_given_session(services: Services) -> None:
    database = Database(services.settings, InProcessEventBus())
    try:
        assert database.replica_engine is None
        with database.session() as session, database.read_session(session, 1) as read:
            assert read is session
    finally:
        database.dispose()
