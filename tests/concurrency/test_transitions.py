"""Many clients acting on the same object at once: no 5xx, transitions happen once.

Requests go through the whole app (routing, authentication, the worker-thread pool) from
real threads, so their transactions overlap in the database as a server's would.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Callable

import httpx
import pytest
from sqlalchemy import func, select

from palaver.models import UserGroup
from palaver.services import Services
from tests.concurrency.conftest import EventTap
from tests.helpers import Api, SeededRealm, assert_json_success

CLIENTS = 20


def at_once(request: Callable[[], httpx.Response], n: int = CLIENTS) -> list[httpx.Response]:
    """``n`` copies of a request, released together."""
    barrier = threading.Barrier(n)
    responses: list[httpx.Response] = []
    lock = threading.Lock()

    def run() -> None:
        barrier.wait()
        response = request()
        with lock:
            responses.append(response)

    threads = [threading.Thread(target=run) for _ in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.status_code < 500 for r in responses), [r.text for r in responses if r.status_code >= 500]
    return responses


def outcomes(responses: list[httpx.Response]) -> Counter[str]:
    return Counter("ok" if r.status_code == 200 else r.json()["msg"] for r in responses)


def channel_id(api: Api, realm: SeededRealm, name: str) -> int:
    assert_json_success(api.post(realm.iago, "users/me/subscriptions", {"subscriptions": [{"name": name}]}))
    return int(assert_json_success(api.get(realm.iago, "get_stream_id", {"stream": name}))["stream_id"])


def test_archiving_a_channel_happens_once(conc_api: Api, realm: SeededRealm) -> None:
    stream_id = channel_id(conc_api, realm, "Scotland")
    events = EventTap(conc_api, realm)
    counts = outcomes(at_once(lambda: conc_api.delete(realm.iago, f"streams/{stream_id}")))
    assert counts == {"ok": 1, "Channel is already deactivated": CLIENTS - 1}
    assert len(events.of_type("stream", "delete")) == 1


def test_deactivating_a_user_happens_once(conc_api: Api, realm: SeededRealm) -> None:
    events = EventTap(conc_api, realm)
    counts = outcomes(at_once(lambda: conc_api.delete(realm.iago, f"users/{realm.othello.id}")))
    assert counts["ok"] == 1
    assert sum(counts.values()) == CLIENTS
    assert len(events.of_type("realm_user", "update")) == 1


def test_reactivating_a_user_happens_once(conc_api: Api, realm: SeededRealm) -> None:
    assert_json_success(conc_api.delete(realm.iago, f"users/{realm.othello.id}"))
    events = EventTap(conc_api, realm)
    counts = outcomes(at_once(lambda: conc_api.post(realm.iago, f"users/{realm.othello.id}/reactivate")))
    assert counts == {"ok": 1, "User is already active": CLIENTS - 1}
    assert len(events.of_type("realm_user", "update")) == 1
    group_adds = events.of_type("user_group", "add_members")
    # One announcement per group the user belongs to, not one per caller.
    assert len(group_adds) == len({e["group_id"] for e in group_adds})


def test_deleting_a_bot_happens_once(conc_api: Api, realm: SeededRealm) -> None:
    events = EventTap(conc_api, realm)
    counts = outcomes(at_once(lambda: conc_api.delete(realm.hamlet, f"bots/{realm.default_bot.id}")))
    assert counts["ok"] == 1
    assert sum(counts.values()) == CLIENTS
    assert len(events.of_type("realm_bot", "update")) == 1


def anonymous_groups(services: Services, realm_id: int) -> int:
    with services.db.session() as session:
        return int(
            session.scalar(
                select(func.count()).where(UserGroup.realm_id == realm_id, UserGroup.name.is_(None))
            )
            or 0
        )


@pytest.mark.parametrize("target", ["stream", "realm"])
def test_anonymous_group_settings_at_once_leave_no_orphans(
    conc_api: Api, realm: SeededRealm, services: Services, target: str
) -> None:
    stream_id = channel_id(conc_api, realm, "Venice")
    before = anonymous_groups(services, realm.id)
    counter = iter(range(CLIENTS))
    lock = threading.Lock()

    def change() -> httpx.Response:
        with lock:
            n = next(counter)
        members = [realm.hamlet.id, realm.othello.id] if n % 2 else [realm.cordelia.id]
        value = {"new": {"direct_members": members, "direct_subgroups": []}}
        if target == "stream":
            return conc_api.patch(realm.iago, f"streams/{stream_id}", {"can_send_message_group": value})
        return conc_api.patch(realm.desdemona, "realm", {"can_create_groups": value})

    responses = at_once(change)
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
    # The setting holds one anonymous group; every replaced one is gone.
    assert anonymous_groups(services, realm.id) == before + 1


def send(api: Api, realm: SeededRealm, stream: str = "Scotland", topic: str = "t") -> int:
    body = {"type": "stream", "to": stream, "topic": topic, "content": "hello"}
    return int(assert_json_success(api.post(realm.iago, "messages", body))["id"])


def test_subscribing_at_once_subscribes_once(conc_api: Api, realm: SeededRealm) -> None:
    channel_id(conc_api, realm, "Scotland")
    hamlets, peers = EventTap(conc_api, realm, "hamlet"), EventTap(conc_api, realm)
    request = {"subscriptions": [{"name": "Scotland"}], "principals": [realm.hamlet.id]}
    at_once(lambda: conc_api.post(realm.iago, "users/me/subscriptions", request))
    assert len(hamlets.of_type("subscription", "add")) == 1
    peer_adds = peers.of_type("subscription", "peer_add")
    assert sum(realm.hamlet.id in e["user_ids"] for e in peer_adds) == 1


def test_same_reaction_at_once_is_added_once(conc_api: Api, realm: SeededRealm) -> None:
    channel_id(conc_api, realm, "Scotland")
    message_id = send(conc_api, realm)
    events = EventTap(conc_api, realm)
    reaction = {"emoji_name": "octopus"}
    counts = outcomes(
        at_once(lambda: conc_api.post(realm.iago, f"messages/{message_id}/reactions", reaction))
    )
    assert counts == {"ok": 1, "Reaction already exists.": CLIENTS - 1}
    assert len(events.of_type("reaction", "add")) == 1


def test_deleting_a_message_at_once_deletes_once(conc_api: Api, realm: SeededRealm) -> None:
    channel_id(conc_api, realm, "Scotland")
    message_id = send(conc_api, realm)
    events = EventTap(conc_api, realm)
    counts = outcomes(at_once(lambda: conc_api.delete(realm.iago, f"messages/{message_id}")))
    assert counts["ok"] == 1
    assert sum(counts.values()) == CLIENTS
    assert len(events.of_type("delete_message")) == 1


def test_edits_at_once_keep_a_consistent_history(conc_api: Api, realm: SeededRealm) -> None:
    channel_id(conc_api, realm, "Scotland")
    message_id = send(conc_api, realm)
    counter = iter(range(CLIENTS))
    lock = threading.Lock()

    def edit() -> httpx.Response:
        with lock:
            n = next(counter)
        return conc_api.patch(realm.iago, f"messages/{message_id}", {"content": f"edit {n}"})

    assert all(r.status_code == 200 for r in at_once(edit))
    history = assert_json_success(conc_api.get(realm.iago, f"messages/{message_id}/history"))[
        "message_history"
    ]
    # The original plus one entry per edit, each starting from the content before it.
    assert len(history) == CLIENTS + 1
    for before, after in itertools.pairwise(history):
        assert after["prev_content"] == before["content"]


def test_topic_moves_at_once_leave_every_message_in_one_topic(conc_api: Api, realm: SeededRealm) -> None:
    channel_id(conc_api, realm, "Scotland")
    ids = [send(conc_api, realm, topic="start") for _ in range(3)]
    counter = iter(range(CLIENTS))
    lock = threading.Lock()

    def move() -> httpx.Response:
        with lock:
            n = next(counter)
        return conc_api.patch(
            realm.iago, f"messages/{ids[0]}", {"topic": f"moved {n}", "propagate_mode": "change_all"}
        )

    at_once(move)
    fetched = assert_json_success(
        conc_api.get(
            realm.iago, "messages", {"anchor": ids[0], "num_before": 0, "num_after": 10, "narrow": []}
        )
    )["messages"]
    topics = {m["subject"] for m in fetched if m["id"] in ids}
    assert len(topics) == 1


def test_group_members_added_at_once_are_added_once(conc_api: Api, realm: SeededRealm) -> None:
    created = conc_api.post(
        realm.iago, "user_groups/create", {"name": "crew", "description": "", "members": "[]"}
    )
    group_id = int(assert_json_success(created)["group_id"])
    events = EventTap(conc_api, realm)
    at_once(lambda: conc_api.post(realm.iago, f"user_groups/{group_id}/members", {"add": [realm.hamlet.id]}))
    adds = events.of_type("user_group", "add_members")
    assert len(adds) == 1
