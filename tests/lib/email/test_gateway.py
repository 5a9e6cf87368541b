"""The email gateway: channel addresses, replies to missed-message emails, real SMTP delivery."""

from __future__ import annotations

import io
import smtplib
from collections.abc import Iterator
from datetime import timedelta
from email.message import EmailMessage
from typing import Any

import pytest

from palaver.cli import main
from palaver.lib.email.incoming import html_to_text, strip_quoted_reply
from palaver.services import Services
from palaver.timeutil import utcnow
from palaver.workers.email import EmailWorker
from palaver.workers.email_gateway import make_controller
from tests.client import TestClient
from tests.email_helpers import SmtpSink, free_port
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success, basic_auth


@pytest.fixture
def gateway(services: Services) -> Iterator[int]:
    port = free_port()
    controller = make_controller(services, "127.0.0.1", port)
    controller.start()
    try:
        yield port
    finally:
        controller.stop()


def send_mail(port: int, to: str, message: EmailMessage) -> None:
    message["To"] = to
    if "From" not in message:
        message["From"] = "Someone Outside <outside@elsewhere.example>"
    with smtplib.SMTP("127.0.0.1", port) as smtp:
        smtp.send_message(message)


def channel_address(api: Api, realm: SeededRealm, name: str, **params: Any) -> tuple[int, str]:
    body = assert_json_success(
        api.post(
            realm.iago, "channels/create", {"name": name, "subscribers": [realm.iago.id, realm.hamlet.id]}
        )
    )
    stream_id: int = body["id"]
    email: str = assert_json_success(api.get(realm.hamlet, f"streams/{stream_id}/email_address", params))[
        "email"
    ]
    return stream_id, email


def newest(api: Api, realm: SeededRealm, narrow: list[dict[str, Any]]) -> dict[str, Any]:
    body = assert_json_success(
        api.get(
            realm.hamlet, "messages", {"anchor": "newest", "num_before": 1, "num_after": 0, "narrow": narrow}
        )
    )
    message: dict[str, Any] = body["messages"][-1]
    return message


def test_channel_email_address_endpoint(api: Api, realm: SeededRealm) -> None:
    stream_id, email = channel_address(api, realm, "Verona Plans")
    local, _, domain = email.partition("@")
    assert domain == "palaver.test"
    slug, token = local.split(".")
    assert slug == "verona-plans" and len(token) == 32
    # The same address on every request; another sender, another address.
    again = assert_json_success(api.get(realm.hamlet, f"streams/{stream_id}/email_address"))["email"]
    assert again == email
    mine = assert_json_success(
        api.get(realm.hamlet, f"streams/{stream_id}/email_address", {"sender_id": realm.hamlet.id})
    )
    own_bot = assert_json_success(
        api.get(realm.hamlet, f"streams/{stream_id}/email_address", {"sender_id": realm.default_bot.id})
    )
    assert len({email, mine["email"], own_bot["email"]}) == 3
    assert_json_error(
        api.get(realm.hamlet, f"streams/{stream_id}/email_address", {"sender_id": realm.othello.id}),
        "Invalid user ID",
    )
    assert_json_error(api.get(realm.hamlet, "streams/99999999/email_address"), "Invalid channel ID")


