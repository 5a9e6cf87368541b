"""Users: list, fetch, create, update, deactivate and reactivate."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from palaver import cache as realm_cache
from palaver.cache.components import USERS
from palaver.lib.user_groups import get_system_groups
from palaver.models import CustomProfileField, ProfileFieldType, Realm, RealmUserDefault, Role, UserProfile
from palaver.services import Services
from tests.helpers import (
    PASSWORD,
    Api,
    EventRecorder,
    SeededRealm,
    assert_json_error,
    assert_json_success,
    seed_realm,
)
from tests.helpers import (
    TestUser as User,
)

# The User object of the interface; profile_data only when asked for, is_deleted only when true.
USER_FIELDS = {
    "user_id",
    "delivery_email",
    "email",
    "full_name",
    "date_joined",
    "is_active",
    "is_owner",
    "is_admin",
    "is_guest",
    "is_bot",
    "bot_type",
    "bot_owner_id",
    "role",
    "timezone",
    "avatar_url",
    "avatar_version",
    "is_imported_stub",
}
# GET /users/me: the same at top level, without the bot fields, with max_message_id.
OWN_USER_FIELDS = (USER_FIELDS - {"bot_type", "bot_owner_id"}) | {"max_message_id", "profile_data"}
ENVELOPE = {"result", "msg"}

NO_SUCH_USER = "No such user"
ADMIN_REQUIRED = "Must be an organization administrator"
OWNER_REQUIRED = "Must be an organization owner"
DEACTIVATED = "Account is deactivated"
HUMANS = ("desdemona", "iago", "shiva", "hamlet", "othello", "cordelia", "polonius")


def real_email(realm: SeededRealm, name: str) -> str:
    short = "default-bot" if name == "default_bot" else name
    return f"{short}@{realm.string_id}.example.com"


def fake_email(realm: SeededRealm, user: User) -> str:
    return f"user{user.id}@{realm.host}"


def members(api: Api, viewer: User | None, **params: Any) -> dict[int, dict[str, Any]]:
    body = assert_json_success(api.get(viewer, "users", params))
    return {m["user_id"]: m for m in body["members"]}


def get_user(api: Api, viewer: User, target: int | str, **params: Any) -> dict[str, Any]:
    user: dict[str, Any] = assert_json_success(api.get(viewer, f"users/{target}", params))["user"]
    return user


def set_visibility(api: Api, user: User, value: int) -> None:
    assert_json_success(api.patch(user, "settings", {"email_address_visibility": value}))


def update_realm(services: Services, realm_id: int, **values: object) -> None:
    with services.db.session() as session, session.begin():
        realm = session.get(Realm, realm_id)
        assert realm is not None
        for name, value in values.items():
            setattr(realm, name, value)


def add_profile_field(
    services: Services,
    realm: SeededRealm,
    name: str,
    field_type: ProfileFieldType = ProfileFieldType.SHORT_TEXT,
    field_data: str = "",
    order: int = 0,
) -> int:
    with services.db.session() as session, session.begin():
        field = CustomProfileField(
            realm_id=realm.id, name=name, field_type=field_type, field_data=field_data, order=order
        )
        session.add(field)
        session.flush()
        return field.id


def is_active_in_db(services: Services, user_id: int) -> bool:
    with services.db.session() as session:
        user = session.get(UserProfile, user_id)
        assert user is not None
        return user.is_active


def person_updates(events: EventRecorder, key: str) -> list[tuple[dict[str, Any], list[int]]]:
    return [(e, r) for e, r in events.of_type("realm_user", "update") if key in e["person"]]


# GET /users ----------------------------------------------------------------------------


def test_list_has_every_user_with_exactly_the_user_fields(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.get(realm.hamlet, "users"))
    assert set(body) == ENVELOPE | {"members"}
    ids = [m["user_id"] for m in body["members"]]
    assert sorted(ids) == sorted(u.id for u in realm.users.values())
    for member in body["members"]:
        assert set(member) == USER_FIELDS, member


def test_list_describes_roles(api: Api, realm: SeededRealm) -> None:
    found = members(api, realm.hamlet)
    expected = {
        "desdemona": (100, True, True, False),
        "iago": (200, False, True, False),
        "shiva": (300, False, False, False),
        "hamlet": (400, False, False, False),
        "polonius": (600, False, False, True),
    }
    for name, (role, is_owner, is_admin, is_guest) in expected.items():
        member = found[realm.users[name].id]
        assert (member["role"], member["is_owner"], member["is_admin"], member["is_guest"]) == (
            role,
            is_owner,
            is_admin,
            is_guest,
        ), name


def test_list_describes_people(api: Api, realm: SeededRealm) -> None:
    hamlet = members(api, realm.othello)[realm.hamlet.id]
    assert hamlet["full_name"] == "King Hamlet"
    assert hamlet["email"] == hamlet["delivery_email"] == real_email(realm, "hamlet")
    assert hamlet["is_bot"] is False
    assert hamlet["bot_type"] is None
    assert hamlet["bot_owner_id"] is None
    assert hamlet["is_active"] is True
    assert hamlet["timezone"] == ""
    assert hamlet["avatar_version"] == 1
    assert hamlet["is_imported_stub"] is False
    assert "T" in hamlet["date_joined"] and hamlet["date_joined"].endswith("+00:00")


def test_list_describes_bots(api: Api, realm: SeededRealm) -> None:
    bot = members(api, realm.othello, include_custom_profile_fields=True)[realm.default_bot.id]
    assert bot["is_bot"] is True
    assert bot["bot_type"] == 1
    assert bot["bot_owner_id"] == realm.hamlet.id
    assert bot["delivery_email"] == real_email(realm, "default_bot")
    assert bot["full_name"] == "Default Bot"
    # Bots never carry profile data.
    assert "profile_data" not in bot


def test_client_gravatar_defaults_to_true(api: Api, realm: SeededRealm) -> None:
    for member in members(api, realm.hamlet).values():
        assert member["avatar_url"] is None
    for member in members(api, realm.hamlet, client_gravatar=True).values():
        assert member["avatar_url"] is None


def test_client_gravatar_false_sends_urls(api: Api, realm: SeededRealm) -> None:
    for member in members(api, realm.hamlet, client_gravatar=False).values():
        assert member["avatar_url"].startswith("https://secure.gravatar.com/avatar/")
        assert f"version={member['avatar_version']}" in member["avatar_url"]


def test_avatar_url_is_sent_when_the_email_is_hidden(api: Api, realm: SeededRealm) -> None:
    # A client cannot compute a Gravatar URL from an address it may not see.
    set_visibility(api, realm.hamlet, 4)
    hamlet = members(api, realm.othello)[realm.hamlet.id]
    assert hamlet["delivery_email"] is None
    assert hamlet["avatar_url"].startswith("https://")
    assert members(api, realm.hamlet)[realm.hamlet.id]["avatar_url"] is None


def test_avatar_url_does_not_depend_on_the_viewer(api: Api, realm: SeededRealm) -> None:
    set_visibility(api, realm.hamlet, 4)
    as_othello = members(api, realm.othello, client_gravatar=False)[realm.hamlet.id]["avatar_url"]
    as_hamlet = members(api, realm.hamlet, client_gravatar=False)[realm.hamlet.id]["avatar_url"]
    assert as_othello == as_hamlet


@pytest.mark.parametrize("value", ["1", "null", '"true"'])
def test_client_gravatar_must_be_boolean(api: Api, realm: SeededRealm, value: str) -> None:
    body = assert_json_error(
        api.get(realm.hamlet, "users", {"client_gravatar": value}),
        "client_gravatar is not a boolean",
        400,
        "REQUEST_VARIABLE_INVALID",
    )
    assert body["var_name"] == "client_gravatar"


def test_client_gravatar_must_be_json(api: Api, realm: SeededRealm) -> None:
    assert_json_error(
        api.get(realm.hamlet, "users", {"client_gravatar": "yes"}),
        'Argument "client_gravatar" is not valid JSON.',
        400,
        "INVALID_JSON",
    )


def test_include_custom_profile_fields(api: Api, realm: SeededRealm, services: Services) -> None:
    field_id = add_profile_field(services, realm, "Phone")
    data = [{"id": field_id, "value": "+1 555"}]
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"profile_data": data}))

    without = members(api, realm.othello)
    assert all("profile_data" not in m for m in without.values())

    found = members(api, realm.othello, include_custom_profile_fields=True)
    assert found[realm.hamlet.id]["profile_data"] == {
        str(field_id): {"value": "+1 555", "rendered_value": "<p>+1 555</p>"}
    }
    assert found[realm.othello.id]["profile_data"] == {}
    assert "profile_data" not in found[realm.default_bot.id]
    for member in found.values():
        assert set(member) - {"profile_data"} == USER_FIELDS


def test_include_custom_profile_fields_must_be_boolean(api: Api, realm: SeededRealm) -> None:
    assert_json_error(
        api.get(realm.hamlet, "users", {"include_custom_profile_fields": "0"}),
        "include_custom_profile_fields is not a boolean",
        400,
        "REQUEST_VARIABLE_INVALID",
    )


def test_user_ids_filter(api: Api, realm: SeededRealm) -> None:
    wanted = [realm.othello.id, realm.iago.id, realm.default_bot.id]
    found = members(api, realm.hamlet, user_ids=wanted)
    assert set(found) == set(wanted)
    assert members(api, realm.hamlet, user_ids=[]) == {}


def test_user_ids_filter_includes_deactivated_users(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    found = members(api, realm.hamlet, user_ids=[realm.othello.id])
    assert found[realm.othello.id]["is_active"] is False


def test_user_ids_filter_rejects_unknown_ids(api: Api, realm: SeededRealm) -> None:
    response = api.get(realm.hamlet, "users", {"user_ids": [realm.othello.id, 999_999_999]})
    assert_json_error(response, "Invalid user ID: 999999999", 400, "BAD_REQUEST")


def test_user_ids_filter_rejects_ids_beyond_any_user(api: Api, realm: SeededRealm) -> None:
    response = api.get(realm.hamlet, "users", {"user_ids": [3_000_000_000]})
    assert_json_error(response, "Invalid user ID: 3000000000", 400, "BAD_REQUEST")


def test_user_ids_filter_rejects_ids_of_another_realm(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    other = seed_realm(services)
    response = api.get(realm.hamlet, "users", {"user_ids": [other.hamlet.id]})
    assert_json_error(response, f"Invalid user ID: {other.hamlet.id}", 400)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("5", "user_ids is not a list"),
        ('["a"]', "user_ids[0] is not an integer"),
        ("[1, true]", "user_ids[1] is not an integer"),
    ],
)
def test_user_ids_must_be_a_list_of_integers(api: Api, realm: SeededRealm, value: str, message: str) -> None:
    body = assert_json_error(
        api.get(realm.hamlet, "users", {"user_ids": value}), message, 400, "REQUEST_VARIABLE_INVALID"
    )
    assert body["var_name"] == "user_ids"


def test_user_ids_must_be_json(api: Api, realm: SeededRealm) -> None:
    assert_json_error(
        api.get(realm.hamlet, "users", {"user_ids": "[1,"}),
        'Argument "user_ids" is not valid JSON.',
        400,
        "INVALID_JSON",
    )


def test_list_includes_deactivated_users(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.cordelia.id}"))
    found = members(api, realm.hamlet)
    assert found[realm.cordelia.id]["is_active"] is False
    assert found[realm.hamlet.id]["is_active"] is True


def test_guests_see_everyone_by_default(api: Api, realm: SeededRealm) -> None:
    assert set(members(api, realm.polonius)) == {u.id for u in realm.users.values()}


def test_list_requires_authentication(api: Api, realm: SeededRealm) -> None:
    response = api.get(None, "users")
    assert_json_error(
        response, "Not logged in: API authentication or user session required", 401, "UNAUTHORIZED"
    )
    assert response.headers["WWW-Authenticate"].startswith("Basic")


def test_list_rejects_a_wrong_api_key(api: Api, realm: SeededRealm) -> None:
    impostor = User(realm.hamlet.id, realm.hamlet.email, "x" * 32, "King Hamlet", Role.MEMBER)
    assert_json_error(api.get(impostor, "users"), "Invalid API key", 401, "UNAUTHORIZED")


def test_list_rejects_a_key_under_another_email(api: Api, realm: SeededRealm) -> None:
    mixed = User(realm.hamlet.id, realm.othello.email, realm.hamlet.api_key, "King Hamlet", Role.MEMBER)
    assert_json_error(api.get(mixed, "users"), "Invalid API key", 401, "UNAUTHORIZED")


def test_spectators_may_list_users_with_public_access(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    update_realm(services, realm.id, enable_spectator_access=True)
    found = members(api, None)
    assert set(found) == {u.id for u in realm.users.values()}
    for name in HUMANS:
        member = found[realm.users[name].id]
        assert set(member) == USER_FIELDS
        # Spectators are not members: neither the real address nor an email to derive
        # an avatar from.
        assert member["delivery_email"] is None
        assert member["email"] == fake_email(realm, realm.users[name])
        assert member["avatar_url"] is not None
    bot = found[realm.default_bot.id]
    assert bot["delivery_email"] == bot["email"] == real_email(realm, "default_bot")


def test_spectators_of_a_deactivated_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    update_realm(services, realm.id, enable_spectator_access=True, deactivated=True)
    assert_json_error(api.get(None, "users"), "This organization is deactivated", 401, "REALM_DEACTIVATED")
    assert_json_error(
        api.get(realm.hamlet, "users"), "This organization is deactivated", 401, "REALM_DEACTIVATED"
    )


def test_spectators_may_not_fetch_a_single_user(api: Api, realm: SeededRealm, services: Services) -> None:
    update_realm(services, realm.id, enable_spectator_access=True)
    assert_json_error(
        api.get(None, f"users/{realm.hamlet.id}"),
        "Not logged in: API authentication or user session required",
        401,
    )


# Email visibility ------------------------------------------------------------------------

VIEWERS = ("desdemona", "iago", "shiva", "othello", "polonius")


@pytest.mark.parametrize(
    ("visibility", "who_sees"),
    [
        (1, {"desdemona", "iago", "shiva", "othello", "polonius"}),
        (2, {"desdemona", "iago", "shiva", "othello"}),
        (3, {"desdemona", "iago"}),
        (4, set()),
        (5, {"desdemona", "iago", "shiva"}),
    ],
)
def test_delivery_email_follows_visibility(
    api: Api, realm: SeededRealm, visibility: int, who_sees: set[str]
) -> None:
    set_visibility(api, realm.hamlet, visibility)
    expected_email = real_email(realm, "hamlet") if visibility == 1 else fake_email(realm, realm.hamlet)
    for name in VIEWERS:
        hamlet = members(api, realm.users[name])[realm.hamlet.id]
        sees = name in who_sees
        assert hamlet["delivery_email"] == (real_email(realm, "hamlet") if sees else None), name
        assert hamlet["email"] == expected_email, name
        single = get_user(api, realm.users[name], realm.hamlet.id)
        assert single["delivery_email"] == hamlet["delivery_email"], name
    # One always sees one's own address.
    own = members(api, realm.hamlet)[realm.hamlet.id]
    assert own["delivery_email"] == real_email(realm, "hamlet")


# GET /users/{user_id} -------------------------------------------------------------------


def test_get_user_by_id(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.get(realm.hamlet, f"users/{realm.iago.id}"))
    assert set(body) == ENVELOPE | {"user"}
    user = body["user"]
    assert set(user) == USER_FIELDS
    assert user["user_id"] == realm.iago.id
    assert user["full_name"] == "Iago"
    assert user["role"] == 200
    assert user["avatar_url"] is None
    # The single-user view matches the list.
    assert user == members(api, realm.hamlet)[realm.iago.id]


def test_get_user_by_id_options(api: Api, realm: SeededRealm, services: Services) -> None:
    field_id = add_profile_field(services, realm, "Pronouns", ProfileFieldType.PRONOUNS)
    data = [{"id": field_id, "value": "he/him"}]
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"profile_data": data}))

    user = get_user(
        api, realm.othello, realm.hamlet.id, client_gravatar=False, include_custom_profile_fields=True
    )
    assert user["avatar_url"].startswith("https://")
    # Pronouns are plain text: no rendered_value.
    assert user["profile_data"] == {str(field_id): {"value": "he/him"}}
    user = get_user(api, realm.othello, realm.othello.id, include_custom_profile_fields=True)
    assert user["profile_data"] == {}


def test_get_bot_by_id(api: Api, realm: SeededRealm) -> None:
    bot = get_user(api, realm.othello, realm.default_bot.id, include_custom_profile_fields=True)
    assert set(bot) == USER_FIELDS
    assert bot["bot_type"] == 1
    assert bot["bot_owner_id"] == realm.hamlet.id


def test_get_deactivated_user_by_id(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    assert get_user(api, realm.hamlet, realm.othello.id)["is_active"] is False


def test_get_unknown_user_by_id(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.get(realm.hamlet, "users/999999999"), NO_SUCH_USER, 400, "BAD_REQUEST")


@pytest.mark.parametrize("user_id", ["0", "3000000000", "99999999999999999999999"])
def test_get_user_by_id_out_of_range(api: Api, realm: SeededRealm, user_id: str) -> None:
    assert_json_error(api.get(realm.hamlet, f"users/{user_id}"), NO_SUCH_USER, 400, "BAD_REQUEST")


@pytest.mark.parametrize("target", ["\u00b2", "\u0661", "+5", "-5", " "])
def test_get_user_by_something_not_an_id(api: Api, realm: SeededRealm, target: str) -> None:
    # Only ASCII digits make an ID; anything else is looked up as an email.
    assert_json_error(api.get(realm.hamlet, f"users/{target}"), NO_SUCH_USER, 400)


def test_get_user_by_id_with_leading_zeros(api: Api, realm: SeededRealm) -> None:
    assert get_user(api, realm.hamlet, f"00{realm.iago.id}")["user_id"] == realm.iago.id


def test_get_user_of_another_realm_by_id(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    assert_json_error(api.get(realm.hamlet, f"users/{other.hamlet.id}"), NO_SUCH_USER, 400)


def test_get_user_requires_authentication(api: Api, realm: SeededRealm) -> None:
    assert_json_error(
        api.get(None, f"users/{realm.hamlet.id}"),
        "Not logged in: API authentication or user session required",
        401,
    )


def test_get_user_reports_unknown_parameters(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.get(realm.hamlet, f"users/{realm.iago.id}", {"frobnicate": "1"}))
    assert body["ignored_parameters_unsupported"] == ["frobnicate"]


# GET /users/{email} ---------------------------------------------------------------------


def test_get_user_by_email(api: Api, realm: SeededRealm) -> None:
    user = get_user(api, realm.hamlet, realm.iago.email)
    assert user["user_id"] == realm.iago.id
    assert set(user) == USER_FIELDS
    assert get_user(api, realm.hamlet, realm.iago.email.upper())["user_id"] == realm.iago.id


def test_get_bot_by_email(api: Api, realm: SeededRealm) -> None:
    assert get_user(api, realm.othello, realm.default_bot.email)["user_id"] == realm.default_bot.id


def test_get_deactivated_user_by_email(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    user = get_user(api, realm.hamlet, realm.othello.email)
    assert (user["user_id"], user["is_active"]) == (realm.othello.id, False)


def test_get_user_by_email_options(api: Api, realm: SeededRealm) -> None:
    user = get_user(
        api, realm.hamlet, realm.iago.email, client_gravatar=False, include_custom_profile_fields=True
    )
    assert user["avatar_url"].startswith("https://")
    assert user["profile_data"] == {}


def test_get_user_by_real_email_needs_permission_to_see_it(api: Api, realm: SeededRealm) -> None:
    set_visibility(api, realm.hamlet, 3)
    real = real_email(realm, "hamlet")
    assert_json_error(api.get(realm.othello, f"users/{real}"), NO_SUCH_USER, 400)
    assert get_user(api, realm.iago, real)["user_id"] == realm.hamlet.id
    assert get_user(api, realm.hamlet, real)["user_id"] == realm.hamlet.id


def test_get_user_by_fake_email(api: Api, realm: SeededRealm) -> None:
    set_visibility(api, realm.hamlet, 4)
    user = get_user(api, realm.othello, fake_email(realm, realm.hamlet))
    assert user["user_id"] == realm.hamlet.id
    assert user["email"] == fake_email(realm, realm.hamlet)


def test_fake_email_works_for_every_user(api: Api, realm: SeededRealm) -> None:
    # user<ID>@<host> names a user whatever their visibility setting.
    assert get_user(api, realm.othello, fake_email(realm, realm.iago))["user_id"] == realm.iago.id
    bot = realm.default_bot
    assert get_user(api, realm.othello, fake_email(realm, bot))["user_id"] == bot.id


def test_fake_email_of_another_realm_is_no_user(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    assert_json_error(api.get(realm.hamlet, f"users/{fake_email(other, other.iago)}"), NO_SUCH_USER, 400)
    # An ID of this realm under another realm's host is no user either.
    wrong_host = f"user{realm.iago.id}@{other.host}"
    assert_json_error(api.get(realm.hamlet, f"users/{wrong_host}"), NO_SUCH_USER, 400)


def test_get_unknown_user_by_email(api: Api, realm: SeededRealm) -> None:
    response = api.get(realm.hamlet, f"users/nobody@{realm.string_id}.example.com")
    assert_json_error(response, NO_SUCH_USER, 400, "BAD_REQUEST")
    assert_json_error(api.get(realm.hamlet, "users/not-an-email"), NO_SUCH_USER, 400)


def test_get_user_of_another_realm_by_email(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    assert_json_error(api.get(realm.hamlet, f"users/{other.hamlet.email}"), NO_SUCH_USER, 400)


# GET /users/me --------------------------------------------------------------------------


def test_own_user_fields(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.get(realm.hamlet, "users/me"))
    assert set(body) == ENVELOPE | OWN_USER_FIELDS
    assert body["user_id"] == realm.hamlet.id
    assert body["email"] == body["delivery_email"] == real_email(realm, "hamlet")
    assert body["full_name"] == "King Hamlet"
    assert (body["role"], body["is_admin"], body["is_owner"], body["is_guest"]) == (400, False, False, False)
    assert body["is_bot"] is False
    assert body["is_active"] is True
    assert body["is_imported_stub"] is False
    assert body["avatar_url"].startswith("https://")
    assert isinstance(body["max_message_id"], int)
    assert body["profile_data"] == {}


def test_own_user_for_each_role(api: Api, realm: SeededRealm) -> None:
    for name in HUMANS:
        body = assert_json_success(api.get(realm.users[name], "users/me"))
        assert body["role"] == realm.users[name].role
        assert body["is_owner"] == (name == "desdemona")
        assert body["is_admin"] == (name in ("desdemona", "iago"))
        assert body["is_guest"] == (name == "polonius")


def test_own_user_sees_own_hidden_email(api: Api, realm: SeededRealm) -> None:
    set_visibility(api, realm.hamlet, 4)
    body = assert_json_success(api.get(realm.hamlet, "users/me"))
    assert body["email"] == fake_email(realm, realm.hamlet)
    assert body["delivery_email"] == real_email(realm, "hamlet")


def test_own_user_profile_data(api: Api, realm: SeededRealm, services: Services) -> None:
    field_id = add_profile_field(services, realm, "Biography", ProfileFieldType.LONG_TEXT)
    data = [{"id": field_id, "value": "I *am* the Dane"}]
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"profile_data": data}))
    body = assert_json_success(api.get(realm.hamlet, "users/me"))
    assert body["profile_data"] == {
        str(field_id): {"value": "I *am* the Dane", "rendered_value": "<p>I <em>am</em> the Dane</p>"}
    }


def test_own_user_of_a_bot(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.get(realm.default_bot, "users/me"))
    assert set(body) == ENVELOPE | (OWN_USER_FIELDS - {"profile_data"})
    assert body["is_bot"] is True
    assert body["user_id"] == realm.default_bot.id


def test_own_user_requires_authentication(api: Api, realm: SeededRealm) -> None:
    assert_json_error(
        api.get(None, "users/me"), "Not logged in: API authentication or user session required", 401
    )


# POST /users ----------------------------------------------------------------------------


def new_user_params(realm: SeededRealm, short: str = "newbie", **overrides: str) -> dict[str, str]:
    return {
        "email": f"{short}@{realm.string_id}.example.com",
        "password": "newbie-password",
        "full_name": "New Person",
        **overrides,
    }


def test_create_user(api: Api, realm: SeededRealm) -> None:
    params = new_user_params(realm)
    body = assert_json_success(api.post(realm.iago, "users", params))
    assert set(body) == ENVELOPE | {"user_id"}
    user = get_user(api, realm.hamlet, body["user_id"])
    assert user["email"] == user["delivery_email"] == params["email"]
    assert user["full_name"] == "New Person"
    assert (user["role"], user["is_active"], user["is_bot"]) == (400, True, False)

    login = api.post(None, "fetch_api_key", {"username": params["email"], "password": "newbie-password"})
    assert assert_json_success(login)["user_id"] == body["user_id"]


def test_create_user_by_owner(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.post(realm.desdemona, "users", new_user_params(realm)))


@pytest.mark.parametrize("name", ["shiva", "hamlet", "polonius", "default_bot"])
def test_create_user_requires_an_administrator(
    api: Api, realm: SeededRealm, events: EventRecorder, name: str
) -> None:
    params = new_user_params(realm)
    assert_json_error(api.post(realm.users[name], "users", params), ADMIN_REQUIRED, 400)
    assert events.published == []
    assert_json_error(
        api.post(None, "fetch_api_key", {"username": params["email"], "password": params["password"]}),
        "Your username or password is incorrect",
        401,
    )


def test_create_user_sends_add_events(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    user_id = assert_json_success(api.post(realm.iago, "users", new_user_params(realm)))["user_id"]
    adds = events.of_type("realm_user", "add")
    recipients = sorted(uid for _, users in adds for uid in users)
    active = sorted([u.id for u in realm.users.values()] + [user_id])
    # One event per recipient (each sees the person as they may), to every active user.
    assert recipients == active
    for event, _ in adds:
        person = event["person"]
        assert set(person) == USER_FIELDS | {"profile_data"}
        assert person["user_id"] == user_id
        assert person["full_name"] == "New Person"
        assert person["role"] == 400
        assert person["profile_data"] == {}
        assert person["avatar_url"].startswith("https://")
    # The new user is filed into the role groups.
    group_adds = events.of_type("user_group", "add_members")
    assert group_adds and all(e["user_ids"] == [user_id] for e, _ in group_adds)


def test_create_user_add_events_respect_email_visibility(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    with services.db.session() as session, session.begin():
        defaults = session.get(RealmUserDefault, realm.id)
        assert defaults is not None
        defaults.email_address_visibility = 3
    params = new_user_params(realm)
    user_id = assert_json_success(api.post(realm.iago, "users", params))["user_id"]
    by_recipient = {users[0]: e["person"] for e, users in events.of_type("realm_user", "add")}
    fake = f"user{user_id}@{realm.host}"
    assert by_recipient[realm.iago.id]["delivery_email"] == params["email"]
    assert by_recipient[realm.desdemona.id]["delivery_email"] == params["email"]
    assert by_recipient[user_id]["delivery_email"] == params["email"]
    assert by_recipient[realm.othello.id]["delivery_email"] is None
    assert by_recipient[realm.shiva.id]["delivery_email"] is None
    assert all(person["email"] == fake for person in by_recipient.values())
    assert get_user(api, realm.othello, user_id)["email"] == fake


def test_create_user_with_duplicate_email(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    for email in (realm.hamlet.email, realm.hamlet.email.upper(), f"  {realm.hamlet.email}  "):
        response = api.post(realm.iago, "users", new_user_params(realm, email=email))
        assert_json_error(response, "Email is already in use.", 400, "BAD_REQUEST")
    assert events.published == []


def test_create_user_racing_for_an_email(
    api: Api, realm: SeededRealm, events: EventRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two requests can both find the address free; the database's unique index decides.
    monkeypatch.setattr("palaver.actions.user_creation.get_user_by_delivery_email", lambda *args: None)
    response = api.post(realm.iago, "users", new_user_params(realm, email=realm.hamlet.email.upper()))
    assert_json_error(response, "Email is already in use.", 400)
    assert events.published == []
    monkeypatch.undo()
    assert_json_success(api.post(realm.iago, "users", new_user_params(realm)))


def test_create_user_with_email_of_a_deactivated_user(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    response = api.post(realm.iago, "users", new_user_params(realm, email=realm.othello.email))
    assert_json_error(response, "Email is already in use.", 400)


def test_create_user_with_email_of_another_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    # Addresses are unique per organization, not per server.
    other = seed_realm(services)
    params = new_user_params(realm, email=other.hamlet.email)
    assert assert_json_success(api.post(realm.iago, "users", params))["user_id"] != other.hamlet.id


@pytest.mark.parametrize("email", ["not-an-email", "@example.com", "a@b", "a b@example.com", "a@"])
def test_create_user_with_invalid_email(api: Api, realm: SeededRealm, email: str) -> None:
    response = api.post(realm.iago, "users", new_user_params(realm, email=email))
    assert_json_error(response, f"Invalid email '{email}'", 400)


@pytest.mark.parametrize(
    ("full_name", "message"),
    [
        ("", "Name too short!"),
        ("   ", "Name too short!"),
        ("x" * 101, "Name too long!"),
        ("a*b", "Invalid characters in name!"),
        ("Right\u202eto left", "Invalid characters in name!"),
        ("Zero\u200bwidth", "Invalid characters in name!"),
        ("Tab\there", "Invalid characters in name!"),
        ("Hamlet|42", "Invalid format!"),
    ],
)
def test_create_user_with_invalid_name(api: Api, realm: SeededRealm, full_name: str, message: str) -> None:
    response = api.post(realm.iago, "users", new_user_params(realm, full_name=full_name))
    assert_json_error(response, message, 400)


def test_create_user_with_empty_password(api: Api, realm: SeededRealm) -> None:
    response = api.post(realm.iago, "users", new_user_params(realm, password=""))
    assert_json_error(response, "Password cannot be empty", 400)


@pytest.mark.parametrize("missing", ["email", "password", "full_name"])
def test_create_user_missing_argument(api: Api, realm: SeededRealm, missing: str) -> None:
    params = new_user_params(realm)
    del params[missing]
    body = assert_json_error(
        api.post(realm.iago, "users", params),
        f"Missing '{missing}' argument",
        400,
        "REQUEST_VARIABLE_MISSING",
    )
    assert body["var_name"] == missing


def test_create_user_takes_the_realm_defaults(api: Api, realm: SeededRealm, services: Services) -> None:
    with services.db.session() as session, session.begin():
        defaults = session.get(RealmUserDefault, realm.id)
        assert defaults is not None
        defaults.emojiset = "text"
        defaults.enter_sends = True
        org = session.get(Realm, realm.id)
        assert org is not None
        org.default_language = "de"
    user_id = assert_json_success(api.post(realm.iago, "users", new_user_params(realm)))["user_id"]
    with services.db.session() as session:
        user = session.get(UserProfile, user_id)
        assert user is not None
        assert (user.emojiset, user.enter_sends, user.default_language) == ("text", True, "de")


def test_create_user_strips_the_name(api: Api, realm: SeededRealm) -> None:
    user_id = assert_json_success(
        api.post(realm.iago, "users", new_user_params(realm, full_name="  Spacey  "))
    )["user_id"]
    assert get_user(api, realm.iago, user_id)["full_name"] == "Spacey"


# PATCH /users/{user_id} -----------------------------------------------------------------


def test_update_full_name(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"full_name": "  Prince Hamlet "}))
    assert get_user(api, realm.othello, realm.hamlet.id)["full_name"] == "Prince Hamlet"
    ((event, recipients),) = person_updates(events, "full_name")
    assert event["person"] == {"user_id": realm.hamlet.id, "full_name": "Prince Hamlet"}
    assert sorted(recipients) == sorted(u.id for u in realm.users.values())


def test_update_full_name_unchanged_sends_nothing(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"full_name": "King Hamlet"}))
    assert events.published == []


def test_update_full_name_of_a_bot_tells_bot_watchers(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    assert_json_success(api.patch(realm.iago, f"users/{realm.default_bot.id}", {"full_name": "Renamed Bot"}))
    assert get_user(api, realm.othello, realm.default_bot.id)["full_name"] == "Renamed Bot"
    ((bot_event, bot_recipients),) = events.of_type("realm_bot", "update")
    assert bot_event["bot"] == {"user_id": realm.default_bot.id, "full_name": "Renamed Bot"}
    assert realm.hamlet.id in bot_recipients and realm.iago.id in bot_recipients
    assert realm.othello.id not in bot_recipients


@pytest.mark.parametrize(
    ("full_name", "message"),
    [
        ("", "Name too short!"),
        ("x" * 101, "Name too long!"),
        ('Say "hi"', "Invalid characters in name!"),
        ("Right\u202eto left", "Invalid characters in name!"),
        ("Zero\u200bwidth", "Invalid characters in name!"),
        ("Tab\there", "Invalid characters in name!"),
        ("Hamlet|42", "Invalid format!"),
    ],
)
def test_update_full_name_invalid(
    api: Api, realm: SeededRealm, events: EventRecorder, full_name: str, message: str
) -> None:
    assert_json_error(
        api.patch(realm.iago, f"users/{realm.hamlet.id}", {"full_name": full_name}), message, 400
    )
    assert get_user(api, realm.iago, realm.hamlet.id)["full_name"] == "King Hamlet"
    assert events.published == []


def test_update_deactivated_user(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    assert_json_success(api.patch(realm.iago, f"users/{realm.othello.id}", {"full_name": "Gone Moor"}))
    assert get_user(api, realm.iago, realm.othello.id)["full_name"] == "Gone Moor"


@pytest.mark.parametrize("name", ["shiva", "othello", "polonius", "default_bot"])
def test_update_user_requires_an_administrator(
    api: Api, realm: SeededRealm, events: EventRecorder, name: str
) -> None:
    response = api.patch(realm.users[name], f"users/{realm.hamlet.id}", {"full_name": "Hacked"})
    assert_json_error(response, ADMIN_REQUIRED, 400)
    assert get_user(api, realm.iago, realm.hamlet.id)["full_name"] == "King Hamlet"
    assert events.published == []


def test_update_unknown_user(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.patch(realm.iago, "users/999999999", {"full_name": "X"}), NO_SUCH_USER, 400)


def test_update_user_of_another_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    assert_json_error(
        api.patch(realm.desdemona, f"users/{other.hamlet.id}", {"full_name": "X"}), NO_SUCH_USER, 400
    )
    assert get_user(Api(api.client, other), other.iago, other.hamlet.id)["full_name"] == "King Hamlet"


def test_update_email_is_not_available(api: Api, realm: SeededRealm) -> None:
    response = api.patch(realm.desdemona, f"users/{realm.hamlet.id}", {"new_email": "x@example.com"})
    assert_json_error(response, "Email changes are not available on this server", 400)


def test_update_reports_unknown_parameters(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"is_admin": "true"}))
    assert body["ignored_parameters_unsupported"] == ["is_admin"]


def test_update_with_nothing_to_do(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}"))
    assert events.published == []


# Roles.


def role_of(api: Api, realm: SeededRealm, user: User) -> int:
    role: int = get_user(api, realm.iago, user.id)["role"]
    return role


@pytest.mark.parametrize("role", [200, 300, 400, 600])
def test_admin_changes_roles(api: Api, realm: SeededRealm, events: EventRecorder, role: int) -> None:
    start = 300 if role == 400 else 400
    target = realm.shiva if start == 300 else realm.hamlet
    assert_json_success(api.patch(realm.iago, f"users/{target.id}", {"role": role}))
    user = get_user(api, realm.othello, target.id)
    assert user["role"] == role
    assert user["is_admin"] == (role == 200)
    assert user["is_guest"] == (role == 600)
    ((event, recipients),) = person_updates(events, "role")
    assert event["person"] == {"user_id": target.id, "role": role}
    assert realm.othello.id in recipients
    # Role groups follow the role.
    assert events.of_type("user_group", "remove_members")
    assert events.of_type("user_group", "add_members")


def test_role_is_sent_as_json(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"role": "300"}))
    assert role_of(api, realm, realm.hamlet) == 300


def test_unchanged_role_sends_nothing(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"role": 400}))
    assert events.published == []


def test_changed_role_takes_effect_on_permissions(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.post(realm.hamlet, "users", new_user_params(realm)), ADMIN_REQUIRED, 400)
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"role": 200}))
    assert_json_success(api.post(realm.hamlet, "users", new_user_params(realm)))
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"role": 400}))
    assert_json_error(api.post(realm.hamlet, "users", new_user_params(realm, "other")), ADMIN_REQUIRED, 400)


@pytest.mark.parametrize("role", [0, 1, 150, 500, 700, -100])
def test_invalid_role(api: Api, realm: SeededRealm, events: EventRecorder, role: int) -> None:
    assert_json_error(
        api.patch(realm.desdemona, f"users/{realm.hamlet.id}", {"role": role}), "Invalid role", 400
    )
    assert role_of(api, realm, realm.hamlet) == 400
    assert events.published == []


@pytest.mark.parametrize("value", ["true", "4.5", "[400]", '"400"'])
def test_role_must_be_an_integer(api: Api, realm: SeededRealm, value: str) -> None:
    response = api.patch(realm.desdemona, f"users/{realm.hamlet.id}", {"role": value})
    body = assert_json_error(response, "role is not an integer", 400, "REQUEST_VARIABLE_INVALID")
    assert body["var_name"] == "role"
    assert role_of(api, realm, realm.hamlet) == 400


def test_role_must_be_json(api: Api, realm: SeededRealm) -> None:
    response = api.patch(realm.desdemona, f"users/{realm.hamlet.id}", {"role": "owner"})
    assert_json_error(response, 'Argument "role" is not valid JSON.', 400, "INVALID_JSON")


def test_admin_cannot_make_an_owner(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_error(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"role": 100}), OWNER_REQUIRED, 400)
    assert role_of(api, realm, realm.hamlet) == 400
    assert events.published == []


def test_admin_cannot_demote_an_owner(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.patch(realm.desdemona, f"users/{realm.hamlet.id}", {"role": 100}))
    assert_json_error(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"role": 400}), OWNER_REQUIRED, 400)
    assert role_of(api, realm, realm.hamlet) == 100


def test_owner_makes_and_unmakes_owners(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.patch(realm.desdemona, f"users/{realm.iago.id}", {"role": 100}))
    user = get_user(api, realm.othello, realm.iago.id)
    assert (user["role"], user["is_owner"], user["is_admin"]) == (100, True, True)
    # With a second owner, the first may step down.
    assert_json_success(api.patch(realm.iago, f"users/{realm.desdemona.id}", {"role": 200}))
    user = get_user(api, realm.othello, realm.desdemona.id)
    assert (user["role"], user["is_owner"], user["is_admin"]) == (200, False, True)


def test_last_owner_cannot_be_demoted(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    response = api.patch(realm.desdemona, f"users/{realm.desdemona.id}", {"role": 200})
    assert_json_error(
        response, "The owner permission cannot be removed from the only organization owner.", 400
    )
    assert role_of(api, realm, realm.desdemona) == 100
    assert events.published == []


def test_deactivated_owners_do_not_count(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.patch(realm.desdemona, f"users/{realm.iago.id}", {"role": 100}))
    assert_json_success(api.delete(realm.desdemona, f"users/{realm.iago.id}"))
    response = api.patch(realm.desdemona, f"users/{realm.desdemona.id}", {"role": 200})
    assert_json_error(
        response, "The owner permission cannot be removed from the only organization owner.", 400
    )


# Atomicity: one request applies entirely or not at all, and events leave only on commit.


def test_bad_role_leaves_full_name_unchanged(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    response = api.patch(realm.iago, f"users/{realm.hamlet.id}", {"full_name": "Renamed", "role": 700})
    assert_json_error(response, "Invalid role", 400)
    assert get_user(api, realm.iago, realm.hamlet.id)["full_name"] == "King Hamlet"
    assert events.published == []


def test_forbidden_role_leaves_full_name_unchanged(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    response = api.patch(realm.iago, f"users/{realm.hamlet.id}", {"full_name": "Renamed", "role": 100})
    assert_json_error(response, OWNER_REQUIRED, 400)
    assert get_user(api, realm.iago, realm.hamlet.id)["full_name"] == "King Hamlet"
    assert role_of(api, realm, realm.hamlet) == 400
    assert events.published == []


def test_bad_profile_data_leaves_name_and_role_unchanged(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    field_id = add_profile_field(services, realm, "Birthday", ProfileFieldType.DATE)
    params = {"full_name": "Renamed", "role": 300, "profile_data": [{"id": field_id, "value": "not a date"}]}
    assert_json_error(
        api.patch(realm.iago, f"users/{realm.hamlet.id}", params), "Birthday is not a date", 400
    )
    user = get_user(api, realm.iago, realm.hamlet.id, include_custom_profile_fields=True)
    assert (user["full_name"], user["role"], user["profile_data"]) == ("King Hamlet", 400, {})
    assert events.published == []


def test_all_parts_apply_together(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    field_id = add_profile_field(services, realm, "Birthday", ProfileFieldType.DATE)
    params = {"full_name": "Renamed", "role": 300, "profile_data": [{"id": field_id, "value": "1600-01-01"}]}
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", params))
    user = get_user(api, realm.iago, realm.hamlet.id, include_custom_profile_fields=True)
    assert (user["full_name"], user["role"]) == ("Renamed", 300)
    assert user["profile_data"] == {str(field_id): {"value": "1600-01-01"}}
    assert len(person_updates(events, "full_name")) == 1
    assert len(person_updates(events, "role")) == 1
    assert len(person_updates(events, "custom_profile_field")) == 1


# Custom profile data.


def set_profile(
    api: Api, realm: SeededRealm, data: list[dict[str, Any]], target: User | None = None
) -> httpx.Response:
    target = target or realm.hamlet
    return api.patch(realm.iago, f"users/{target.id}", {"profile_data": data})


def profile_of(api: Api, realm: SeededRealm, target: User | None = None) -> dict[str, Any]:
    target = target or realm.hamlet
    data: dict[str, Any] = get_user(api, realm.othello, target.id, include_custom_profile_fields=True)[
        "profile_data"
    ]
    return data


def test_profile_data_of_each_type(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    fields = {
        "short": add_profile_field(services, realm, "Phone"),
        "long": add_profile_field(services, realm, "Bio", ProfileFieldType.LONG_TEXT),
        "select": add_profile_field(
            services,
            realm,
            "Editor",
            ProfileFieldType.SELECT,
            '{"0": {"text": "Vim", "order": "1"}, "1": {"text": "Emacs", "order": "2"}}',
        ),
        "date": add_profile_field(services, realm, "Birthday", ProfileFieldType.DATE),
        "url": add_profile_field(services, realm, "Blog", ProfileFieldType.URL),
        "user": add_profile_field(services, realm, "Mentor", ProfileFieldType.USER),
        "pronouns": add_profile_field(services, realm, "Pronouns", ProfileFieldType.PRONOUNS),
    }
    values: dict[str, Any] = {
        "short": "+1 555",
        "long": "**Prince** of Denmark",
        "select": "1",
        "date": "1600-01-01",
        "url": "https://example.com/hamlet",
        "user": [realm.othello.id, realm.iago.id],
        "pronouns": "he/him",
    }
    data = [{"id": fields[k], "value": v} for k, v in values.items()]
    assert_json_success(set_profile(api, realm, data))

    assert profile_of(api, realm) == {
        str(fields["short"]): {"value": "+1 555", "rendered_value": "<p>+1 555</p>"},
        str(fields["long"]): {
            "value": "**Prince** of Denmark",
            "rendered_value": "<p><strong>Prince</strong> of Denmark</p>",
        },
        str(fields["select"]): {"value": "1"},
        str(fields["date"]): {"value": "1600-01-01"},
        str(fields["url"]): {"value": "https://example.com/hamlet"},
        str(fields["user"]): {"value": f"[{realm.othello.id}, {realm.iago.id}]".replace(" ", "")},
        str(fields["pronouns"]): {"value": "he/him"},
    }
    updates = person_updates(events, "custom_profile_field")
    assert len(updates) == len(fields)
    by_field = {e["person"]["custom_profile_field"]["id"]: e["person"] for e, _ in updates}
    assert by_field[fields["long"]] == {
        "user_id": realm.hamlet.id,
        "custom_profile_field": {
            "id": fields["long"],
            "value": "**Prince** of Denmark",
            "rendered_value": "<p><strong>Prince</strong> of Denmark</p>",
        },
    }
    assert by_field[fields["date"]]["custom_profile_field"] == {"id": fields["date"], "value": "1600-01-01"}
    for _, recipients in updates:
        assert realm.othello.id in recipients


def test_profile_data_update_and_clear(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    field_id = add_profile_field(services, realm, "Phone")
    assert_json_success(set_profile(api, realm, [{"id": field_id, "value": "1"}]))
    assert_json_success(set_profile(api, realm, [{"id": field_id, "value": "2"}]))
    assert profile_of(api, realm)[str(field_id)]["value"] == "2"

    events.clear()
    assert_json_success(set_profile(api, realm, [{"id": field_id, "value": "2"}]))
    assert events.published == []

    assert_json_success(set_profile(api, realm, [{"id": field_id, "value": None}]))
    assert profile_of(api, realm) == {}
    ((event, _),) = person_updates(events, "custom_profile_field")
    assert event["person"]["custom_profile_field"] == {"id": field_id, "value": None}

    events.clear()
    assert_json_success(set_profile(api, realm, [{"id": field_id, "value": ""}]))
    assert events.published == []
    assert_json_success(set_profile(api, realm, [{"id": field_id, "value": "3"}]))
    assert_json_success(set_profile(api, realm, [{"id": field_id, "value": ""}]))
    assert profile_of(api, realm) == {}


def test_profile_data_of_one_user_is_not_another(api: Api, realm: SeededRealm, services: Services) -> None:
    field_id = add_profile_field(services, realm, "Phone")
    assert_json_success(set_profile(api, realm, [{"id": field_id, "value": "1"}]))
    assert_json_success(set_profile(api, realm, [{"id": field_id, "value": "2"}], realm.cordelia))
    assert profile_of(api, realm)[str(field_id)]["value"] == "1"
    assert profile_of(api, realm, realm.cordelia)[str(field_id)]["value"] == "2"


def test_profile_field_of_another_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    field_id = add_profile_field(services, other, "Phone")
    assert_json_error(
        set_profile(api, realm, [{"id": field_id, "value": "1"}]), f"Field id {field_id} not found.", 400
    )


def test_unknown_profile_field(api: Api, realm: SeededRealm) -> None:
    assert_json_error(
        set_profile(api, realm, [{"id": 999999999, "value": "1"}]), "Field id 999999999 not found.", 400
    )


@pytest.mark.parametrize(
    ("field_type", "field_data", "value", "message"),
    [
        (ProfileFieldType.SHORT_TEXT, "", "x" * 51, "F is too long (limit: 50 characters)"),
        (ProfileFieldType.LONG_TEXT, "", "x" * 501, "F is too long (limit: 500 characters)"),
        (ProfileFieldType.SHORT_TEXT, "", [1], "F is not a string"),
        (
            ProfileFieldType.SELECT,
            '{"0": {"text": "A", "order": "1"}}',
            "7",
            "'7' is not a valid choice for 'F'.",
        ),
        (ProfileFieldType.PRONOUNS, "", "x" * 51, "F is too long (limit: 50 characters)"),
        (ProfileFieldType.EXTERNAL_ACCOUNT, "", "x" * 51, "F is too long (limit: 50 characters)"),
        (ProfileFieldType.DATE, "", "31/12/1999", "F is not a date"),
        (ProfileFieldType.DATE, "", "19991231", "F is not a date"),
        (ProfileFieldType.DATE, "", "1999-W52-5", "F is not a date"),
        (ProfileFieldType.DATE, "", "1999-02-30", "F is not a date"),
        (ProfileFieldType.URL, "", "javascript:alert(1)", "F is not a URL"),
        (ProfileFieldType.URL, "", "https://", "F is not a URL"),
        (ProfileFieldType.URL, "", "https://exa mple.com", "F is not a URL"),
        (ProfileFieldType.USER, "", "5", "F is not a list"),
        (ProfileFieldType.USER, "", [999999999], "Invalid user ID: 999999999"),
        (ProfileFieldType.USER, "", [3_000_000_000], "Invalid user ID: 3000000000"),
    ],
)
def test_invalid_profile_values(
    api: Api,
    realm: SeededRealm,
    services: Services,
    events: EventRecorder,
    field_type: ProfileFieldType,
    field_data: str,
    value: Any,
    message: str,
) -> None:
    field_id = add_profile_field(services, realm, "F", field_type, field_data)
    assert_json_error(set_profile(api, realm, [{"id": field_id, "value": value}]), message, 400)
    assert profile_of(api, realm) == {}
    assert events.published == []


def test_profile_values_at_the_length_limit(api: Api, realm: SeededRealm, services: Services) -> None:
    short = add_profile_field(services, realm, "Short")
    long = add_profile_field(services, realm, "Long", ProfileFieldType.LONG_TEXT)
    data = [{"id": short, "value": "x" * 50}, {"id": long, "value": "y" * 500}]
    assert_json_success(set_profile(api, realm, data))
    assert profile_of(api, realm)[str(long)]["value"] == "y" * 500


def test_user_field_rejects_users_of_another_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    field_id = add_profile_field(services, realm, "Mentor", ProfileFieldType.USER)
    response = set_profile(api, realm, [{"id": field_id, "value": [other.hamlet.id]}])
    assert_json_error(response, f"Invalid user ID: {other.hamlet.id}", 400)


@pytest.mark.parametrize(
    "value",
    ['{"id": 1, "value": "x"}', '[{"value": "x"}]', '[{"id": 1, "value": "x", "extra": 1}]', "[5]"],
)
def test_profile_data_shape(api: Api, realm: SeededRealm, value: str) -> None:
    response = api.patch(realm.iago, f"users/{realm.hamlet.id}", {"profile_data": value})
    body = response.json()
    assert response.status_code == 400, body
    assert body["code"] == "REQUEST_VARIABLE_INVALID"
    assert body["var_name"] == "profile_data"


# DELETE /users/{user_id} ----------------------------------------------------------------


def test_deactivate_user(api: Api, realm: SeededRealm, services: Services, events: EventRecorder) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    assert get_user(api, realm.hamlet, realm.othello.id)["is_active"] is False
    assert not is_active_in_db(services, realm.othello.id)
    ((event, recipients),) = person_updates(events, "is_active")
    assert event["person"] == {"user_id": realm.othello.id, "is_active": False}
    assert {realm.hamlet.id, realm.iago.id, realm.polonius.id} <= set(recipients)


def test_deactivated_user_cannot_use_the_api(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    for path in ("users/me", "users", f"users/{realm.hamlet.id}"):
        assert_json_error(api.get(realm.othello, path), DEACTIVATED, 401, "USER_DEACTIVATED")
    assert_json_error(api.patch(realm.othello, "settings", {"enter_sends": True}), DEACTIVATED, 401)


def test_deactivating_a_user_deactivates_their_bots(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.hamlet.id}"))
    assert get_user(api, realm.othello, realm.default_bot.id)["is_active"] is False
    assert_json_error(api.get(realm.default_bot, "users/me"), DEACTIVATED, 401, "USER_DEACTIVATED")
    deactivated = {e["person"]["user_id"] for e, _ in person_updates(events, "is_active")}
    assert deactivated == {realm.hamlet.id, realm.default_bot.id}
    ((bot_event, _),) = events.of_type("realm_bot", "update")
    assert bot_event["bot"] == {"user_id": realm.default_bot.id, "is_active": False}


def test_reactivating_a_user_leaves_their_bots_deactivated(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.hamlet.id}"))
    assert_json_success(api.post(realm.iago, f"users/{realm.hamlet.id}/reactivate"))
    assert get_user(api, realm.othello, realm.default_bot.id)["is_active"] is False
    assert_json_success(api.post(realm.iago, f"users/{realm.default_bot.id}/reactivate"))
    assert assert_json_success(api.get(realm.default_bot, "users/me"))["is_active"] is True


@pytest.mark.parametrize("name", ["shiva", "othello", "polonius", "default_bot"])
def test_deactivate_requires_an_administrator(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder, name: str
) -> None:
    assert_json_error(api.delete(realm.users[name], f"users/{realm.cordelia.id}"), ADMIN_REQUIRED, 400)
    assert is_active_in_db(services, realm.cordelia.id)
    assert events.published == []


def test_admin_cannot_deactivate_an_owner(api: Api, realm: SeededRealm, services: Services) -> None:
    assert_json_error(api.delete(realm.iago, f"users/{realm.desdemona.id}"), OWNER_REQUIRED, 400)
    assert is_active_in_db(services, realm.desdemona.id)


def test_admin_deactivates_an_admin(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.patch(realm.desdemona, f"users/{realm.hamlet.id}", {"role": 200}))
    assert_json_success(api.delete(realm.iago, f"users/{realm.hamlet.id}"))


def test_cannot_deactivate_the_only_owner(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    response = api.delete(realm.desdemona, f"users/{realm.desdemona.id}")
    assert_json_error(response, "Cannot deactivate the only organization owner", 400, "BAD_REQUEST")
    assert is_active_in_db(services, realm.desdemona.id)
    assert events.published == []


def test_owner_deactivates_another_owner(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.patch(realm.desdemona, f"users/{realm.iago.id}", {"role": 100}))
    assert_json_success(api.delete(realm.desdemona, f"users/{realm.iago.id}"))
    assert get_user(api, realm.desdemona, realm.iago.id)["is_active"] is False


def test_deactivate_a_bot_through_users_is_refused(api: Api, realm: SeededRealm, services: Services) -> None:
    assert_json_error(api.delete(realm.iago, f"users/{realm.default_bot.id}"), NO_SUCH_USER, 400)
    assert is_active_in_db(services, realm.default_bot.id)


def test_deactivate_unknown_user(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.delete(realm.iago, "users/999999999"), NO_SUCH_USER, 400)


def test_deactivate_user_of_another_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    assert_json_error(api.delete(realm.desdemona, f"users/{other.hamlet.id}"), NO_SUCH_USER, 400)
    assert is_active_in_db(services, other.hamlet.id)


def test_deactivate_twice(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    events.clear()
    assert_json_error(api.delete(realm.iago, f"users/{realm.othello.id}"), "User is deactivated", 400)
    assert events.published == []


def test_deactivation_notification_comment(api: Api, realm: SeededRealm) -> None:
    response = api.delete(
        realm.iago, f"users/{realm.othello.id}", {"deactivation_notification_comment": "x" * 2001}
    )
    assert_json_error(response, "deactivation_notification_comment is too long (limit: 2000 characters)", 400)
    response = api.delete(
        realm.iago, f"users/{realm.othello.id}", {"deactivation_notification_comment": "Farewell!"}
    )
    assert_json_success(response)


# DELETE /users/me -----------------------------------------------------------------------


def test_deactivate_own_account(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.delete(realm.othello, "users/me"))
    assert get_user(api, realm.iago, realm.othello.id)["is_active"] is False
    assert_json_error(api.get(realm.othello, "users/me"), DEACTIVATED, 401, "USER_DEACTIVATED")
    ((event, _),) = person_updates(events, "is_active")
    assert event["person"] == {"user_id": realm.othello.id, "is_active": False}


def test_deactivate_own_account_deactivates_own_bots(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.hamlet, "users/me"))
    assert get_user(api, realm.iago, realm.default_bot.id)["is_active"] is False


def test_guest_and_admin_may_leave(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.polonius, "users/me"))
    assert_json_success(api.delete(realm.iago, "users/me"))


def test_only_owner_cannot_leave(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    body = assert_json_error(
        api.delete(realm.desdemona, "users/me"),
        "Cannot deactivate the only organization owner",
        400,
        "CANNOT_DEACTIVATE_LAST_USER",
    )
    assert body["is_last_owner"] is True
    assert body["entity"] == "organization owner"
    assert is_active_in_db(services, realm.desdemona.id)
    assert events.published == []


def test_owner_may_leave_when_another_owner_remains(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.patch(realm.desdemona, f"users/{realm.iago.id}", {"role": 100}))
    assert_json_success(api.delete(realm.desdemona, "users/me"))
    assert get_user(api, realm.iago, realm.desdemona.id)["is_active"] is False


def test_only_user_cannot_leave(api: Api, realm: SeededRealm) -> None:
    for user in realm.users.values():
        if user.id != realm.desdemona.id and not user.is_bot:
            assert_json_success(api.delete(realm.desdemona, f"users/{user.id}"))
    body = assert_json_error(
        api.delete(realm.desdemona, "users/me"),
        "Cannot deactivate the only user",
        400,
        "CANNOT_DEACTIVATE_LAST_USER",
    )
    assert body["is_last_owner"] is False
    assert body["entity"] == "user"


# POST /users/{user_id}/reactivate -------------------------------------------------------


def test_reactivate_user(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    events.clear()
    assert_json_success(api.post(realm.iago, f"users/{realm.othello.id}/reactivate"))
    assert get_user(api, realm.hamlet, realm.othello.id)["is_active"] is True
    assert assert_json_success(api.get(realm.othello, "users/me"))["is_active"] is True
    ((event, recipients),) = person_updates(events, "is_active")
    assert event["person"] == {"user_id": realm.othello.id, "is_active": True}
    assert realm.othello.id in recipients and realm.hamlet.id in recipients


def test_reactivate_active_user(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_error(
        api.post(realm.iago, f"users/{realm.othello.id}/reactivate"), "User is already active", 400
    )
    assert events.published == []


@pytest.mark.parametrize("name", ["shiva", "hamlet", "polonius"])
def test_reactivate_requires_an_administrator(
    api: Api, realm: SeededRealm, services: Services, name: str
) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    response = api.post(realm.users[name], f"users/{realm.othello.id}/reactivate")
    assert_json_error(response, ADMIN_REQUIRED, 400)
    assert not is_active_in_db(services, realm.othello.id)


def test_reactivate_unknown_user(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.post(realm.iago, "users/999999999/reactivate"), NO_SUCH_USER, 400)


def test_reactivate_user_of_another_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    Api(api.client, other).delete(other.iago, f"users/{other.othello.id}")
    assert_json_error(api.post(realm.desdemona, f"users/{other.othello.id}/reactivate"), NO_SUCH_USER, 400)
    assert not is_active_in_db(services, other.othello.id)


def test_reactivate_bot_of_a_deactivated_owner(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.delete(realm.iago, f"users/{realm.hamlet.id}"))
    response = api.post(realm.iago, f"users/{realm.default_bot.id}/reactivate")
    assert_json_error(response, "Cannot reactivate bot whose owner is deactivated", 400)


# Organizations are isolated --------------------------------------------------------------


def test_user_cannot_authenticate_on_another_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    other = Api(api.client, seed_realm(services))
    for path in ("users", "users/me", f"users/{realm.hamlet.id}"):
        assert_json_error(
            other.get(realm.hamlet, path),
            "Account is not associated with this subdomain",
            401,
            "UNAUTHORIZED",
        )
    response = other.patch(realm.hamlet, "settings", {"full_name": "Intruder"})
    assert_json_error(response, "Account is not associated with this subdomain", 401)
    assert get_user(api, realm.iago, realm.hamlet.id)["full_name"] == "King Hamlet"


def test_user_sees_only_their_own_realm(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    mine = members(api, realm.hamlet)
    theirs = members(Api(api.client, other), other.hamlet)
    assert set(mine) == {u.id for u in realm.users.values()}
    assert set(theirs) == {u.id for u in other.users.values()}
    assert not set(mine) & set(theirs)


def test_spectators_see_only_the_realm_of_the_host(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    update_realm(services, realm.id, enable_spectator_access=True)
    assert set(members(api, None)) == {u.id for u in realm.users.values()}
    response = Api(api.client, other).get(None, "users")
    assert_json_error(response, "Not logged in: API authentication or user session required", 401)


def test_password_of_seeded_users(api: Api, realm: SeededRealm) -> None:
    # Guards the fixtures the other tests rely on.
    response = api.post(None, "fetch_api_key", {"username": realm.hamlet.email, "password": PASSWORD})
    assert assert_json_success(response)["user_id"] == realm.hamlet.id


# Guests limited to the users they share a conversation with -------------------------------


def restrict_guests(services: Services, realm: SeededRealm) -> None:
    with services.db.session() as session, session.begin():
        members_group = get_system_groups(session, realm.id)["role:members"]
        org = session.get(Realm, realm.id)
        assert org is not None
        org.can_access_all_users_group = members_group.id


def test_restricted_guest_sees_only_self_and_bots(api: Api, realm: SeededRealm, services: Services) -> None:
    restrict_guests(services, realm)
    assert set(members(api, realm.polonius)) == {realm.polonius.id, realm.default_bot.id}
    assert_json_error(api.get(realm.polonius, f"users/{realm.hamlet.id}"), NO_SUCH_USER, 400)
    assert_json_error(api.get(realm.polonius, f"users/{realm.hamlet.email}"), NO_SUCH_USER, 400)
    response = api.get(realm.polonius, "users", {"user_ids": [realm.hamlet.id]})
    assert_json_error(response, f"Invalid user ID: {realm.hamlet.id}", 400)
    assert get_user(api, realm.polonius, realm.default_bot.id)["user_id"] == realm.default_bot.id
    # Members still see everyone, the guest included.
    assert set(members(api, realm.hamlet)) == {u.id for u in realm.users.values()}


def test_restricted_guest_hears_nothing_of_users_they_cannot_see(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    restrict_guests(services, realm)
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"full_name": "Prince Hamlet"}))
    assert_json_success(api.patch(realm.hamlet, "settings", {"timezone": "Europe/Copenhagen"}))
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    user_id = assert_json_success(api.post(realm.iago, "users", new_user_params(realm)))["user_id"]
    told: dict[int, set[int]] = {}
    for event, recipients in events.of_type("realm_user"):
        told.setdefault(event["person"]["user_id"], set()).update(recipients)
    assert set(told) == {realm.hamlet.id, realm.othello.id, user_id}
    for told_ids in told.values():
        assert realm.polonius.id not in told_ids
        assert realm.cordelia.id in told_ids


def test_restricted_guest_hears_of_status_changes_only_from_users_they_can_see(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    # A status change writes no user row, so its audience comes from the cached users (the
    # name changes above read it inside their transaction): both must leave the guest out.
    restrict_guests(services, realm)
    with services.db.session() as session:
        realm_cache.realm_users(session, realm.id)
    assert services.db.realm_state.peek(realm.id, USERS) is not None
    dm = {"type": "direct", "to": f"[{realm.polonius.id}]", "content": "hello"}
    assert_json_success(api.post(realm.othello, "messages", dm))
    for user in (realm.hamlet, realm.othello):
        assert_json_success(api.post(user, "users/me/status", {"status_text": "on a boat"}))
    told = {event["user_id"]: set(recipients) for event, recipients in events.of_type("user_status")}
    assert realm.polonius.id not in told[realm.hamlet.id]
    assert realm.polonius.id in told[realm.othello.id]  # they share a conversation
    for recipients in told.values():
        assert {realm.cordelia.id, realm.iago.id} <= recipients


def test_restricted_guest_hears_of_bots_and_self(
    api: Api, realm: SeededRealm, services: Services, events: EventRecorder
) -> None:
    restrict_guests(services, realm)
    assert_json_success(api.patch(realm.iago, f"users/{realm.default_bot.id}", {"full_name": "Renamed Bot"}))
    assert_json_success(api.patch(realm.polonius, "settings", {"full_name": "Lord Polonius"}))
    names = {e["person"]["user_id"]: r for e, r in person_updates(events, "full_name")}
    assert realm.polonius.id in names[realm.default_bot.id]
    assert realm.polonius.id in names[realm.polonius.id]
    assert realm.hamlet.id in names[realm.polonius.id]


def test_events_leave_only_after_commit(api: Api, realm: SeededRealm, services: Services) -> None:
    # A listener that reads the database as the event arrives sees the change committed.
    seen: list[str] = []

    def listener(realm_id: int, event: dict[str, Any], user_ids: Any) -> None:
        if event["type"] == "realm_user" and "full_name" in event.get("person", {}):
            with services.db.session() as session:
                user = session.get(UserProfile, event["person"]["user_id"])
                assert user is not None
                seen.append(user.full_name)

    services.bus.add_listener(listener)
    try:
        assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"full_name": "Prince Hamlet"}))
        assert_json_success(api.patch(realm.othello, "settings", {"full_name": "The Moor"}))
    finally:
        services.bus.remove_listener(listener)
    assert seen == ["Prince Hamlet", "The Moor"]


def test_role_change_of_deactivated_user_sends_no_group_events(
    api: Api, realm: SeededRealm, events: EventRecorder
) -> None:
    # Clients removed the user from every group at deactivation; adding them back to role
    # groups now would leave replayed state different from a fresh /register.
    assert_json_success(api.delete(realm.iago, f"users/{realm.othello.id}"))
    events.clear()
    assert_json_success(api.patch(realm.iago, f"users/{realm.othello.id}", {"role": 300}))
    assert events.of_type("user_group") == []
    assert len(events.of_type("realm_user", "update")) == 1
    # Reactivation announces the groups of the role the user has now.
    assert_json_success(api.post(realm.iago, f"users/{realm.othello.id}/reactivate"))
    groups = assert_json_success(api.get(realm.iago, "user_groups"))["user_groups"]
    moderators = next(g for g in groups if g["name"] == "role:moderators")
    added = [e["group_id"] for e, _ in events.of_type("user_group", "add_members")]
    assert moderators["id"] in added
