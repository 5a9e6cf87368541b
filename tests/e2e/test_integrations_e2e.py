"""Integrations against ``palaver serve`` as a real process: a GitHub push to the webhook
URL lands in its topic, outgoing-webhook and embedded bots answer mentions, polls work."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import zulip

from tests.e2e.test_zulip_client import server_database_url  # noqa: F401 (fixture)
from tests.servers import RunningServer, clean_environment, http_post, start_running_server, stop
from tests.webhooks.conftest import fixture
from tests.workers.service_server import Answer, ServiceServer, service_server

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def hooks_server(
    tmp_path_factory: pytest.TempPathFactory,
    server_database_url: str,  # noqa: F811
) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("e2e-hooks")
    env = clean_environment(
        PALAVER_DATA_DIR=str(tmp / "data"),
        PALAVER_DATABASE_URL=server_database_url,
        PALAVER_PASSWORD_TIME_COST="1",
        PALAVER_PASSWORD_MEMORY_COST_KIB="8",
        PALAVER_LOG_LEVEL="warning",
        # The bot's service runs on this machine.
        PALAVER_OUTGOING_WEBHOOKS_ALLOW_PRIVATE="true",
    )
    running = start_running_server(tmp, env)
    try:
        yield running
    finally:
        stop(running.process)


@pytest.fixture(scope="module")
def owner(hooks_server: RunningServer) -> zulip.Client:
    client = zulip.Client(config_file=str(hooks_server.zuliprc))
    ok(client.add_subscriptions([{"name": "e2e-hooks"}]))
    return client


@pytest.fixture
def service() -> Iterator[ServiceServer]:
    with service_server() as running:
        yield running


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["result"] == "success", result
    return result


def create_bot(owner: zulip.Client, **data: Any) -> dict[str, Any]:
    return ok(owner.call_endpoint("bots", method="POST", request=data))


def wait_for(check: Callable[[], Any], timeout: float = 15) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError("timed out")


def topic_messages(owner: zulip.Client, topic: str) -> list[dict[str, Any]]:
    request = {
        "anchor": "newest",
        "num_before": 20,
        "num_after": 0,
        "apply_markdown": False,
        "narrow": [{"operator": "channel", "operand": "e2e-hooks"}, {"operator": "topic", "operand": topic}],
    }
    messages: list[dict[str, Any]] = ok(owner.get_messages(request))["messages"]
    return messages


def test_github_push_lands_in_its_topic(hooks_server: RunningServer, owner: zulip.Client) -> None:
    bot = create_bot(owner, full_name="GitHub", short_name="github", bot_type=2)
    response = http_post(
        f"{hooks_server.url}/api/v1/external/github",
        params={"api_key": bot["api_key"], "stream": "e2e-hooks"},
        content=fixture("github_push.json"),
        headers={"content-type": "application/json", "X-GitHub-Event": "push"},
    )
    assert response.status_code == 200, response.text
    [message] = topic_messages(owner, "palaver / main")
    assert message["sender_id"] == bot["user_id"]
    assert message["content"].startswith("octocat [pushed](")


def test_outgoing_webhook_bot_replies_to_a_mention(owner: zulip.Client, service: ServiceServer) -> None:
    service.answer(Answer(body=b'{"content": "Deploying now."}'))
    bot = create_bot(owner, full_name="Deployer", short_name="deployer", bot_type=3, payload_url=service.url)
    ok(
        owner.send_message(
            {"type": "stream", "to": "e2e-hooks", "topic": "deploys", "content": "@**Deployer** go"}
        )
    )
    reply = wait_for(
        lambda: [m for m in topic_messages(owner, "deploys") if m["sender_id"] == bot["user_id"]]
    )
    assert reply[0]["content"] == "Deploying now."
    assert len(service.received) == 1


def test_embedded_bot_and_poll(owner: zulip.Client) -> None:
    bot = create_bot(owner, full_name="Hello", short_name="hello", bot_type=4, service_name="helloworld")
    ok(
        owner.send_message(
            {"type": "stream", "to": "e2e-hooks", "topic": "hello", "content": "@**Hello** hi"}
        )
    )
    reply = wait_for(lambda: [m for m in topic_messages(owner, "hello") if m["sender_id"] == bot["user_id"]])
    assert reply[0]["content"] == "beep boop"

    poll_id = ok(
        owner.send_message(
            {"type": "stream", "to": "e2e-hooks", "topic": "poll", "content": "/poll Tea?\nYes\nNo"}
        )
    )["id"]
    vote = '{"type": "vote", "key": "canned,0", "vote": 1}'
    ok(
        owner.call_endpoint(
            "submessage",
            method="POST",
            request={"message_id": poll_id, "msg_type": "widget", "content": vote},
        )
    )
    [poll] = topic_messages(owner, "poll")
    assert [s["content"] for s in poll["submessages"]][1] == vote
