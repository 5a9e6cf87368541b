"""Outgoing-webhook bots: the request their service gets, its answer as the bot's reply,
retries, and the owner told of failures. The service is a real HTTP server on loopback."""

from __future__ import annotations

import json
import socket
import time
from typing import Any
from urllib.parse import parse_qs

import orjson
import pytest

from palaver.app import create_app
from palaver.config import Settings
from palaver.services import Services, build_services
from palaver.workers.outgoing_webhooks import ServiceBotWorker
from tests import helpers
from tests.api.test_messages_send import create_channel, fetch, send_dm, send_stream
from tests.client import TestClient
from tests.helpers import Api, Clock, SeededRealm, assert_json_error, assert_json_success, wait_until
from tests.workers.conftest import create_service_bot
from tests.workers.service_server import Answer, ServiceServer


@pytest.fixture
def bot(hooks_api: Api, realm: SeededRealm, server: ServiceServer) -> helpers.TestUser:
    create_channel(hooks_api, realm.hamlet, "dev", [realm.hamlet, realm.othello])
    return create_service_bot(hooks_api, realm.hamlet, "helper", "Helper", bot_type=3, payload_url=server.url)


def latest(api: Api, user: helpers.TestUser) -> dict[str, object]:
    message: dict[str, object] = fetch(api, user, apply_markdown=False)["messages"][-1]
    return message


def test_mention_posts_the_payload_and_the_answer_is_the_reply(
    hooks_api: Api, realm: SeededRealm, server: ServiceServer, bot: helpers.TestUser, worker: ServiceBotWorker
) -> None:
    server.answer(Answer(body=b'{"content": "Pong from **Helper**"}'))
    message_id = send_stream(hooks_api, realm.othello, "dev", "ops", "@**Helper** ping")
    assert worker.run_due() == 1
    [request] = server.received
    assert request.headers["content-type"] == "application/json"
    payload = orjson.loads(request.body)
    assert payload["bot_email"] == bot.email
    assert payload["bot_full_name"] == "Helper"
    assert payload["data"] == "@**Helper** ping"
    assert payload["trigger"] == "mention"
    bots = assert_json_success(hooks_api.post(realm.hamlet, "register", {"fetch_event_types": ["realm_bot"]}))
    [helper] = [b for b in bots["realm_bots"] if b["user_id"] == bot.id]
    assert payload["token"] == helper["services"][0]["token"]
    sent = payload["message"]
    assert sent["id"] == message_id
    assert sent["content"] == "@**Helper** ping"
    assert "user-mention" in sent["rendered_content"]
    assert (sent["display_recipient"], sent["subject"], sent["sender_id"]) == ("dev", "ops", realm.othello.id)
    reply = latest(hooks_api, realm.othello)
    assert (reply["sender_id"], reply["subject"], reply["content"]) == (bot.id, "ops", "Pong from **Helper**")
    # Done: nothing is left to deliver.
    assert worker.run_due() == 0


def test_direct_message_trigger_and_reply(
    hooks_api: Api, realm: SeededRealm, server: ServiceServer, bot: helpers.TestUser, worker: ServiceBotWorker
) -> None:
    server.answer(Answer(body=b'{"response_string": "hello back"}'))
    send_dm(hooks_api, realm.othello, [bot], "hi bot")
    worker.run_due()
    assert orjson.loads(server.received[0].body)["trigger"] == "direct_message"
    reply = latest(hooks_api, realm.othello)
    assert reply["sender_id"] == bot.id
    assert reply["type"] == "private"
    assert reply["content"] == "hello back"


@pytest.mark.parametrize("body", [b'{"response_not_required": true}', b"", b'""', b'{"content": "  "}'])
def test_no_reply_when_none_is_wanted(
    hooks_api: Api,
    realm: SeededRealm,
    server: ServiceServer,
    bot: helpers.TestUser,
    worker: ServiceBotWorker,
    body: bytes,
) -> None:
    server.answer(Answer(body=body))
    message_id = send_stream(hooks_api, realm.othello, "dev", "ops", "@**Helper** quiet")
    worker.run_due()
    assert len(server.received) == 1
    assert latest(hooks_api, realm.othello)["id"] == message_id


def test_messages_without_the_bot_or_from_bots_trigger_nothing(
    hooks_api: Api, realm: SeededRealm, server: ServiceServer, bot: helpers.TestUser, worker: ServiceBotWorker
) -> None:
    send_stream(hooks_api, realm.othello, "dev", "ops", "no mention here")
    send_stream(hooks_api, realm.default_bot, "dev", "ops", "@**Helper** from a bot")
    assert worker.run_due() == 0
    assert server.received == []


