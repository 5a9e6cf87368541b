"""Bulk inserts (db/bulk.py): the fast path of each database writes what SQLAlchemy's plain
insert writes. The suite's database decides which path runs (``PALAVER_TEST_DATABASE``)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Table, delete, insert, select

from palaver.db.bulk import insert_rows
from palaver.db.transaction import transaction
from palaver.models.messages import UserMessage
from palaver.services import Services
from tests.helpers import Api, SeededRealm, assert_json_success

USER_MESSAGE: Table = UserMessage.metadata.tables[UserMessage.__tablename__]
COLUMNS = ("user_profile_id", "message_id", "flags")


def _send(api: Api, realm: SeededRealm) -> int:
    to = [realm.othello.id, realm.cordelia.id, realm.iago.id]
    body = assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": to, "content": "x"})
    )
    message_id: int = body["id"]
    return message_id


def _stored(services: Services, message_id: int) -> list[tuple[Any, ...]]:
    """Every column of the message's rows but the ones each insert numbers or is given apart."""
    others = [c for c in USER_MESSAGE.c if c.name not in ("id", "message_id")]
    with services.db.engine.connect() as conn:
        query = select(*others).where(USER_MESSAGE.c.message_id == message_id).order_by(*others)
        return [tuple(row) for row in conn.execute(query)]


def test_the_fast_path_writes_what_the_plain_insert_writes(
    services: Services, api: Api, realm: SeededRealm
) -> None:
    plain_id, bulk_id = _send(api, realm), _send(api, realm)
    users = [realm.hamlet.id, realm.othello.id, realm.cordelia.id, realm.iago.id]
    # Flags of every width the column holds, from none to beyond 32 bits.
    flags = [0, 1 | 256, 2**31 + 5, 2**40 + 2**33 + 1]
    with services.db.session() as session, transaction(session):
        conn = session.connection()
        conn.execute(delete(USER_MESSAGE).where(USER_MESSAGE.c.message_id.in_([plain_id, bulk_id])))
        conn.execute(
            insert(USER_MESSAGE),
            [
                {"user_profile_id": u, "message_id": plain_id, "flags": f}
                for u, f in zip(users, flags, strict=True)
            ],
        )
    with services.db.session() as session, transaction(session) as tx:
        insert_rows(
            tx,
            session.connection(),
            USER_MESSAGE,
            COLUMNS,
            [(u, bulk_id, f) for u, f in zip(users, flags, strict=True)],
        )
        # After commit the realm-state cache drops what was read from the tables written.
        assert tx.written == {"user_message"}
    assert _stored(services, bulk_id) == _stored(services, plain_id)
    assert len(_stored(services, bulk_id)) == len(users)


def test_no_rows_write_nothing(services: Services) -> None:
    with services.db.session() as session, transaction(session) as tx:
        insert_rows(tx, session.connection(), USER_MESSAGE, COLUMNS, [])
        assert tx.written == set()


def test_an_omitted_column_with_a_python_default_is_refused(services: Services) -> None:
    # ``flags`` defaults to 0 in Python only: the fast path would leave it to the database.
    with (
        services.db.session() as session,
        transaction(session) as tx,
        pytest.raises(ValueError, match="flags"),
    ):
        insert_rows(tx, session.connection(), USER_MESSAGE, ("user_profile_id", "message_id"), [(1, 1)])
