r"""The table map: which writes drop which cached component.

A component names the tables (and ``table.column``\ s) it is read from; a committed write
names what it wrote the same way (``cache/writes.py``: the table of each Core statement, the
columns of each ORM update). Only writes to ``REALM_STATE_TABLES`` concern the cache.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Generic, TypeVar

from palaver.models import (
    Base,
    CustomProfileField,
    CustomProfileFieldValue,
    GroupGroupMembership,
    Realm,
    UserGroup,
    UserGroupMembership,
    UserProfile,
)
from palaver.models.alert_words import AlertWord
from palaver.models.channels import Stream, Subscription
from palaver.models.linkifiers import RealmFilter
from palaver.models.muted_users import MutedUser
from palaver.models.realm_emoji import RealmEmoji
from palaver.models.user_status import UserStatus

T = TypeVar("T")

# Marks "invalidate in every realm", when a write's realm is unknown.
ALL_REALMS: None = None
# A written table that stands for every table (textual SQL whose table is not parsed).
ANY_TABLE = "*"
# Every table a component of cache/ reads (its loaders assert it), and those the
# /register components read (lib/realm_user_list.py, lib/state/: profile fields, statuses):
# writes to no other table concern any cache, so they are neither applied nor published.
REALM_STATE_TABLES = frozenset(
    model.__tablename__
    for model in (
        UserProfile,
        CustomProfileField,
        CustomProfileFieldValue,
        UserStatus,
        Stream,
        Subscription,
        UserGroup,
        UserGroupMembership,
        GroupGroupMembership,
        Realm,
        RealmFilter,
        AlertWord,
        RealmEmoji,
        MutedUser,
    )
)

# Execution option of a write whose rows no realm-state component reads although its table is
# watched (a conversation's members are ``subscription`` rows, but the cache's subscriptions
# are channels'): without it, every new conversation would drop the realm's subscriptions.
# Also of writes no cache could read (the change log's own rows): they are not recorded.
NOT_REALM_STATE = "palaver_not_realm_state"

# Tables whose rows cached rows reference with ON DELETE CASCADE: the database deletes those
# without a statement of their own, so deleting from these counts as writing every table.
CASCADING_PARENTS = frozenset(
    key.column.table.name
    for name in REALM_STATE_TABLES
    for key in Base.metadata.tables[name].foreign_keys
    if (key.ondelete or "").upper() == "CASCADE"
)


def concerns_cache(tables: Iterable[str]) -> bool:
    """Whether a write to ``tables`` (table or column names) may change anything a
    realm-state cache holds."""
    return any(t == ANY_TABLE or t.partition(".")[0] in REALM_STATE_TABLES for t in tables)


def columns(model: type[Base], *names: str) -> frozenset[str]:
    """Column names (``table.column``) for a component that reads only these columns of the
    model's table: writes that set none of them do not drop it."""
    table = Base.metadata.tables[model.__tablename__]
    missing = [name for name in names if name not in table.c]
    assert not missing, missing
    return frozenset(f"{table.name}.{name}" for name in names)


@dataclass(frozen=True)
class Component(Generic[T]):
    """One cached piece of a realm's state, read from ``tables`` and dropped when any is written.

    ``tables`` names tables (every column read) and columns (``table.column``, from
    ``columns()``); what a write touched is named the same way (``cache/writes.py``: an
    ORM update names the columns it sets). A whole table read is dropped by a write of any of
    its columns; columns read are dropped by a write of one of them or of the whole table. A
    name change in a realm of 10,000 dropped the /register channel and group lists, which
    read only whether users are active (0.2 s to build again).
    """

    name: str
    tables: frozenset[str]

    @cached_property
    def read_tables(self) -> frozenset[str]:
        """The tables read, wholly or in part."""
        return self._whole_tables | self._column_tables

    @cached_property
    def _whole_tables(self) -> frozenset[str]:
        return frozenset(name for name in self.tables if "." not in name)

    @cached_property
    def _column_tables(self) -> frozenset[str]:
        return frozenset(name.partition(".")[0] for name in self.tables if "." in name)

    def dropped_by(self, written: Collection[str]) -> bool:
        """Whether a write of ``written`` (table and column names) may change this component."""
        if ANY_TABLE in written or not self.tables.isdisjoint(written):
            return True
        whole, column_tables = self._whole_tables, self._column_tables
        for name in written:
            table, dot, _ = name.partition(".")
            if table in whole if dot else table in column_tables:
                return True
        return False

    @property
    def keeps_previous(self) -> bool:
        """Whether a dropped value is kept (``RealmStateStore.previous``) for the next load to
        reuse its unchanged parts: for a component whose build costs far more than reading
        its rows (the /register user list: 0.65 s of CPU for 10,000 users, after one user's
        name changed)."""
        return False
