"""The per-test realm is a copy of a template seeded once: it must be what seeding makes.

Each seeded user registers in a realm made by the actions and in a copy; the two states
must be equal once IDs, string IDs, emails, API keys and times are written as names.
"""

from __future__ import annotations

import re
from typing import Any

from palaver.services import Services
from tests.client import TestClient
from tests.helpers import Api, SeededRealm, assert_json_success, seed_realm, seed_realm_through_actions

# Keys whose values differ between two realms made a moment apart.
_VOLATILE = frozenset(
    {"queue_id", "last_event_id", "server_timestamp", "realm_date_created", "date_created", "date_joined"}
)
_KEPT = frozenset({"custom_profile_field_types"})
# Keys whose integers are user or group IDs (in lists and group-setting objects too).
_ID_KEY = re.compile(r"(^|_)(id|ids|members|subgroups|owner)$|_groups?$|^can_")


def _normalized(value: Any, names: dict[int, str], realm: SeededRealm, key: str = "") -> Any:
    """``value`` with the realm's user and group IDs replaced by names, and its own strings
    (string ID, API keys, Gravatar hashes of its emails) by placeholders."""
    if key == "custom_profile_field_types":  # constants, whose "id"s are no realm's
        return value
    if isinstance(value, dict):
        return {
            k: "<volatile>"
            if k in _VOLATILE
            else _normalized(item, names, realm, k if _ID_KEY.search(k) or k in _KEPT else "")
            for k, item in value.items()
        }
    if isinstance(value, list):
        return [_normalized(item, names, realm, key) for item in value]
    if isinstance(value, int) and not isinstance(value, bool) and key:
        return names.get(value, value)
    if isinstance(value, str):
        replaced = value.replace(realm.string_id, "<realm>")
        for user in realm.users.values():
            replaced = replaced.replace(user.api_key, "<api_key>")
        replaced = re.sub(r"/avatar/[0-9a-f]{32}", "/avatar/<hash>", replaced)
        return re.sub(r"user\d+@", "user<id>@", replaced)
    return value


def _register_state(client: TestClient, realm: SeededRealm, services: Services) -> dict[str, Any]:
    api = Api(client, realm)
    names: dict[int, str] = {user.id: f"user:{short}" for short, user in realm.users.items()}
    names[realm.id] = "realm"
    states = {}
    for short, user in realm.users.items():
        state = assert_json_success(api.post(user, "register", {}))
        for group in state.get("realm_user_groups", []):
            names[group["id"]] = f"group:{group['name']}"
        states[short] = state
    return {short: _normalized(state, names, realm) for short, state in states.items()}


def test_a_copied_realm_registers_like_a_seeded_one(client: TestClient, services: Services) -> None:
    seeded = seed_realm_through_actions(services)
    copied = seed_realm(services)
    assert copied.id != seeded.id and copied.string_id != seeded.string_id
    assert list(copied.users) == list(seeded.users)
    for short, user in seeded.users.items():
        twin = copied.users[short]
        assert (twin.full_name, twin.role, twin.is_bot) == (user.full_name, user.role, user.is_bot)
        assert twin.id != user.id and twin.api_key != user.api_key
        assert twin.email == user.email.replace(seeded.string_id, copied.string_id)
    assert _register_state(client, copied, services) == _register_state(client, seeded, services)


def test_copies_are_independent(api: Api, realm: SeededRealm, services: Services) -> None:
    other = seed_realm(services, name="Other Org")
    assert other.id != realm.id
    assert not {u.id for u in other.users.values()} & {u.id for u in realm.users.values()}
    assert_json_success(api.patch(realm.iago, "realm", {"name": "Renamed"}))
    other_api = Api(api.client, other)
    settings = assert_json_success(other_api.post(other.iago, "register", {"fetch_event_types": ["realm"]}))
    assert settings["realm_name"] == "Other Org"
    # The copy's users log in with the seeded password, and their API keys are their own.
    body = assert_json_success(
        other_api.post(
            None, "fetch_api_key", {"username": other.hamlet.email, "password": other.hamlet.password}
        )
    )
    assert body["api_key"] == other.hamlet.api_key
