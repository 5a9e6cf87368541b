"""Presence: pings, the modern and legacy formats, incremental fetches, events, privacy."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import func, select

from palaver.actions.presence import do_update_user_presence
from palaver.models import UserProfile
from palaver.models.presence import UserPresence
from palaver.models.requester import Requester
from palaver.services import Services
from palaver.timeutil import utcnow
from tests.api.test_messages_send import set_user
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def ping(api: Api, user: TestUser, **data: Any) -> dict[str, Any]:
    return assert_json_success(api.post(user, "users/me/presence", {"status": "active", **data}))


def age_presence(services: Services, user_id: int, seconds: int) -> None:
    with services.db.session() as session:
        row = session.get(UserPresence, user_id)
        assert row is not None
        row.last_connected_time -= timedelta(seconds=seconds)
        if row.last_active_time is not None:
            row.last_active_time -= timedelta(seconds=seconds)
        session.commit()


def test_ping_returns_presences_in_both_formats(api: Api, realm: SeededRealm) -> None:
    body = ping(api, realm.hamlet)
    # Legacy by default: keyed by email, "website" and "aggregated".
    entry = body["presences"][realm.hamlet.email]
    assert entry["website"]["status"] == "active" and entry["website"]["pushable"] is False
    assert set(entry["aggregated"]) == {"client", "status", "timestamp"}
    assert isinstance(body["server_timestamp"], float)
    slim = ping(api, realm.othello, slim_presence=True)
    modern = slim["presences"][str(realm.hamlet.id)]
    assert set(modern) == {"active_timestamp", "idle_timestamp"}
    assert ping(api, realm.cordelia, ping_only=True) == {"result": "success", "msg": ""}


def test_incremental_fetch_by_update_id(api: Api, realm: SeededRealm, services: Services) -> None:
    first = ping(api, realm.hamlet, last_update_id=-1)
    newest = first["presence_last_update_id"]
    assert isinstance(newest, int) and newest > 0
    assert str(realm.hamlet.id) in first["presences"]
    again = ping(api, realm.hamlet, last_update_id=newest)
    # Nothing changed within the minute, so nothing new, and the ID stays.
    assert again["presences"] == {} and again["presence_last_update_id"] == newest
    ping(api, realm.othello)
    later = ping(api, realm.hamlet, last_update_id=newest)
    assert list(later["presences"]) == [str(realm.othello.id)]
    assert later["presence_last_update_id"] > newest


def test_history_limit_days(api: Api, realm: SeededRealm, services: Services) -> None:
    ping(api, realm.othello)
    age_presence(services, realm.othello.id, 3 * 86400)
    assert (
        str(realm.othello.id)
        not in ping(api, realm.hamlet, last_update_id=-1, history_limit_days=1)["presences"]
    )
    assert (
        str(realm.othello.id) in ping(api, realm.hamlet, last_update_id=-1, history_limit_days=5)["presences"]
    )


def test_writes_are_throttled(services: Services, realm: SeededRealm) -> None:
    now = utcnow()
    with services.db.session() as session:
        user = session.get(UserProfile, realm.hamlet.id)
        assert user is not None
        do_update_user_presence(session, Requester.of(user), "idle", now=now)
        first = session.get(UserPresence, user.id)
        assert first is not None and first.last_active_time is None
        update_id = first.last_update_id
        do_update_user_presence(session, Requester.of(user), "idle", now=now + timedelta(seconds=30))
        row = session.get(UserPresence, user.id)
        assert row is not None and row.last_update_id == update_id
        do_update_user_presence(session, Requester.of(user), "active", now=now + timedelta(seconds=31))
        assert row.last_active_time == now + timedelta(seconds=31)
        assert row.last_connected_time == now
        do_update_user_presence(session, Requester.of(user), "idle", now=now + timedelta(seconds=60))
        assert row.last_connected_time == now + timedelta(seconds=60)


def test_events_only_when_coming_online(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    ping(api, realm.hamlet, status="idle")
    [(event, users)] = events.of_type("presence")
    assert event["user_id"] == realm.hamlet.id and event["email"] == realm.hamlet.email
    # Never active yet: the legacy format counts the join time, moments ago, as activity.
    assert event["presence"]["website"]["status"] == "active"
    assert set(event["presences"][str(realm.hamlet.id)]) == {"active_timestamp", "idle_timestamp"}
    assert realm.othello.id in users and realm.polonius.id in users
    events.clear()
    ping(api, realm.hamlet, status="idle")
    assert events.of_type("presence") == []
    # Idle to active is news too.
    ping(api, realm.hamlet, status="active")
    [(event, _)] = events.of_type("presence")
    assert event["presence"]["website"]["status"] == "active"
    events.clear()
    age_presence(services, realm.hamlet.id, 300)
    ping(api, realm.hamlet, status="active")
    assert len(events.of_type("presence")) == 1


def test_event_shapes_per_client(api: Api, realm: SeededRealm) -> None:
    def queue(**params: Any) -> str:
        body = assert_json_success(
            api.post(realm.othello, "register", {"event_types": ["presence"], **params})
        )
        return str(body["queue_id"])

    legacy, slim = queue(), queue(slim_presence=True)
    modern = queue(client_capabilities={"simplified_presence_events": True})
    ping(api, realm.hamlet)

    def received(queue_id: str) -> dict[str, Any]:
        body = assert_json_success(
            api.get(realm.othello, "events", {"queue_id": queue_id, "last_event_id": -1, "dont_block": True})
        )
        [event] = body["events"]
        return dict(event)

    assert set(received(legacy)) == {"type", "id", "user_id", "email", "server_timestamp", "presence"}
    assert set(received(slim)) == {"type", "id", "user_id", "server_timestamp", "presence"}
    assert set(received(modern)) == {"type", "id", "presences"}


def test_presence_disabled_users_appear_offline(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    ping(api, realm.othello)
    set_user(services, realm.othello, presence_enabled=False)
    events.clear()
    age_presence(services, realm.othello.id, 300)
    ping(api, realm.othello)
    assert events.of_type("presence") == []
    body = ping(api, realm.hamlet)
    assert realm.othello.email not in body["presences"]
    assert (
        realm.othello.email not in assert_json_success(api.get(realm.hamlet, "realm/presence"))["presences"]
    )
    assert_json_error(
        api.get(realm.hamlet, f"users/{realm.othello.id}/presence"),
        f"No presence data for {realm.othello.id}",
    )


def test_register_presences(api: Api, realm: SeededRealm) -> None:
    ping(api, realm.othello)
    legacy = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": ["presence"]}))
    assert realm.othello.email in legacy["presences"]
    assert legacy["presence_last_update_id"] > 0 and "server_timestamp" in legacy
    slim = assert_json_success(
        api.post(realm.hamlet, "register", {"fetch_event_types": ["presence"], "slim_presence": True})
    )
    assert set(slim["presences"][str(realm.othello.id)]) == {"active_timestamp", "idle_timestamp"}


def test_realm_and_user_presence(api: Api, realm: SeededRealm, services: Services) -> None:
    ping(api, realm.othello)
    body = assert_json_success(api.get(realm.hamlet, "realm/presence"))
    assert set(body) == {"result", "msg", "presences", "server_timestamp"}
    assert body["presences"][realm.othello.email]["aggregated"]["status"] == "active"
    for key in (str(realm.othello.id), realm.othello.email):
        presence = assert_json_success(api.get(realm.hamlet, f"users/{key}/presence"))["presence"]
        assert presence["aggregated"]["status"] == "active"
        assert set(presence["website"]) == {"status", "timestamp"}
    age_presence(services, realm.othello.id, 600)
    presence = assert_json_success(api.get(realm.hamlet, f"users/{realm.othello.id}/presence"))["presence"]
    assert presence["aggregated"]["status"] == "offline"
    assert_json_error(
        api.get(realm.hamlet, f"users/{realm.cordelia.id}/presence"),
        f"No presence data for {realm.cordelia.id}",
    )
    assert_json_error(api.get(realm.hamlet, "users/99999/presence"), "No such user")
    assert_json_error(api.get(realm.hamlet, "users/nobody@example.com/presence"), "No such user")
    assert_json_error(
        api.get(realm.hamlet, f"users/{realm.default_bot.id}/presence"),
        "Presence is not supported for bot users.",
    )


def test_ping_errors(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.post(realm.hamlet, "users/me/presence", {"status": "away"}), "Invalid status: away")
    assert_json_error(api.post(realm.hamlet, "users/me/presence"), "Missing 'status' argument")
    assert_json_error(
        api.post(realm.hamlet, "users/me/presence", {"status": "active", "ping_only": "yes"}),
        'Argument "ping_only" is not valid JSON.',
    )
    assert_json_error(
        api.post(realm.hamlet, "users/me/presence", {"status": "active", "last_update_id": "x"}),
        'Argument "last_update_id" is not valid JSON.',
    )


def test_turning_presence_off_and_on_tells_the_realm(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    ping(api, realm.hamlet)
    events.clear()
    before = utcnow().timestamp()
    assert_json_success(api.patch(realm.hamlet, "settings", {"presence_enabled": False}))
    after = utcnow().timestamp()
    [(event, users)] = events.of_type("presence")
    assert realm.othello.id in users and realm.polonius.id in users
    assert event["user_id"] == realm.hamlet.id
    # Last seen longer ago than the offline threshold (140 s) plus a margin for clock skew.
    timestamps = event["presences"][str(realm.hamlet.id)]
    assert int(before) - 261 <= timestamps["idle_timestamp"] <= after - 260
    assert timestamps["active_timestamp"] <= timestamps["idle_timestamp"]
    assert event["presence"]["website"]["timestamp"] <= after - 260
    # Pings while it is off tell nobody, however long the user was away.
    events.clear()
    age_presence(services, realm.hamlet.id, 600)
    ping(api, realm.hamlet)
    assert events.of_type("presence") == []

    assert_json_success(api.patch(realm.hamlet, "settings", {"presence_enabled": True}))
    [(event, _)] = events.of_type("presence")
    timestamps = event["presences"][str(realm.hamlet.id)]
    assert timestamps["active_timestamp"] >= int(before) and timestamps["idle_timestamp"] >= int(before)
    assert str(realm.hamlet.id) in ping(api, realm.othello, slim_presence="true")["presences"]

    # "away" in the user status is the same setting, and so is unchanged input: no news.
    events.clear()
    assert_json_success(api.post(realm.hamlet, "users/me/status", {"away": True}))
    [(event, _)] = events.of_type("presence")
    assert event["presences"][str(realm.hamlet.id)]["idle_timestamp"] <= utcnow().timestamp() - 260
    events.clear()
    assert_json_success(api.patch(realm.hamlet, "settings", {"presence_enabled": False}))
    assert events.of_type("presence") == []


def test_presence_setting_of_a_user_never_seen(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.patch(realm.cordelia, "settings", {"presence_enabled": False}))
    [(event, _)] = events.of_type("presence")
    assert event["user_id"] == realm.cordelia.id
    timestamps = event["presences"][str(realm.cordelia.id)]
    # Her join, moments ago, must not pass for recent activity.
    assert timestamps["active_timestamp"] == timestamps["idle_timestamp"] <= utcnow().timestamp() - 260


def test_large_organizations_get_no_coming_online_events(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    with services.db.session() as session:
        active = session.scalar(
            select(func.count())
            .select_from(UserProfile)
            .where(UserProfile.realm_id == realm.id, UserProfile.is_active)
        )
    assert active is not None
    # One active user too many for live presence events.
    limited = services.db.settings.model_copy(update={"presence_update_events_max_users": active - 1})
    monkeypatch.setattr(services.db, "settings", limited)
    body = ping(api, realm.hamlet, slim_presence=True)
    assert events.of_type("presence") == []
    # The ping is still recorded, and everyone sees it by polling.
    assert str(realm.hamlet.id) in body["presences"]
    polled = ping(api, realm.othello, slim_presence=True)
    assert "active_timestamp" in polled["presences"][str(realm.hamlet.id)]
    # Turning presence sharing off is still announced at once, whatever the size.
    assert_json_success(api.patch(realm.hamlet, "settings", {"presence_enabled": "false"}))
    assert len(events.of_type("presence")) == 1
    # At the limit, coming online is broadcast again.
    monkeypatch.setattr(
        services.db, "settings", limited.model_copy(update={"presence_update_events_max_users": active})
    )
    events.clear()
    ping(api, realm.cordelia)
    assert len(events.of_type("presence")) == 1
