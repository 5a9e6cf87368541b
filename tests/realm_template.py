"""A seeded realm, made once per database through the actions and copied per test.

Seeding through the actions (``seed_realm_through_actions``) takes ~40 ms of ORM work per
realm, more than many tests take; the suite asks for ~2,500 realms. ``clone_realm`` copies
the rows of one realm seeded that way (the template) into a new realm in one transaction of
a few multi-row INSERTs, with fresh IDs, string ID, emails and API keys, and timestamps
moved to now. The template's rows are read once, right after it was seeded, so later changes
to the template realm (a test that walks every realm) do not reach the copies.

The copy covers exactly the tables seeding writes (``TEMPLATE_TABLES``); ``snapshot`` fails if
seeding ever writes another table, and ``tests/test_realm_template.py`` checks that a copy
looks, through ``/register``, like a realm seeded through the actions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Table, bindparam, func, insert, inspect, select, text, update

from palaver.db.transaction import transaction
from palaver.lib.passwords import generate_api_key
from palaver.lib.realm import realm_email_host
from palaver.models import Base, Realm
from palaver.services import Services
from palaver.timeutil import utcnow

# The tables seeding a realm writes, parents first.
TEMPLATE_TABLES = (
    "realm",
    "realm_user_default",
    "user_profile",
    "user_group",
    "user_group_membership",
    "group_group_membership",
)
# Tables whose integer ``id`` the copy allocates.
_ID_TABLES = ("realm", "user_profile", "user_group")

Row = dict[str, Any]


def _table(name: str) -> Table:
    return Base.metadata.tables[name]


@dataclass(frozen=True)
class RealmTemplate:
    """The rows of one seeded realm, as read right after seeding."""

    rows: Mapping[str, list[Row]]

    @property
    def realm(self) -> Row:
        [row] = self.rows["realm"]
        return row

    def ids(self, table: str) -> list[int]:
        return [row["id"] for row in self.rows[table]]


def _row_counts(conn: Connection) -> dict[str, int]:
    names = inspect(conn).get_table_names()
    return {
        name: conn.execute(select(func.count()).select_from(text(f'"{name}"'))).scalar_one() for name in names
    }


def snapshot(services: Services, seed: Callable[[], int]) -> RealmTemplate:
    """Run ``seed`` (which returns the new realm's ID) and read the rows it wrote."""
    engine = services.db.engine
    with engine.connect() as conn:
        before = _row_counts(conn)
    realm_id = seed()
    with engine.connect() as conn:
        after = _row_counts(conn)
        written = {name for name, count in after.items() if count != before.get(name, 0)}
        unexpected = written - set(TEMPLATE_TABLES)
        assert not unexpected, f"seeding wrote tables the realm copy does not cover: {sorted(unexpected)}"
        rows: dict[str, list[Row]] = {}
        realm, groups, users = _table("realm"), _table("user_group"), _table("user_profile")
        rows["realm"] = _read(conn, select(realm).where(realm.c.id == realm_id))
        rows["realm_user_default"] = _read(
            conn,
            select(_table("realm_user_default")).where(_table("realm_user_default").c.realm_id == realm_id),
        )
        rows["user_profile"] = _read(
            conn, select(users).where(users.c.realm_id == realm_id).order_by(users.c.id)
        )
        rows["user_group"] = _read(
            conn, select(groups).where(groups.c.realm_id == realm_id).order_by(groups.c.id)
        )
        group_ids = [row["id"] for row in rows["user_group"]]
        members, subgroups = _table("user_group_membership"), _table("group_group_membership")
        rows["user_group_membership"] = _read(
            conn, select(members).where(members.c.user_group_id.in_(group_ids))
        )
        rows["group_group_membership"] = _read(
            conn, select(subgroups).where(subgroups.c.supergroup_id.in_(group_ids))
        )
    for name in TEMPLATE_TABLES:
        copied = len(rows[name])
        assert copied == after[name] - before.get(name, 0), f"{name}: seeding wrote rows outside the realm"
    return RealmTemplate(rows)


def _read(conn: Connection, query: Any) -> list[Row]:
    return [dict(row) for row in conn.execute(query).mappings()]


def _allocate_ids(conn: Connection, table: str, count: int) -> list[int]:
    """``count`` unused IDs for ``table``, taken the way an INSERT would take them."""
    if conn.dialect.name == "postgresql":
        query = text(f"SELECT nextval(pg_get_serial_sequence('{table}', 'id')) FROM generate_series(1, :n)")
        return list(conn.execute(query, {"n": count}).scalars())
    # SQLite: inside the write transaction (BEGIN IMMEDIATE) nobody else inserts meanwhile.
    highest = conn.execute(select(func.max(_table(table).c.id))).scalar_one() or 0
    return list(range(highest + 1, highest + 1 + count))


def _remap(value: int | None, ids: Mapping[int, int]) -> int | None:
    return None if value is None else ids[value]


def clone_realm(
    services: Services, template: RealmTemplate, string_id: str, *, name: str | None = None
) -> tuple[int, dict[int, Row]]:
    """Copy the template into a new realm ``string_id``; returns its ID and the new user rows by
    the template's user IDs."""
    old_string_id: str = template.realm["string_id"]
    shift = utcnow() - template.realm["date_created"]

    def moved(when: datetime | None) -> datetime | None:
        return None if when is None else when + shift

    def renamed(address: str) -> str:
        return address.replace(old_string_id, string_id)

    with services.db.session() as session, transaction(session):
        conn = session.connection()
        ids: dict[str, dict[int, int]] = {
            table: dict(
                zip(template.ids(table), _allocate_ids(conn, table, len(template.rows[table])), strict=True)
            )
            for table in _ID_TABLES
        }
        realm_ids, user_ids, group_ids = ids["realm"], ids["user_profile"], ids["user_group"]
        realm_id = realm_ids[template.realm["id"]]

        realm = dict(
            template.realm,
            id=realm_id,
            string_id=string_id,
            date_created=moved(template.realm["date_created"]),
        )
        if name is not None:
            realm["name"] = name
        # The realm's permission settings name system groups (no foreign key: the realm row
        # comes first); its announcement channels are unset.
        for column, value in realm.items():
            if "group" in column:
                realm[column] = _remap(value, group_ids)
            elif column.endswith("_stream_id"):
                assert value is None, column
        _insert(conn, "realm", [realm])
        _insert(
            conn,
            "realm_user_default",
            [dict(row, realm_id=realm_id) for row in template.rows["realm_user_default"]],
        )
        # In ID order, so a bot's owner is there before the bot.
        users = {
            row["id"]: dict(
                row,
                id=user_ids[row["id"]],
                realm_id=realm_id,
                email=renamed(row["email"]),
                delivery_email=renamed(row["delivery_email"]),
                api_key=generate_api_key(),
                bot_owner_id=_remap(row["bot_owner_id"], user_ids),
                date_joined=moved(row["date_joined"]),
                last_login=moved(row["last_login"]),
            )
            for row in template.rows["user_profile"]
        }
        _insert(conn, "user_profile", list(users.values()))
        # A group's permission settings name other groups, made in the same statement: set
        # them once every group exists.
        groups = _table("user_group")
        setting_columns = [c.name for c in groups.columns if c.name.startswith("can_")]
        _insert(
            conn,
            "user_group",
            [
                dict(
                    row,
                    id=group_ids[row["id"]],
                    realm_id=realm_id,
                    creator_id=_remap(row["creator_id"], user_ids),
                    date_created=moved(row["date_created"]),
                    **dict.fromkeys(setting_columns),
                )
                for row in template.rows["user_group"]
            ],
        )
        conn.execute(
            update(groups)
            .where(groups.c.id == bindparam("group_id"))
            .values({column: bindparam(column) for column in setting_columns}),
            [
                {"group_id": group_ids[row["id"]], **{c: _remap(row[c], group_ids) for c in setting_columns}}
                for row in template.rows["user_group"]
            ],
        )
        _insert(
            conn,
            "user_group_membership",
            [
                {
                    "user_group_id": group_ids[row["user_group_id"]],
                    "user_profile_id": user_ids[row["user_profile_id"]],
                }
                for row in template.rows["user_group_membership"]
            ],
        )
        _insert(
            conn,
            "group_group_membership",
            [
                {
                    "supergroup_id": group_ids[row["supergroup_id"]],
                    "subgroup_id": group_ids[row["subgroup_id"]],
                }
                for row in template.rows["group_group_membership"]
            ],
        )
    return realm_id, users


def _insert(conn: Connection, table: str, rows: list[Row]) -> None:
    """Rows in order, through one statement compiled once per test run (``executemany``)."""
    if rows:
        conn.execute(insert(_table(table)), rows)


# One template per database (the suite's, or one a test made; each has a URL of its own) and
# per form of its users' API emails, the one setting seeding depends on (the server's URL).
_templates: dict[tuple[str, str], RealmTemplate] = {}


def template_for(services: Services, seed: Callable[[], int]) -> RealmTemplate:
    settings = services.settings
    url = (settings.database_url, realm_email_host(settings, Realm(string_id="<realm>", name="")))
    found = _templates.get(url)
    if found is None:
        found = _templates[url] = snapshot(services, seed)
    return found
