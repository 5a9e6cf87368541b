"""Code playgrounds: POST /realm/playgrounds, DELETE /realm/playgrounds/{id}, /register."""

from __future__ import annotations

from typing import Any

import pytest

from tests import helpers
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

PYTHON = {
    "name": "Python playground",
    "pygments_language": "Python",
    "url_template": "https://py.example/?c={code}",
}


def playgrounds(api: Api, user: helpers.TestUser) -> list[dict[str, Any]]:
    state = assert_json_success(api.post(user, "register", {"fetch_event_types": ["realm_playgrounds"]}))
    result: list[dict[str, Any]] = state["realm_playgrounds"]
    return result


def test_add_list_remove(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    first = assert_json_success(api.post(realm.iago, "realm/playgrounds", PYTHON))["id"]
    second = assert_json_success(
        api.post(
            realm.desdemona,
            "realm/playgrounds",
            {"name": " Rust ", "pygments_language": "Rust", "url_template": "https://rs.example{#code}"},
        )
    )["id"]
    expected = [
        {"id": first, **PYTHON},
        {
            "id": second,
            "name": "Rust",
            "pygments_language": "Rust",
            "url_template": "https://rs.example{#code}",
        },
    ]
    assert playgrounds(api, realm.polonius) == expected

    updates = events.of_type("realm_playgrounds")
    assert len(updates) == 2
    event, users = updates[-1]
    assert event["realm_playgrounds"] == expected
    everyone = sorted(u.id for u in realm.users.values())
    assert users == everyone

    events.clear()
    assert_json_success(api.delete(realm.iago, f"realm/playgrounds/{first}"))
    assert playgrounds(api, realm.hamlet) == expected[1:]
    [(event, users)] = events.of_type("realm_playgrounds")
    assert event["realm_playgrounds"] == expected[1:]
    assert users == everyone


@pytest.mark.parametrize("user", ["shiva", "hamlet", "polonius", "default_bot"])
def test_non_admins_cannot_add_or_remove(
    api: Api, realm: SeededRealm, events: EventRecorder, user: str
) -> None:
    playground_id = assert_json_success(api.post(realm.iago, "realm/playgrounds", PYTHON))["id"]
    events.clear()
    actor = realm.users[user]
    assert_json_error(api.post(actor, "realm/playgrounds", PYTHON), "Must be an organization administrator")
    assert_json_error(
        api.delete(actor, f"realm/playgrounds/{playground_id}"), "Must be an organization administrator"
    )
    assert events.published == []


@pytest.mark.parametrize(
    ("changes", "msg"),
    [
        ({"url_template": "https://py.example/?c={code"}, "Invalid URL template."),
        ({"url_template": "https://py.example/ {code}"}, "Invalid URL template."),
        ({"url_template": "https://py.example/{=code}"}, "Invalid URL template."),
        ({"url_template": "https://py.example/{code:3}"}, "Invalid URL template."),
        ({"url_template": "https://py.example/%zz{code}"}, "Invalid URL template."),
        ({"url_template": "https://py.example/}{code}"}, "Invalid URL template."),
        (
            {"url_template": "https://py.example/"},
            '"code" should be the only variable present in the URL template',
        ),
        (
            {"url_template": "https://x/{code}{lang}"},
            '"code" should be the only variable present in the URL template',
        ),
        (
            {"url_template": "https://x/{code,code}"},
            '"code" should be the only variable present in the URL template',
        ),
        (
            {"url_template": "https://x/{source}"},
            '"code" should be the only variable present in the URL template',
        ),
        ({"name": "  "}, "Name cannot be blank."),
        ({"name": "n" * 61}, "name is too long (limit: 60 characters)"),
        ({"pygments_language": ""}, "Pygments language cannot be blank."),
        ({"pygments_language": "py<script>"}, "Invalid characters in pygments language"),
        ({"pygments_language": "p" * 41}, "pygments_language is too long (limit: 40 characters)"),
    ],
)
def test_add_errors(
    api: Api, realm: SeededRealm, events: EventRecorder, changes: dict[str, str], msg: str
) -> None:
    assert_json_error(api.post(realm.iago, "realm/playgrounds", {**PYTHON, **changes}), msg)
    assert playgrounds(api, realm.iago) == []
    assert events.of_type("realm_playgrounds") == []


@pytest.mark.parametrize("missing", ["name", "pygments_language", "url_template"])
def test_missing_arguments(api: Api, realm: SeededRealm, missing: str) -> None:
    data = {k: v for k, v in PYTHON.items() if k != missing}
    assert_json_error(api.post(realm.iago, "realm/playgrounds", data), f"Missing '{missing}' argument")


def test_duplicate_and_variants(api: Api, realm: SeededRealm) -> None:
    assert_json_success(api.post(realm.iago, "realm/playgrounds", PYTHON))
    assert_json_error(
        api.post(realm.iago, "realm/playgrounds", PYTHON),
        "Realm playground with this Realm, Pygments language and Name already exists.",
    )
    # Same name for another language, or another name for the same language, are fine.
    assert_json_success(api.post(realm.iago, "realm/playgrounds", {**PYTHON, "pygments_language": "Python3"}))
    assert_json_success(api.post(realm.iago, "realm/playgrounds", {**PYTHON, "name": "Other"}))
    assert len(playgrounds(api, realm.iago)) == 3


def test_remove_unknown(api: Api, realm: SeededRealm, client: Any, services: Any) -> None:
    from tests.helpers import seed_realm

    other = Api(client, seed_realm(services))
    foreign = assert_json_success(other.post(other.realm.iago, "realm/playgrounds", PYTHON))["id"]
    for playground_id in (foreign, 0, 2**31, 2**62):
        assert_json_error(api.delete(realm.iago, f"realm/playgrounds/{playground_id}"), "Invalid playground")
    assert len(playgrounds(other, other.realm.iago)) == 1
