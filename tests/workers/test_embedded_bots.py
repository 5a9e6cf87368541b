"""Embedded bots: zulip_bots' bots running inside Palaver through its bot handler API."""

from __future__ import annotations

from typing import Any

import pytest

from palaver.workers.outgoing_webhooks import ServiceBotWorker
from tests import helpers
from tests.api.test_messages_send import create_channel, fetch, fetch_one, send_dm, send_stream
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success
from tests.workers.conftest import create_service_bot


def embedded(api: Api, owner: helpers.TestUser, name: str, service: str, **data: Any) -> helpers.TestUser:
    return create_service_bot(api, owner, name, name.title(), bot_type=4, service_name=service, **data)


def latest(api: Api, user: helpers.TestUser) -> dict[str, Any]:
    message: dict[str, Any] = fetch(api, user, apply_markdown=False)["messages"][-1]
    return message


@pytest.fixture
def channel(api: Api, realm: SeededRealm) -> str:
    create_channel(api, realm.hamlet, "bots", [realm.hamlet, realm.othello])
    return "bots"


def test_register_lists_the_embedded_bots(api: Api, realm: SeededRealm) -> None:
    state = assert_json_success(
        api.post(realm.hamlet, "register", {"fetch_event_types": ["realm_embedded_bots"]})
    )
    bots = {b["name"]: b["config"] for b in state["realm_embedded_bots"]}
    assert {"helloworld", "converter", "followup", "incrementor"} <= set(bots)
    assert bots["helloworld"] == {}
    assert set(bots["followup"]) == {"stream"}


def test_creation_checks_the_bot_and_shows_its_service(api: Api, realm: SeededRealm) -> None:
    body = {"full_name": "X", "short_name": "x", "bot_type": 4}
    assert_json_error(
        api.post(realm.hamlet, "bots", {**body, "service_name": "nosuch"}), "Invalid embedded bot name."
    )
    bot = embedded(api, realm.hamlet, "follow", "followup", config_data={"stream": "followups"})
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["realm_bot"]}))
    [entry] = [b for b in state["realm_bots"] if b["user_id"] == bot.id]
    assert entry["bot_type"] == 4
    assert entry["services"] == [{"service_name": "followup", "config_data": {"stream": "followups"}}]


def test_helloworld_replies_and_reacts(
    api: Api, realm: SeededRealm, channel: str, worker: ServiceBotWorker
) -> None:
    bot = embedded(api, realm.hamlet, "hello", "helloworld")
    message_id = send_stream(api, realm.othello, channel, "greetings", "@**Hello** hi there")
    assert worker.run_due() == 1
    reply = latest(api, realm.othello)
    assert (reply["sender_id"], reply["subject"], reply["content"]) == (bot.id, "greetings", "beep boop")
    reactions = fetch_one(api, realm.othello, message_id)["reactions"]
    assert [(r["emoji_name"], r["user_id"]) for r in reactions] == [("wave", bot.id)]


def test_direct_messages_reach_the_bot(api: Api, realm: SeededRealm, worker: ServiceBotWorker) -> None:
    bot = embedded(api, realm.hamlet, "enc", "encrypt")
    send_dm(api, realm.othello, [bot], "hello")
    worker.run_due()
    reply = latest(api, realm.othello)
    assert reply["type"] == "private"
    assert reply["sender_id"] == bot.id
    assert "uryyb" in reply["content"]


def test_converter(api: Api, realm: SeededRealm, channel: str, worker: ServiceBotWorker) -> None:
    embedded(api, realm.hamlet, "conv", "converter")
    send_stream(api, realm.othello, channel, "units", "@**Conv** 12 celsius fahrenheit")
    worker.run_due()
    assert "53.6" in latest(api, realm.othello)["content"]


def test_incrementor_keeps_state_and_edits_its_message(
    api: Api, realm: SeededRealm, channel: str, worker: ServiceBotWorker
) -> None:
    bot = embedded(api, realm.hamlet, "inc", "incrementor")
    send_stream(api, realm.othello, channel, "count", "@**Inc**")
    worker.run_due()
    counter = latest(api, realm.othello)
    assert (counter["sender_id"], counter["content"]) == (bot.id, "1")
    send_stream(api, realm.othello, channel, "count", "@**Inc** again")
    worker.run_due()
    assert fetch_one(api, realm.othello, counter["id"])["content"] == "<p>2</p>"
    # The count lives in the bot's storage, the one /bot_storage shows.
    storage = assert_json_success(api.get(bot, "bot_storage"))["storage"]
    assert storage["number"] == "2"


def test_followup_posts_to_its_configured_channel(
    api: Api, realm: SeededRealm, channel: str, worker: ServiceBotWorker
) -> None:
    create_channel(api, realm.hamlet, "followups", [realm.hamlet])
    embedded(api, realm.hamlet, "follow", "followup", config_data={"stream": "followups"})
    send_stream(api, realm.othello, channel, "meeting", "@**Follow** send the notes")
    worker.run_due()
    note = latest(api, realm.hamlet)
    assert note["display_recipient"] == "followups"
    assert note["subject"] == realm.othello.email
    assert note["content"] == f"from {realm.othello.email}: send the notes"


def test_a_failing_bot_tells_its_owner(
    api: Api, realm: SeededRealm, channel: str, worker: ServiceBotWorker
) -> None:
    bot = embedded(api, realm.hamlet, "follow", "followup", config_data={"stream": "nowhere"})
    send_stream(api, realm.othello, channel, "meeting", "@**Follow** lost")
    worker.run_due()
    note = latest(api, realm.hamlet)
    assert note["sender_id"] == bot.id
    assert note["type"] == "private"
    assert "Channel 'nowhere' does not exist" in note["content"]
    assert worker.run_due() == 0


def test_config_data_can_be_changed(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    bot = embedded(api, realm.hamlet, "follow", "followup", config_data={"stream": "a"})
    events.clear()
    assert_json_success(api.patch(realm.hamlet, f"bots/{bot.id}", {"config_data": {"stream": "b"}}))
    [(event, _)] = events.of_type("realm_bot", "update")
    assert event["bot"]["services"] == [{"service_name": "followup", "config_data": {"stream": "b"}}]
    hello = embedded(api, realm.hamlet, "generic", "helloworld")
    assert_json_success(api.patch(realm.hamlet, f"bots/{hello.id}", {"config_data": {"k": "v"}}))
    assert_json_error(
        api.patch(realm.hamlet, f"bots/{realm.default_bot.id}", {"config_data": {"k": "v"}}),
        "Only embedded bots have config_data",
    )


def test_virtual_fs_keeps_its_files_in_storage(
    api: Api, realm: SeededRealm, channel: str, worker: ServiceBotWorker
) -> None:
    embedded(api, realm.hamlet, "fs", "virtual_fs")
    send_stream(api, realm.othello, channel, "files", "@**Fs** mkdir home")
    worker.run_due()
    assert latest(api, realm.othello)["content"].endswith("directory created")
    send_stream(api, realm.othello, channel, "files", "@**Fs** ls")
    worker.run_due()
    assert "home" in latest(api, realm.othello)["content"]
