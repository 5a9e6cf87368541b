"""The /register user list, built again after a change to one user: only that user's entry
is encoded again, the others are the same objects as before."""

from __future__ import annotations

from typing import Any

from palaver.services import Services
from tests.helpers import Api, SeededRealm, assert_json_success


def test_a_reload_encodes_again_only_the_users_that_changed(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": '["realm_user"]'}))
    store = services.db.realm_state
    component = next(c for c in store.components() if c.name == "register_user_list")
    before: Any = store.peek(realm.id, component)
    assert before is not None

    assert_json_success(api.patch(realm.othello, "settings", {"full_name": "Othello, renamed"}))
    assert store.peek(realm.id, component) is None
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": '["realm_user"]'}))

    after: Any = store.peek(realm.id, component)
    assert after.entry(realm.hamlet.id) is before.entry(realm.hamlet.id)
    assert after.entry(realm.iago.id) is before.entry(realm.iago.id)
    assert after.entry(realm.othello.id) is not before.entry(realm.othello.id)
    names = {user["user_id"]: user["full_name"] for user in state["realm_users"]}
    assert names[realm.othello.id] == "Othello, renamed"
    assert names[realm.hamlet.id] == "King Hamlet"
