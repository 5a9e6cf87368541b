"""The outbox and its worker: SMTP delivery, headers, retries, single delivery, .eml files."""

from __future__ import annotations

from datetime import timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest

from palaver.cli import main
from palaver.db.transaction import transaction
from palaver.lib.email.outbox import claim_email, queue_email
from palaver.lib.email.transport import DirectoryTransport, SmtpTransport
from palaver.models.email_outbox import EmailOutbox
from palaver.services import Services
from palaver.smtp_url import parse_smtp_url
from palaver.timeutil import utcnow
from palaver.workers.email import EmailWorker
from tests.email_helpers import SmtpSink, free_port, parts
from tests.helpers import SeededRealm, wait_until


def _queue_login_notice(services: Services, realm: SeededRealm, to: str) -> int:
    with services.db.session() as session, transaction(session):
        row = queue_email(
            session,
            realm_id=realm.id,
            to=to,
            template="login_notice",
            context={"full_name": "Ann <b>", "email": to, "when": "2026-11-25 08:00", "client": "tests"},
            from_name="Test Organization",
        )
        return row.id


def test_smtp_url_parsing() -> None:
    plain = parse_smtp_url("smtp://mail.example.com:2525")
    assert (plain.host, plain.port, plain.use_tls, plain.starttls, plain.username) == (
        "mail.example.com",
        2525,
        False,
        False,
        None,
    )
    tls = parse_smtp_url("smtps://ann%40x.com:p%2Fw@mail.example.com")
    assert (tls.port, tls.use_tls, tls.username, tls.password) == (465, True, "ann@x.com", "p/w")
    assert parse_smtp_url("smtp://h?starttls=true").starttls is True
    for bad in ("http://h", "smtp://", "smtp://h?starttls=maybe", "smtps://h?starttls=true", "smtp://h?x=1"):
        with pytest.raises(ValueError):
            parse_smtp_url(bad)


def test_worker_delivers_over_smtp_with_headers_and_both_parts(
    services: Services, realm: SeededRealm, smtp_server: SmtpSink, worker: EmailWorker
) -> None:
    to = f"ann@{realm.string_id}.example.com"
    email_id = _queue_login_notice(services, realm, to)
    now = utcnow()
    assert worker.deliver_due(now)["sent"] >= 1
    [message] = smtp_server.to(to)
    assert message["To"] == to
    assert message["From"] == "Test Organization <noreply@palaver.test>"
    assert message["Reply-To"] == "noreply@palaver.test"
    assert message["Subject"] == "New login to Test Organization"
    assert message["Message-ID"].endswith("@palaver.test>")
    assert abs((parsedate_to_datetime(message["Date"]).replace(tzinfo=None) - now).total_seconds()) < 2
    text, html = parts(message)
    assert "Ann <b>" in text and "Ann &lt;b&gt;" in html
    assert f"http://{realm.host}/accounts/password/reset/" in text
    assert f'href="http://{realm.host}/accounts/password/reset/"' in html
    with services.db.session() as session:
        row = session.get(EmailOutbox, email_id)
        assert row is not None and row.sent_at is not None and row.message_id_header == message["Message-ID"]
    # Sent once: a second round finds nothing to do for it.
    worker.deliver_due(now)
    assert len(smtp_server.to(to)) == 1


def test_smtp_outage_retries_with_backoff_and_loses_nothing(
    services: Services, realm: SeededRealm, smtp_server: SmtpSink
) -> None:
    to = f"outage@{realm.string_id}.example.com"
    email_id = _queue_login_notice(services, realm, to)
    down = EmailWorker(services, transport=SmtpTransport(parse_smtp_url(f"smtp://127.0.0.1:{free_port()}")))
    now = utcnow()
    down.deliver_due(now)
    with services.db.session() as session:
        row = session.get(EmailOutbox, email_id)
        assert row is not None and row.sent_at is None and row.attempts == 1 and row.last_error
        assert row.next_attempt_at == now + timedelta(seconds=60)
    up = EmailWorker(services, transport=SmtpTransport(parse_smtp_url(smtp_server.url)))
    up.deliver_due(now + timedelta(seconds=30))  # not due yet
    assert smtp_server.to(to) == []
    up.deliver_due(now + timedelta(seconds=61))
    assert len(smtp_server.to(to)) == 1


def test_a_claimed_email_is_not_claimed_again(services: Services, realm: SeededRealm) -> None:
    email_id = _queue_login_notice(services, realm, f"claim@{realm.string_id}.example.com")
    now = utcnow()
    with services.db.session() as first, services.db.session() as second:
        with transaction(first):
            assert claim_email(first, email_id, now, 300)
        with transaction(second):
            assert not claim_email(second, email_id, now, 300)
        # A worker that died holding it: the lease runs out and another may take it.
        with transaction(second):
            assert claim_email(second, email_id, now + timedelta(seconds=301), 300)


def test_without_smtp_emails_land_in_the_outbox_directory(
    services: Services, realm: SeededRealm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    to = f"dir@{realm.string_id}.example.com"
    _queue_login_notice(services, realm, to)
    outbox = tmp_path / "outbox"
    EmailWorker(services, transport=DirectoryTransport(outbox)).deliver_due(utcnow())
    files = [p for p in outbox.glob("*.eml") if to in p.read_text()]
    assert len(files) == 1
    main(["outbox", "--data-dir", str(tmp_path), "--database-url", services.settings.database_url])
    out = capsys.readouterr().out
    assert files[0].name in out and "New login to Test Organization" in out
    main(["outbox", "--data-dir", str(tmp_path), "--show", files[0].name])
    assert f"To: {to}" in capsys.readouterr().out


def test_the_server_runs_the_worker(services: Services, realm: SeededRealm, tmp_path: Path) -> None:
    """With email_worker on, the app's lifespan starts the worker; mail reaches the outbox."""

    from palaver.app import create_app
    from palaver.services import build_services
    from tests.client import TestClient

    to = f"lifespan@{realm.string_id}.example.com"
    _queue_login_notice(services, realm, to)
    settings = services.settings.model_copy(update={"email_worker": True, "data_dir": tmp_path})
    found: list[Path] = []

    def sent() -> bool:
        found[:] = [p for p in (tmp_path / "outbox").glob("*.eml") if to in p.read_text()]
        return bool(found)

    with TestClient(create_app(settings, build_services(settings))):
        wait_until(sent, timeout=20, interval=0.02)
    assert len(found) == 1


def test_queue_listing_and_pruning(
    services: Services, realm: SeededRealm, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from palaver.lib.email.outbox import prune_done_emails

    to = f"queue@{realm.string_id}.example.com"
    email_id = _queue_login_notice(services, realm, to)
    down = EmailWorker(services, transport=SmtpTransport(parse_smtp_url(f"smtp://127.0.0.1:{free_port()}")))
    now = utcnow()
    down.deliver_due(now)
    main(["outbox", "--queue", "--data-dir", str(tmp_path), "--database-url", services.settings.database_url])
    [line] = [line for line in capsys.readouterr().out.splitlines() if to in line]
    assert line.split()[:3] == [str(email_id), "queued", "1"] and "ConnectionRefusedError" in line
    EmailWorker(services, transport=DirectoryTransport(tmp_path / "outbox")).deliver_due(
        now + timedelta(minutes=2)
    )
    with services.db.session() as session:
        prune_done_emails(session, services.settings, now + timedelta(days=29))
        assert session.get(EmailOutbox, email_id) is not None
        prune_done_emails(session, services.settings, now + timedelta(days=31))
        assert session.get(EmailOutbox, email_id) is None
