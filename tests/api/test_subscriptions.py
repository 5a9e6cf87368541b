"""Subscriptions: subscribing (and creating), unsubscribing, listing, and personal settings."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from palaver.actions.subscriptions import STREAM_COLORS, do_subscribe_to_default_streams
from palaver.lib import subscriptions as subscriptions_lib
from palaver.models import UserProfile
from palaver.models.presence import UserPresence
from palaver.services import Services
from palaver.timeutil import utcnow
from tests.api.test_channels import NON_GUESTS, create_channel, ids, set_realm, system_groups
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def subscribe(api: Api, user: TestUser, names: list[str], **extra: Any) -> dict[str, Any]:
    data = {"subscriptions": [{"name": n} for n in names], **extra}
    return assert_json_success(api.post(user, "users/me/subscriptions", data))


def subscriptions(api: Api, user: TestUser, **params: Any) -> dict[str, dict[str, Any]]:
    body = assert_json_success(api.get(user, "users/me/subscriptions", params))
    return {s["name"]: s for s in body["subscriptions"]}


# Subscribing ----------------------------------------------------------------------------------


def test_subscribe_self_to_existing_and_new(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "Denmark")
    events.clear()
    body = subscribe(api, realm.othello, ["Denmark", "Verona", "denmark"])
    assert body == {
        "result": "success",
        "msg": "",
        "subscribed": {str(realm.othello.id): ["Denmark", "Verona"]},
        "already_subscribed": {},
    }
    [(create, _)] = events.of_type("stream", "create")
    assert create["streams"][0]["name"] == "Verona"
    [(added, users)] = events.of_type("subscription", "add")
    assert users == [realm.othello.id]
    assert [s["name"] for s in added["subscriptions"]] == ["Denmark", "Verona"]
    assert added["subscriptions"][0]["subscribers"] == ids(realm, "hamlet", "othello")
    body = subscribe(api, realm.othello, ["Denmark"])
    assert body["subscribed"] == {} and body["already_subscribed"] == {str(realm.othello.id): ["Denmark"]}
    assert "unauthorized" not in body
    subs = subscriptions(api, realm.othello)
    assert set(subs) == {"Denmark", "Verona"}
    assert subs["Denmark"]["color"] != subs["Verona"]["color"]
    assert {subs["Denmark"]["color"], subs["Verona"]["color"]} <= set(STREAM_COLORS)


def test_subscribe_creates_private_channels_with_options(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    groups = system_groups(services, realm)
    body = subscribe(
        api,
        realm.hamlet,
        ["secret"],
        invite_only=True,
        history_public_to_subscribers=True,
        can_send_message_group=groups["role:moderators"],
        announce=True,
        principals=[realm.othello.id],
    )
    assert body["subscribed"] == {str(realm.othello.id): ["secret"]}
    sub = subscriptions(api, realm.othello)["secret"]
    assert sub["invite_only"] is True and sub["history_public_to_subscribers"] is True
    assert sub["can_send_message_group"] == groups["role:moderators"]
    assert sub["creator_id"] == realm.hamlet.id
    assert subscriptions(api, realm.hamlet) == {}


def test_subscribe_others_by_id_and_email(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "Denmark")
    events.clear()
    body = subscribe(api, realm.cordelia, ["Denmark"], principals=[realm.othello.email, realm.iago.email])
    assert body["subscribed"] == {str(realm.othello.id): ["Denmark"], str(realm.iago.id): ["Denmark"]}
    [(peer, users)] = events.of_type("subscription", "peer_add")
    assert peer["user_ids"] == ids(realm, "iago", "othello")
    assert users == ids(realm, "desdemona", "shiva", "hamlet", "cordelia", "default_bot")
    body = subscribe(api, realm.cordelia, ["Denmark"], principals=[realm.othello.id, realm.shiva.id])
    assert body["already_subscribed"] == {str(realm.othello.id): ["Denmark"]}
    assert body["subscribed"] == {str(realm.shiva.id): ["Denmark"]}


def test_subscribe_errors(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark")
    path = "users/me/subscriptions"
    for principal in (99999, "nobody@example.com"):
        response = api.post(
            realm.hamlet, path, {"subscriptions": [{"name": "Denmark"}], "principals": [principal]}
        )
        assert_json_error(response, "No such user", code="BAD_REQUEST")
    assert_json_error(
        api.post(realm.hamlet, path, {"subscriptions": [{"name": ""}]}), "Channel name can't be empty."
    )
    assert_json_error(api.post(realm.hamlet, path, {}), "Missing 'subscriptions' argument")
    response = api.post(realm.hamlet, path, {"subscriptions": ["Denmark"]})
    assert response.json()["code"] == "REQUEST_VARIABLE_INVALID"
    # Guests may neither create channels nor join public ones by themselves.
    assert_json_error(
        api.post(realm.polonius, path, {"subscriptions": [{"name": "new"}]}), "Insufficient permission"
    )
    response = api.post(realm.polonius, path, {"subscriptions": [{"name": "Denmark"}]})
    assert_json_error(response, "Unable to access channel (Denmark).")
    response = api.post(
        realm.polonius, path, {"subscriptions": [{"name": "Denmark"}], "principals": [realm.othello.id]}
    )
    assert_json_error(response, "Unable to access channel (Denmark).")


def test_adding_others_follows_the_realm_setting(api: Api, realm: SeededRealm, services: Services) -> None:
    create_channel(api, realm.hamlet, "Denmark")
    set_realm(
        services, realm, can_add_subscribers_group=system_groups(services, realm)["role:administrators"]
    )
    data = {"subscriptions": [{"name": "Denmark"}], "principals": [realm.othello.id]}
    assert_json_error(api.post(realm.cordelia, "users/me/subscriptions", data), "Insufficient permission")
    body = assert_json_success(
        api.post(realm.cordelia, "users/me/subscriptions", {**data, "authorization_errors_fatal": False})
    )
    assert body["unauthorized"] == ["Denmark"] and body["subscribed"] == {}
    # The channel's creator administers it, so the realm setting does not limit them.
    assert assert_json_success(api.post(realm.hamlet, "users/me/subscriptions", data))["subscribed"]
    assert assert_json_success(
        api.post(realm.iago, "users/me/subscriptions", {**data, "principals": [realm.cordelia.id]})
    )["subscribed"]


def test_private_channel_authorization(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    create_channel(api, realm.hamlet, "secret", [realm.hamlet.id], invite_only=True)
    create_channel(api, realm.hamlet, "open")
    path = "users/me/subscriptions"
    response = api.post(realm.othello, path, {"subscriptions": [{"name": "secret"}]})
    assert_json_error(response, "Unable to access channel (secret).")
    response = api.post(
        realm.othello,
        path,
        {"subscriptions": [{"name": "secret"}, {"name": "open"}], "authorization_errors_fatal": False},
    )
    body = assert_json_success(response)
    assert body["unauthorized"] == ["secret"]
    assert body["subscribed"] == {str(realm.othello.id): ["open"]}

    # A subscriber may add others (the realm lets members add subscribers); they gain sight of it.
    events.clear()
    body = subscribe(api, realm.hamlet, ["secret"], principals=[realm.cordelia.id])
    assert body["subscribed"] == {str(realm.cordelia.id): ["secret"]}
    [(_, gained)] = events.of_type("stream", "create")
    assert gained == [realm.cordelia.id]
    [(_, peers)] = events.of_type("subscription", "peer_add")
    assert peers == ids(realm, "desdemona", "iago", "hamlet")
    # Organization administrators may subscribe anyone to any channel.
    body = subscribe(api, realm.iago, ["secret"], principals=[realm.shiva.id])
    assert body["subscribed"] == {str(realm.shiva.id): ["secret"]}


def test_can_subscribe_group_lets_users_join_private_channels(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    groups = system_groups(services, realm)
    create_channel(
        api,
        realm.hamlet,
        "club",
        [realm.hamlet.id],
        invite_only=True,
        can_subscribe_group=groups["role:moderators"],
    )
    assert_json_error(
        api.post(realm.othello, "users/me/subscriptions", {"subscriptions": [{"name": "club"}]}),
        "Unable to access channel (club).",
    )
    assert subscribe(api, realm.shiva, ["club"])["subscribed"] == {str(realm.shiva.id): ["club"]}
    # Joining oneself is not adding others.
    response = api.post(
        realm.shiva,
        "users/me/subscriptions",
        {"subscriptions": [{"name": "club"}], "principals": [realm.othello.id]},
    )
    assert_json_success(response)


def test_resubscribing_keeps_personal_settings(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    data = [{"stream_id": stream_id, "property": "color", "value": "#123456"}]
    assert_json_success(
        api.post(realm.hamlet, "users/me/subscriptions/properties", {"subscription_data": data})
    )
    assert_json_success(api.delete(realm.hamlet, "users/me/subscriptions", {"subscriptions": ["Denmark"]}))
    subscribe(api, realm.hamlet, ["Denmark"])
    assert subscriptions(api, realm.hamlet)["Denmark"]["color"] == "#123456"


def test_requested_color(api: Api, realm: SeededRealm) -> None:
    data = {"subscriptions": [{"name": "Denmark", "color": "#AABBCC", "description": "Nordic"}]}
    assert_json_success(api.post(realm.hamlet, "users/me/subscriptions", data))
    sub = subscriptions(api, realm.hamlet)["Denmark"]
    assert sub["color"] == "#aabbcc" and sub["description"] == "Nordic"
    data = {"subscriptions": [{"name": "Verona", "color": "red"}]}
    assert_json_error(
        api.post(realm.hamlet, "users/me/subscriptions", data), "color is not a valid hex color code"
    )


def test_default_streams_for_new_users(api: Api, realm: SeededRealm, services: Services) -> None:
    welcome = create_channel(api, realm.iago, "welcome", [], is_default_stream=True)
    with services.db.session() as session:
        user = session.get(UserProfile, realm.cordelia.id)
        assert user is not None
        do_subscribe_to_default_streams(session, user)
    assert [s["stream_id"] for s in subscriptions(api, realm.cordelia).values()] == [welcome]


# Listing --------------------------------------------------------------------------------------


def test_list_subscriptions(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet.id, realm.othello.id])
    archived = create_channel(api, realm.hamlet, "old", [realm.hamlet.id])
    assert_json_success(api.delete(realm.hamlet, f"streams/{archived}"))
    plain = subscriptions(api, realm.hamlet)
    assert list(plain) == ["Denmark"]
    sub = plain["Denmark"]
    assert "subscribers" not in sub
    assert sub["stream_id"] == stream_id
    assert (sub["is_muted"], sub["in_home_view"], sub["pin_to_top"]) == (False, True, False)
    for name in ("desktop", "audible", "push", "email"):
        assert sub[f"{name}_notifications"] is None
    assert sub["wildcard_mentions_notify"] is None
    for include in (True, "partial"):
        listed = subscriptions(api, realm.hamlet, include_subscribers=include)
        assert listed["Denmark"]["subscribers"] == ids(realm, "hamlet", "othello")
    response = api.get(realm.hamlet, "users/me/subscriptions", {"include_subscribers": "all"})
    assert response.json()["code"] == "REQUEST_VARIABLE_INVALID"


def test_partial_subscribers_for_large_channels(
    api: Api, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    members = ids(realm, "desdemona", "hamlet", "othello", "cordelia", "default_bot")
    big = create_channel(api, realm.hamlet, "big", members)
    create_channel(api, realm.hamlet, "small", ids(realm, "hamlet", "othello"))
    now = utcnow()
    with services.db.session() as session:
        for user_id in members:
            user = session.get(UserProfile, user_id)
            assert user is not None
            user.date_joined = now - timedelta(days=100)
        # Othello used a client yesterday, Cordelia only long ago; Hamlet and Desdemona never.
        session.add(
            UserPresence(
                user_profile_id=realm.othello.id,
                realm_id=realm.id,
                last_connected_time=now - timedelta(days=20),
                last_active_time=now - timedelta(days=1),
            )
        )
        session.add(
            UserPresence(
                user_profile_id=realm.cordelia.id,
                realm_id=realm.id,
                last_connected_time=now - timedelta(days=15),
                last_active_time=now - timedelta(days=15),
            )
        )
        session.commit()
    # Below the size limit every list is complete, "partial" or not.
    listed = subscriptions(api, realm.hamlet, include_subscribers="partial")
    assert listed["big"]["subscribers"] == members
    assert "partial_subscribers" not in listed["big"]

    monkeypatch.setattr(subscriptions_lib, "MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE", len(members))
    listed = subscriptions(api, realm.hamlet, include_subscribers="partial")
    assert listed["big"]["stream_id"] == big
    assert "subscribers" not in listed["big"]
    assert listed["big"]["partial_subscribers"] == ids(realm, "othello", "default_bot")
    assert listed["big"]["subscriber_count"] == len(members)
    assert listed["small"]["subscribers"] == ids(realm, "hamlet", "othello")
    assert "partial_subscribers" not in listed["small"]
    # Asking for everything still gets everything.
    listed = subscriptions(api, realm.hamlet, include_subscribers=True)
    assert listed["big"]["subscribers"] == members
    assert "partial_subscribers" not in listed["big"]


def test_subscribe_with_topics_policy_and_folder(api: Api, realm: SeededRealm) -> None:
    folder_id = assert_json_success(api.post(realm.iago, "channel_folders/create", {"name": "Ops"}))[
        "channel_folder_id"
    ]
    data = {"topics_policy": "empty_topic_only", "folder_id": folder_id}
    response = api.post(realm.hamlet, "users/me/subscriptions", {"subscriptions": [{"name": "chat"}], **data})
    assert_json_error(response, "Insufficient permission")
    subscribe(api, realm.shiva, ["chat"], **data)
    sub = subscriptions(api, realm.shiva)["chat"]
    assert (sub["topics_policy"], sub["folder_id"]) == ("empty_topic_only", folder_id)


def test_subscription_status(api: Api, realm: SeededRealm) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    secret = create_channel(api, realm.hamlet, "secret", invite_only=True)

    def status(viewer: TestUser, user_id: int, sid: int) -> Any:
        return api.get(viewer, f"users/{user_id}/subscriptions/{sid}")

    assert assert_json_success(status(realm.othello, realm.hamlet.id, stream_id))["is_subscribed"] is True
    assert assert_json_success(status(realm.othello, realm.cordelia.id, stream_id))["is_subscribed"] is False
    assert assert_json_success(status(realm.iago, realm.hamlet.id, secret))["is_subscribed"] is True
    assert_json_error(status(realm.othello, realm.hamlet.id, secret), "Invalid channel ID")
    assert_json_error(status(realm.othello, 99999, stream_id), "No such user")


# Unsubscribing --------------------------------------------------------------------------------


def test_unsubscribe_self(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark", [realm.hamlet.id, realm.othello.id])
    create_channel(api, realm.hamlet, "Verona", [realm.hamlet.id])
    events.clear()
    response = api.delete(realm.othello, "users/me/subscriptions", {"subscriptions": ["denmark", "Verona"]})
    assert assert_json_success(response) == {
        "result": "success",
        "msg": "",
        "removed": ["Denmark"],
        "not_removed": ["Verona"],
    }
    [(removed, users)] = events.of_type("subscription", "remove")
    assert users == [realm.othello.id]
    assert removed["subscriptions"] == [{"stream_id": stream_id, "name": "Denmark"}]
    [(peer, peers)] = events.of_type("subscription", "peer_remove")
    assert peer["user_ids"] == [realm.othello.id]
    assert peers == ids(realm, "desdemona", "iago", "shiva", "hamlet", "cordelia", "default_bot")
    assert events.of_type("stream", "delete") == []


def test_unsubscribe_errors(api: Api, realm: SeededRealm) -> None:
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet.id, realm.othello.id])
    create_channel(api, realm.hamlet, "secret", [realm.hamlet.id], invite_only=True)
    path = "users/me/subscriptions"
    for name in ("nonexistent", "secret"):
        body = assert_json_error(
            api.delete(realm.othello, path, {"subscriptions": [name]}), f"Channel '{name}' does not exist"
        )
        assert body["code"] == "STREAM_DOES_NOT_EXIST" and body["stream"] == name
    response = api.delete(
        realm.cordelia, path, {"subscriptions": ["Denmark"], "principals": [realm.othello.id]}
    )
    assert_json_error(response, "Insufficient permission")
    assert_json_error(api.delete(realm.cordelia, path), "Missing 'subscriptions' argument")


def test_who_may_unsubscribe_others(api: Api, realm: SeededRealm, services: Services) -> None:
    create_channel(api, realm.othello, "Denmark", [realm.othello.id, realm.hamlet.id, realm.default_bot.id])
    path = "users/me/subscriptions"
    # Administrators may; so may a bot's owner for the bot, and the channel's administrators.
    response = api.delete(realm.iago, path, {"subscriptions": ["Denmark"], "principals": [realm.hamlet.id]})
    assert assert_json_success(response)["removed"] == ["Denmark"]
    response = api.delete(
        realm.hamlet, path, {"subscriptions": ["Denmark"], "principals": [realm.default_bot.email]}
    )
    assert assert_json_success(response)["removed"] == ["Denmark"]
    subscribe(api, realm.othello, ["Denmark"], principals=[realm.cordelia.id])
    response = api.delete(
        realm.othello, path, {"subscriptions": ["Denmark"], "principals": [realm.cordelia.id]}
    )
    assert assert_json_success(response)["removed"] == ["Denmark"]
    # Members of can_remove_subscribers_group may too.
    groups = system_groups(services, realm)
    stream_id = assert_json_success(api.get(realm.othello, "get_stream_id", {"stream": "Denmark"}))[
        "stream_id"
    ]
    value = {"new": groups["role:members"]}
    assert_json_success(
        api.patch(realm.othello, f"streams/{stream_id}", {"can_remove_subscribers_group": value})
    )
    response = api.delete(
        realm.cordelia, path, {"subscriptions": ["Denmark"], "principals": [realm.othello.id]}
    )
    assert assert_json_success(response)["removed"] == ["Denmark"]


def test_leaving_private_channel_loses_sight_of_it(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    stream_id = create_channel(
        api, realm.hamlet, "secret", [realm.hamlet.id, realm.othello.id], invite_only=True
    )
    events.clear()
    assert_json_success(api.delete(realm.othello, "users/me/subscriptions", {"subscriptions": ["secret"]}))
    [(_, lost)] = events.of_type("stream", "delete")
    assert lost == [realm.othello.id]
    [(_, peers)] = events.of_type("subscription", "peer_remove")
    assert peers == ids(realm, "desdemona", "iago", "hamlet")
    assert_json_error(api.get(realm.othello, f"streams/{stream_id}"), "Invalid channel ID")


# Personal settings ----------------------------------------------------------------------------


def test_bulk_property_updates(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    first = create_channel(api, realm.hamlet, "Denmark")
    second = create_channel(api, realm.hamlet, "Verona")
    events.clear()
    data = [
        {"stream_id": first, "property": "color", "value": "#F00F00"},
        {"stream_id": first, "property": "pin_to_top", "value": True},
        {"stream_id": second, "property": "desktop_notifications", "value": False},
        {"stream_id": second, "property": "wildcard_mentions_notify", "value": True},
    ]
    response = api.post(
        realm.hamlet, "users/me/subscriptions/properties", {"subscription_data": data, "dont_block": True}
    )
    assert assert_json_success(response)["ignored_parameters_unsupported"] == ["dont_block"]
    updates = events.of_type("subscription", "update")
    assert [(e["stream_id"], e["property"], e["value"]) for e, _ in updates] == [
        (first, "color", "#f00f00"),
        (first, "pin_to_top", True),
        (second, "desktop_notifications", False),
        (second, "wildcard_mentions_notify", True),
    ]
    assert all(users == [realm.hamlet.id] for _, users in updates)
    subs = subscriptions(api, realm.hamlet)
    assert (subs["Denmark"]["color"], subs["Denmark"]["pin_to_top"]) == ("#f00f00", True)
    assert (subs["Verona"]["desktop_notifications"], subs["Verona"]["wildcard_mentions_notify"]) == (
        False,
        True,
    )


@pytest.mark.parametrize("prop", ["is_muted", "in_home_view"])
def test_muting_sends_both_properties(api: Api, realm: SeededRealm, events: EventRecorder, prop: str) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    events.clear()
    value = prop == "is_muted"
    data = [{"stream_id": stream_id, "property": prop, "value": value}]
    assert_json_success(
        api.post(realm.hamlet, "users/me/subscriptions/properties", {"subscription_data": data})
    )
    updates = {e["property"]: e["value"] for e, _ in events.of_type("subscription", "update")}
    assert updates == {"is_muted": True, "in_home_view": False}
    sub = subscriptions(api, realm.hamlet)["Denmark"]
    assert (sub["is_muted"], sub["in_home_view"]) == (True, False)


def test_property_errors_change_nothing(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    other = create_channel(api, realm.othello, "Verona")
    secret = create_channel(api, realm.othello, "secret", invite_only=True)
    path = "users/me/subscriptions/properties"
    cases = [
        (
            {"stream_id": stream_id, "property": "color", "value": "#12345"},
            "color is not a valid hex color code",
        ),
        ({"stream_id": stream_id, "property": "color", "value": True}, "color is not a valid hex color code"),
        ({"stream_id": stream_id, "property": "pin_to_top", "value": "yes"}, "pin_to_top is not a boolean"),
        (
            {"stream_id": stream_id, "property": "loudness", "value": True},
            "Unknown subscription property: loudness",
        ),
        (
            {"stream_id": other, "property": "pin_to_top", "value": True},
            f"Not subscribed to channel ID {other}",
        ),
        ({"stream_id": secret, "property": "pin_to_top", "value": True}, "Invalid channel ID"),
        ({"stream_id": 99999, "property": "pin_to_top", "value": True}, "Invalid channel ID"),
    ]
    events.clear()
    for bad, msg in cases:
        good = {"stream_id": stream_id, "property": "pin_to_top", "value": True}
        assert_json_error(api.post(realm.hamlet, path, {"subscription_data": [good, bad]}), msg)
    assert events.published == []
    assert subscriptions(api, realm.hamlet)["Denmark"]["pin_to_top"] is False
    response = api.post(
        realm.hamlet, path, {"subscription_data": [{"stream_id": stream_id, "property": "color"}]}
    )
    assert response.json()["code"] == "REQUEST_VARIABLE_INVALID"
    assert_json_error(api.post(realm.hamlet, path), "Missing 'subscription_data' argument")


@pytest.mark.parametrize("method", ["post", "patch"])
def test_single_property_endpoint(api: Api, realm: SeededRealm, events: EventRecorder, method: str) -> None:
    stream_id = create_channel(api, realm.hamlet, "Denmark")
    send = getattr(api, method)
    events.clear()
    assert_json_success(
        send(realm.hamlet, f"users/me/subscriptions/{stream_id}", {"property": "color", "value": "#abcdef"})
    )
    assert_json_success(
        send(realm.hamlet, f"users/me/subscriptions/{stream_id}", {"property": "is_muted", "value": True})
    )
    changes = [(e["property"], e["value"]) for e, _ in events.of_type("subscription", "update")]
    assert changes == [("color", "#abcdef"), ("is_muted", True), ("in_home_view", False)]
    assert_json_error(
        send(realm.othello, f"users/me/subscriptions/{stream_id}", {"property": "is_muted", "value": True}),
        f"Not subscribed to channel ID {stream_id}",
    )


def test_everyone_non_guest_hears_of_public_subscriptions(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    create_channel(api, realm.hamlet, "Denmark")
    events.clear()
    subscribe(api, realm.iago, ["Denmark"], principals=[realm.polonius.id])
    [(_, gained)] = events.of_type("stream", "create")
    assert gained == [realm.polonius.id]
    [(_, peers)] = events.of_type("subscription", "peer_add")
    assert peers == sorted(set(ids(realm, *NON_GUESTS)))


def test_channels_created_by_subscribing_can_be_default(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    data = {"subscriptions": [{"name": "welcome"}], "is_default_stream": True}
    assert_json_error(
        api.post(realm.hamlet, "users/me/subscriptions", data), "Must be an organization administrator"
    )
    assert_json_success(api.post(realm.iago, "users/me/subscriptions", data))
    stream_id = assert_json_success(api.get(realm.iago, "get_stream_id", {"stream": "welcome"}))["stream_id"]
    [(event, users)] = events.of_type("default_streams")
    assert event["default_streams"] == [stream_id]
    assert users == ids(realm, *NON_GUESTS)
