"""Missed-message emails: who gets one, batching per conversation, content, reply address."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from email.message import EmailMessage
from typing import Any

from sqlalchemy import select

from palaver.models.email_outbox import MissedMessageEmail
from palaver.services import Services
from palaver.timeutil import utcnow
from palaver.workers.email import EmailWorker
from tests.email_helpers import SmtpSink, links, parts
from tests.helpers import Api, SeededRealm, assert_json_success
from tests.helpers import TestUser as User


def dm(api: Api, sender: User, to: list[User], content: str) -> int:
    body = assert_json_success(
        api.post(sender, "messages", {"type": "direct", "to": [u.id for u in to], "content": content})
    )
    message_id: int = body["id"]
    return message_id


def post(api: Api, sender: User, channel: str, topic: str, content: str) -> int:
    body = assert_json_success(
        api.post(sender, "messages", {"type": "stream", "to": channel, "topic": topic, "content": content})
    )
    message_id: int = body["id"]
    return message_id


def pending(services: Services, user: User) -> list[MissedMessageEmail]:
    with services.db.session() as session:
        return list(
            session.scalars(select(MissedMessageEmail).where(MissedMessageEmail.user_profile_id == user.id))
        )


def after(seconds: int) -> datetime:
    return utcnow() + timedelta(seconds=seconds)


def emails(worker: EmailWorker, sink: SmtpSink, user: User, now: datetime) -> list[EmailMessage]:
    worker.run_once(now)
    return sink.to(user.email)


def channel(api: Api, realm: SeededRealm, name: str, members: list[User]) -> None:
    assert_json_success(
        api.post(realm.iago, "channels/create", {"name": name, "subscribers": [u.id for u in members]})
    )


def test_direct_messages_to_an_offline_user_are_batched_into_one_email(
    api: Api, realm: SeededRealm, services: Services, smtp_server: SmtpSink, worker: EmailWorker
) -> None:
    for n in range(3):
        dm(api, realm.hamlet, [realm.othello], f"Message **{n}** <script>")
    assert [r.trigger for r in pending(services, realm.othello)] == ["private_message"] * 3
    assert pending(services, realm.hamlet) == []  # the sender is never notified
    # Within the batching period (120 s by default) nothing goes out.
    assert emails(worker, smtp_server, realm.othello, after(60)) == []
    [email] = emails(worker, smtp_server, realm.othello, after(121))
    assert email["Subject"] == "DMs with King Hamlet"
    assert email["From"].startswith("King Hamlet <noreply@palaver.test>")
    assert email["To"] == realm.othello.email
    reply_to = email["Reply-To"]
    assert re.fullmatch(r"mm[0-9a-f]{32}@palaver\.test", reply_to)
    text, html = parts(email)
    for n in range(3):
        assert f"Message **{n}** <script>" in text
        assert f"<strong>{n}</strong>" in html
    assert "<script>" not in html
    assert f"http://{realm.host}/#narrow/dm/{realm.hamlet.id}" in links(text)
    assert "Reply to this email" in text
    assert pending(services, realm.othello) == []
    # Nothing more to send.
    assert len(emails(worker, smtp_server, realm.othello, after(300))) == 1


def test_one_email_per_conversation(
    api: Api, realm: SeededRealm, smtp_server: SmtpSink, worker: EmailWorker
) -> None:
    channel(api, realm, "Verona", [realm.hamlet, realm.othello, realm.cordelia])
    dm(api, realm.hamlet, [realm.othello], "private")
    dm(api, realm.cordelia, [realm.othello, realm.hamlet], "group")
    post(api, realm.hamlet, "Verona", "plans", "hey @**Othello, the Moor of Venice** look")
    post(api, realm.cordelia, "Verona", "plans", "@**Othello, the Moor of Venice** again")
    post(api, realm.cordelia, "Verona", "other", "not for othello")
    sent = emails(worker, smtp_server, realm.othello, after(121))
    subjects = sorted(str(e["Subject"]) for e in sent)
    assert subjects == sorted(
        ["DMs with King Hamlet", "Group DMs with King Hamlet, Cordelia, Lear's daughter", "#Verona > plans"]
    )
    [topic_email] = [e for e in sent if e["Subject"] == "#Verona > plans"]
    text, _ = parts(topic_email)
    assert "look" in text and "again" in text and "mentioned you" in text
    assert "not for othello" not in text


def test_no_email_when_online_read_disabled_or_muted(
    api: Api, realm: SeededRealm, services: Services, smtp_server: SmtpSink, worker: EmailWorker
) -> None:
    # Online: a client reported presence just now.
    assert_json_success(api.post(realm.othello, "users/me/presence", {"status": "active"}))
    dm(api, realm.hamlet, [realm.othello], "you are here")
    assert pending(services, realm.othello) == []
    # Read before the batch was due.
    read_id = dm(api, realm.hamlet, [realm.cordelia], "read soon")
    assert_json_success(
        api.post(realm.cordelia, "messages/flags", {"messages": [read_id], "op": "add", "flag": "read"})
    )
    # Offline emails turned off.
    assert_json_success(api.patch(realm.iago, "settings", {"enable_offline_email_notifications": False}))
    dm(api, realm.hamlet, [realm.iago], "no emails please")
    assert pending(services, realm.iago) == []
    # A muted sender's messages arrive read.
    assert_json_success(api.post(realm.shiva, f"users/me/muted_users/{realm.hamlet.id}"))
    dm(api, realm.hamlet, [realm.shiva], "muted")
    assert pending(services, realm.shiva) == []
    worker.run_once(after(121))
    for user in (realm.othello, realm.cordelia, realm.iago, realm.shiva):
        assert smtp_server.to(user.email) == []


def test_content_hidden_when_asked_and_custom_batching_period(
    api: Api, realm: SeededRealm, smtp_server: SmtpSink, worker: EmailWorker
) -> None:
    settings: dict[str, Any] = {
        "message_content_in_email_notifications": False,
        "email_notifications_batching_period_seconds": 600,
    }
    assert_json_success(api.patch(realm.cordelia, "settings", settings))
    dm(api, realm.hamlet, [realm.cordelia], "secret plans")
    assert emails(worker, smtp_server, realm.cordelia, after(300)) == []
    [email] = emails(worker, smtp_server, realm.cordelia, after(601))
    text, html = parts(email)
    assert "secret plans" not in text and "secret plans" not in html
    assert "content is not shown" in text


def test_followed_topic_and_wildcard_mentions(
    api: Api, realm: SeededRealm, services: Services, smtp_server: SmtpSink, worker: EmailWorker
) -> None:
    channel(api, realm, "Denmark", [realm.hamlet, realm.othello, realm.cordelia, realm.desdemona])
    body = assert_json_success(api.get(realm.othello, "get_stream_id", {"stream": "Denmark"}))
    stream_id = body["stream_id"]
    assert_json_success(
        api.post(
            realm.othello,
            "user_topics",
            {"stream_id": stream_id, "topic": "castle", "visibility_policy": 3},
        )
    )
    assert_json_success(
        api.post(
            realm.cordelia,
            "user_topics",
            {"stream_id": stream_id, "topic": "castle", "visibility_policy": 1},
        )
    )
    post(api, realm.hamlet, "Denmark", "castle", "the ghost @**all**")
    assert [r.trigger for r in pending(services, realm.othello)] == ["stream_wildcard_mentioned"]
    # Cordelia muted the topic: wildcard mentions stay quiet.
    assert pending(services, realm.cordelia) == []
    assert [r.trigger for r in pending(services, realm.desdemona)] == ["stream_wildcard_mentioned"]
    post(api, realm.hamlet, "Denmark", "castle", "quiet news")
    assert [r.trigger for r in pending(services, realm.othello)] == [
        "stream_wildcard_mentioned",
        "followed_topic",
    ]
    [email] = emails(worker, smtp_server, realm.othello, after(121))
    assert email["Subject"] == "#Denmark > castle"
    assert email["From"].startswith("Test Organization <")
    text, _ = parts(email)
    assert "mentioned everyone" in text and "in a topic you follow" in text


def test_a_followed_topic_with_capitals_beyond_ascii(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    # SQLite's lower() folds ASCII only: the topic as followed is found as written.
    channel(api, realm, "Elsinore", [realm.hamlet, realm.othello])
    stream_id = assert_json_success(api.get(realm.othello, "get_stream_id", {"stream": "Elsinore"}))[
        "stream_id"
    ]
    follow = {"stream_id": stream_id, "topic": "Été", "visibility_policy": 3}
    assert_json_success(api.post(realm.othello, "user_topics", follow))
    post(api, realm.hamlet, "Elsinore", "Été", "quiet news")
    assert [r.trigger for r in pending(services, realm.othello)] == ["followed_topic"]


def test_links_in_emailed_html_are_absolute() -> None:
    from palaver.lib.email.missed import absolute_links

    html = '<a href="/user_uploads/1/a.pdf">a</a><a href="#narrow/channel/1-x">x</a><a href="https://e.example/">e</a>'
    assert absolute_links(html, "http://r.test") == (
        '<a href="http://r.test/user_uploads/1/a.pdf">a</a><a href="http://r.test/#narrow/channel/1-x">x</a>'
        '<a href="https://e.example/">e</a>'
    )


def test_without_an_email_gateway_there_is_no_reply_address(
    api: Api, realm: SeededRealm, services: Services, smtp_server: SmtpSink
) -> None:
    import dataclasses

    import pytest

    from palaver.actions.email_gateway import do_get_channel_email_address
    from palaver.lib.email.transport import SmtpTransport
    from palaver.lib.exceptions import JsonableError
    from palaver.models import UserProfile
    from palaver.models.requester import Requester
    from palaver.smtp_url import parse_smtp_url

    no_gateway = dataclasses.replace(
        services, settings=services.settings.model_copy(update={"email_gateway_domain": ""})
    )
    worker = EmailWorker(no_gateway, transport=SmtpTransport(parse_smtp_url(smtp_server.url)))
    dm(api, realm.hamlet, [realm.othello], "hello")
    [email] = emails(worker, smtp_server, realm.othello, after(121))
    assert email["Reply-To"] == "noreply@palaver.test"
    assert "Replies to this email are not read" in parts(email)[0]
    body = assert_json_success(
        api.post(realm.iago, "channels/create", {"name": "G", "subscribers": [realm.iago.id]})
    )
    with services.db.session() as session:
        iago = session.get(UserProfile, realm.iago.id)
        assert iago is not None
        with pytest.raises(JsonableError, match="email gateway is not set up"):
            do_get_channel_email_address(session, Requester.of(iago), body["id"], None, no_gateway.settings)