def test_server_errors_are_retried_then_the_owner_is_told_once(
    hooks_api: Api,
    realm: SeededRealm,
    server: ServiceServer,
    bot: helpers.TestUser,
    worker: ServiceBotWorker,
    clock: Clock,
) -> None:
    server.answer(Answer(status=503, body=b"overloaded"))
    send_stream(hooks_api, realm.othello, "dev", "ops", "@**Helper** help")
    assert worker.run_due() == 1
    assert len(server.received) == 1
    assert worker.run_due() == 0  # the retry waits
    clock.advance(11)
    worker.run_due()
    assert len(server.received) == 2
    clock.advance(61)
    worker.run_due()
    assert len(server.received) == 3
    clock.advance(3600)
    assert worker.run_due() == 0
    note = latest(hooks_api, realm.hamlet)
    assert note["sender_id"] == bot.id
    assert note["type"] == "private"
    recipients = note["display_recipient"]
    assert isinstance(recipients, list)
    assert [u["id"] for u in recipients] == sorted([realm.hamlet.id, bot.id])
    text = str(note["content"])
    assert "triggered an outgoing webhook" in text
    assert "status code **503**" in text
    assert "overloaded" in text
    owner_notes = [m for m in fetch(hooks_api, realm.hamlet)["messages"] if m["sender_id"] == bot.id]
    assert len(owner_notes) == 1


def test_a_retry_that_succeeds_replies(
    hooks_api: Api,
    realm: SeededRealm,
    server: ServiceServer,
    bot: helpers.TestUser,
    worker: ServiceBotWorker,
    clock: Clock,
) -> None:
    server.answer(Answer(status=500), Answer(body=b'{"content": "second time lucky"}'))
    send_stream(hooks_api, realm.othello, "dev", "ops", "@**Helper** again")
    worker.run_due()
    clock.advance(11)
    worker.run_due()
    assert latest(hooks_api, realm.othello)["content"] == "second time lucky"


def test_timeouts_are_retried(
    hooks_api: Api,
    realm: SeededRealm,
    server: ServiceServer,
    bot: helpers.TestUser,
    worker: ServiceBotWorker,
    clock: Clock,
) -> None:
    server.answer(Answer(delay=1.5, body=b'{"content": "too late"}'), Answer(body=b'{"content": "in time"}'))
    send_stream(hooks_api, realm.othello, "dev", "ops", "@**Helper** slow")
    worker.run_due()
    clock.advance(11)
    worker.run_due()
    assert len(server.received) == 2
    assert latest(hooks_api, realm.othello)["content"] == "in time"


def test_client_errors_and_bad_answers_are_not_retried(
    hooks_api: Api,
    realm: SeededRealm,
    server: ServiceServer,
    bot: helpers.TestUser,
    worker: ServiceBotWorker,
    clock: Clock,
) -> None:
    server.answer(Answer(status=404, body=b"no such hook"), Answer(body=b"not json"))
    send_stream(hooks_api, realm.othello, "dev", "ops", "@**Helper** one")
    worker.run_due()
    clock.advance(3600)
    worker.run_due()
    assert len(server.received) == 1
    assert "status code **404**" in str(latest(hooks_api, realm.hamlet)["content"])
    send_stream(hooks_api, realm.othello, "dev", "ops", "@**Helper** two")
    worker.run_due()
    assert "Invalid JSON in response" in str(latest(hooks_api, realm.hamlet)["content"])


def test_slack_interface(
    hooks_api: Api, realm: SeededRealm, server: ServiceServer, worker: ServiceBotWorker
) -> None:
    create_channel(hooks_api, realm.hamlet, "dev", [realm.hamlet, realm.othello])
    slack = create_service_bot(
        hooks_api, realm.hamlet, "slacky", "Slacky", bot_type=3, payload_url=server.url, interface_type=2
    )
    server.answer(Answer(body=json.dumps({"text": "slack says hi"}).encode()))
    send_stream(hooks_api, realm.othello, "dev", "ops", "@**Slacky** hello")
    worker.run_due()
    form = {k: v[0] for k, v in parse_qs(server.received[0].body.decode()).items()}
    assert server.received[0].headers["content-type"] == "application/x-www-form-urlencoded"
    assert form["text"] == "@**Slacky** hello"
    assert form["channel_name"] == "dev"
    assert form["user_name"] == realm.othello.full_name
    assert form["trigger_word"] == "mention"
    assert form["team_id"] == f"T{realm.id}"
    assert form["service_id"] == str(slack.id)
    assert form["token"]
    assert latest(hooks_api, realm.othello)["content"] == "slack says hi"
    # Slack's format has no direct messages: the owner hears why nothing was sent.
    send_dm(hooks_api, realm.othello, [slack], "psst")
    worker.run_due()
    assert len(server.received) == 1
    assert "don't support direct messages" in str(latest(hooks_api, realm.hamlet)["content"])


