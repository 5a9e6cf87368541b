"""Every realm gets the system groups, nested by role, and role-based memberships."""

from __future__ import annotations

from palaver.actions.users import do_change_user_role
from palaver.lib.user_groups import SYSTEM_GROUP_NAMES, get_system_groups, recursive_member_ids
from palaver.models import Realm, Role, UserProfile
from palaver.services import Services
from tests.helpers import EventRecorder, SeededRealm


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
        do_change_user_role(session, hamlet, Role.MODERATOR, acting_user=owner)
        groups = get_system_groups(session, realm.id)
        assert hamlet.id in recursive_member_ids(session, groups["role:moderators"].id)
        assert hamlet.id not in recursive_member_ids(session, groups["role:administrators"].id)

    removed = [e for e, _ in events.of_type("user_group", "remove_members")]
    added = [e for e, _ in events.of_type("user_group", "add_members")]
    assert {e["group_id"] for e in removed} == {groups["role:members"].id, groups["role:fullmembers"].id}
    assert [e["group_id"] for e in added] == [groups["role:moderators"].id]
    role_events = events.of_type("realm_user", "update")
    assert [e["person"] for e, _ in role_events] == [{"user_id": realm.hamlet.id, "role": Role.MODERATOR}]
