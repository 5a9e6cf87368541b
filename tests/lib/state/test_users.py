"""The fast path for realm_users (POST /register) and members (GET /users) builds exactly
what format_users does."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from sqlalchemy.orm import Session

from palaver.lib.realm_user_list import realm_members_json, realm_user_json
from palaver.lib.users import format_users, get_users
from palaver.models import UserProfile
from palaver.models.requester import Requester
from palaver.services import Services
from tests.api.test_channels import set_realm, system_groups
from tests.helpers import Api, SeededRealm, assert_json_success


def realm_user_dicts(session: Session, viewer: UserProfile, *, client_gravatar: bool) -> list[dict[str, Any]]:
    """Both lists of the fast path, decoded, active and deactivated users in ID order."""
    active, inactive = realm_user_json(session, viewer, client_gravatar=client_gravatar)
    users = orjson.loads(active) + orjson.loads(inactive)
    assert all(u["is_active"] for u in orjson.loads(active))
    assert not any(u["is_active"] for u in orjson.loads(inactive))
    return sorted(users, key=lambda u: u["user_id"])


@pytest.mark.parametrize("client_gravatar", [True, False])
def test_realm_user_dicts_match_format_users(
    api: Api, realm: SeededRealm, services: Services, client_gravatar: bool
) -> None:
    # Every kind of user object: hidden emails at each level, custom profile data (plain
    # and rendered), a deactivated user, a bot, a guest and every role.
    text = assert_json_success(
        api.post(realm.iago, "realm/profile_fields", {"name": "Phone", "field_type": 1})
    )
    long = assert_json_success(api.post(realm.iago, "realm/profile_fields", {"name": "Bio", "field_type": 2}))
    data = [{"id": text["id"], "value": "+45 1234"}, {"id": long["id"], "value": "**bold**"}]
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"profile_data": data}))
    for name, level in (("othello", 2), ("cordelia", 3), ("shiva", 4), ("polonius", 5)):
        assert_json_success(api.patch(realm.users[name], "settings", {"email_address_visibility": level}))
    assert_json_success(api.patch(realm.iago, "settings", {"timezone": "Europe/Paris"}))
    assert_json_success(api.delete(realm.iago, f"users/{realm.cordelia.id}"))

    with services.db.session() as session:
        for name in ("desdemona", "iago", "shiva", "hamlet", "polonius", "default_bot"):
            viewer = session.get_one(UserProfile, realm.users[name].id)
            expected = format_users(
                session,
                get_users(session, viewer.realm_id, Requester.of(viewer)),
                Requester.of(viewer),
                client_gravatar=client_gravatar,
                include_custom_profile_fields=True,
                email_host=realm.host,
            )
            got = realm_user_dicts(session, viewer, client_gravatar=client_gravatar)
            assert got == expected, name
            assert any(u.get("profile_data") for u in got)
            # The same objects in the same order, deactivated users among the rest.
            members = realm_members_json(session, viewer, client_gravatar=client_gravatar)
            assert orjson.loads(members) == expected, name


def test_a_restricted_guest_gets_only_the_users_they_may_see(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    set_realm(services, realm, can_access_all_users_group=system_groups(services, realm)["role:members"])
    assert_json_success(
        api.post(realm.othello, "messages", {"type": "direct", "to": [realm.polonius.id], "content": "hi"})
    )
    with services.db.session() as session:
        guest = session.get_one(UserProfile, realm.polonius.id)
        got = realm_user_dicts(session, guest, client_gravatar=True)
        expected = format_users(
            session,
            get_users(session, guest.realm_id, Requester.of(guest)),
            Requester.of(guest),
            client_gravatar=True,
            include_custom_profile_fields=True,
            email_host=realm.host,
        )
        members = orjson.loads(realm_members_json(session, guest, client_gravatar=True))
    assert got == expected
    assert members == expected
    assert {u["user_id"] for u in got} == {realm.polonius.id, realm.othello.id, realm.default_bot.id}


def test_get_users_with_profile_data_is_the_fast_list(api: Api, realm: SeededRealm) -> None:
    """GET /users answers from the fast path only with include_custom_profile_fields and no
    user_ids: the answer is the slow path's, deactivated users and the own address included."""
    assert_json_success(api.patch(realm.hamlet, "settings", {"email_address_visibility": 5}))
    assert_json_success(api.delete(realm.iago, f"users/{realm.cordelia.id}"))
    fast = assert_json_success(api.get(realm.hamlet, "users", {"include_custom_profile_fields": "true"}))
    ids = [u["user_id"] for u in fast["members"]]
    listed = assert_json_success(
        api.get(
            realm.hamlet,
            "users",
            {"include_custom_profile_fields": "true", "user_ids": orjson.dumps(ids).decode()},
        )
    )
    assert fast["members"] == listed["members"]
    assert ids == sorted(ids) and realm.cordelia.id in ids
    me = next(u for u in fast["members"] if u["user_id"] == realm.hamlet.id)
    assert me["delivery_email"] == realm.hamlet.email
