"""The push worker through a relay on loopback: what reaches devices after real sends,
reads and deletions, each notification decrypted with the device's key and parsed as
Zulip's mobile app parses it."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from sqlalchemy import event, select
from starlette.testclient import TestClient

from palaver.actions.messages import SendContext, do_send_message
from palaver.app import create_app
from palaver.config import Settings
from palaver.lib.devices import PushKey
from palaver.lib.message_send import DirectTarget
from palaver.lib.push_jobs import Job, RedisPushJobs
from palaver.lib.realm import realm_url
from palaver.models import UserProfile
from palaver.models.messages import MessageFlag, UserMessage
from palaver.models.realm import Realm
from palaver.models.requester import Requester
from palaver.services import Services, build_services
from palaver.workers.push import PushWorker
from tests import helpers
from tests.conftest import make_test_settings
from tests.helpers import Api, SeededRealm, assert_json_success
from tests.lib.app_notifications import Parsed, parse_apns, parse_fcm
from tests.push_helpers import FakeRelay, add_device, new_key, token


@pytest.fixture
def worker(push_services: Services) -> Iterator[PushWorker]:
    """The worker of a server with a relay, fed by the bus as in the server; its rounds run
    here, when the test says (the server runs them in the worker's thread)."""
    push = PushWorker(push_services)
    listener = feeder(push)
    push_services.bus.add_listener(listener)
    yield push
    push_services.bus.remove_listener(listener)
    push.on_stop()


def feeder(push: PushWorker) -> Callable[[int, dict[str, Any], Sequence[int]], None]:
    def feed(realm_id: int, event: dict[str, Any], user_ids: Sequence[int]) -> None:
        push.accept(realm_id, event, user_ids)

    return feed


class Phone:
    """A user's registered device: its key, as the app stores it."""

    def __init__(
        self,
        services: Services,
        user: helpers.TestUser,
        realm_url: str,
        *,
        kind: str = "fcm",
        key_id: int = 77,
    ) -> None:
        self.user = user
        self.kind = kind
        self.key_id = key_id
        self.key = new_key()
        push_token = token(bytes([key_id % 256]) * 8, kind)
        self.token_id = push_token.token_id
        self.realm_url = realm_url
        add_device(services, user.id, key=PushKey(self.key, key_id), push_token=push_token)

    def parse(self, body: dict[str, Any]) -> Parsed:
        keys = {self.key_id: self.key}
        if self.kind == "apns":
            return parse_apns(body["apns_payload"], keys, realm_url=self.realm_url, user_id=self.user.id)
        return parse_fcm(body["fcm_data"], keys, realm_url=self.realm_url, user_id=self.user.id)


def phone(services: Services, realm: SeededRealm, user: helpers.TestUser, **kwargs: Any) -> Phone:
    with services.db.session() as session:
        r = session.get(Realm, realm.id)
        assert r is not None
        url = realm_url(services.settings, r)
    return Phone(services, user, url, **kwargs)


def received(relay: FakeRelay, device: Phone) -> list[Parsed]:
    mine = [b for b in relay.received if b["token_id"] == device.token_id]
    return [device.parse(b) for b in mine]


def send(api: Api, sender: helpers.TestUser, **body: Any) -> int:
    return int(assert_json_success(api.post(sender, "messages", body))["id"])


def sent_and_processed(worker: PushWorker, api: Api, sender: helpers.TestUser, **body: Any) -> int:
    """Send, then let the worker act on it before anything else changes (as the server's
    worker does within moments: it decides with the settings of when it runs)."""
    message_id = send(api, sender, **body)
    worker.run_round()
    return message_id


def new_channel(api: Api, realm: SeededRealm, name: str, *members: helpers.TestUser) -> int:
    return int(
        assert_json_success(
            api.post(realm.hamlet, "channels/create", {"name": name, "subscribers": [m.id for m in members]})
        )["id"]
    )


def test_each_kind_of_message_reaches_the_app(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, worker: PushWorker
) -> None:
    othello = phone(push_services, realm, realm.othello)
    stream_id = new_channel(api, realm, "push-kinds", realm.othello, realm.cordelia)

    dm = sent_and_processed(worker, api, realm.hamlet, type="direct", to=[realm.othello.id], content="psst")
    group_dm = sent_and_processed(
        worker, api, realm.hamlet, type="direct", to=[realm.othello.id, realm.cordelia.id], content="all"
    )
    plain = sent_and_processed(
        worker, api, realm.hamlet, type="stream", to=stream_id, topic="t", content="nothing for phones"
    )
    mention = send(
        api,
        realm.hamlet,
        type="stream",
        to=stream_id,
        topic="t",
        content=f"@**{realm.othello.full_name}** look",
    )
    assert_json_success(
        api.post(
            realm.othello,
            "user_topics",
            {"stream_id": stream_id, "topic": "followed", "visibility_policy": 3},
        )
    )
    followed = sent_and_processed(
        worker,
        api,
        realm.hamlet,
        type="stream",
        to=stream_id,
        topic="followed",
        content="in a followed topic",
    )
    assert_json_success(
        api.post(
            realm.othello,
            "users/me/subscriptions/properties",
            {
                "subscription_data": [
                    {"stream_id": stream_id, "property": "push_notifications", "value": True}
                ]
            },
        )
    )
    channel = sent_and_processed(
        worker, api, realm.hamlet, type="stream", to=stream_id, topic="other", content="channel push on"
    )
    worker.run_round()

    got = {p.payload["message_id"]: p for p in received(relay, othello)}
    assert sorted(got) == sorted([dm, group_dm, mention, followed, channel])
    assert plain not in got
    assert all(p.model == "NotifPayloadNewMessage" for p in got.values())
    assert got[dm].recipient == "NotifPayloadDmRecipient"
    assert got[dm].payload["recipient_user_ids"] == sorted([realm.hamlet.id, realm.othello.id])
    assert got[dm].payload["content"] == "psst"
    assert got[group_dm].payload["recipient_user_ids"] == sorted(
        [realm.hamlet.id, realm.othello.id, realm.cordelia.id]
    )
    for mid in (mention, followed, channel):
        assert got[mid].recipient == "NotifPayloadChannelRecipient"
        assert got[mid].payload["channel_id"] == stream_id
        assert got[mid].payload["channel_name"] == "push-kinds"
    assert got[followed].payload["topic"] == "followed"
    assert got[mention].payload["sender_full_name"] == realm.hamlet.full_name
    assert got[mention].payload["sender_avatar_url"].startswith(("http://", "https://"))
    # Each notified message is remembered as showing on the devices.
    with push_services.db.session() as session:
        flags = dict(
            session.execute(
                select(UserMessage.message_id, UserMessage.flags).where(
                    UserMessage.user_profile_id == realm.othello.id
                )
            ).all()
        )
    bit = int(MessageFlag.ACTIVE_MOBILE_PUSH_NOTIFICATION)
    assert all(flags[m] & bit for m in got) and not flags[plain] & bit


def test_group_mentions_name_the_group(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, worker: PushWorker
) -> None:
    othello = phone(push_services, realm, realm.othello, kind="apns", key_id=2**32 - 1)
    stream_id = new_channel(api, realm, "push-groups", realm.othello)
    group_id = assert_json_success(
        api.post(
            realm.iago,
            "user_groups/create",
            {"name": "bards", "description": "d", "members": [realm.othello.id]},
        )
    )["group_id"]
    send(api, realm.hamlet, type="stream", to=stream_id, topic="t", content="@*bards* hello")
    worker.run_round()
    [parsed] = received(relay, othello)
    assert parsed.payload["mentioned_user_group_id"] == group_id
    assert parsed.payload["mentioned_user_group_name"] == "bards"
    assert relay.received[0]["apns_payload"]["aps"]["mutable-content"] == 1


def test_reading_elsewhere_removes_the_notification(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, worker: PushWorker
) -> None:
    othello = phone(push_services, realm, realm.othello)
    first = send(api, realm.hamlet, type="direct", to=[realm.othello.id], content="one")
    second = send(api, realm.hamlet, type="direct", to=[realm.othello.id], content="two")
    worker.run_round()
    assert len(received(relay, othello)) == 2
    relay.received.clear()
    # Read in the browser: one removal names both.
    assert_json_success(
        api.post(realm.othello, "messages/flags", {"messages": [first, second], "op": "add", "flag": "read"})
    )
    worker.run_round()
    [removal] = received(relay, othello)
    assert removal.model == "NotifPayloadRemove"
    assert removal.payload["message_ids"] == [first, second]
    assert relay.received[0]["priority"] == "normal"
    relay.received.clear()
    # Already removed: reading again (or unread, read) tells the phone nothing more.
    assert_json_success(
        api.post(realm.othello, "messages/flags", {"messages": [first], "op": "add", "flag": "read"})
    )
    worker.run_round()
    assert relay.received == []


def test_a_message_read_before_the_worker_runs_is_not_pushed(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, worker: PushWorker
) -> None:
    phone(push_services, realm, realm.othello)
    mid = send(api, realm.hamlet, type="direct", to=[realm.othello.id], content="quick")
    assert_json_success(
        api.post(realm.othello, "messages/flags", {"messages": [mid], "op": "add", "flag": "read"})
    )
    worker.run_round()
    assert relay.received == []


def test_deleting_removes_the_notification(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, worker: PushWorker
) -> None:
    othello = phone(push_services, realm, realm.othello)
    mid = send(api, realm.iago, type="direct", to=[realm.othello.id], content="oops")
    worker.run_round()
    relay.received.clear()
    assert_json_success(api.delete(realm.iago, f"messages/{mid}"))
    worker.run_round()
    [removal] = received(relay, othello)
    assert removal.model == "NotifPayloadRemove" and removal.payload["message_ids"] == [mid]


def test_muted_senders_channels_and_topics_stay_silent(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, worker: PushWorker
) -> None:
    othello = phone(push_services, realm, realm.othello)
    stream_id = new_channel(api, realm, "push-muted", realm.othello)
    assert_json_success(
        api.post(
            realm.othello,
            "users/me/subscriptions/properties",
            {
                "subscription_data": [
                    {"stream_id": stream_id, "property": "push_notifications", "value": True},
                    {"stream_id": stream_id, "property": "is_muted", "value": True},
                ]
            },
        )
    )
    send(api, realm.hamlet, type="stream", to=stream_id, topic="t", content="muted channel")
    assert_json_success(api.post(realm.othello, f"users/me/muted_users/{realm.cordelia.id}"))
    send(api, realm.cordelia, type="direct", to=[realm.othello.id], content="muted sender")
    # A mention still reaches a muted channel's subscriber, as in Zulip.
    mention = send(
        api, realm.hamlet, type="stream", to=stream_id, topic="t", content=f"@**{realm.othello.full_name}**"
    )
    worker.run_round()
    assert [p.payload["message_id"] for p in received(relay, othello)] == [mention]


def test_active_in_a_browser(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, worker: PushWorker
) -> None:
    othello = phone(push_services, realm, realm.othello)
    # Othello has the web app open: an event queue and recent activity.
    assert_json_success(api.post(realm.othello, "register", {}))
    assert_json_success(api.post(realm.othello, "users/me/presence", {"status": "active"}))
    assert_json_success(api.patch(realm.othello, "settings", {"enable_online_push_notifications": False}))
    send(api, realm.hamlet, type="direct", to=[realm.othello.id], content="seen in the browser")
    worker.run_round()
    assert relay.received == []
    # With "even when online", the phone hears of it too.
    assert_json_success(api.patch(realm.othello, "settings", {"enable_online_push_notifications": True}))
    mid = send(api, realm.hamlet, type="direct", to=[realm.othello.id], content="also on the phone")
    worker.run_round()
    assert [p.payload["message_id"] for p in received(relay, othello)] == [mid]
    # Offline push off: direct messages no longer notify at all.
    relay.received.clear()
    assert_json_success(api.patch(realm.othello, "settings", {"enable_offline_push_notifications": False}))
    send(api, realm.hamlet, type="direct", to=[realm.othello.id], content="silent")
    worker.run_round()
    assert relay.received == []


def test_the_sender_is_not_pushed_their_own_message(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, worker: PushWorker
) -> None:
    phone(push_services, realm, realm.hamlet)
    send(api, realm.hamlet, type="direct", to=[realm.othello.id], content="hello")
    worker.run_round()
    assert relay.received == []


def test_no_devices_costs_one_probe_per_organization(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, worker: PushWorker
) -> None:
    statements: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        statements.append(statement)

    engine = push_services.db.engine
    for content in ("one", "two", "three"):
        send(api, realm.hamlet, type="direct", to=[realm.othello.id], content=content)
    event.listen(engine, "before_cursor_execute", count)
    try:
        worker.run_round()
    finally:
        event.remove(engine, "before_cursor_execute", count)
    # Three messages, one probe: "nobody here has a device" is remembered.
    assert len([s for s in statements if "device" in s]) == 1, statements
    assert relay.received == []


def test_relay_failures_are_logged_never_raised(
    api: Api,
    push_services: Services,
    realm: SeededRealm,
    relay: FakeRelay,
    worker: PushWorker,
    caplog: pytest.LogCaptureFixture,
) -> None:
    phone(push_services, realm, realm.othello)
    relay.status = 500
    mid = send(api, realm.hamlet, type="direct", to=[realm.othello.id], content="x")
    with caplog.at_level("WARNING", logger="palaver.push"):
        worker.run_round()
    assert "HTTP 500" in caplog.text
    # Not delivered, so not remembered as showing.
    with push_services.db.session() as session:
        flags = session.scalar(
            select(UserMessage.flags).where(
                UserMessage.user_profile_id == realm.othello.id, UserMessage.message_id == mid
            )
        )
    assert flags is not None and not flags & int(MessageFlag.ACTIVE_MOBILE_PUSH_NOTIFICATION)


def test_unreachable_relay_is_logged(
    api: Api, services: Services, realm: SeededRealm, caplog: pytest.LogCaptureFixture
) -> None:
    unreachable = dataclasses.replace(
        services, settings=services.settings.model_copy(update={"push_relay_url": "http://127.0.0.1:9/x"})
    )
    push = PushWorker(unreachable)
    listener = feeder(push)
    unreachable.bus.add_listener(listener)
    try:
        phone(unreachable, realm, realm.othello)
        send(api, realm.hamlet, type="direct", to=[realm.othello.id], content="x")
        with caplog.at_level("WARNING", logger="palaver.push"):
            push.run_round()
    finally:
        unreachable.bus.remove_listener(listener)
        push.on_stop()
    assert "unreachable" in caplog.text


def test_one_connection_for_every_notification(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, worker: PushWorker
) -> None:
    phone(push_services, realm, realm.othello)
    for content in ("a", "b", "c"):
        send(api, realm.hamlet, type="direct", to=[realm.othello.id], content=content)
    worker.run_round()
    assert len(relay.received) == 3
    assert len(set(relay.peers)) == 1, relay.peers


def test_a_message_moved_out_of_reach_is_removed(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay, worker: PushWorker
) -> None:
    othello = phone(push_services, realm, realm.othello)
    here = new_channel(api, realm, "push-here", realm.othello, realm.iago)
    elsewhere = assert_json_success(
        api.post(
            realm.iago,
            "channels/create",
            {"name": "push-private", "invite_only": True, "subscribers": [realm.iago.id]},
        )
    )["id"]
    mid = send(
        api, realm.iago, type="stream", to=here, topic="t", content=f"@**{realm.othello.full_name}** hi"
    )
    worker.run_round()
    assert [p.payload["message_id"] for p in received(relay, othello)] == [mid]
    relay.received.clear()
    assert_json_success(api.patch(realm.iago, f"messages/{mid}", {"stream_id": elsewhere}))
    worker.run_round()
    [removal] = received(relay, othello)
    assert removal.model == "NotifPayloadRemove" and removal.payload["message_ids"] == [mid]


def test_started_worker_sends_after_commit_on_its_own(
    api: Api, push_services: Services, realm: SeededRealm, relay: FakeRelay
) -> None:
    """As the server runs it (started by the app's lifespan): woken by the commit's events,
    its round runs in its own thread while the send has long returned."""
    othello = phone(push_services, realm, realm.othello)
    push = PushWorker(push_services)

    async def scenario() -> int:
        await push.start()
        try:
            mid = await asyncio.to_thread(
                send, api, realm.hamlet, type="direct", to=[realm.othello.id], content="live"
            )
            for _ in range(200):
                if relay.received:
                    break
                await asyncio.sleep(0.05)
            return mid
        finally:
            await push.stop()

    mid = asyncio.run(scenario())
    assert [p.payload["message_id"] for p in received(relay, othello)] == [mid]


def test_the_server_runs_the_worker_when_a_push_path_is_set(
    settings: Settings, realm: SeededRealm, relay: FakeRelay
) -> None:
    """The app's lifespan starts the worker (a server of its own here, on the same database)."""
    push_settings = settings.model_copy(update={"push_relay_url": relay.url})
    server_services = build_services(push_settings)
    with TestClient(create_app(push_settings, server_services), base_url="http://palaver.test") as client:
        api = Api(client, realm)
        othello = phone(server_services, realm, realm.othello)
        mid = send(api, realm.hamlet, type="direct", to=[realm.othello.id], content="via the server")
        relay.wait_for(1)
    assert [p.payload["message_id"] for p in received(relay, othello)] == [mid]


def _command_sends(settings: Settings, realm: SeededRealm, content: str) -> int:
    """A direct message from hamlet to othello, sent by a command run beside the server (its
    own services, as ``palaver`` commands and the email gateway build them)."""
    command = build_services(settings, one_off=True)
    try:
        with command.db.session() as session:
            hamlet = session.get_one(UserProfile, realm.hamlet.id)
            context = SendContext(
                realm_url=realm_url(settings, hamlet.realm), email_host="palaver.test", client="test"
            )
            return do_send_message(
                session, Requester.of(hamlet), DirectTarget(user_ids=(realm.othello.id,)), content, context
            )
    finally:
        command.close()


@pytest.mark.parametrize("deployment", ["embedded", "redis"])
def test_a_message_a_command_sends_is_pushed_by_the_server(
    settings: Settings,
    realm: SeededRealm,
    relay: FakeRelay,
    tmp_path_factory: pytest.TempPathFactory,
    deployment: str,
) -> None:
    """Without Redis the command's events reach the server's bus through the change log; with
    Redis they reach no server's bus, and its jobs go to the list the server's worker takes from."""
    extra: dict[str, Any] = {"push_relay_url": relay.url}
    if deployment == "redis":
        extra["redis_url"] = helpers.require_redis()
    push_settings = make_test_settings(settings.database_url, tmp_path_factory.mktemp("push"), **extra)
    server = build_services(push_settings)
    if isinstance(server.push_jobs, RedisPushJobs):
        # Jobs an earlier run left on this database's list are no part of this test.
        while server.push_jobs.take():
            pass
    with TestClient(create_app(push_settings, server), base_url="http://palaver.test"):
        othello = phone(server, realm, realm.othello)
        mid = _command_sends(push_settings, realm, "from a command")
        relay.wait_for(1)
    assert [p.payload["message_id"] for p in received(relay, othello)] == [mid]


def test_each_shared_job_is_taken_once() -> None:
    """Two servers' workers on one Redis list: every job reaches exactly one of them."""
    url = helpers.require_redis()
    key = f"palaver:test:{uuid.uuid4().hex}:push-jobs"
    first, second = RedisPushJobs(url, key), RedisPushJobs(url, key)
    try:
        jobs = [Job("message", 1, {"type": "message", "n": n}, (n,)) for n in range(250)]
        for job in jobs:
            first.put(job)
        taken: list[Job] = []
        while batch := (first.take() + second.take()):
            taken.extend(batch)
        assert sorted(taken, key=lambda job: job.event["n"]) == jobs
    finally:
        first.close()
        second.close()
