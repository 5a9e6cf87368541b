"""GET /realm/profile_fields."""

from __future__ import annotations

from typing import Any

import pytest

from palaver.models import CustomProfileField, ProfileFieldType
from palaver.services import Services
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success, seed_realm

# display_in_profile_summary is present only when true.
FIELD_KEYS = {"id", "type", "order", "name", "hint", "field_data", "required", "editable_by_user"}
EDITOR_CHOICES = '{"0": {"text": "Vim", "order": "1"}, "1": {"text": "Emacs", "order": "2"}}'


def add_field(services: Services, realm_id: int, name: str, **values: Any) -> int:
    with services.db.session() as session, session.begin():
        field = CustomProfileField(realm_id=realm_id, name=name, **values)
        session.add(field)
        session.flush()
        return field.id


def fields(api: Api, realm: SeededRealm, viewer_name: str = "hamlet") -> list[dict[str, Any]]:
    body = assert_json_success(api.get(realm.users[viewer_name], "realm/profile_fields"))
    assert set(body) == {"result", "msg", "custom_fields"}
    found: list[dict[str, Any]] = body["custom_fields"]
    return found


def test_no_fields(api: Api, realm: SeededRealm) -> None:
    assert fields(api, realm) == []


def test_fields_are_described(api: Api, realm: SeededRealm, services: Services) -> None:
    phone = add_field(services, realm.id, "Phone number", order=1, required=True, editable_by_user=False)
    editor = add_field(
        services,
        realm.id,
        "Favorite editor",
        field_type=ProfileFieldType.SELECT,
        field_data=EDITOR_CHOICES,
        hint="Pick one",
        order=2,
        display_in_profile_summary=True,
    )
    found = fields(api, realm)
    assert found == [
        {
            "id": phone,
            "type": 1,
            "order": 1,
            "name": "Phone number",
            "hint": "",
            "field_data": "",
            "required": True,
            "editable_by_user": False,
        },
        {
            "id": editor,
            "type": 3,
            "order": 2,
            "name": "Favorite editor",
            "hint": "Pick one",
            "field_data": EDITOR_CHOICES,
            "display_in_profile_summary": True,
            "required": False,
            "editable_by_user": True,
        },
    ]


def test_display_in_profile_summary_only_when_true(api: Api, realm: SeededRealm, services: Services) -> None:
    add_field(services, realm.id, "Shown", display_in_profile_summary=True)
    add_field(services, realm.id, "Not shown", display_in_profile_summary=False)
    by_name = {f["name"]: f for f in fields(api, realm)}
    assert by_name["Shown"]["display_in_profile_summary"] is True
    assert set(by_name["Shown"]) == FIELD_KEYS | {"display_in_profile_summary"}
    assert set(by_name["Not shown"]) == FIELD_KEYS


def test_every_field_type(api: Api, realm: SeededRealm, services: Services) -> None:
    for field_type in ProfileFieldType:
        add_field(services, realm.id, field_type.name.title(), field_type=field_type, order=int(field_type))
    found = fields(api, realm)
    assert [f["type"] for f in found] == [1, 2, 3, 4, 5, 6, 7, 8]
    for field in found:
        assert set(field) == FIELD_KEYS


def test_fields_come_in_display_order(api: Api, realm: SeededRealm, services: Services) -> None:
    third = add_field(services, realm.id, "Third", order=3)
    first = add_field(services, realm.id, "First", order=1)
    second_a = add_field(services, realm.id, "Second A", order=2)
    second_b = add_field(services, realm.id, "Second B", order=2)
    assert [f["id"] for f in fields(api, realm)] == [first, second_a, second_b, third]


def test_fields_of_another_realm_are_not_listed(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services)
    mine = add_field(services, realm.id, "Mine")
    theirs = add_field(services, other.id, "Theirs")
    assert [f["id"] for f in fields(api, realm)] == [mine]
    assert [f["id"] for f in fields(Api(api.client, other), other)] == [theirs]


@pytest.mark.parametrize("viewer", ["desdemona", "iago", "shiva", "hamlet", "polonius", "default_bot"])
def test_everyone_in_the_realm_may_read_them(
    api: Api, realm: SeededRealm, services: Services, viewer: str
) -> None:
    field_id = add_field(services, realm.id, "Phone")
    assert [f["id"] for f in fields(api, realm, viewer)] == [field_id]


def test_requires_authentication(api: Api, realm: SeededRealm) -> None:
    assert_json_error(
        api.get(None, "realm/profile_fields"),
        "Not logged in: API authentication or user session required",
        401,
        "UNAUTHORIZED",
    )


def test_unknown_parameters_are_reported(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.get(realm.hamlet, "realm/profile_fields", {"include": "all"}))
    assert body["ignored_parameters_unsupported"] == ["include"]


def test_values_appear_under_the_listed_ids(api: Api, realm: SeededRealm, services: Services) -> None:
    field_id = add_field(services, realm.id, "Phone")
    listed = fields(api, realm)[0]["id"]
    data = [{"id": listed, "value": "+45 1234"}]
    assert_json_success(api.patch(realm.iago, f"users/{realm.hamlet.id}", {"profile_data": data}))
    me = assert_json_success(api.get(realm.hamlet, "users/me"))
    assert me["profile_data"][str(field_id)]["value"] == "+45 1234"
