"""palaver retention run / restore."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import update

from palaver.lib.realm import get_realm_by_string_id
from palaver.models.messages import Message
from palaver.services import Services
from palaver.timeutil import utcnow
from tests.client import TestClient
from tests.test_cli import Cli, CliRealm, basic


def test_retention_run_and_restore(
    cli: Cli, cli_realm: CliRealm, services: Services, client: TestClient
) -> None:
    sid = cli_realm.string_id
    headers = {"host": cli_realm.host, **basic(cli_realm.owner_email, cli_realm.owner_api_key)}
    for n in range(2):
        data = {"type": "stream", "to": "general", "topic": "old", "content": f"message {n}"}
        assert client.post("/api/v1/messages", data=data, headers=headers).json()["result"] == "success"
    with services.db.session() as session:
        realm = get_realm_by_string_id(session, sid)
        assert realm is not None
        realm.message_retention_days = 30
        session.commit()
        session.execute(
            update(Message)
            .where(Message.realm_id == realm.id)
            .values(date_sent=utcnow() - timedelta(days=40))
        )
        session.commit()
        count = session.query(Message).filter(Message.realm_id == realm.id).count()
    assert count > 0
    out = cli.ok(f"retention run --realm {sid}")
    assert out.splitlines()[0] == f"{sid}: archived {count} messages"
    assert cli.ok(f"retention run --realm {sid}").splitlines()[0] == f"{sid}: archived 0 messages"
    since = (utcnow() + timedelta(days=1)).strftime("%Y-%m-%d")
    assert cli.fails(f"retention restore --realm {sid} --since {since}").startswith(
        "nothing archived to restore since"
    )
    assert cli.ok(f"retention restore --realm {sid}") == f"Restored {count} messages from 1 archive batches\n"
    assert cli.fails(f"retention restore --realm {sid}") == "nothing archived to restore"
    assert cli.fails("retention run --realm nowhere") == "no organization with string ID 'nowhere'"
    bad = cli(f"retention restore --realm {sid} --since yesterday")
    assert bad.code == 2 and "invalid date 'yesterday'" in bad.err
    assert cli.raw("retention --help").out.startswith("usage: palaver retention")
