"""Weekly digests, with the worker's clock."""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from sqlalchemy import update

from palaver.db.transaction import transaction
from palaver.lib.email.digest import queue_due_digests
from palaver.lib.email.transport import SmtpTransport
from palaver.models import UserProfile
from palaver.services import Services
from palaver.smtp_url import parse_smtp_url
from palaver.timeutil import utcnow
from palaver.workers.email import EmailWorker
from tests.email_helpers import SmtpSink, links, parts
from tests.helpers import Api, SeededRealm, assert_json_success


def test_weekly_digest_for_away_users(
    api: Api, realm: SeededRealm, services: Services, smtp_server: SmtpSink
) -> None:
    with services.db.session() as session, transaction(session):
        session.execute(
            update(UserProfile)
            .where(UserProfile.realm_id == realm.id)
            .values(date_joined=utcnow() - timedelta(days=30))
        )
    assert_json_success(
        api.post(
            realm.iago,
            "channels/create",
            {"name": "Verona", "subscribers": [realm.iago.id, realm.hamlet.id, realm.othello.id]},
        )
    )
    for n in range(3):
        assert_json_success(
            api.post(
                realm.iago,
                "messages",
                {"type": "stream", "to": "Verona", "topic": "plans", "content": f"{n}"},
            )
        )
    assert_json_success(
        api.post(realm.iago, "messages", {"type": "stream", "to": "Verona", "topic": "misc", "content": "x"})
    )
    # Othello was around recently: no digest for him.
    assert_json_success(api.post(realm.othello, "users/me/presence", {"status": "active"}))
    assert_json_success(api.patch(realm.cordelia, "settings", {"enable_digest_emails": False}))
    worker = EmailWorker(
        services,
        transport=SmtpTransport(parse_smtp_url(smtp_server.url)),
        jobs=[partial(queue_due_digests, realm_id=realm.id)],
    )
    now = utcnow() + timedelta(minutes=1)
    worker.run_once(now)
    [digest] = smtp_server.to(realm.hamlet.email)
    assert digest["Subject"] == "Test Organization this week: 2 active topics"
    text, html = parts(digest)
    assert "#Verona > plans: 3 messages" in text and "#Verona > misc: 1 message\r\n" in text
    assert any("/#narrow/channel/" in u and u.endswith("/topic/plans") for u in links(text))
    assert "#Verona &gt; plans" in html
    assert smtp_server.to(realm.othello.email) == []
    assert smtp_server.to(realm.cordelia.email) == []
    # Weekly: nothing more until seven days have passed.
    worker.run_once(now + timedelta(days=3))
    assert len(smtp_server.to(realm.hamlet.email)) == 1
    # A week after the first digest, only what happened since then counts: nothing here.
    worker.run_once(now + timedelta(days=7, minutes=1))
    assert len(smtp_server.to(realm.hamlet.email)) == 1
