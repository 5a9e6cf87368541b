"""Many clients acting on the same object at once: no 5xx, transitions happen once.

Requests go through the whole app (routing, authentication, the worker-thread pool) from
real threads, so their transactions overlap in the database as a server's would.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import httpx
import pytest
from sqlalchemy import func, select

from palaver.models import UserGroup
from palaver.services import Services
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_success

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


def test_archiving_a_channel_happens_once(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = channel_id(api, realm, "Scotland")
    events.clear()
    counts = outcomes(at_once(lambda: api.delete(realm.iago, f"streams/{stream_id}")))
    assert counts == {"ok": 1, "Channel is already deactivated": CLIENTS - 1}
    assert len({id(e) for e, _ in events.of_type("stream", "delete")}) == 1


def test_deactivating_a_user_happens_once(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    counts = outcomes(at_once(lambda: api.delete(realm.iago, f"users/{realm.othello.id}")))
    assert counts["ok"] == 1
    assert sum(counts.values()) == CLIENTS
    assert len(events.of_type("realm_user", "update")) == 1


def test_reactivating_a_user_happens_once(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    events.clear()
    counts = outcomes(at_once(lambda: api.post(realm.iago, f"users/{realm.othello.id}/reactivate")))
    assert counts == {"ok": 1, "User is already active": CLIENTS - 1}
    assert len(events.of_type("realm_user", "update")) == 1
    group_adds = events.of_type("user_group", "add_members")
    # One announcement per group the user belongs to, not one per caller.
    assert len(group_adds) == len({e["group_id"] for e, _ in group_adds})


def test_deleting_a_bot_happens_once(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    counts = outcomes(at_once(lambda: api.delete(realm.hamlet, f"bots/{realm.default_bot.id}")))
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
    api: Api, realm: SeededRealm, services: Services, target: str
) -> None:
    stream_id = channel_id(api, realm, "Venice")
    before = anonymous_groups(services, realm.id)
    counter = iter(range(CLIENTS))
    lock = threading.Lock()

    def change() -> httpx.Response:
        with lock:
            n = next(counter)
        members = [realm.hamlet.id, realm.othello.id] if n % 2 else [realm.cordelia.id]
        value = {"new": {"direct_members": members, "direct_subgroups": []}}
        if target == "stream":
            return api.patch(realm.iago, f"streams/{stream_id}", {"can_send_message_group": value})
        return api.patch(realm.desdemona, "realm", {"can_create_groups": value})

    responses = at_once(change)
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
    # The setting holds one anonymous group; every replaced one is gone.
    assert anonymous_groups(services, realm.id) == before + 1
