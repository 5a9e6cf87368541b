"""A user's personal settings are written without dropping the realm-state cache
(``events/realm_state.UNCACHED_COLUMNS``): nothing cached may read them.

Every such column of one user is changed through the ORM, as the settings endpoint does, and
the other users' ``/register`` served from the cache must equal the same ``/register`` read
afresh, with the cache emptied.
"""

from __future__ import annotations

from typing import Any

from palaver.db import transaction
from palaver.events.realm_state import UNCACHED_COLUMNS, concerns_cache
from palaver.lib import realm_cache
from palaver.lib.realm_cache.loaders import USERS
from palaver.models import UserProfile
from palaver.services import Services
from tests.helpers import Api, SeededRealm, assert_json_success

_VOLATILE = ("queue_id", "last_event_id", "server_timestamp", "presences")


def _other(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    return f"{value}-changed"


def _registers(api: Api, realm: SeededRealm, services: Services) -> dict[str, dict[str, Any]]:
    """The /register of three users, which caches what it reads, and the cached users."""
    with services.db.session() as session:
        realm_cache.realm_users(session, realm.id)
    states = {}
    for name in ("hamlet", "iago", "polonius"):
        state = assert_json_success(api.post(realm.users[name], "register", {}))
        states[name] = {k: v for k, v in state.items() if k not in _VOLATILE}
    return states


def test_personal_settings_reach_no_cached_state(api: Api, realm: SeededRealm, services: Services) -> None:
    _registers(api, realm, services)  # every component of the realm cached
    columns = sorted(UNCACHED_COLUMNS[UserProfile.__tablename__])
    assert len(columns) > 50
    with services.db.session() as session, transaction(session) as tx:
        othello = session.get(UserProfile, realm.othello.id)
        assert othello is not None
        for column in columns:
            setattr(othello, column, _other(getattr(othello, column)))
        session.flush()
        # Still a write, which fences the user's reads off a read replica for a while.
        assert tx.written
        assert not concerns_cache(tx.written)
    store = services.db.realm_state
    assert store.peek(realm.id, USERS) is not None  # not dropped
    from_cache = _registers(api, realm, services)
    store.clear()
    afresh = _registers(api, realm, services)
    assert from_cache == afresh


def test_a_settings_change_keeps_the_cache_and_a_name_change_drops_it(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    _registers(api, realm, services)
    store = services.db.realm_state
    assert_json_success(api.patch(realm.othello, "settings", {"color_scheme": 3, "enter_sends": "true"}))
    assert store.peek(realm.id, USERS) is not None
    assert_json_success(api.patch(realm.othello, "settings", {"full_name": "Othello, renamed"}))
    assert store.peek(realm.id, USERS) is None
