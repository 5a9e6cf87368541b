"""Components that read only some columns of ``user_profile`` are dropped by writes of those
columns alone (``cache/table_map.columns``): a name change keeps the /register channel
list, a theme change keeps everything. What must hold is that no component reads a column it
does not declare, or it would be served stale.

Every column of one user is changed through the ORM, as the endpoints do: those no component
declares all at once (nothing may be dropped), each declared one alone. After each change,
every component still cached must equal the same component read afresh.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement

from palaver import cache as realm_cache
from palaver.cache.components import USERS, KeyedLoaded, Loaded
from palaver.cache.table_map import Component
from palaver.db.transaction import transaction
from palaver.lib.avatars import GRAVATAR, UPLOADED
from palaver.models import UserProfile
from palaver.services import Services
from tests.helpers import Api, SeededRealm, assert_json_success

_TABLE = UserProfile.__tablename__
# Never changed by any write: a user's ID, and the realm it belongs to.
_FIXED = {"id", "realm_id"}


def _other(column: ColumnElement[Any], value: Any, realm: SeededRealm) -> Any:
    """A different value of the column's type that its table accepts."""
    if column.name == "avatar_source":
        return UPLOADED if value == GRAVATAR else GRAVATAR
    if column.name == "bot_owner_id":
        return realm.hamlet.id if value != realm.hamlet.id else realm.iago.id
    python_type = column.type.python_type
    if python_type is bool:
        return not value
    if python_type is int:
        return (value or 0) + 1
    if python_type is str:
        return f"{value or ''}-changed"
    return value + timedelta(days=1) if value is not None else datetime(2026, 1, 1, tzinfo=UTC)


def _warm(api: Api, realm: SeededRealm, services: Services) -> None:
    """Every component /register reads, and the cached users, loaded for the realm, which
    has a channel othello is in, whose senders are a group of othello and a user group he
    is in (so that his columns show in the lists of members)."""
    senders = {"direct_members": [realm.othello.id, realm.hamlet.id], "direct_subgroups": []}
    channel = {
        "subscriptions": [{"name": "cached"}],
        "principals": [realm.othello.id, realm.hamlet.id],
        "can_send_message_group": senders,
    }
    assert_json_success(api.post(realm.iago, "users/me/subscriptions", channel))
    group = {"name": "moors", "description": "", "members": [realm.othello.id, realm.hamlet.id]}
    assert_json_success(api.post(realm.iago, "user_groups/create", group))
    with services.db.session() as session:
        realm_cache.realm_users(session, realm.id)
    for name in ("hamlet", "iago", "polonius"):
        assert_json_success(api.post(realm.users[name], "register", {}))
    # Some were dropped again by later writes (a /register's queue, the group).
    _load_dropped(services, realm.id)


def _load_dropped(services: Services, realm_id: int) -> None:
    """Load again, as requests do (a component that reuses its dropped value does), every
    component dropped."""
    store = services.db.realm_state
    with services.db.session() as session:
        for component in store.components():
            if isinstance(component, Loaded) and store.peek(realm_id, component) is None:
                realm_cache.cached_component(session, realm_id, component)
                assert store.peek(realm_id, component) is not None, component.name


def _comparable(value: Any) -> Any:
    # The /register user list holds a lock and memoized variants: its entries are the value.
    entries = getattr(value, "entries", None)
    return value if entries is None else entries


def _stale_components(services: Services, realm_id: int) -> list[str]:
    """The cached components that differ from the same component read afresh."""
    store = services.db.realm_state
    stale = []
    with services.db.load_engine.connect() as conn:
        for component in store.components():
            cached: Any = store.peek(realm_id, component)
            if cached is None:
                continue
            if isinstance(component, KeyedLoaded):
                fresh: Any = {key: component.load(conn, realm_id, key) for key in cached}
            else:
                assert isinstance(component, Loaded)
                fresh = component.load(conn, realm_id)
            if _comparable(cached) != _comparable(fresh):
                stale.append(component.name)
    return stale


def _declared(components: list[Component[Any]]) -> dict[str, list[str]]:
    """Each column of the table that components declare, and the components declaring it."""
    readers: dict[str, list[str]] = {}
    for component in components:
        assert _TABLE not in component.tables, f"{component.name} reads every column"
        for name in component.tables:
            table, _, column = name.partition(".")
            if table == _TABLE:
                readers.setdefault(column, []).append(component.name)
    return readers


def _change(services: Services, realm: SeededRealm, names: list[str]) -> None:
    with services.db.session() as session, transaction(session) as tx:
        othello = session.get(UserProfile, realm.othello.id)
        assert othello is not None
        for name in names:
            column = UserProfile.__table__.c[name]
            setattr(othello, name, _other(column, getattr(othello, name), realm))
        session.flush()
        # Still a write, which fences the user's reads off a read replica for a while.
        assert tx.written == {f"{_TABLE}.{name}" for name in names}


def test_columns_no_component_reads_drop_nothing(api: Api, realm: SeededRealm, services: Services) -> None:
    _warm(api, realm, services)
    store = services.db.realm_state
    components = store.components()
    declared = _declared(components)
    undeclared = sorted(set(UserProfile.__table__.c.keys()) - set(declared) - _FIXED)
    # The personal settings (display, notifications), the API key's hash... but not the key.
    assert len(undeclared) > 50
    assert "api_key" not in undeclared
    _change(services, realm, undeclared)
    dropped = [c.name for c in components if isinstance(c, Loaded) and store.peek(realm.id, c) is None]
    assert dropped == []
    assert _stale_components(services, realm.id) == []


def test_each_column_read_drops_its_readers_and_only_them(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    _warm(api, realm, services)
    store = services.db.realm_state
    declared = _declared(store.components())
    assert {"full_name", "is_active", "presence_enabled", "email_address_visibility"} <= set(declared)
    for column in sorted(set(declared) - _FIXED):
        _change(services, realm, [column])
        by_name = {c.name: c for c in store.components()}
        for reader in declared[column]:
            assert store.peek(realm.id, by_name[reader]) is None, (column, reader)
        assert _stale_components(services, realm.id) == [], column
        _load_dropped(services, realm.id)


def test_a_settings_change_keeps_the_cache_and_a_name_change_drops_it(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    _warm(api, realm, services)
    store = services.db.realm_state
    channels = next(c for c in store.components() if c.name == "register_channels")
    assert_json_success(api.patch(realm.othello, "settings", {"color_scheme": 3, "enter_sends": "true"}))
    assert store.peek(realm.id, USERS) is not None
    assert_json_success(api.patch(realm.othello, "settings", {"full_name": "Othello, renamed"}))
    assert store.peek(realm.id, USERS) is None
    # The channel list reads only whether users are active.
    assert store.peek(realm.id, channels) is not None
