"""What an export holds, derived from the models so a new table needs no new code.

Every table of ``Base.metadata`` is either *exported* (its rows of one realm are found by
following foreign keys to ``realm``) or listed in ``EXCLUDED`` with a reason;
``tests/portability`` fails for a table that is neither. ID columns that are not foreign
keys (realm permission groups, announcement channels, message references) are declared in
``SOFT_REFERENCES``, and integer columns that only look like IDs in ``NOT_REFERENCES``;
a test fails for an undeclared one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import ColumnElement, Integer, Select, Table, and_, or_, select

import palaver.models  # noqa: F401  (every model registers its table)
from palaver.models import Base
from palaver.models.message_archive import ARCHIVE_TABLES

ARCHIVED_SOURCES = tuple(ARCHIVE_TABLES)

# Tables whose rows are not exported, and why.
EXCLUDED: dict[str, str] = {
    "realm_export": "exports made on the old server: their files are not in the archive",
    "sso_attempt": "sign-ins in progress at a provider: they last ten minutes",
    "pending_login": "sign-ins waiting for their second factor: they last ten minutes",
    "webauthn_challenge": "passkey ceremonies in progress: they last five minutes",
    "desktop_login_token": "the desktop app's one-time sign-in tokens: they last a minute",
    "saml_assertion": "SAML assertions already used, kept until they expire (minutes)",
    "saml_session": "the IdP sessions of browser sessions, which stay with the old server",
    "trusted_browser": "browsers remembered by their cookie, which stays with the old server",
    "change_log": "changes for the running server to apply (cache/change_log.py), not data",
    # Message retention's archive (models/message_archive.py): restore before exporting.
    "archive_transaction": "archived messages are not exported",
    # Zulip's push service knows this server by its own credentials, and its organizations
    # by UUIDs under that registration: a server the organization moves to registers itself
    # (`palaver push-register`) and reports it afresh.
    "push_service_server": "this server's own registration with the push service",
    "push_service_realm": "organizations' identities under this server's push registration",
    **{f"archived_{name}": "archived messages are not exported" for name in ARCHIVED_SOURCES},
}

# Credentials. An export leaves them out unless asked (``include_secrets``: a restore onto
# the same or a trusted server); import makes new ones where they are missing, or already
# taken on this server (an export imported next to its original). Password hashes are
# kept, so people keep their passwords.
SECRET_COLUMNS: frozenset[tuple[str, str]] = frozenset(
    {
        ("user_profile", "api_key"),
        ("bot_service", "token"),
        ("invitation", "key"),
        ("confirmation", "key"),
        ("missed_message_address", "token"),
        ("channel_email_address", "token"),
    }
)
# Tables that are credentials as a whole, exported only with secrets: signed-in browsers
# (an imported session whose token, the value here, is taken on this server is dropped:
# that browser signs in again) and second factors (TOTP secrets, recovery-code hashes:
# imported without them, people enrol again, as ``require_two_factor`` asks at sign-in).
SECRET_TABLES: dict[str, str | None] = {
    "web_session": "token_hash",
    "two_factor_device": None,
    "recovery_code": None,
}

# Integer columns that hold another table's ID without a foreign key.
SOFT_REFERENCES: dict[tuple[str, str], str] = {
    ("realm", "new_stream_announcements_stream_id"): "stream",
    ("realm", "signup_announcements_stream_id"): "stream",
    ("realm", "zulip_update_announcements_stream_id"): "stream",
    ("realm", "moderation_request_channel_id"): "stream",
    ("scheduled_message", "stream_id"): "stream",
    ("scheduled_message", "delivered_message_id"): "message",
    ("scheduled_message", "reminder_target_message_id"): "message",
    ("stream", "first_message_id"): "message",
    ("login_record", "acting_user_id"): "user_profile",
}
# Realm permissions are columns holding a user group's ID (see models/realm.py).
SOFT_REFERENCES |= {
    ("realm", c.name): "user_group"
    for c in Base.metadata.tables["realm"].columns
    if isinstance(c.type, Integer) and (c.name.startswith("can_") or c.name.endswith("_group"))
}

# Integer columns named like IDs that are not row IDs of this database.
NOT_REFERENCES: set[tuple[str, str]] = {
    ("recipient", "type_id"),  # polymorphic: user, channel or DM group by `type` (remap.py)
    ("direct_message_group", "group_size"),
    ("presence_sequence", "last_update_id"),
    ("user_presence", "last_update_id"),
    ("device", "push_key_id"),
}

# Recipient types (models/messages.py).
PERSONAL, STREAM, DIRECT_MESSAGE_GROUP = 1, 2, 3


@dataclass
class TablePlan:
    table: Table
    # Column -> table whose IDs it holds (foreign keys and soft references).
    references: dict[str, str] = field(default_factory=dict)
    # The single integer primary key that is not itself a reference: imported rows get
    # new values for it. Tables keyed by a reference (realm_user_default) have none.
    own_id: str | None = None

    @property
    def name(self) -> str:
        return self.table.name


def _plan(table: Table) -> TablePlan:
    plan = TablePlan(table)
    for fk in table.foreign_keys:
        plan.references[fk.parent.name] = fk.column.table.name
    for (table_name, column), target in SOFT_REFERENCES.items():
        if table_name == table.name:
            plan.references[column] = target
    pk = list(table.primary_key.columns)
    if len(pk) == 1 and isinstance(pk[0].type, Integer) and pk[0].name not in plan.references:
        plan.own_id = pk[0].name
    return plan


def exported_plans() -> list[TablePlan]:
    """Every exported table, parents before children (by foreign keys)."""
    return [_plan(t) for t in Base.metadata.sorted_tables if t.name not in EXCLUDED]


def undeclared_id_columns() -> list[str]:
    """Integer ``*_id``/``*_group`` columns that are neither references nor declared as not."""
    found = []
    for table in Base.metadata.sorted_tables:
        if table.name in EXCLUDED:
            continue
        plan = _plan(table)
        for c in table.columns:
            looks_like_id = c.name.endswith(("_id", "_group", "_groups")) or c.name.startswith("can_")
            if (
                isinstance(c.type, Integer)
                and looks_like_id
                and not c.primary_key
                and c.name not in plan.references
                and (table.name, c.name) not in NOT_REFERENCES
            ):
                found.append(f"{table.name}.{c.name}")
    return found


# Which rows belong to the realm ------------------------------------------------------------


def _tables() -> dict[str, Table]:
    return dict(Base.metadata.tables)


def realm_condition(
    table_name: str, realm_id: int, _seen: frozenset[str] = frozenset()
) -> ColumnElement[bool]:
    """A WHERE condition selecting the table's rows of one realm.

    A ``realm_id`` column decides directly; otherwise the row belongs to the realm of the
    row a non-nullable foreign key points at (nullable ones only when there is no other
    way). ``recipient`` is polymorphic and spelled out.
    """
    tables = _tables()
    table = tables[table_name]
    if table_name == "realm":
        return table.c.id == realm_id
    if table_name == "recipient":
        return _recipient_condition(realm_id)
    if "realm_id" in table.c:
        return table.c.realm_id == realm_id
    # Prefer a parent that knows its realm directly: the shortest subquery.
    fks = sorted(
        table.foreign_keys,
        key=lambda fk: (fk.parent.nullable, "realm_id" not in fk.column.table.c, fk.parent.name),
    )
    for fk in fks:
        parent = fk.column.table
        if parent.name in _seen or parent.name == table_name:
            continue
        inner = realm_condition(parent.name, realm_id, _seen | {table_name})
        if parent.name == "realm":
            return fk.parent == realm_id
        return fk.parent.in_(select(fk.column).where(inner))
    raise LookupError(f"table {table_name} has no path to realm: export it by hand or add it to EXCLUDED")


def _recipient_condition(realm_id: int) -> ColumnElement[bool]:
    t = _tables()
    recipient, users, streams, subs = t["recipient"], t["user_profile"], t["stream"], t["subscription"]
    realm_users = select(users.c.id).where(users.c.realm_id == realm_id)
    return or_(
        and_(recipient.c.type == PERSONAL, recipient.c.type_id.in_(realm_users)),
        and_(
            recipient.c.type == STREAM,
            recipient.c.type_id.in_(select(streams.c.id).where(streams.c.realm_id == realm_id)),
        ),
        and_(
            recipient.c.type == DIRECT_MESSAGE_GROUP,
            recipient.c.id.in_(select(subs.c.recipient_id).where(subs.c.user_profile_id.in_(realm_users))),
        ),
    )


Restrictions = Mapping[str, ColumnElement[bool]]


def scoped_condition(
    table_name: str, realm_id: int, restrict: Restrictions | None = None
) -> ColumnElement[bool]:
    """``realm_condition``, narrowed by ``restrict`` (extra conditions on some tables).

    A row that references a row left out is left out too (a reaction to an unexported
    message), so the archive never holds a dangling foreign key.
    """
    condition = realm_condition(table_name, realm_id)
    if not restrict:
        return condition
    table = _tables()[table_name]
    parts = [condition]
    if table_name in restrict:
        parts.append(restrict[table_name])
    for fk in table.foreign_keys:
        parent = fk.column.table.name
        if parent != table_name and _is_restricted(parent, restrict):
            inner = select(fk.column).where(scoped_condition(parent, realm_id, restrict))
            parts.append(or_(fk.parent.is_(None), fk.parent.in_(inner)))
    return and_(*parts)


def _is_restricted(table_name: str, restrict: Restrictions, _seen: frozenset[str] = frozenset()) -> bool:
    if table_name in restrict:
        return True
    table = _tables()[table_name]
    return any(
        _is_restricted(fk.column.table.name, restrict, _seen | {table_name})
        for fk in table.foreign_keys
        if fk.column.table.name not in _seen | {table_name}
    )


def realm_rows(plan: TablePlan, realm_id: int, restrict: Restrictions | None = None) -> Select[Any]:
    """The table's rows of the realm, in primary-key order (stable, and parents first)."""
    query = select(plan.table).where(scoped_condition(plan.name, realm_id, restrict))
    return query.order_by(*plan.table.primary_key.columns)


def direct_message_group_members(realm_id: int) -> Select[Any]:
    """(group ID, member ID) pairs: an import recomputes each group's hash from new IDs."""
    t = _tables()
    groups, recipient, subs = t["direct_message_group"], t["recipient"], t["subscription"]
    return (
        select(groups.c.id, subs.c.user_profile_id)
        .join(recipient, recipient.c.id == groups.c.recipient_id)
        .join(subs, subs.c.recipient_id == recipient.c.id)
        .where(realm_condition("direct_message_group", realm_id))
        .order_by(groups.c.id, subs.c.user_profile_id)
    )
