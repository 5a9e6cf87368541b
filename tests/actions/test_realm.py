"""Every realm gets the system groups, nested by role, and role-based memberships."""

from __future__ import annotations

from palaver.actions.users import do_change_user_role
from palaver.lib.user_groups import SYSTEM_GROUP_NAMES, get_system_groups, recursive_member_ids
from palaver.models import Realm, Role, UserProfile
from palaver.models.requester import Requester
from palaver.services import Services
from tests.api.edit_helpers import bot_messages
from tests.client import TestClient
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_success, seed_realm


def test_system_groups_exist_and_nest(services: Services, realm: SeededRealm) -> None:
    with services.db.session() as session:
        groups = get_system_groups(session, realm.id)
        assert set(groups) == set(SYSTEM_GROUP_NAMES)

        def members(name: str) -> set[int]:
            return recursive_member_ids(session, groups[name].id)

        humans = {u.id for n, u in realm.users.items() if n != "default_bot"}
        assert members("role:owners") == {realm.desdemona.id}
        assert members("role:administrators") == {realm.desdemona.id, realm.iago.id}
        assert members("role:moderators") == {realm.desdemona.id, realm.iago.id, realm.shiva.id}
        assert realm.polonius.id not in members("role:members")
        assert realm.default_bot.id in members("role:members")
        assert humans <= members("role:everyone")
        assert members("role:everyone") == members("role:internet")
        assert members("role:nobody") == set()


def test_realm_group_settings_point_at_system_groups(services: Services, realm: SeededRealm) -> None:
    with services.db.session() as session:
        db_realm = session.get(Realm, realm.id)
        groups = {g.id: name for name, g in get_system_groups(session, realm.id).items()}
        assert db_realm is not None
        assert groups[db_realm.can_access_all_users_group or 0] == "role:everyone"
        assert groups[db_realm.can_manage_all_groups or 0] == "role:owners"
        assert groups[db_realm.can_mention_many_users_group or 0] == "role:administrators"


def test_role_change_moves_system_group_membership(
    services: Services, realm: SeededRealm, events: EventRecorder
) -> None:
    with services.db.session() as session:
        hamlet = session.get(UserProfile, realm.hamlet.id)
        owner = session.get(UserProfile, realm.desdemona.id)
        assert hamlet is not None and owner is not None
        do_change_user_role(session, hamlet, Role.MODERATOR, acting_user=Requester.of(owner))
        groups = get_system_groups(session, realm.id)
        assert hamlet.id in recursive_member_ids(session, groups["role:moderators"].id)
        assert hamlet.id not in recursive_member_ids(session, groups["role:administrators"].id)

    removed = [e for e, _ in events.of_type("user_group", "remove_members")]
    added = [e for e, _ in events.of_type("user_group", "add_members")]
    assert {e["group_id"] for e in removed} == {groups["role:members"].id, groups["role:fullmembers"].id}
    assert [e["group_id"] for e in added] == [groups["role:moderators"].id]
    role_events = events.of_type("realm_user", "update")
    assert [e["person"] for e, _ in role_events] == [{"user_id": realm.hamlet.id, "role": Role.MODERATOR}]


# Initial channels -----------------------------------------------------------------------------


def test_new_realm_starts_with_zulips_default_channels(services: Services, client: TestClient) -> None:
    seeded = seed_realm(services, default_channels=True)
    api = Api(client, seeded)
    owner = seeded.desdemona
    streams = {s["name"]: s for s in assert_json_success(api.get(owner, "streams"))["streams"]}
    assert set(streams) == {"general", "sandbox"}
    with services.db.session() as session:
        nobody = get_system_groups(session, seeded.id)["role:nobody"].id
    for stream in streams.values():
        assert (stream["invite_only"], stream["is_web_public"]) == (False, False)
        assert stream["history_public_to_subscribers"] is True
        # Made by the system, not a person: administrators alone administer them.
        assert stream["creator_id"] is None
        assert stream["can_administer_channel_group"] == nobody
    assert streams["sandbox"]["description"].endswith(":test_tube:")
    general, sandbox = streams["general"]["stream_id"], streams["sandbox"]["stream_id"]
    default = assert_json_success(api.get(owner, "default_streams"))["default_streams"]
    assert sorted(default) == sorted([general, sandbox])

    state = assert_json_success(api.post(owner, "register", {"fetch_event_types": ["realm"]}))
    assert state["realm_new_stream_announcements_stream_id"] == general
    assert state["realm_zulip_update_announcements_stream_id"] == general
    # New-user announcements start off, as in Zulip.
    assert state["realm_signup_announcements_stream_id"] == -1

    # The owner and every human after joined both, as new users join default channels.
    for name, user in seeded.users.items():
        subs = assert_json_success(api.get(user, "users/me/subscriptions"))["subscriptions"]
        assert {s["name"] for s in subs} == (set() if user.is_bot else {"general", "sandbox"}), name
    # Creating the organization posted nothing and needed no Notification Bot.
    query = {"anchor": "newest", "num_before": 10, "num_after": 0}
    assert assert_json_success(api.get(owner, "messages", query))["messages"] == []
    members = assert_json_success(api.get(owner, "users"))["members"]
    assert "Notification Bot" not in {m["full_name"] for m in members}


def test_new_channels_are_announced_in_general(services: Services, client: TestClient) -> None:
    seeded = seed_realm(services, default_channels=True)
    api = Api(client, seeded)
    data = {"name": "design", "subscribers": [seeded.hamlet.id], "announce": True}
    assert_json_success(api.post(seeded.hamlet, "channels/create", data))
    streams = {
        s["name"]: s["stream_id"] for s in assert_json_success(api.get(seeded.hamlet, "streams"))["streams"]
    }
    [notice] = bot_messages(api, seeded.othello, streams["general"], "new channels")
    assert notice["content"] == f"@_**King Hamlet|{seeded.hamlet.id}** created a new channel #**design**."


def test_fixture_realms_have_no_channels(api: Api, realm: SeededRealm) -> None:
    assert assert_json_success(api.get(realm.desdemona, "streams"))["streams"] == []
