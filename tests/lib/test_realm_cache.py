"""The realm-state cache: the store (LRU, invalidation, the load/commit race) and the
components as read through a ``Database``, invalidated by the writes that change them."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
import redis
from sqlalchemy import delete, insert, select, text, update
from sqlalchemy.orm import Session

from palaver import cache as realm_cache
from palaver.cache.components import (
    ALERT_WORDS,
    CHANNELS,
    CHANNELS_OF_USER,
    GROUPS,
    SUBSCRIBERS,
    USERS,
)
from palaver.cache.store import RealmStateStore
from palaver.cache.table_map import ALL_REALMS, ANY_TABLE, Component, concerns_cache
from palaver.cache.transport import RedisInvalidation
from palaver.cache.writes import statement_tables
from palaver.db.database import Database
from palaver.db.transaction import transaction
from palaver.events.bus import InProcessEventBus
from palaver.lib.group_settings import system_group_id
from palaver.models import Realm, UserGroup, UserProfile
from palaver.models.alert_words import AlertWord
from palaver.models.channels import Stream, Subscription
from palaver.services import Services
from tests import helpers
from tests.helpers import Api, SeededRealm

A: Component[tuple[int, ...]] = Component("a", frozenset({"t1"}))
B: Component[tuple[int, ...]] = Component("b", frozenset({"t2", "t3"}))


def _store(max_realms: int = 8) -> RealmStateStore:
    store = RealmStateStore(max_realms)
    store.accepting = True
    return store


# The store ----------------------------------------------------------------------------------


def test_store_loads_once_and_invalidates_by_table_and_realm() -> None:
    store = _store()
    loads: list[str] = []

    def loader(tag: str) -> tuple[int, ...]:
        loads.append(tag)
        return (len(loads),)

    assert store.get(1, A, lambda: loader("a1")) == (1,)
    assert store.get(1, A, lambda: loader("a1")) == (1,)
    assert store.get(1, B, lambda: loader("b1")) == (2,)
    assert store.get(2, A, lambda: loader("a2")) == (3,)
    # A table of B only: A stays; realm 2 stays.
    store.invalidate([1], ["t3"])
    assert store.get(1, A, lambda: loader("again")) == (1,)
    assert store.get(1, B, lambda: loader("b1 again")) == (4,)
    assert store.get(2, A, lambda: loader("again")) == (3,)
    store.invalidate(ALL_REALMS, ["t1"])
    assert store.get(2, A, lambda: loader("a2 again")) == (5,)
    # Unknown tables drop nothing; "*" drops everything.
    store.invalidate(ALL_REALMS, ["unrelated"])
    assert store.peek(1, B) == (4,)
    store.invalidate([1], ["*"])
    assert store.peek(1, A) is None and store.peek(1, B) is None


def test_store_is_an_lru_of_realms() -> None:
    store = _store(max_realms=2)
    store.get(1, A, lambda: (1,))
    store.get(2, A, lambda: (2,))
    store.peek(1, A)  # realm 1 is now the most recently used
    store.get(3, A, lambda: (3,))
    assert store.cached_realms() == [1, 3]
    assert store.peek(2, A) is None


def test_a_load_overtaken_by_an_invalidation_is_not_kept() -> None:
    store = _store()
    started = threading.Event()
    proceed = threading.Event()
    result: list[tuple[int, ...]] = []

    def slow_load() -> tuple[int, ...]:
        started.set()
        proceed.wait(5)
        return (0,)  # what the database held before the write

    reader = threading.Thread(target=lambda: result.append(store.get(1, A, slow_load)))
    reader.start()
    assert started.wait(5)
    store.invalidate([1], ["t1"])  # the write commits while the reader loads
    proceed.set()
    reader.join(5)
    assert result == [(0,)]  # the reader itself gets what it read...
    assert store.peek(1, A) is None  # ...but it is not cached
    assert store.stale_loads == 1
    assert store.get(1, A, lambda: (1,)) == (1,)
    assert store.peek(1, A) == (1,)


def test_a_keyed_component_loads_and_drops_by_key() -> None:
    store = _store()
    first = store.begin_load(1, A, key=10)
    assert store.finish_load(first, (10,))
    assert store.finish_load(store.begin_load(1, A, key=11), (11,))
    assert store.peek(1, A, 10) == (10,)
    assert store.peek(1, A, 12) is None  # another key is not loaded with them
    assert store.peek(2, A, 10) is None
    # A load of one key overtaken by a write to the component's tables is not kept, even
    # though other keys were stored since it started.
    overtaken = store.begin_load(1, A, key=12)
    store.invalidate([1], ["t1"])  # drops every key
    assert store.peek(1, A, 10) is None
    assert store.peek(1, A, 11) is None
    assert store.finish_load(store.begin_load(1, A, key=10), (100,))
    assert not store.finish_load(overtaken, (12,))
    keyed: Any = store.peek(1, A)  # without a key: the cached keys
    assert keyed == {10: (100,)}


def test_a_keyed_component_is_bounded() -> None:
    store = RealmStateStore(8, max_keys=3)
    store.accepting = True
    for key in range(4):
        assert store.finish_load(store.begin_load(1, A, key=key), (key,))
    # The fourth key found the component full: it starts again from that key.
    keyed: Any = store.peek(1, A)
    assert keyed == {3: (3,)}


def test_a_load_racing_an_eviction_is_not_kept() -> None:
    store = _store(max_realms=1)
    ticket = store.begin_load(1, A)
    store.get(2, A, lambda: (2,))  # evicts realm 1
    store.invalidate([1], ["t1"])  # nothing to record it in
    store.get(1, B, lambda: (9,))  # realm 1 comes back
    assert not store.finish_load(ticket, (0,))
    assert store.peek(1, A) is None


def test_nothing_is_kept_while_invalidations_cannot_arrive() -> None:
    store = RealmStateStore(4)
    assert store.get(1, A, lambda: (1,)) == (1,)
    assert store.peek(1, A) is None
    store.accepting = True
    store.get(1, A, lambda: (1,))
    store.clear()
    assert store.peek(1, A) is None


# Through the database -----------------------------------------------------------------------


@pytest.fixture
def session(services: Services) -> Iterator[Session]:
    with services.db.session() as s:
        yield s


def _subscribe(api: Api, user: helpers.TestUser) -> None:
    api.post(user, "users/me/subscriptions", {"subscriptions": [{"name": "cache test"}]}).raise_for_status()


def _cached(services: Services, realm: SeededRealm, component: Component[Any]) -> object:
    return services.db.realm_state.peek(realm.id, component)


def test_components_load_lazily_and_separately(
    services: Services, session: Session, realm: SeededRealm
) -> None:
    hamlet = realm.hamlet.id
    groups = realm_cache.user_group_ids(session, realm.id, hamlet)
    members = realm_cache.realm_groups(session, realm.id).system_groups["role:members"]
    assert members in groups
    assert _cached(services, realm, GROUPS) is not None
    assert _cached(services, realm, USERS) is None
    user = realm_cache.cached_user(session, realm.id, hamlet)
    assert user is not None and user.full_name == "King Hamlet" and not user.is_guest
    assert _cached(services, realm, CHANNELS_OF_USER) is None
    assert _cached(services, realm, SUBSCRIBERS) is None
    subscribed = realm_cache.subscribed_channel_ids(session, realm.id, hamlet)
    for stream_id in subscribed:
        assert hamlet in realm_cache.active_subscriber_ids(session, realm.id, stream_id)
    # Keyed: what was asked for, one key each.
    assert _cached(services, realm, CHANNELS_OF_USER) == {hamlet: subscribed}
    cached_subscribers: Any = _cached(services, realm, SUBSCRIBERS) or {}
    assert set(cached_subscribers) == subscribed
    # A subscription change drops subscriptions, not users or groups.
    with transaction(session):
        session.execute(
            update(Subscription).where(Subscription.user_profile_id == hamlet).values(active=False)
        )
    assert _cached(services, realm, CHANNELS_OF_USER) is None
    assert _cached(services, realm, SUBSCRIBERS) is None
    assert _cached(services, realm, USERS) is not None
    assert _cached(services, realm, GROUPS) is not None
    assert realm_cache.subscribed_channel_ids(session, realm.id, hamlet) == frozenset()


def test_system_group_ids_come_from_the_cached_groups(
    services: Services, session: Session, realm: SeededRealm
) -> None:
    assert realm_cache.known_system_group_id(session, realm.id, "role:members") is None  # not loaded
    members = realm_cache.realm_groups(session, realm.id).system_groups["role:members"]
    session.commit()
    assert realm_cache.known_system_group_id(session, realm.id, "role:members") == members
    with transaction(session):
        session.add(UserGroup(realm_id=realm.id, name=None, description="", is_system_group=False))
        session.flush()
        # A group written: the groups are read through the transaction, but a system
        # group's ID cannot have changed.
        assert realm_cache.known_system_group_id(session, realm.id, "role:members") == members
        assert system_group_id(session, realm.id, "role:members") == members
    assert realm_cache.known_system_group_id(session, realm.id, "role:members") is None  # dropped
    assert system_group_id(session, realm.id, "role:members") == members  # by its query


def test_a_transaction_reads_its_own_writes(services: Services, session: Session, realm: SeededRealm) -> None:
    hamlet = realm.hamlet.id
    assert realm_cache.realm_alert_words(session, realm.id).get(hamlet) is None
    with transaction(session):
        session.add(AlertWord(realm_id=realm.id, user_profile_id=hamlet, word="Ophelia"))
        # Pending ORM changes count as written: read through the transaction, not cached.
        assert realm_cache.realm_alert_words(session, realm.id)[hamlet] == ("ophelia",)
        # Other readers still get the committed state.
        assert _cached(services, realm, ALERT_WORDS) == {}
    assert _cached(services, realm, ALERT_WORDS) is None
    assert realm_cache.realm_alert_words(session, realm.id)[hamlet] == ("ophelia",)
    session.commit()


def test_writes_outside_transactions_invalidate_on_commit(
    services: Services, session: Session, realm: SeededRealm
) -> None:
    hamlet = realm.hamlet.id
    assert realm_cache.realm_users(session, realm.id).by_id[hamlet].full_name == "King Hamlet"
    session.commit()
    session.execute(update(UserProfile).where(UserProfile.id == hamlet).values(full_name="Prince Hamlet"))
    session.commit()
    assert _cached(services, realm, USERS) is None
    assert (
        realm_cache.realm_users(session, realm.id).by_email[realm.hamlet.email.lower()].full_name
        == "Prince Hamlet"
    )


def test_deactivated_users_leave_subscriber_lists(
    api: Api, services: Services, session: Session, realm: SeededRealm
) -> None:
    _subscribe(api, realm.othello)
    othello = realm.othello.id
    streams = realm_cache.subscribed_channel_ids(session, realm.id, othello)
    assert streams
    stream_id = min(streams)
    assert othello in realm_cache.active_subscriber_ids(session, realm.id, stream_id)
    with transaction(session):
        session.execute(update(UserProfile).where(UserProfile.id == othello).values(is_active=False))
    assert othello not in realm_cache.active_subscriber_ids(session, realm.id, stream_id)
    # Subscriptions themselves did not have to be read again.
    assert _cached(services, realm, SUBSCRIBERS) is not None


def test_api_writes_invalidate(api: Api, services: Services, session: Session, realm: SeededRealm) -> None:
    hamlet = realm.hamlet.id
    before = realm_cache.subscribed_channel_ids(session, realm.id, hamlet)
    session.commit()
    _subscribe(api, realm.hamlet)
    after = realm_cache.subscribed_channel_ids(session, realm.id, hamlet)
    assert len(after) == len(before) + 1
    new = realm_cache.cached_channel_by_name(session, realm.id, " Cache Test ")
    assert _cached(services, realm, CHANNELS) is not None
    assert new is not None and new.id in after
    session.commit()
    with transaction(session):
        recipient = session.scalar(select(Stream.recipient_id).where(Stream.id == new.id))
        session.execute(delete(Subscription).where(Subscription.recipient_id == recipient))
        session.execute(insert(AlertWord).values(realm_id=realm.id, user_profile_id=hamlet, word="x"))
    assert realm_cache.active_subscriber_ids(session, realm.id, new.id) == frozenset()


def test_which_tables_a_statement_writes() -> None:
    assert set(statement_tables(update(Subscription).values(active=False))) == {"subscription"}
    assert set(statement_tables(insert(AlertWord))) == {"alert_word"}
    # Deleting a user deletes their subscriptions and alert words by ON DELETE CASCADE.
    assert ANY_TABLE in statement_tables(delete(UserProfile))
    assert ANY_TABLE not in statement_tables(delete(Subscription))
    # Textual SQL declares nothing: it counts as writing every table, whatever it says.
    assert set(statement_tables(text("UPDATE stream SET name = 'x'"))) == {ANY_TABLE}
    assert set(statement_tables(text("SELECT 1"))) == {ANY_TABLE}
    assert not statement_tables(select(UserProfile.id))
    assert not concerns_cache(["message", "user_message"])
    assert concerns_cache(["user_message", "subscription"])


def test_an_orm_update_writes_the_columns_it_sets(
    services: Services, session: Session, realm: SeededRealm
) -> None:
    hamlet = session.get_one(UserProfile, realm.users["hamlet"].id)
    with transaction(session) as tx:
        hamlet.color_scheme = 3 - hamlet.color_scheme
        hamlet.enter_sends = not hamlet.enter_sends
        # Set to its own value: the ORM's UPDATE leaves it out, and so does the record.
        hamlet.full_name = hamlet.full_name
        session.flush()
        assert tx.written == {"user_profile.color_scheme", "user_profile.enter_sends"}
    # A Core UPDATE names no columns (its values() are not read): every column.
    with transaction(session) as tx:
        session.execute(update(UserProfile).where(UserProfile.id == hamlet.id).values(color_scheme=2))
        assert tx.written == {"user_profile"}
    # A modified object of which nothing changed writes nothing.
    with transaction(session) as tx:
        hamlet.color_scheme = hamlet.color_scheme
        session.flush()
        assert tx.written == set()


def test_components_are_dropped_by_the_columns_they_read() -> None:
    whole: Component[None] = Component("whole", frozenset({"user_profile"}))
    some: Component[None] = Component(
        "some", frozenset({"user_profile.full_name", "user_profile.is_active", "stream"})
    )
    assert whole.dropped_by({"user_profile.color_scheme"})
    assert whole.dropped_by({"user_profile"})
    assert some.dropped_by({"user_profile.full_name"})
    assert some.dropped_by({"user_profile"})
    assert some.dropped_by({"stream.name"})
    assert some.dropped_by({ANY_TABLE})
    assert not some.dropped_by({"user_profile.color_scheme", "message", "user_message"})
    assert some.read_tables == {"user_profile", "stream"}
    assert concerns_cache({"user_profile.color_scheme"})
    assert not concerns_cache({"message.content"})


def test_a_dropped_value_is_kept_for_the_next_load_to_reuse() -> None:
    @dataclass(frozen=True)
    class Reusing(Component[tuple[int, ...]]):
        @property
        def keeps_previous(self) -> bool:
            return True

    reusing = Reusing("reusing", frozenset({"t"}))
    store = _store()
    store.get(1, reusing, lambda: (1,))
    store.get(1, A, lambda: (2,))
    assert store.previous(1, reusing) is None
    store.invalidate([1], ["t", "t1"])
    assert store.previous(1, reusing) == (1,)
    assert store.previous(1, A) is None  # kept only for components that ask
    store.invalidate([1], ["t"])  # nothing cached to drop: the older value stays
    assert store.previous(1, reusing) == (1,)
    store.get(1, reusing, lambda: (3,))
    assert store.previous(1, reusing) is None


def test_redis_carries_invalidations_between_processes_within_50ms() -> None:
    url = helpers.require_redis()
    channel = f"palaver:test:{uuid.uuid4().hex}:realm-cache"
    first, second = _store(), _store()
    a = RedisInvalidation(url, channel, first)
    b = RedisInvalidation(url, channel, second)
    try:
        assert a.wait_ready(5) and b.wait_ready(5)
        second.get(1, A, lambda: (1,))
        second.get(2, A, lambda: (2,))
        first.get(1, A, lambda: (1,))
        started = time.monotonic()
        a.publish([1], ["t1"])
        while second.peek(1, A) is not None and time.monotonic() - started < 1:
            time.sleep(0.001)
        assert time.monotonic() - started < 0.050
        assert second.peek(1, A) is None
        assert second.peek(2, A) == (2,)
        # The publisher's own message is not applied again (it invalidated itself already).
        assert first.peek(1, A) == (1,)
    finally:
        a.close()
        b.close()
    # Closed: it can no longer hear invalidations, so it keeps nothing.
    assert not second.accepting


def test_redis_carries_column_writes_and_an_earlier_versions_tables() -> None:
    url = helpers.require_redis()
    channel = f"palaver:test:{uuid.uuid4().hex}:realm-cache"
    name_reader: Component[tuple[int, ...]] = Component("names", frozenset({"t1.name"}))
    role_reader: Component[tuple[int, ...]] = Component("roles", frozenset({"t1.role"}))
    first, second = _store(), _store()
    a = RedisInvalidation(url, channel, first)
    b = RedisInvalidation(url, channel, second)
    client = redis.Redis.from_url(url)

    def wait_dropped(component: Component[tuple[int, ...]]) -> None:
        started = time.monotonic()
        while second.peek(1, component) is not None and time.monotonic() - started < 1:
            time.sleep(0.001)
        assert second.peek(1, component) is None

    try:
        assert a.wait_ready(5) and b.wait_ready(5)
        second.get(1, name_reader, lambda: (1,))
        second.get(1, role_reader, lambda: (2,))
        a.publish([1], ["t1.name"])
        wait_dropped(name_reader)
        assert second.peek(1, role_reader) == (2,)
        # A process of an earlier version names tables only: the whole table was written.
        old = {"origin": "earlier", "realms": [1], "tables": ["t1"]}
        client.publish(channel, orjson.dumps(old))
        wait_dropped(role_reader)
    finally:
        client.close()
        a.close()
        b.close()


def test_turned_off_it_reads_the_database_every_time(services: Services, realm: SeededRealm) -> None:
    db = Database(services.settings.model_copy(update={"realm_cache": False}), InProcessEventBus())
    try:
        with db.session() as session:
            assert realm.hamlet.id in realm_cache.realm_users(session, realm.id).by_id
            assert db.realm_state.cached_realms() == []
    finally:
        db.dispose()


def test_a_new_conversation_keeps_the_cached_subscriptions(
    api: Api, services: Services, session: Session, realm: SeededRealm
) -> None:
    # A conversation's members are subscription rows too, but no cached component reads them:
    # a realm where people start conversations all day must not reload its channel subscribers.
    hamlet = realm.hamlet.id
    _subscribe(api, realm.hamlet)
    assert realm_cache.subscribed_channel_ids(session, realm.id, hamlet)
    session.commit()
    assert _cached(services, realm, CHANNELS_OF_USER) is not None
    to = f"[{realm.othello.id}, {realm.cordelia.id}]"
    helpers.assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": to, "content": "hi"})
    )
    assert _cached(services, realm, CHANNELS_OF_USER) is not None
    # The marker names only that write: any other subscription write still drops them.
    assert set(statement_tables(update(Subscription).values(is_muted=True))) == {"subscription"}


def test_the_realm_row_reads_by_key_and_by_attribute(services: Services, realm: SeededRealm) -> None:
    with services.db.session() as session:
        row = realm_cache.realm_settings(session, realm.id)
        loaded = session.get(Realm, realm.id)
        assert loaded is not None
        # Every column, under the attribute's name, with the ORM's value.
        assert set(row) == {prop.key for prop in Realm.__mapper__.column_attrs}
        for key in row:
            assert row[key] == getattr(row, key) == getattr(loaded, key)
        with pytest.raises(AttributeError):
            _ = row.no_such_setting
        with pytest.raises(KeyError):
            _ = row["no_such_setting"]
