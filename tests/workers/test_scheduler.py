"""The scheduler: delivery at the due time, failures, late delivery, and no double delivery."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select

from palaver.actions.scheduled_messages import Delivery
from palaver.models.messages import Message
from palaver.services import Services
from palaver.timeutil import utcnow
from palaver.workers.scheduler import Scheduler
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success
from tests.helpers import TestUser as User

HOUR = 3600


def schedule_direct(api: Api, sender: User, to: User, content: str, delay: int = HOUR) -> int:
    params = {
        "type": "direct",
        "to": [to.id],
        "content": content,
        "scheduled_delivery_timestamp": int(time.time()) + delay,
    }
    item_id: int = assert_json_success(api.post(sender, "scheduled_messages", params))["scheduled_message_id"]
    return item_id


def fake_now(seconds_from_now: int) -> datetime:
    # Far enough ahead that the server's own scheduler (real clock) never sees these items due.
    return utcnow() + timedelta(seconds=seconds_from_now)


def messages_with(services: Services, realm: SeededRealm, content: str) -> list[Message]:
    with services.db.session() as session:
        return list(
            session.scalars(select(Message).where(Message.realm_id == realm.id, Message.content == content))
        )


def listed(api: Api, user: User, what: str = "scheduled_messages") -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = assert_json_success(api.get(user, what))[what]
    return items


def test_delivers_at_the_due_time(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    item_id = schedule_direct(api, realm.hamlet, realm.othello, "on time")
    scheduler = Scheduler(services)
    # Counts cover every realm (other tests leave items behind), so this realm's messages
    # are what the assertions look at.
    scheduler.deliver_due(fake_now(HOUR - 60))
    assert messages_with(services, realm, "on time") == []
    events.clear()
    scheduler.deliver_due(fake_now(HOUR + 1))
    [message] = messages_with(services, realm, "on time")
    assert message.sender_id == realm.hamlet.id
    assert listed(api, realm.hamlet) == []
    assert [(e, u) for e, u in events.of_type("scheduled_messages", "remove") if realm.hamlet.id in u] == [
        ({"type": "scheduled_messages", "op": "remove", "scheduled_message_id": item_id}, [realm.hamlet.id])
    ]
    reached = {
        u
        for e, users in events.of_type("message")
        if e["message"]["content"] == "<p>on time</p>"
        for u in users
    }
    assert reached == {realm.hamlet.id, realm.othello.id}
    # Delivered once: later rounds find nothing, and it can no longer be edited.
    scheduler.deliver_due(fake_now(2 * HOUR))
    assert len(messages_with(services, realm, "on time")) == 1
    assert_json_error(
        api.patch(realm.hamlet, f"scheduled_messages/{item_id}", {"content": "x"}),
        "Scheduled message was already sent",
    )


def test_reminder_is_a_notification_bot_message(api: Api, realm: SeededRealm, services: Services) -> None:
    body = assert_json_success(
        api.post(
            realm.othello, "messages", {"type": "direct", "to": [realm.hamlet.id], "content": "the plan"}
        )
    )
    params = {
        "message_id": body["id"],
        "scheduled_delivery_timestamp": int(time.time()) + HOUR,
        "note": "reply!",
    }
    assert_json_success(api.post(realm.hamlet, "reminders", params))
    Scheduler(services).deliver_due(fake_now(HOUR + 5))
    assert listed(api, realm.hamlet, "reminders") == []
    latest = assert_json_success(
        api.get(realm.hamlet, "messages", {"anchor": "newest", "num_before": 1, "num_after": 0})
    )["messages"][-1]
    assert latest["sender_full_name"] == "Notification Bot"
    assert latest["type"] == "private"
    assert {r["id"] for r in latest["display_recipient"]} == {realm.hamlet.id, latest["sender_id"]}
    assert "reply!" in latest["content"] and f"/near/{body['id']}" in latest["content"]


def test_failed_delivery_is_marked_not_retried(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    item_id = schedule_direct(api, realm.hamlet, realm.othello, "too late")
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    scheduler = Scheduler(services)
    events.clear()
    assert scheduler.deliver_due(fake_now(HOUR + 1))[Delivery.FAILED] >= 1
    [item] = listed(api, realm.hamlet)
    assert item["failed"] is True
    [(event, _)] = [(e, u) for e, u in events.of_type("scheduled_messages", "update") if realm.hamlet.id in u]
    assert event["scheduled_message"]["failed"] is True
    scheduler.deliver_due(fake_now(HOUR + 600))
    assert listed(api, realm.hamlet)[0]["failed"] is True
    assert messages_with(services, realm, "too late") == []
    # Editing a failed message needs a new time, and makes it pending again.
    path = f"scheduled_messages/{item_id}"
    assert_json_error(
        api.patch(realm.hamlet, path, {"content": "x"}), "Scheduled delivery time must be in the future."
    )
    when = int(time.time()) + HOUR
    assert_json_success(
        api.patch(realm.hamlet, path, {"to": [realm.cordelia.id], "scheduled_delivery_timestamp": when})
    )
    assert listed(api, realm.hamlet)[0]["failed"] is False
    scheduler.deliver_due(fake_now(HOUR + 1))
    assert listed(api, realm.hamlet) == []
    assert len(messages_with(services, realm, "too late")) == 1


def test_restart_delivers_late_items(api: Api, realm: SeededRealm, services: Services) -> None:
    schedule_direct(api, realm.hamlet, realm.othello, "after downtime")
    # A new scheduler (as after a restart) days after the due time still sends it, once.
    Scheduler(services).deliver_due(fake_now(3 * 24 * HOUR))
    Scheduler(services).deliver_due(fake_now(3 * 24 * HOUR))
    assert len(messages_with(services, realm, "after downtime")) == 1


def test_racing_schedulers_deliver_each_item_once(api: Api, realm: SeededRealm, services: Services) -> None:
    count = 12
    for index in range(count):
        schedule_direct(api, realm.hamlet, realm.othello, f"race {index}")
    first = assert_json_success(
        api.post(
            realm.othello, "messages", {"type": "direct", "to": [realm.hamlet.id], "content": "remind me"}
        )
    )["id"]
    # Reminders also race to create the realm's Notification Bot.
    for _ in range(3):
        params = {"message_id": first, "scheduled_delivery_timestamp": int(time.time()) + HOUR}
        assert_json_success(api.post(realm.hamlet, "reminders", params))
    now = fake_now(HOUR + 1)
    results: list[Any] = []
    barrier = threading.Barrier(2)

    def run() -> None:
        barrier.wait()
        results.append(Scheduler(services).deliver_due(now))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 2
    with services.db.session() as session:
        copies = session.scalar(
            select(func.count()).where(Message.realm_id == realm.id, Message.content.like("race %"))
        )
        reminders = session.scalar(
            select(func.count()).where(
                Message.realm_id == realm.id, Message.content.like("You requested a reminder%")
            )
        )
    assert (copies, reminders) == (count, 3)
    assert listed(api, realm.hamlet) == [] and listed(api, realm.hamlet, "reminders") == []
