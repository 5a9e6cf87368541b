"""Message retention: archiving by channel and realm policy, events, restore, purge (clock injected)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from palaver.models import Base
from palaver.models.message_archive import ARCHIVE_TABLES, NOT_ARCHIVED
from palaver.services import Services
from palaver.timeutil import utcnow
from palaver.workers.retention import RetentionWorker, run_retention
from tests.api.test_messages_send import create_channel, send_dm, send_stream
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_success


def message_ids(api: Api, user: Any) -> list[int]:
    query = {"anchor": "oldest", "num_before": 0, "num_after": 1000}
    return [m["id"] for m in assert_json_success(api.get(user, "messages", query))["messages"]]


@pytest.fixture
def policies(api: Api, realm: SeededRealm) -> dict[str, int]:
    owner, hamlet = realm.desdemona, realm.hamlet
    people = [owner, hamlet, realm.othello]
    short = create_channel(api, owner, "short", people)
    create_channel(api, owner, "forever", people)
    create_channel(api, owner, "default", people)
    assert_json_success(api.patch(owner, f"streams/{short}", {"message_retention_days": 10}))
    forever = {s["name"]: s["stream_id"] for s in assert_json_success(api.get(owner, "streams"))["streams"]}[
        "forever"
    ]
    assert_json_success(api.patch(owner, f"streams/{forever}", {"message_retention_days": '"unlimited"'}))
    assert_json_success(api.patch(owner, "realm", {"message_retention_days": 30}))
    return {
        "short": send_stream(api, hamlet, "short", "t", "short-lived"),
        "short2": send_stream(api, hamlet, "short", "u", "also short-lived"),
        "forever": send_stream(api, hamlet, "forever", "t", "kept"),
        "default": send_stream(api, hamlet, "default", "t", "realm policy"),
        "dm": send_dm(api, hamlet, [realm.othello], "a direct message"),
    }


def test_every_message_table_has_an_archive() -> None:
    owned = {
        t.name
        for t in Base.metadata.sorted_tables
        if not t.name.startswith("archived_")
        and any(fk.column.table.name == "message" for fk in t.foreign_keys)
    }
    assert set(ARCHIVE_TABLES) == (owned - NOT_ARCHIVED) | {"message"}
    assert owned >= NOT_ARCHIVED
    for name, archive in ARCHIVE_TABLES.items():
        source = Base.metadata.tables[name]
        assert [c.name for c in archive.columns] == [*source.columns.keys(), "archive_transaction_id"]


def test_channel_and_realm_policies(
    api: Api, realm: SeededRealm, services: Services, policies: dict[str, int], events: EventRecorder
) -> None:
    now = utcnow()
    hamlet = realm.hamlet
    events.clear()
    report = run_retention(services, now + timedelta(days=9), realm_string_id=realm.string_id)
    assert report.total == 0
    assert events.of_type("delete_message") == []

    report = run_retention(services, now + timedelta(days=11), realm_string_id=realm.string_id)
    assert report.archived == {realm.string_id: 2}
    remaining = set(message_ids(api, hamlet))
    assert policies["short"] not in remaining and policies["short2"] not in remaining
    assert {policies["forever"], policies["default"], policies["dm"]} <= remaining
    deletions = events.of_type("delete_message")
    assert sorted((e["topic"], e["message_ids"]) for e, _ in deletions) == [
        ("t", [policies["short"]]),
        ("u", [policies["short2"]]),
    ]
    for event, users in deletions:
        assert event["message_type"] == "stream" and event["message_id"] == event["message_ids"][0]
        assert {realm.desdemona.id, hamlet.id, realm.othello.id} <= set(users)

    events.clear()
    report = run_retention(services, now + timedelta(days=31), realm_string_id=realm.string_id)
    assert report.archived == {realm.string_id: 2}
    assert policies["forever"] in message_ids(api, hamlet)
    assert policies["default"] not in message_ids(api, hamlet) and policies["dm"] not in message_ids(
        api, hamlet
    )
    (dm_event, dm_users) = next(
        (e, u) for e, u in events.of_type("delete_message") if e["message_type"] == "private"
    )
    assert dm_event["message_ids"] == [policies["dm"]] and "stream_id" not in dm_event
    assert sorted(dm_users) == sorted([hamlet.id, realm.othello.id])


def test_restore_brings_back_flags_and_reactions(
    api: Api, realm: SeededRealm, services: Services, policies: dict[str, int]
) -> None:
    from palaver.actions.retention import do_restore_archive
    from palaver.models import Realm

    hamlet, othello = realm.hamlet, realm.othello
    target = policies["short"]
    assert_json_success(
        api.post(hamlet, "messages/flags", {"messages": [target], "op": "add", "flag": "starred"})
    )
    assert_json_success(api.post(othello, f"messages/{target}/reactions", {"emoji_name": "smile"}))
    before = assert_json_success(api.get(hamlet, f"messages/{target}"))["message"]
    now = utcnow()
    run_retention(services, now + timedelta(days=11), realm_string_id=realm.string_id)
    assert api.get(hamlet, f"messages/{target}").status_code == 400

    with services.db.session() as session:
        db_realm = session.get(Realm, realm.id)
        assert db_realm is not None
        # Only batches archived since a later time: none of them.
        assert do_restore_archive(session, db_realm, now + timedelta(days=12), now).transactions == 0
        outcome = do_restore_archive(session, db_realm, now + timedelta(days=10), now + timedelta(days=12))
    assert (outcome.messages, outcome.transactions) == (2, 1)  # one batch held both
    after = assert_json_success(api.get(hamlet, f"messages/{target}"))["message"]
    assert after == before
    assert "starred" in after["flags"] and [r["emoji_name"] for r in after["reactions"]] == ["smile"]
    # Restored, but still expired: the next round archives it again.
    assert run_retention(services, now + timedelta(days=13), realm_string_id=realm.string_id).total == 2


def test_archives_are_purged_after_the_grace_period(
    api: Api, realm: SeededRealm, services: Services, policies: dict[str, int]
) -> None:
    from palaver.actions.retention import do_restore_archive
    from palaver.models import Realm

    now = utcnow()
    run_retention(services, now + timedelta(days=11), realm_string_id=realm.string_id)
    grace = services.settings.archive_retention_days
    assert (
        run_retention(services, now + timedelta(days=11 + grace - 1), realm_string_id="nobody").purged_batches
        == 0
    )
    purged = run_retention(
        services, now + timedelta(days=12 + grace), realm_string_id="nobody"
    ).purged_batches
    # This test's archive batch at least (others' archives in the database go too).
    assert purged >= 1
    with services.db.session() as session:
        db_realm = session.get(Realm, realm.id)
        assert db_realm is not None
        assert do_restore_archive(session, db_realm, None, now).messages == 0
    assert policies["short"] not in message_ids(api, realm.hamlet)


async def test_worker_runs_with_an_injected_clock(
    api: Api, realm: SeededRealm, services: Services, policies: dict[str, int]
) -> None:
    later = utcnow() + timedelta(days=11)
    worker = RetentionWorker(
        services, clock=lambda: later, first_delay_seconds=0, interval=timedelta(hours=1)
    )
    report = worker.run_once()
    assert report.archived.get(realm.string_id) == 2
    await worker.start()
    await worker.stop()


async def test_daemon_thread_jobs_return_and_raise() -> None:
    from palaver.workers import in_daemon_thread

    assert await in_daemon_thread(lambda: 42, "test-job") == 42

    def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await in_daemon_thread(fail, "test-job")
