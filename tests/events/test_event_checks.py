"""The checks around events: validation of every published event, and the fixes the
apply-and-compare harness (test_apply_all_events.py) found."""

from __future__ import annotations

import json
from typing import Any

import pytest

from palaver.events import types as ev
from tests import event_validation
from tests.helpers import Api, SeededRealm, assert_json_success
from tests.helpers import TestUser as User


def test_invalid_published_events_are_recorded() -> None:
    event_validation.listener(1, {"type": "alert_words", "alert_words": [1]}, [1])
    event_validation.listener(1, {"type": "no_such_event"}, [1])
    event_validation.listener(1, {"type": "alert_words", "alert_words": ["ok"]}, [1])
    # Taken (and so cleared), so this test's own teardown check passes.
    failures = event_validation.take_failures()
    assert [f.split(":")[0] for f in failures] == ["alert_words/None", "no_such_event/None"]


def test_shared_bases_are_not_event_models() -> None:
    with pytest.raises(ValueError, match="no event model"):
        ev.validate_event(
            {"type": "typing", "message_type": "direct", "sender": {"user_id": 1, "email": "a"}}
        )
    assert ("typing", None) not in ev.registered_event_models()
    assert ("typing_edit_message", None) not in ev.registered_event_models()


def _register(api: Api, user: User, archived_channels: bool) -> dict[str, Any]:
    capabilities = {"archived_channels": archived_channels}
    body = {"event_types": json.dumps(["stream"]), "client_capabilities": json.dumps(capabilities)}
    return assert_json_success(api.post(user, "register", body))


def test_archiving_is_an_update_for_clients_that_keep_archived_channels(api: Api, realm: SeededRealm) -> None:
    assert_json_success(
        api.post(realm.iago, "users/me/subscriptions", {"subscriptions": json.dumps([{"name": "old"}])})
    )
    stream_id = assert_json_success(api.get(realm.iago, "get_stream_id", {"stream": "old"}))["stream_id"]
    keeping = _register(api, realm.hamlet, archived_channels=True)
    dropping = _register(api, realm.hamlet, archived_channels=False)
    assert_json_success(api.delete(realm.iago, f"streams/{stream_id}"))

    def received(state: dict[str, Any]) -> list[dict[str, Any]]:
        body = {"queue_id": state["queue_id"], "last_event_id": -1, "dont_block": True}
        events: list[dict[str, Any]] = assert_json_success(api.get(realm.hamlet, "events", body))["events"]
        return [{k: v for k, v in e.items() if k != "id"} for e in events]

    assert received(keeping) == [
        {
            "type": "stream",
            "op": "update",
            "stream_id": stream_id,
            "name": "old",
            "property": "is_archived",
            "value": True,
        }
    ]
    assert received(dropping) == [
        {"type": "stream", "op": "delete", "streams": [{"stream_id": stream_id}], "stream_ids": [stream_id]}
    ]


def test_guests_have_no_default_channels(api: Api, realm: SeededRealm) -> None:
    assert_json_success(
        api.post(realm.iago, "users/me/subscriptions", {"subscriptions": json.dumps([{"name": "welcome"}])})
    )
    stream_id = assert_json_success(api.get(realm.iago, "get_stream_id", {"stream": "welcome"}))["stream_id"]
    assert_json_success(api.post(realm.iago, "default_streams", {"stream_id": stream_id}))
    fetch = {"fetch_event_types": json.dumps(["default_streams"])}
    member = assert_json_success(api.post(realm.hamlet, "register", fetch))
    guest = assert_json_success(api.post(realm.polonius, "register", fetch))
    assert member["realm_default_streams"] == [stream_id]
    # default_streams events never reach guests either (actions/channel_notify.py).
    assert guest["realm_default_streams"] == []
