"""The writer: a failure part-way leaves no organization, no rows and no stored files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import func, select, text

from palaver.importers.model import (
    ImportedChannel,
    ImportedFile,
    ImportedMessage,
    ImportedUser,
    ImportInputError,
    ImportSource,
    Report,
)
from palaver.importers.writer import write_organization
from palaver.models import Realm, Role
from palaver.models.messages import Message
from palaver.models.realm_audit_log import RealmAuditLog
from tests.portability.conftest import Server


def _one_person_source(messages: Callable[[], Iterator[ImportedMessage]]) -> ImportSource:
    """An export of one owner, "a", and one channel, "c", with these messages."""
    return ImportSource(
        source="test",
        name="Test",
        users=[ImportedUser("a", "a@example.com", "A", role=Role.OWNER)],
        channels=[ImportedChannel("c", "general", members=["a"])],
        emoji=[],
        messages=messages,
        report=Report(),
    )


def test_a_failure_mid_stream_leaves_nothing(fresh_server: Callable[[str], Server]) -> None:
    server = fresh_server("target")
    when = datetime(2024, 1, 2, tzinfo=UTC)

    def messages() -> Iterator[ImportedMessage]:
        for n in range(5):
            yield ImportedMessage(
                location=f"day.json[{n}]",
                sender="a",
                date_sent=when,
                content=f"message {n}",
                channel="c",
                topic="t",
                files=[ImportedFile(f"f{n}", f"f{n}.txt", "a", lambda: b"data")],
            )
        raise ImportInputError("day.json[5]: the rest of the file is gone")

    source = _one_person_source(messages)
    with pytest.raises(ImportInputError, match="the rest of the file is gone"):
        write_organization(server.services, source, string_id="half", batch_size=2)
    with server.services.db.session() as session:
        assert session.scalar(select(func.count()).select_from(Realm)) == 0
        assert session.scalar(select(func.count()).select_from(Message)) == 0
        assert session.scalar(select(func.count()).select_from(RealmAuditLog)) == 0
    uploads = [p for p in server.services.settings.data_dir.rglob("*.txt")]
    assert uploads == []


def test_an_import_into_postgresql_leaves_fresh_planner_statistics(
    fresh_server: Callable[[str], Server],
) -> None:
    """Autovacuum may take long to analyze millions of new rows; until then PostgreSQL
    planned reads by message ID from no statistics at all."""
    server = fresh_server("target")
    with server.services.db.session() as session:
        if session.get_bind().dialect.name != "postgresql":
            pytest.skip("planner statistics are PostgreSQL's (the PostgreSQL run checks this)")
    when = datetime(2024, 1, 2, tzinfo=UTC)
    source = _one_person_source(
        lambda: iter(
            [ImportedMessage(location="m", sender="a", date_sent=when, content="hi", channel="c", topic="t")]
        )
    )
    write_organization(server.services, source, string_id="stats")
    with server.services.db.session() as session:
        analyzed = session.execute(
            text(
                "SELECT relname FROM pg_stat_user_tables WHERE last_analyze IS NOT NULL"
                " AND relname IN ('message', 'user_message', 'reaction', 'subscription')"
            )
        ).scalars()
        assert sorted(analyzed) == ["message", "reaction", "subscription", "user_message"]