def test_private_targets_are_refused_by_default(
    api: Api, realm: SeededRealm, services: Services, hooks_api: Api, server: ServiceServer, clock: Clock
) -> None:
    assert_json_error(
        api.post(
            realm.hamlet,
            "bots",
            {
                "full_name": "Local",
                "short_name": "local",
                "bot_type": 3,
                "payload_url": "http://127.0.0.1:9/x",
            },
        ),
        "payload_url may not point to a private address: 127.0.0.1 is a private or loopback address",
    )
    # A bot made where loopback is allowed, run by a worker where it is not (a name resolving to
    # loopback is judged at delivery).
    create_channel(hooks_api, realm.hamlet, "dev", [realm.hamlet, realm.othello])
    url = server.url.replace("127.0.0.1", "localhost")
    create_service_bot(hooks_api, realm.hamlet, "loc", "Loc", bot_type=3, payload_url=url)
    send_stream(hooks_api, realm.othello, "dev", "ops", "@**Loc** hi")
    strict = ServiceBotWorker(services, clock=clock)
    try:
        strict.run_due()
    finally:
        strict.http.close()
    assert server.received == []
    text = str(latest(api, realm.hamlet)["content"])
    assert "Refused to call the service: localhost is a loopback address" in text


def test_the_server_runs_the_worker_in_the_background(
    settings: Settings, services: Services, realm: SeededRealm, server: ServiceServer
) -> None:
    """With ``service_bot_worker`` on, the app's own worker answers without being driven."""
    own = settings.model_copy(update={"service_bot_worker": True, "outgoing_webhooks_allow_private": True})
    built = build_services(own)
    try:
        with TestClient(create_app(own, built), base_url="http://palaver.test") as client:
            api = Api(client, realm)
            create_channel(api, realm.hamlet, "dev", [realm.hamlet, realm.othello])
            create_service_bot(api, realm.hamlet, "bg", "Background", bot_type=3, payload_url=server.url)
            server.answer(Answer(body=b'{"content": "on my own"}'))
            send_stream(api, realm.othello, "dev", "ops", "@**Background** go")
            started = time.monotonic()
            wait_until(lambda: latest(api, realm.othello)["content"] == "on my own", interval=0.02)
            # Woken by the message itself (measured: ~0.15 s), not by the 5 s idle poll.
            assert time.monotonic() - started < 4
    finally:
        built.close()


def test_a_name_that_rebinds_to_loopback_after_the_check_is_refused(
    api: Api,
    realm: SeededRealm,
    services: Services,
    hooks_api: Api,
    server: ServiceServer,
    clock: Clock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """DNS rebinding: the name is public when checked, loopback when connected to. The delivery
    connects to the address it checked at connect time, so the loopback service hears nothing."""
    port = int(server.url.rsplit(":", 1)[1].split("/", 1)[0])
    real = socket.getaddrinfo
    lookups: list[str] = []

    def rebinding(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.example":
            return real(host, *args, **kwargs)
        lookups.append(host)
        # Public for the first look (the check), then the inside.
        address = "93.184.216.34" if len(lookups) == 1 else "127.0.0.1"
        return real(address, *args, **kwargs)

    create_channel(hooks_api, realm.hamlet, "dev", [realm.hamlet, realm.othello])
    url = f"http://rebind.example:{port}/hook"
    create_service_bot(hooks_api, realm.hamlet, "rebind", "Rebind", bot_type=3, payload_url=url)
    send_stream(hooks_api, realm.othello, "dev", "ops", "@**Rebind** hi")
    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    strict = ServiceBotWorker(services, clock=clock)
    try:
        strict.run_due()
    finally:
        strict.http.close()
    assert len(lookups) >= 2  # checked, then resolved again to connect
    assert server.received == []
    text = str(latest(api, realm.hamlet)["content"])
    assert "Refused to call the service: rebind.example has no address Palaver may connect to" in text
