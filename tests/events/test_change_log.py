"""The change log's own rules (cache/change_log.py): who writes it, what a row holds, how
long it is kept, and how a follower reads it. The contract it serves, over every
configuration, is tests/events/test_coherence_contract.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import orjson
import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from palaver.actions.users import do_change_full_name
from palaver.cache import change_log, realm_users
from palaver.cache.change_log import ChangeLogFollower
from palaver.cache.components import USERS
from palaver.cache.snapshots import RealmUsers
from palaver.cache.store import RealmStateStore
from palaver.db.transaction import transaction
from palaver.events.types import users as ev
from palaver.migrate import upgrade
from palaver.models import UserProfile
from palaver.models.change_log import ChangeLogEntry
from palaver.models.email_outbox import EmailOutbox
from palaver.services import Services, build_services
from palaver.timeutil import utcnow
from tests.helpers import Api, SeededRealm
from tests.sqlite_services import sqlite_services

Delivered = list[tuple[int, dict[str, Any], list[int]]]
# A well-formed row that changes nothing (the suite's app follows the suite's log too).
EMPTY_CHANGE = '{"realms": [], "written": [], "events": []}'


@pytest.fixture
def one_off(services: Services) -> Iterator[Services]:
    other = build_services(services.settings, one_off=True)
    assert other.db.cache.records_changes
    # Nothing tells it of the server's changes: it caches nothing.
    assert not other.db.realm_state.accepting
    yield other
    other.close()


def _rows(services: Services) -> list[dict[str, Any]]:
    with services.db.engine.connect() as conn:
        payloads = conn.execute(select(ChangeLogEntry.payload).order_by(ChangeLogEntry.id)).scalars()
        return [orjson.loads(p) for p in payloads]


def _newest(services: Services) -> int:
    with services.db.engine.connect() as conn:
        return conn.execute(select(func.max(ChangeLogEntry.id))).scalar() or 0


def _hamlet(session: Session, realm: SeededRealm) -> UserProfile:
    user = session.get(UserProfile, realm.hamlet.id)
    assert user is not None
    return user


def test_the_serving_process_writes_no_row(services: Services, api: Api, realm: SeededRealm) -> None:
    assert not services.db.cache.records_changes
    before = _newest(services)
    response = api.patch(realm.hamlet, "settings", {"full_name": "Hamlet Served"})
    assert response.status_code == 200, response.text
    assert _newest(services) == before


def test_a_one_off_write_records_its_realm_tables_and_events(one_off: Services, realm: SeededRealm) -> None:
    before = len(_rows(one_off))
    with one_off.db.session() as session:
        do_change_full_name(session, _hamlet(session, realm), "Hamlet Logged")
    rows = _rows(one_off)
    assert len(rows) == before + 1
    row = rows[-1]
    assert row["realms"] == [realm.id]
    assert "user_profile.full_name" in row["written"]
    assert "change_log" not in row["written"]
    [(realm_id, event, user_ids)] = row["events"]
    assert realm_id == realm.id
    assert event["type"] == "realm_user"
    assert event["person"] == {"user_id": realm.hamlet.id, "full_name": "Hamlet Logged"}
    assert realm.iago.id in user_ids


def test_a_write_that_caches_nothing_and_tells_no_one_writes_no_row(one_off: Services) -> None:
    before = _newest(one_off)
    with one_off.db.session() as session, transaction(session):
        session.add(EmailOutbox(to_address="x@example.com", template="t", context="{}"))
    assert _newest(one_off) == before


def test_a_notification_and_an_invalidation_each_write_a_row(one_off: Services, realm: SeededRealm) -> None:
    with one_off.db.session() as session, one_off.db.notification(session) as tx:
        tx.send_event(realm.id, ev.RealmUserUpdate(person=ev.PersonFullName(user_id=1, full_name="x")), [1])
    one_off.db.invalidate([realm.id], ["stream"])
    *_, notified, invalidated = _rows(one_off)
    assert notified["written"] == []
    assert len(notified["events"]) == 1
    assert invalidated == {"realms": [realm.id], "written": ["stream"], "events": []}


def test_rows_past_the_retention_are_deleted_by_the_next_writer(
    one_off: Services, realm: SeededRealm
) -> None:
    with one_off.db.engine.begin() as conn:
        old = conn.execute(
            insert(ChangeLogEntry)
            .values(payload=EMPTY_CHANGE, created=utcnow() - change_log.RETENTION - timedelta(seconds=1))
            .returning(ChangeLogEntry.id)
        ).scalar_one()
    with one_off.db.session() as session:
        do_change_full_name(session, _hamlet(session, realm), "Hamlet Pruned")
    with one_off.db.engine.connect() as conn:
        assert conn.execute(select(ChangeLogEntry.id).where(ChangeLogEntry.id == old)).first() is None


def test_a_follower_starts_at_the_newest_row_and_applies_each_once(
    services: Services, one_off: Services, realm: SeededRealm
) -> None:
    with one_off.db.session() as session:
        do_change_full_name(session, _hamlet(session, realm), "Before The Follower")
    store = RealmStateStore(4)
    store.accepting = True
    delivered: Delivered = []
    follower = ChangeLogFollower(services.db.engine, store, lambda *d: delivered.append(d))
    follower.start()
    with services.db.session() as session:
        store.get(realm.id, USERS, lambda: realm_users(session, realm.id))
    assert follower.poll() == 0
    with one_off.db.session() as session:
        do_change_full_name(session, _hamlet(session, realm), "After The Follower")
    # Another process's rows may come in between (the suite's app follows the same table).
    assert follower.poll() >= 1
    assert [
        e["person"]["full_name"]
        for _, e, _ in delivered
        if e.get("person", {}).get("user_id") == realm.hamlet.id
    ] == ["After The Follower"]
    assert store.peek(realm.id, USERS) is None
    assert follower.poll() == 0


def test_a_malformed_row_drops_everything(tmp_path: Path) -> None:
    # A database of its own: the suite's app follows the suite's, and would apply it too.
    with sqlite_services(tmp_path) as own:
        upgrade(own.db.engine)
        store = RealmStateStore(4)
        store.accepting = True
        follower = ChangeLogFollower(own.db.engine, store, lambda *_: None)
        follower.start()
        store.get(1, USERS, lambda: cast("RealmUsers", object()))
        with own.db.engine.begin() as conn:
            conn.execute(insert(ChangeLogEntry).values(payload="not json", created=utcnow()))
        assert follower.poll() == 1
        assert store.peek(1, USERS) is None
