"""Event variants completed for the reference: default channel groups, onboarding steps,
realm deactivation, legacy settings events, guests gaining and losing users."""

from __future__ import annotations

from typing import Any

import pytest

from palaver.services import Services
from tests.api.test_messages_send import create_channel, set_realm, system_groups
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success, wait_until


def register(api: Api, user: Any, **data: Any) -> dict[str, Any]:
    return assert_json_success(api.post(user, "register", data))


def test_default_stream_groups(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    verona = create_channel(api, realm.iago, "Verona")
    denmark = create_channel(api, realm.iago, "Denmark")
    data = {"group_name": "group1", "description": "first", "stream_names": ["Verona", "Denmark"]}
    assert_json_error(
        api.post(realm.hamlet, "default_stream_groups/create", data), "Must be an organization administrator"
    )
    assert_json_success(api.post(realm.iago, "default_stream_groups/create", data))
    [(event, users)] = events.of_type("default_stream_groups")
    [group] = event["default_stream_groups"]
    assert group == {
        "id": group["id"],
        "name": "group1",
        "description": "first",
        "streams": sorted([verona, denmark]),
    }
    assert realm.hamlet.id in users and realm.polonius.id in users
    state = register(api, realm.hamlet, fetch_event_types=["default_stream_groups"])
    assert state["realm_default_stream_groups"] == event["default_stream_groups"]

    assert_json_error(
        api.post(realm.iago, "default_stream_groups/create", data),
        "Default channel group 'group1' already exists",
    )
    url = f"default_stream_groups/{group['id']}"
    assert_json_success(api.patch(realm.iago, url, {"new_group_name": "g2", "new_description": "second"}))
    assert_json_error(api.patch(realm.iago, url, {}), 'You must pass "new_description" or "new_group_name".')
    assert_json_success(api.patch(realm.iago, url + "/streams", {"op": "remove", "stream_names": ["Verona"]}))
    assert_json_error(
        api.patch(realm.iago, url + "/streams", {"op": "remove", "stream_names": ["Verona"]}),
        "Channel 'Verona' is not present in default channel group 'g2'",
    )
    assert_json_error(
        api.patch(realm.iago, url + "/streams", {"op": "add", "stream_names": ["Denmark"]}),
        "Channel 'Denmark' is already present in default channel group 'g2'",
    )
    [latest] = events.of_type("default_stream_groups")[-1][0]["default_stream_groups"]
    assert (latest["name"], latest["description"], latest["streams"]) == ("g2", "second", [denmark])
    assert_json_success(api.delete(realm.iago, url))
    assert events.of_type("default_stream_groups")[-1][0]["default_stream_groups"] == []
    assert_json_error(
        api.delete(realm.iago, url), f"Default channel group with id '{group['id']}' does not exist."
    )


def test_onboarding_steps(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    state = register(api, realm.hamlet, fetch_event_types=["onboarding_steps"])
    names = [s["name"] for s in state["onboarding_steps"]]
    assert "visibility_policy_banner" in names
    assert state["navigation_tour_video_url"] is None
    data = {"onboarding_step": "visibility_policy_banner"}
    assert_json_success(api.post(realm.hamlet, "users/me/onboarding_steps", data))
    [(event, users)] = events.of_type("onboarding_steps")
    assert users == [realm.hamlet.id]
    assert [s["name"] for s in event["onboarding_steps"]] == [
        n for n in names if n != "visibility_policy_banner"
    ]
    after = register(api, realm.hamlet, fetch_event_types=["onboarding_steps"])["onboarding_steps"]
    assert after == event["onboarding_steps"]
    # Dismissing again changes nothing.
    assert_json_success(api.post(realm.hamlet, "users/me/onboarding_steps", data))
    assert len(events.of_type("onboarding_steps")) == 1
    assert_json_error(
        api.post(realm.hamlet, "users/me/onboarding_steps", {"onboarding_step": "nope"}),
        "Unknown onboarding_step: nope",
    )


def test_legacy_register_keys(api: Api, realm: SeededRealm) -> None:
    state = register(api, realm.hamlet, fetch_event_types=["realm_filters", "video_calls"])
    assert state["realm_filters"] == []
    assert state["has_zoom_token"] is False


def test_realm_deactivation_tells_clients_and_closes_queues(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(services.bus, "realm_close_delay_seconds", 0.0)
    queue_id = register(api, realm.hamlet, event_types=["realm"])["queue_id"]
    assert_json_error(api.post(realm.iago, "realm/deactivate"), "Must be an organization owner")
    assert_json_success(api.post(realm.desdemona, "realm/deactivate"))
    [(event, users)] = events.of_type("realm", "deactivated")
    assert event["realm_id"] == realm.id
    assert realm.hamlet.id in users and realm.desdemona.id in users
    wait_until(lambda: services.bus.get_client(queue_id) is None)
    assert_json_error(
        api.get(realm.hamlet, "events", {"queue_id": queue_id, "last_event_id": -1}),
        "This organization is deactivated",
        401,
        code="REALM_DEACTIVATED",
    )


def test_legacy_settings_events(api: Api, realm: SeededRealm, services: Services) -> None:
    legacy_types = ["user_settings", "update_display_settings", "update_global_notifications"]
    legacy = register(api, realm.hamlet, event_types=legacy_types)["queue_id"]
    modern = register(
        api, realm.hamlet, event_types=legacy_types, client_capabilities={"user_settings_object": True}
    )["queue_id"]
    everything = register(api, realm.hamlet)["queue_id"]
    assert_json_success(
        api.patch(realm.hamlet, "settings", {"high_contrast_mode": True, "enable_sounds": False})
    )

    def types(queue_id: str) -> list[dict[str, Any]]:
        body = assert_json_success(
            api.get(realm.hamlet, "events", {"queue_id": queue_id, "dont_block": True})
        )
        return [e for e in body["events"] if e["type"] != "heartbeat"]

    old = types(legacy)
    assert {
        "type": "update_display_settings",
        "user": realm.hamlet.email,
        "setting_name": "high_contrast_mode",
        "setting": True,
    } in [{k: v for k, v in e.items() if k != "id"} for e in old]
    assert any(
        e["type"] == "update_global_notifications" and e["notification_name"] == "enable_sounds" for e in old
    )
    assert {e["type"] for e in types(modern)} == {"user_settings"}
    assert {e["type"] for e in types(everything)} == {"user_settings"}


def test_restricted_guest_gains_and_loses_users(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    set_realm(services, realm, can_access_all_users_group=system_groups(services, realm)["role:members"])
    create_channel(api, realm.othello, "shared", [realm.othello])
    events.clear()
    add = {"subscriptions": [{"name": "shared"}], "principals": [realm.polonius.id]}
    assert_json_success(api.post(realm.othello, "users/me/subscriptions", add))
    [(event, users)] = events.of_type("realm_user", "add")
    assert users == [realm.polonius.id]
    assert event["person"]["user_id"] == realm.othello.id
    events.clear()
    remove = {"subscriptions": ["shared"], "principals": [realm.polonius.id]}
    assert_json_success(api.delete(realm.othello, "users/me/subscriptions", remove))
    [(event, users)] = events.of_type("realm_user", "remove")
    assert users == [realm.polonius.id]
    assert event["person"] == {"user_id": realm.othello.id, "full_name": realm.othello.full_name}
