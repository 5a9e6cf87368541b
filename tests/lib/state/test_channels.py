"""Channel state in POST /register, and that applying channel events to it matches a fresh register."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest

from palaver.lib.channels import IncludeSubscribers
from palaver.services import Services
from tests.api.test_channels import create_channel, set_realm, system_groups
from tests.helpers import Api, SeededRealm, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser

FETCH = ["subscription", "stream", "default_streams", "channel_folders"]
EVENT_TYPES = ["subscription", "stream", "default_streams", "channel_folder"]
LISTS = ("subscriptions", "unsubscribed", "never_subscribed")


def register(api: Api, user: TestUser, **params: Any) -> dict[str, Any]:
    return assert_json_success(api.post(user, "register", params))


def test_register_state(api: Api, realm: SeededRealm, services: Services) -> None:
    public = create_channel(api, realm.hamlet, "public", [realm.hamlet.id, realm.othello.id])
    left = create_channel(api, realm.othello, "left", [realm.hamlet.id, realm.othello.id])
    assert_json_success(api.delete(realm.hamlet, "users/me/subscriptions", {"subscriptions": ["left"]}))
    other = create_channel(api, realm.othello, "other", [realm.othello.id], is_default_stream=False)
    secret = create_channel(api, realm.othello, "secret", [realm.othello.id], invite_only=True)
    archived = create_channel(api, realm.hamlet, "archived", [realm.hamlet.id])
    assert_json_success(api.delete(realm.hamlet, f"streams/{archived}"))
    assert_json_success(api.post(realm.iago, "default_streams", {"stream_id": other}))
    assert_json_success(api.post(realm.iago, "channel_folders/create", {"name": "Ops"}))

    state = register(api, realm.hamlet, fetch_event_types=FETCH, include_subscribers=True)
    assert [s["stream_id"] for s in state["subscriptions"]] == [public]
    assert state["subscriptions"][0]["subscribers"] == sorted([realm.hamlet.id, realm.othello.id])
    assert [s["stream_id"] for s in state["unsubscribed"]] == [left]
    assert [s["stream_id"] for s in state["never_subscribed"]] == [other]
    assert state["never_subscribed"][0]["subscribers"] == [realm.othello.id]
    assert sorted(s["stream_id"] for s in state["streams"]) == sorted([public, left, other])
    assert state["realm_default_streams"] == [other]
    assert [f["name"] for f in state["channel_folders"]] == ["Ops"]

    plain = register(api, realm.hamlet, fetch_event_types=["subscription"])
    assert "subscribers" not in plain["subscriptions"][0]
    with_archived = register(
        api,
        realm.hamlet,
        fetch_event_types=["subscription", "stream"],
        client_capabilities={"archived_channels": True},
    )
    assert sorted(s["stream_id"] for s in with_archived["subscriptions"]) == sorted([public, archived])
    assert archived in {s["stream_id"] for s in with_archived["streams"]}

    admin = register(api, realm.iago, fetch_event_types=FETCH)
    assert secret in {s["stream_id"] for s in admin["never_subscribed"]}
    guest = register(api, realm.polonius, fetch_event_types=FETCH)
    assert (guest["subscriptions"], guest["never_subscribed"], guest["streams"]) == ([], [], [])


# Applying events ------------------------------------------------------------------------------


def _entries(state: dict[str, Any], stream_id: int) -> list[dict[str, Any]]:
    return [s for key in (*LISTS, "streams") for s in state[key] if s["stream_id"] == stream_id]


def _set_property(entry: dict[str, Any], prop: str, value: Any) -> None:
    entry[prop] = value
    if prop == "stream_post_policy":
        entry["is_announcement_only"] = value == 2


def _sync_counts(state: dict[str, Any]) -> None:
    """Clients holding full subscriber lists count subscribers from them."""
    for key in LISTS:
        for sub in state[key]:
            sub["subscriber_count"] = len(sub["subscribers"])
            for stream in state["streams"]:
                if stream["stream_id"] == sub["stream_id"]:
                    stream["subscriber_count"] = sub["subscriber_count"]


def apply_event(state: dict[str, Any], event: dict[str, Any], me: int) -> None:
    """What a client holding subscriber lists does with each channel event."""
    kind, op = event["type"], event.get("op")
    if kind == "stream" and op == "create":
        for stream in event["streams"]:
            state["streams"].append(copy.deepcopy(stream))
            if not any(s["stream_id"] == stream["stream_id"] for key in LISTS for s in state[key]):
                state["never_subscribed"].append({**copy.deepcopy(stream), "subscribers": []})
    elif kind == "stream" and op == "delete":
        gone = set(event["stream_ids"])
        for key in (*LISTS, "streams"):
            state[key] = [s for s in state[key] if s["stream_id"] not in gone]
    elif kind == "stream" and op == "update":
        for entry in _entries(state, event["stream_id"]):
            _set_property(entry, event["property"], event["value"])
            for extra in ("rendered_description", "history_public_to_subscribers", "is_web_public"):
                if extra in event:
                    entry[extra] = event[extra]
    elif kind == "subscription" and op == "add":
        for sub in event["subscriptions"]:
            for key in ("unsubscribed", "never_subscribed"):
                state[key] = [s for s in state[key] if s["stream_id"] != sub["stream_id"]]
            state["subscriptions"].append(copy.deepcopy(sub))
    elif kind == "subscription" and op == "remove":
        gone = {s["stream_id"] for s in event["subscriptions"]}
        for sub in [s for s in state["subscriptions"] if s["stream_id"] in gone]:
            state["subscriptions"].remove(sub)
            sub["subscribers"] = [u for u in sub["subscribers"] if u != me]
            state["unsubscribed"].append(sub)
    elif kind == "subscription" and op == "update":
        for sub in state["subscriptions"]:
            if sub["stream_id"] == event["stream_id"]:
                sub[event["property"]] = event["value"]
    elif kind == "subscription" and op in ("peer_add", "peer_remove"):
        for key in LISTS:
            for sub in state[key]:
                if sub["stream_id"] in event["stream_ids"]:
                    users = set(sub["subscribers"])
                    users = (
                        users | set(event["user_ids"]) if op == "peer_add" else users - set(event["user_ids"])
                    )
                    sub["subscribers"] = sorted(users)
    elif kind == "default_streams":
        state["realm_default_streams"] = event["default_streams"]
    elif kind == "channel_folder" and op == "add":
        state["channel_folders"].append(event["channel_folder"])
    elif kind == "channel_folder" and op == "update":
        for folder in state["channel_folders"]:
            if folder["id"] == event["channel_folder_id"]:
                folder.update(event["data"])
    elif kind != "heartbeat":
        raise AssertionError(f"unexpected event {event}")
    _sync_counts(state)


def comparable(state: dict[str, Any]) -> dict[str, Any]:
    result = {key: state[key] for key in (*LISTS, "streams", "realm_default_streams", "channel_folders")}
    for key in (*LISTS, "streams"):
        result[key] = sorted(result[key], key=lambda s: s["stream_id"])
        for item in result[key]:
            if "subscribers" in item:
                item["subscribers"] = sorted(item["subscribers"])
    return result


@pytest.mark.parametrize("viewer_name", ["hamlet", "iago", "polonius"])
def test_applying_events_matches_a_fresh_register(
    api: Api, realm: SeededRealm, services: Services, viewer_name: str
) -> None:
    viewer = realm.users[viewer_name]
    groups = system_groups(services, realm)
    set_realm(services, realm, enable_spectator_access=True)
    options = {"fetch_event_types": FETCH, "event_types": EVENT_TYPES, "include_subscribers": True}
    denmark = create_channel(api, realm.othello, "Denmark", [realm.othello.id])
    secret = create_channel(api, realm.othello, "secret", [realm.othello.id], invite_only=True)
    state = register(api, viewer, **options)

    # Others create and join channels; the viewer is added, changes settings, leaves.
    verona = create_channel(api, realm.cordelia, "Verona", [realm.cordelia.id, realm.othello.id])
    private = create_channel(api, realm.cordelia, "private", [realm.cordelia.id, viewer.id], invite_only=True)
    assert_json_success(
        api.post(
            realm.iago,
            "users/me/subscriptions",
            {"subscriptions": [{"name": "Denmark"}], "principals": [viewer.id]},
        )
    )
    props = [
        {"stream_id": denmark, "property": "color", "value": "#123abc"},
        {"stream_id": denmark, "property": "in_home_view", "value": False},
        {"stream_id": private, "property": "push_notifications", "value": True},
    ]
    assert_json_success(api.post(viewer, "users/me/subscriptions/properties", {"subscription_data": props}))
    assert_json_success(api.delete(viewer, "users/me/subscriptions", {"subscriptions": ["Denmark"]}))
    assert_json_success(api.delete(viewer, "users/me/subscriptions", {"subscriptions": ["private"]}))
    assert_json_success(
        api.post(
            realm.iago,
            "users/me/subscriptions",
            {"subscriptions": [{"name": "private"}], "principals": [realm.shiva.id]},
        )
    )
    # Channel settings change, privacy both ways, and visibility with them.
    assert_json_success(
        api.patch(realm.othello, f"streams/{denmark}", {"new_name": "Danmark", "description": "*Hej*"})
    )
    assert_json_success(api.patch(realm.othello, f"streams/{secret}", {"is_private": False}))
    assert_json_success(api.patch(realm.cordelia, f"streams/{verona}", {"is_private": True}))
    assert_json_success(
        api.patch(
            realm.othello,
            f"streams/{secret}",
            {"can_send_message_group": {"new": groups["role:administrators"]}},
        )
    )
    value = {"new": {"direct_members": [realm.othello.id], "direct_subgroups": [groups["role:moderators"]]}}
    assert_json_success(
        api.patch(realm.othello, f"streams/{secret}", {"can_remove_subscribers_group": value})
    )
    assert_json_success(api.patch(realm.desdemona, f"streams/{secret}", {"message_retention_days": 7}))
    assert_json_success(api.patch(realm.desdemona, f"streams/{secret}", {"is_web_public": True}))
    # Defaults, folders, archiving.
    assert_json_success(api.post(realm.iago, "default_streams", {"stream_id": denmark}))
    folder = assert_json_success(api.post(realm.iago, "channel_folders/create", {"name": "Ops"}))[
        "channel_folder_id"
    ]
    assert_json_success(api.patch(realm.iago, f"channel_folders/{folder}", {"description": "*ops*"}))
    assert_json_success(api.patch(realm.othello, f"streams/{secret}", {"folder_id": folder}))
    assert_json_success(api.delete(realm.iago, f"streams/{denmark}"))

    events = assert_json_success(
        api.get(viewer, "events", {"queue_id": state["queue_id"], "last_event_id": -1, "dont_block": True})
    )["events"]
    assert events
    for event in events:
        apply_event(state, event, viewer.id)
    fresh = register(api, viewer, **options)
    assert comparable(state) == comparable(fresh)
    # The scenario reached the viewer: they see channels they could not see before.
    assert {s["stream_id"] for s in fresh["streams"]} >= {secret}


# The register path against the general formatting ------------------------------------------


def _reference_state(
    services: Services, user_id: int, include_subscribers: IncludeSubscribers, with_archived: bool
) -> dict[str, Any]:
    """The channel state as built before POST /register had its own path: ORM objects,
    ``format_subscriptions`` and ``format_streams``, a query per list. Lists are in channel
    name order (the subscription lists used to follow the database's row order)."""
    from sqlalchemy import select

    from palaver.lib.channels import (
        format_streams,
        get_streams_for_user,
        has_metadata_access,
        realm_streams,
        viewer_for,
    )
    from palaver.lib.subscriptions import add_subscriber_lists, format_subscriptions
    from palaver.models import UserProfile
    from palaver.models.channels import Stream, Subscription
    from palaver.models.requester import Requester

    with services.db.session() as session:
        user = session.get(UserProfile, user_id)
        assert user is not None
        viewer = viewer_for(session, Requester.of(user))
        streams = [
            s
            for s in realm_streams(session, user.realm_id, include_archived=with_archived)
            if has_metadata_access(viewer, s)
        ]
        by_recipient = {s.recipient_id: s for s in streams}
        subs = {
            sub.recipient_id: sub
            for sub in session.scalars(
                select(Subscription).where(
                    Subscription.user_profile_id == user.id, Subscription.recipient_id.in_(by_recipient)
                )
            )
        }
        active: list[tuple[Stream, Subscription]] = []
        inactive: list[tuple[Stream, Subscription]] = []
        for stream in streams:
            sub = None if stream.recipient_id is None else subs.get(stream.recipient_id)
            if sub is not None:
                (active if sub.active else inactive).append((stream, sub))
        never = [s for s in streams if s.recipient_id not in subs]
        never_items = format_streams(session, never)
        add_subscriber_lists(session, never_items, include_subscribers)
        visible = get_streams_for_user(
            session,
            Requester.of(user),
            include_web_public=True,
            include_all=True,
            exclude_archived=not with_archived,
        )
        return {
            "subscriptions": format_subscriptions(session, active, include_subscribers=include_subscribers),
            "unsubscribed": format_subscriptions(session, inactive, include_subscribers=include_subscribers),
            "never_subscribed": never_items,
            "streams": format_streams(session, visible),
        }


def test_register_channel_state_matches_the_general_formatting(
    api: Api, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    import palaver.lib.subscriptions as subscriptions_lib

    groups = system_groups(services, realm)
    set_realm(services, realm, enable_spectator_access=True)
    create_channel(api, realm.hamlet, "Denmark", [realm.hamlet.id, realm.othello.id, realm.polonius.id])
    create_channel(api, realm.othello, "Verona", [realm.othello.id, realm.cordelia.id, realm.hamlet.id])
    assert_json_success(api.delete(realm.hamlet, "users/me/subscriptions", {"subscriptions": ["Verona"]}))
    secret = create_channel(
        api, realm.othello, "secret", [realm.othello.id, realm.cordelia.id], invite_only=True
    )
    # A setting held by an anonymous group of members and a subgroup.
    value = {"new": {"direct_members": [realm.othello.id], "direct_subgroups": [groups["role:moderators"]]}}
    assert_json_success(
        api.patch(realm.othello, f"streams/{secret}", {"can_remove_subscribers_group": value})
    )
    create_channel(api, realm.desdemona, "web", [realm.cordelia.id, realm.polonius.id], is_web_public=True)
    create_channel(api, realm.cordelia, "quiet", [realm.cordelia.id])
    archived = create_channel(api, realm.hamlet, "archived", [realm.hamlet.id, realm.desdemona.id])
    assert_json_success(api.delete(realm.hamlet, f"streams/{archived}"))
    # Deactivated users are left out of subscriber lists and counts.
    assert_json_success(api.delete(realm.iago, f"users/{realm.cordelia.id}"))
    # With include_subscribers=partial, channels of three or more get partial lists.
    monkeypatch.setattr(subscriptions_lib, "MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE", 3)

    checked = 0
    for viewer in (realm.desdemona, realm.iago, realm.hamlet, realm.polonius):
        includes: tuple[IncludeSubscribers, ...] = (False, True, "partial")
        for include in includes:
            for with_archived in (False, True):
                state = register(
                    api,
                    viewer,
                    fetch_event_types=["subscription", "stream"],
                    include_subscribers=include,
                    client_capabilities={"archived_channels": with_archived},
                )
                expected = _reference_state(services, viewer.id, include, with_archived)
                assert {key: state[key] for key in expected} == expected, (viewer, include, with_archived)
                checked += len(state["subscriptions"]) + len(state["never_subscribed"])
    assert checked > 0


def test_register_with_partial_subscribers(
    api: Api, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    import palaver.lib.subscriptions as subscriptions_lib
    from palaver.models import UserProfile
    from palaver.models.presence import UserPresence
    from palaver.timeutil import utcnow

    members = sorted(u.id for u in (realm.desdemona, realm.hamlet, realm.othello, realm.default_bot))
    big = create_channel(api, realm.hamlet, "big", members)
    small = create_channel(api, realm.othello, "small", [realm.othello.id, realm.cordelia.id])
    now = utcnow()
    with services.db.session() as session:
        for user_id in members:
            user = session.get(UserProfile, user_id)
            assert user is not None
            user.date_joined = now - timedelta(days=100)
        # Only Othello used a client lately; the bot is listed as bots always are.
        session.add(
            UserPresence(
                user_profile_id=realm.othello.id,
                realm_id=realm.id,
                last_connected_time=now - timedelta(days=1),
                last_active_time=now - timedelta(days=1),
            )
        )
        session.commit()
    monkeypatch.setattr(subscriptions_lib, "MIN_PARTIAL_SUBSCRIBERS_CHANNEL_SIZE", len(members))

    state = register(api, realm.hamlet, fetch_event_types=["subscription"], include_subscribers="partial")
    (listed,) = [s for s in state["subscriptions"] if s["stream_id"] == big]
    assert "subscribers" not in listed
    assert listed["partial_subscribers"] == sorted([realm.othello.id, realm.default_bot.id])
    assert listed["subscriber_count"] == len(members)
    (other,) = [s for s in state["never_subscribed"] if s["stream_id"] == small]
    assert other["subscribers"] == sorted([realm.othello.id, realm.cordelia.id])
    assert "partial_subscribers" not in other
    full = register(api, realm.hamlet, fetch_event_types=["subscription"], include_subscribers=True)
    assert [s["subscribers"] for s in full["subscriptions"] if s["stream_id"] == big] == [members]

    # GET /events registers implicitly with the same parameters.
    response = api.get(realm.hamlet, "events", {"include_subscribers": "partial", "dont_block": True})
    assert_json_success(response)
    response = api.post(realm.hamlet, "register", {"include_subscribers": "all"})
    assert response.json()["code"] == "REQUEST_VARIABLE_INVALID"


@pytest.mark.parametrize("viewer", ["hamlet", "iago", "polonius"])
def test_streams_repeats_the_channels_of_the_subscription_lists(
    api: Api, realm: SeededRealm, viewer: str
) -> None:
    """The web app fetches ``subscription`` without ``stream``: the three lists hold the
    channels of ``streams``, each with the same fields and values."""
    create_channel(api, realm.hamlet, "joined", [realm.hamlet.id, realm.polonius.id])
    create_channel(api, realm.othello, "left", [realm.hamlet.id, realm.othello.id])
    assert_json_success(api.delete(realm.hamlet, "users/me/subscriptions", {"subscriptions": ["left"]}))
    create_channel(api, realm.othello, "other", [realm.othello.id], is_default_stream=False)
    create_channel(api, realm.othello, "secret", [realm.othello.id], invite_only=True)
    user = realm.users[viewer]
    for capabilities in ({}, {"archived_channels": True}):
        state = register(
            api, user, fetch_event_types=["subscription", "stream"], client_capabilities=capabilities
        )
        listed = {s["stream_id"]: s for name in LISTS for s in state[name]}
        assert set(listed) == {s["stream_id"] for s in state["streams"]}, viewer
        for stream in state["streams"]:
            channel = listed[stream["stream_id"]]
            assert {key: channel[key] for key in stream} == stream, viewer
