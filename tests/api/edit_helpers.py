"""Helpers shared by the message edit, move, resolve and history tests."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import httpx

from palaver.models.messages import Message
from palaver.services import Services
from palaver.timeutil import utcnow
from tests.helpers import Api, EventRecorder, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def patch(api: Api, user: TestUser, message_id: int, **data: Any) -> httpx.Response:
    return api.patch(user, f"messages/{message_id}", data)


def edit_ok(api: Api, user: TestUser, message_id: int, **data: Any) -> dict[str, Any]:
    return assert_json_success(patch(api, user, message_id, **data))


def age_messages(services: Services, message_ids: list[int], seconds: int) -> None:
    """Pretend the messages were sent ``seconds`` ago."""
    with services.db.session() as session:
        for message_id in message_ids:
            message = session.get(Message, message_id)
            assert message is not None
            message.date_sent = utcnow() - timedelta(seconds=seconds)
        session.commit()


def db_message(services: Services, message_id: int) -> Message:
    with services.db.session() as session:
        message = session.get(Message, message_id)
        assert message is not None
        session.expunge(message)
        return message


def update_events(events: EventRecorder) -> list[tuple[dict[str, Any], list[int]]]:
    return events.of_type("update_message")


def update_flags_by_user(events: EventRecorder) -> dict[int, list[str]]:
    result: dict[int, list[str]] = {}
    for event, users in update_events(events):
        for user_id in users:
            assert user_id not in result, "one event per recipient"
            result[user_id] = event["flags"]
    return result


def bot_messages(api: Api, user: TestUser, stream_id: int, topic: str) -> list[dict[str, Any]]:
    narrow = [{"operator": "channel", "operand": stream_id}, {"operator": "topic", "operand": topic}]
    query = {"anchor": "newest", "num_before": 100, "num_after": 0, "narrow": narrow, "apply_markdown": False}
    messages = assert_json_success(api.get(user, "messages", query))["messages"]
    return [m for m in messages if m["sender_full_name"] == "Notification Bot"]


def one_update(events: EventRecorder) -> tuple[dict[str, Any], list[int]]:
    """The edit's update_message events (one per set of flags) as one payload and audience."""
    found = update_events(events)
    assert found, "no update_message event"
    payloads = [{k: v for k, v in e.items() if k != "flags"} for e, _ in found]
    assert all(p == payloads[0] for p in payloads), payloads
    return payloads[0], sorted(u for _, users in found for u in users)
