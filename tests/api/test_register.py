"""POST /register: the initial state, its selection by event type, and its agreement with events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from palaver import FEATURE_LEVEL, SERVICE_VERSION
from palaver.lib.register import (
    RegisterOptions,
    Registration,
    StateContext,
    fetch_initial_state,
    known_fetch_types,
    providers_replaced,
    registered_providers,
)
from palaver.lib.user_settings import setting_specs
from palaver.models import Role
from tests.events.apply import apply_event, assert_same_state
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success
from tests.helpers import TestUser as User

ALWAYS = {
    "result",
    "msg",
    "queue_id",
    "last_event_id",
    "zulip_version",
    "zulip_feature_level",
    "zulip_merge_base",
    "service_version",
    "service_feature_level",
    "service_merge_base",
    "event_queue_longpoll_timeout_seconds",
}

# What zulip-terminal reads from the response (measured with zulip-term 0.7.0).
ZULIP_TERMINAL_FETCH = [
    "realm",
    "presence",
    "subscription",
    "message",
    "starred_messages",
    "update_message_flags",
    "muted_topics",
    "muted_users",
    "user_settings",
    "realm_user",
    "realm_user_groups",
    "update_global_notifications",
    "update_display_settings",
    "user_status",
    "realm_emoji",
    "zulip_version",
]
ZULIP_TERMINAL_READS = {
    "queue_id",
    "last_event_id",
    "max_message_id",
    "zulip_version",
    "user_id",
    "email",
    "full_name",
    "realm_name",
    "realm_users",
    "cross_realm_bots",
    "presences",
    "subscriptions",
    "realm_message_retention_days",
    "muted_topics",
    "realm_user_groups",
    "unread_msgs",
    "starred_messages",
    "twenty_four_hour_time",
    "pm_content_in_desktop_notifications",
    "realm_emoji",
}

REALM_USER_KEYS = {
    "realm_users",
    "realm_non_active_users",
    "cross_realm_bots",
    "user_id",
    "email",
    "delivery_email",
    "full_name",
    "avatar_source",
    "avatar_url",
    "avatar_url_medium",
    "is_admin",
    "is_owner",
    "is_moderator",
    "is_guest",
    "role",
    "can_create_streams",
    "can_create_public_streams",
    "can_create_private_streams",
    "can_create_web_public_streams",
    "can_subscribe_other_users",
    "can_invite_others_to_realm",
}


def register(api: Api, user: User, **params: Any) -> dict[str, Any]:
    return assert_json_success(api.post(user, "register", params))


def test_zulip_terminal_gets_every_key_it_reads(api: Api, realm: SeededRealm) -> None:
    # zulip-term sends no client_capabilities and asks with legacy fetch names.
    state = register(
        api,
        realm.hamlet,
        event_types=["message", "update_message", "realm_user", "user_settings", "update_display_settings"],
        fetch_event_types=ZULIP_TERMINAL_FETCH,
        apply_markdown=True,
        client_gravatar=True,
        include_subscribers=True,
    )
    assert set(state) >= ZULIP_TERMINAL_READS
    assert state["max_message_id"] == -1
    assert state["muted_topics"] == []
    assert state["unread_msgs"] == {
        "count": 0,
        "pms": [],
        "streams": [],
        "huddles": [],
        "mentions": [],
        "old_unreads_missing": False,
    }
    assert state["presences"] == {}
    assert state["realm_emoji"] == {}
    assert state["twenty_four_hour_time"] is False
    assert state["pm_content_in_desktop_notifications"] is True
    assert state["realm_message_retention_days"] == -1
    assert state["zulip_version"] == SERVICE_VERSION


def test_everything_by_default(api: Api, realm: SeededRealm) -> None:
    state = register(api, realm.hamlet)
    assert state["queue_id"]
    assert state["last_event_id"] == -1
    assert state["zulip_feature_level"] == state["service_feature_level"] == FEATURE_LEVEL
    assert state["event_queue_longpoll_timeout_seconds"] == 90
    for key in (
        "subscriptions",
        "unsubscribed",
        "never_subscribed",
        "streams",
        "user_topics",
        "starred_messages",
        "recent_private_conversations",
        "drafts",
        "saved_snippets",
        "alert_words",
        "muted_users",
        "scheduled_messages",
        "reminders",
        "realm_bots",
        "custom_profile_fields",
        "realm_user_groups",
    ):
        assert isinstance(state[key], list), key
    assert isinstance(state["user_settings"], dict)
    assert isinstance(state["realm_user_settings_defaults"], dict)
    assert state["max_topic_length"] == 60
    assert state["max_message_length"] == 10000
    assert state["max_stream_name_length"] == 60
    assert state["max_stream_description_length"] == 1024
    assert state["max_channel_folder_name_length"] == 60
    assert state["max_channel_folder_description_length"] == 1024
    assert state["realm_name"] == "Test Organization"
    assert state["realm_url"] == state["realm_uri"] == f"http://{realm.host}"
    assert state["realm_empty_topic_display_name"] == "general chat"
    assert state["realm_topics_policy"] == "allow_empty_topic"
    assert state["realm_message_content_edit_limit_seconds"] == 600
    # Without the user_settings_object capability the legacy top-level copies come too.
    assert state["twenty_four_hour_time"] is False
    assert state["enable_sounds"] is True


def test_own_user_fields(api: Api, realm: SeededRealm) -> None:
    state = register(api, realm.iago, fetch_event_types=["realm_user"])
    assert set(state) == ALWAYS | REALM_USER_KEYS
    assert state["user_id"] == realm.iago.id
    assert state["email"] == realm.iago.email
    assert state["delivery_email"] == realm.iago.email
    assert state["full_name"] == "Iago"
    assert (state["is_admin"], state["is_owner"], state["is_moderator"], state["is_guest"]) == (
        True,
        False,
        False,
        False,
    )
    assert state["role"] == Role.ADMINISTRATOR
    assert state["can_create_streams"] is True
    guest = register(api, realm.polonius, fetch_event_types=["realm_user"])
    assert guest["is_guest"] is True
    assert guest["can_create_public_streams"] is False
    assert guest["can_invite_others_to_realm"] is False


def test_fetch_event_types_select_state(api: Api, realm: SeededRealm) -> None:
    state = register(api, realm.hamlet, fetch_event_types=["user_settings", "no_such_type", "zulip_version"])
    assert set(state) == ALWAYS | {"user_settings"}
    # Without fetch_event_types, event_types selects the state as well.
    state = register(api, realm.hamlet, event_types=["realm_bot"])
    assert set(state) == ALWAYS | {"realm_bots"}
    # fetch_event_types wins over event_types.
    state = register(
        api, realm.hamlet, event_types=["realm_bot"], fetch_event_types=["custom_profile_fields"]
    )
    assert set(state) == ALWAYS | {"custom_profile_fields", "custom_profile_field_types"}
    # JSON null means everything.
    assert "realm_users" in register(api, realm.hamlet, event_types="null")
    # A null fetch_event_types is an absent one: event_types decides.
    state = register(api, realm.hamlet, fetch_event_types="null", event_types=["realm_bot"])
    assert set(state) == ALWAYS | {"realm_bots"}
    assert set(register(api, realm.hamlet, fetch_event_types=[])) == ALWAYS


def test_user_settings_object_and_legacy_copies(api: Api, realm: SeededRealm) -> None:
    assert_json_success(
        api.patch(realm.hamlet, "settings", {"twenty_four_hour_time": True, "timezone": "Asia/Tokyo"})
    )
    state = register(
        api,
        realm.hamlet,
        fetch_event_types=["user_settings", "update_display_settings", "update_global_notifications"],
    )
    settings = state["user_settings"]
    assert set(setting_specs()) | {"timezone", "emojiset_choices", "available_notification_sounds"} == set(
        settings
    )
    assert settings["twenty_four_hour_time"] is True
    assert settings["timezone"] == "Asia/Tokyo"
    assert {"key": "google", "text": "Google"} in settings["emojiset_choices"]
    assert "zulip" in settings["available_notification_sounds"]
    assert "none" not in settings["available_notification_sounds"]
    assert state["twenty_four_hour_time"] is True
    assert state["timezone"] == "Asia/Tokyo"
    assert state["pm_content_in_desktop_notifications"] is True
    assert state["available_notification_sounds"] == settings["available_notification_sounds"]

    modern = register(
        api,
        realm.hamlet,
        fetch_event_types=["user_settings", "update_display_settings", "update_global_notifications"],
        client_capabilities={"user_settings_object": True},
    )
    assert set(modern) == ALWAYS | {"user_settings"}


def test_realm_users(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.desdemona, f"users/{realm.cordelia.id}"))
    state = register(api, realm.hamlet, fetch_event_types=["realm_user"], client_gravatar=False)
    active = {u["user_id"]: u for u in state["realm_users"]}
    inactive = {u["user_id"]: u for u in state["realm_non_active_users"]}
    assert set(inactive) == {realm.cordelia.id}
    expected_active = {u.id for name, u in realm.users.items() if name != "cordelia"}
    assert set(active) == expected_active
    othello = active[realm.othello.id]
    assert othello["full_name"] == realm.othello.full_name
    assert othello["profile_data"] == {}
    assert othello["avatar_url"].startswith("https://")
    assert "profile_data" not in active[realm.default_bot.id]
    assert state["cross_realm_bots"] == []
    # Clients that compute Gravatar URLs themselves get none for users whose email they see.
    state = register(api, realm.hamlet, fetch_event_types=["realm_user"])
    assert {u["avatar_url"] for u in state["realm_users"]} == {None}


def test_realm_bots_by_viewer(api: Api, realm: SeededRealm) -> None:
    admin = register(api, realm.iago, fetch_event_types=["realm_bot"])["realm_bots"]
    owner = register(api, realm.hamlet, fetch_event_types=["realm_bot"])["realm_bots"]
    other = register(api, realm.othello, fetch_event_types=["realm_bot"])["realm_bots"]
    assert [b["user_id"] for b in admin] == [realm.default_bot.id]
    assert owner == admin
    assert other == []
    bot = owner[0]
    assert bot["api_key"] == realm.default_bot.api_key
    assert bot["owner_id"] == realm.hamlet.id
    assert bot["is_active"] is True
    assert bot["services"] == []


def test_realm_user_groups(api: Api, realm: SeededRealm) -> None:
    groups = {
        g["name"]: g
        for g in register(api, realm.hamlet, fetch_event_types=["realm_user_groups"])["realm_user_groups"]
    }
    assert set(groups) == {
        "role:internet",
        "role:everyone",
        "role:members",
        "role:fullmembers",
        "role:moderators",
        "role:administrators",
        "role:owners",
        "role:nobody",
    }
    assert groups["role:owners"]["members"] == [realm.desdemona.id]
    assert groups["role:administrators"]["members"] == [realm.iago.id]
    assert groups["role:administrators"]["direct_subgroup_ids"] == [groups["role:owners"]["id"]]
    assert realm.polonius.id in groups["role:everyone"]["members"]
    group = groups["role:members"]
    assert set(group) == {
        "id",
        "name",
        "description",
        "members",
        "direct_subgroup_ids",
        "is_system_group",
        "date_created",
        "creator_id",
        "deactivated",
        "can_add_members_group",
        "can_join_group",
        "can_leave_group",
        "can_manage_group",
        "can_mention_group",
        "can_remove_members_group",
    }
    assert group["is_system_group"] is True
    assert group["can_join_group"] == groups["role:nobody"]["id"]

    realm_state = register(api, realm.hamlet, fetch_event_types=["realm"])
    assert realm_state["realm_can_create_groups"] == groups["role:members"]["id"]
    assert realm_state["realm_can_manage_all_groups"] == groups["role:owners"]["id"]
    assert realm_state["realm_can_manage_billing_group"] == groups["role:owners"]["id"]


def test_realm_user_settings_defaults_and_profile_fields(api: Api, realm: SeededRealm) -> None:
    state = register(
        api, realm.hamlet, fetch_event_types=["realm_user_settings_defaults", "custom_profile_fields"]
    )
    defaults = state["realm_user_settings_defaults"]
    assert defaults["twenty_four_hour_time"] is False
    assert defaults["emojiset"] == "google"
    assert "emojiset_choices" in defaults and "available_notification_sounds" in defaults
    assert state["custom_profile_fields"] == []
    assert state["custom_profile_field_types"]["SHORT_TEXT"] == {"id": 1, "name": "Text (short)"}


def test_muted_topics_give_way_to_user_topics(api: Api, realm: SeededRealm) -> None:
    state = register(api, realm.hamlet, fetch_event_types=["muted_topics", "user_topic"])
    assert "muted_topics" not in state
    assert state["user_topics"] == []
    assert register(api, realm.hamlet, fetch_event_types=["muted_topics"])["muted_topics"] == []


def test_unread_msgs_need_message_and_flags(api: Api, realm: SeededRealm) -> None:
    assert "unread_msgs" not in register(api, realm.hamlet, fetch_event_types=["update_message_flags"])
    assert "unread_msgs" in register(api, realm.hamlet, fetch_event_types=["update_message_flags", "message"])


def test_register_needs_authentication(api: Api, realm: SeededRealm) -> None:
    assert_json_error(
        api.post(None, "register", {}), "Not logged in: API authentication or user session required", 401
    )


def test_every_provider_runs_and_keys_do_not_clash(api: Api, realm: SeededRealm) -> None:
    """Registering for everything runs every provider; a key made twice would raise."""
    state = register(api, realm.desdemona)
    names = {registration.event_type for registration in registered_providers()}
    assert {"realm", "realm_user", "user_settings", "realm_user_groups", "message"} <= names
    assert "update_display_settings" in known_fetch_types()
    assert len(state) > 150


def test_a_real_provider_replaces_a_placeholder(api: Api, realm: SeededRealm) -> None:
    def placeholder(ctx: StateContext) -> dict[str, Any]:
        return {"test_widgets": []}

    def real(ctx: StateContext) -> dict[str, Any]:
        return {"test_widgets": ["real"]}

    standing = registered_providers()
    empty = Registration("test_widget", placeholder, True)
    with providers_replaced([*standing, empty, Registration("test_widget", real, False)]):
        state = register(api, realm.hamlet, fetch_event_types=["test_widget"])
        assert state["test_widgets"] == ["real"]
    with providers_replaced([*standing, empty]):
        state = register(api, realm.hamlet, fetch_event_types=["test_widget"])
        assert state["test_widgets"] == []


def test_two_providers_of_one_key_are_refused(api: Api, realm: SeededRealm) -> None:
    def first(ctx: StateContext) -> dict[str, Any]:
        return {"test_clash": 1}

    def second(ctx: StateContext) -> dict[str, Any]:
        return {"test_clash": 2}

    clashing = [Registration("test_clash_a", first, False), Registration("test_clash_b", second, False)]
    with providers_replaced([*registered_providers(), *clashing]):
        response = api.post(realm.hamlet, "register", {"fetch_event_types": ["test_clash_a", "test_clash_b"]})
    assert response.status_code == 500


# Applying events to the initial state gives what a fresh register shows --------------------


FETCH = [
    "realm_user",
    "realm_bot",
    "user_settings",
    "realm_user_groups",
    "update_display_settings",
    "update_global_notifications",
]
EVENT_TYPES = ["realm_user", "realm_bot", "user_settings", "user_group"]


@pytest.mark.parametrize("client_gravatar", [True, False])
@pytest.mark.parametrize("viewer_name", ["hamlet", "iago", "polonius"])
def test_applying_events_matches_a_fresh_register(
    api: Api, realm: SeededRealm, viewer_name: str, client_gravatar: bool
) -> None:
    viewer = realm.users[viewer_name]
    options = {"fetch_event_types": FETCH, "event_types": EVENT_TYPES, "client_gravatar": client_gravatar}
    state = register(api, viewer, **options)
    queue_id = state["queue_id"]

    # Changes by the viewer, by other users, and by administrators, all through the API.
    assert_json_success(
        api.patch(viewer, "settings", {"full_name": "Renamed Viewer", "twenty_four_hour_time": True})
    )
    assert_json_success(api.patch(viewer, "settings", {"default_language": "fr", "enable_sounds": False}))
    assert_json_success(api.patch(viewer, "settings", {"timezone": "Europe/Paris"}))
    assert_json_success(
        api.patch(realm.othello, "settings", {"full_name": "Othello II", "timezone": "Asia/Tokyo"})
    )
    # Hidden emails change what clients computing Gravatar URLs are sent, too.
    assert_json_success(api.patch(realm.othello, "settings", {"email_address_visibility": 4}))
    assert_json_success(api.patch(realm.cordelia, "settings", {"email_address_visibility": 3}))
    assert_json_success(api.patch(realm.desdemona, f"users/{realm.cordelia.id}", {"role": Role.MODERATOR}))
    assert_json_success(api.patch(realm.desdemona, f"users/{realm.shiva.id}", {"role": Role.MEMBER}))
    created = assert_json_success(
        api.post(
            realm.iago,
            "users",
            {"email": "newbie@example.com", "password": "pw-123456", "full_name": "Newbie"},
        )
    )
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    if viewer_name != "hamlet":
        # The bot's owner leaves: the bot is deactivated with him.
        assert_json_success(api.delete(realm.iago, f"users/{realm.hamlet.id}"))
    assert_json_success(
        api.patch(realm.desdemona, f"users/{created['user_id']}", {"full_name": "Newbie Two"})
    )

    events = assert_json_success(
        api.get(viewer, "events", {"queue_id": queue_id, "last_event_id": -1, "dont_block": True})
    )["events"]
    assert events, "the changes should have produced events"
    for event in events:
        apply_event(state, event, client_gravatar=client_gravatar)

    fresh = register(api, viewer, **options)
    assert_same_state(state, fresh)
    assert state["full_name"] == "Renamed Viewer"
    assert state["user_settings"]["default_language"] == "fr"


def test_state_providers_can_be_called_directly(api: Api, realm: SeededRealm, services: Any) -> None:
    """Other features build on fetch_initial_state without going through HTTP."""
    from palaver.events.queues import ClientDescriptor
    from palaver.models import UserProfile

    with services.db.session() as session:
        user = session.get(UserProfile, realm.hamlet.id)
        ctx = StateContext(
            session=session,
            settings=services.settings,
            user=user,
            client=ClientDescriptor(queue_id="q", user_id=user.id, realm_id=user.realm_id),
            options=RegisterOptions(),
            fetch_event_types=frozenset({"user_settings"}),
        )
        state = fetch_initial_state(ctx)
    assert set(state) == {"user_settings"}


def _apply_and_compare(api: Api, viewer: User, options: dict[str, Any], change: Any) -> None:
    state = register(api, viewer, **options)
    change()
    events = assert_json_success(
        api.get(viewer, "events", {"queue_id": state["queue_id"], "last_event_id": -1, "dont_block": True})
    )["events"]
    for event in events:
        apply_event(state, event, client_gravatar=options.get("client_gravatar", True))
    assert_same_state(state, register(api, viewer, **options))


def test_hidden_email_sends_avatar_url_to_client_gravatar_clients(api: Api, realm: SeededRealm) -> None:
    options = {"fetch_event_types": FETCH, "event_types": EVENT_TYPES, "client_gravatar": True}
    _apply_and_compare(
        api,
        realm.hamlet,
        options,
        lambda: assert_json_success(api.patch(realm.othello, "settings", {"email_address_visibility": 3})),
    )


def test_unread_and_starred_messages(api: Api, realm: SeededRealm) -> None:
    sent = assert_json_success(
        api.post(realm.othello, "messages", {"type": "direct", "to": [realm.hamlet.id], "content": "hi"})
    )
    assert_json_success(
        api.post(realm.hamlet, "messages/flags", {"messages": [sent["id"]], "op": "add", "flag": "starred"})
    )
    state = register(
        api, realm.hamlet, fetch_event_types=["message", "update_message_flags", "starred_messages"]
    )
    assert state["max_message_id"] == sent["id"]
    assert state["unread_msgs"]["count"] == 1
    assert [c["other_user_id"] for c in state["unread_msgs"]["pms"]] == [realm.othello.id]
    assert state["starred_messages"] == [sent["id"]]


def test_reactivated_user_returns_to_their_groups(api: Api, realm: SeededRealm) -> None:
    def change() -> None:
        assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
        assert_json_success(api.post(realm.iago, f"users/{realm.othello.id}/reactivate"))

    options = {"fetch_event_types": FETCH, "event_types": EVENT_TYPES, "client_gravatar": False}
    _apply_and_compare(api, realm.hamlet, options, change)


def test_unread_count_and_mentions_leave_out_muted_conversations(api: Api, realm: SeededRealm) -> None:
    def send(topic: str, content: str, channel: str = "Verona") -> int:
        body = {"type": "stream", "to": channel, "topic": topic, "content": content}
        return int(assert_json_success(api.post(realm.othello, "messages", body))["id"])

    for name in ("Verona", "Denmark"):
        assert_json_success(
            api.post(
                realm.othello,
                "users/me/subscriptions",
                {"subscriptions": [{"name": name}], "principals": [realm.hamlet.id, realm.othello.id]},
            )
        )
    denmark = assert_json_success(api.get(realm.hamlet, "get_stream_id", {"stream": "Denmark"}))["stream_id"]
    verona = assert_json_success(api.get(realm.hamlet, "get_stream_id", {"stream": "Verona"}))["stream_id"]
    assert_json_success(
        api.post(
            realm.hamlet,
            "users/me/subscriptions/properties",
            {"subscription_data": [{"stream_id": denmark, "property": "is_muted", "value": True}]},
        )
    )
    for stream_id, topic, policy in ((verona, "quiet", 1), (denmark, "followed", 3)):
        assert_json_success(
            api.post(
                realm.hamlet,
                "user_topics",
                {"stream_id": stream_id, "topic": topic, "visibility_policy": policy},
            )
        )
    plain = send("open", "hello")
    in_muted_topic = send("quiet", "hello")
    wildcard_in_muted_topic = send("quiet", "@**all** hello")
    direct_in_muted_topic = send("quiet", "@**King Hamlet** hello")
    in_muted_channel = send("anything", "hello", "Denmark")
    followed_in_muted_channel = send("followed", "@**all** hello", "Denmark")
    dm = int(
        assert_json_success(
            api.post(realm.othello, "messages", {"type": "direct", "to": [realm.hamlet.id], "content": "hi"})
        )["id"]
    )
    unread = register(api, realm.hamlet, fetch_event_types=["message", "update_message_flags"])["unread_msgs"]
    # Counted: the open topic, the followed topic of the muted channel, and the DM.
    assert unread["count"] == 3
    assert unread["mentions"] == [direct_in_muted_topic, followed_in_muted_channel]
    # Muted conversations are still listed, for clients that show them.
    listed = {i for s in unread["streams"] for i in s["unread_message_ids"]}
    assert listed == {
        plain,
        in_muted_topic,
        wildcard_in_muted_topic,
        direct_in_muted_topic,
        in_muted_channel,
        followed_in_muted_channel,
    }
    assert [p["unread_message_ids"] for p in unread["pms"]] == [[dm]]


LEGACY_POLICIES = (
    "realm_create_public_stream_policy",
    "realm_create_private_stream_policy",
    "realm_create_web_public_stream_policy",
    "realm_wildcard_mention_policy",
)


def test_deprecated_policies_follow_their_group_settings(api: Api, realm: SeededRealm) -> None:
    """The legacy integer policies (zulip-flutter requires ``realm_wildcard_mention_policy``)
    follow the group settings: a system group's own value, else the largest group's."""
    groups = register(api, realm.iago, fetch_event_types='["realm_user_groups"]')
    system = {g["name"]: g["id"] for g in groups["realm_user_groups"] if g["is_system_group"]}

    def policies() -> dict[str, int]:
        state = register(api, realm.iago, fetch_event_types='["realm"]')
        return {k: state[k] for k in LEGACY_POLICIES}

    def set_group(setting: str, value: object) -> None:
        assert_json_success(api.patch(realm.desdemona, "realm", {setting: json.dumps({"new": value})}))

    for name, expected in [
        ("role:everyone", 1),
        ("role:members", 2),
        ("role:fullmembers", 3),
        ("role:administrators", 5),
        ("role:nobody", 6),
        ("role:moderators", 7),
        ("role:owners", 1),
    ]:
        set_group("can_mention_many_users_group", system[name])
        assert policies()["realm_wildcard_mention_policy"] == expected, name
    set_group("can_mention_many_users_group", {"direct_members": [realm.hamlet.id], "direct_subgroups": []})
    assert policies()["realm_wildcard_mention_policy"] == 1

    for name, expected in [
        ("role:administrators", 2),
        ("role:fullmembers", 3),
        ("role:moderators", 4),
        ("role:members", 1),
    ]:
        set_group("can_create_public_channel_group", system[name])
        set_group("can_create_private_channel_group", system[name])
        got = policies()
        assert (
            got["realm_create_public_stream_policy"] == got["realm_create_private_stream_policy"] == expected
        )
    for name, expected in [
        ("role:administrators", 2),
        ("role:moderators", 4),
        ("role:nobody", 6),
        ("role:owners", 7),
    ]:
        set_group("can_create_web_public_channel_group", system[name])
        assert policies()["realm_create_web_public_stream_policy"] == expected, name