def test_mail_to_a_channel_with_attachment_html_and_quotes(
    api: Api, client: TestClient, realm: SeededRealm, gateway: int
) -> None:
    stream_id, address = channel_address(api, realm, "Verona")
    mail = EmailMessage()
    mail["Subject"] = "Re: Weekly report"
    mail.set_content(
        "Numbers are up.\n\nOn Mon, 1 Jan 2026, Ann <ann@x.example> wrote:\n> old text\n> more\n"
    )
    mail.add_attachment(b"%PDF-1.4 fake", maintype="application", subtype="pdf", filename="report.pdf")
    send_mail(gateway, address, mail)
    message = newest(api, realm, [{"operator": "channel", "operand": stream_id}])
    assert message["subject"] == "Weekly report"
    assert message["sender_full_name"] == "Email Gateway"
    assert "Numbers are up." in message["content"] and "old text" not in message["content"]
    [link] = [part for part in message["content"].split('"') if part.startswith("/user_uploads/")]
    assert link.endswith("/report.pdf")
    download = client.get(link, headers={"host": realm.host, "authorization": basic_auth(realm.hamlet)})
    assert download.status_code == 200 and download.content == b"%PDF-1.4 fake"

    html_only = EmailMessage()
    html_only["Subject"] = "Menu"
    html_only.set_content(
        "<html><body><p>Today: <b>soup</b></p><ul><li>bread</li></ul><script>x()</script></body></html>",
        subtype="html",
    )
    send_mail(gateway, address, html_only)
    message = newest(api, realm, [{"operator": "channel", "operand": stream_id}])
    assert message["subject"] == "Menu"
    assert "Today: soup" in message["content"] and "bread" in message["content"]
    assert "x()" not in message["content"]


def test_reply_to_a_missed_message_email(
    api: Api, realm: SeededRealm, services: Services, smtp_server: SmtpSink, worker: EmailWorker, gateway: int
) -> None:
    assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "Ready?"})
    )
    worker.run_once(utcnow() + timedelta(seconds=121))
    [email] = smtp_server.to(realm.othello.email)
    reply = EmailMessage()
    reply["Subject"] = f"Re: {email['Subject']}"
    reply["From"] = realm.othello.email
    reply.set_content("Yes, on my way.\n\n> Ready?\n-- \nOthello\n")
    send_mail(gateway, email["Reply-To"], reply)
    message = newest(api, realm, [{"operator": "dm", "operand": [realm.othello.id]}])
    assert message["sender_id"] == realm.othello.id
    assert message["content"] == "<p>Yes, on my way.</p>"


def test_unknown_addresses_are_refused(gateway: int) -> None:
    mail = EmailMessage()
    mail["Subject"] = "hello"
    mail.set_content("hi")
    with pytest.raises(smtplib.SMTPDataError) as refused:
        send_mail(gateway, f"mm{'0' * 32}@palaver.test", mail)
    assert refused.value.smtp_code == 550


def test_stdin_pipe(
    api: Api, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    stream_id, address = channel_address(api, realm, "Piped")
    mail = EmailMessage()
    mail["Subject"] = "From the pipe"
    mail["From"] = "a@b.example"
    mail["To"] = "list@elsewhere.example"
    mail.set_content("piped body")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(bytes(mail))))
    main(
        [
            "email-gateway",
            "--stdin",
            "--recipient",
            address,
            "--database-url",
            services.settings.database_url,
            "--data-dir",
            str(tmp_path),
        ]
    )
    message = newest(api, realm, [{"operator": "channel", "operand": stream_id}])
    assert message["subject"] == "From the pipe" and message["content"] == "<p>piped body</p>"


def test_text_helpers() -> None:
    assert html_to_text('<p>Hi <a href="https://x.example/">there</a></p><p>Bye</p>') == (
        "Hi there (https://x.example/)\n\nBye"
    )
    assert strip_quoted_reply("New\n\n-----Original Message-----\nFrom: x\nold") == "New"
    assert strip_quoted_reply("> only a quote") == "> only a quote"


def test_lmtp_receiver(api: Api, realm: SeededRealm, services: Services) -> None:
    stream_id, address = channel_address(api, realm, "Lmtp")
    port = free_port()
    controller = make_controller(services, "127.0.0.1", port, lmtp=True)
    controller.start()
    try:
        mail = EmailMessage()
        mail["Subject"] = "Over LMTP"
        mail["From"] = "a@b.example"
        mail["To"] = address
        mail.set_content("delivered by LMTP")
        with smtplib.LMTP("127.0.0.1", port) as lmtp:
            lmtp.send_message(mail)
    finally:
        controller.stop()
    message = newest(api, realm, [{"operator": "channel", "operand": stream_id}])
    assert message["subject"] == "Over LMTP" and message["content"] == "<p>delivered by LMTP</p>"
