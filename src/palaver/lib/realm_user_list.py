"""The realm's users as POST /register sends them (``realm_users``, ``realm_non_active_users``).

Formatting every user of a large realm (10,000 dicts, 4 MB of JSON, avatar URLs computed
from names) was most of a /register. So the list is built once per realm, from plain rows,
and kept as JSON in the realm-state cache (``cache/``), dropped when a user, a
profile field or a profile value is written. What differs between viewers is only whether
they see each user's real address, and with it whether ``client_gravatar`` clients get
``avatar_url`` null; each user's JSON is therefore kept in pieces around those two values,
and each combination of visible email levels and ``client_gravatar`` is assembled once.
The viewer always sees their own address, which patches one entry. After a change, the
list is built again from the rows, reusing the entry of every user whose row and profile
data are unchanged.

Restricted guests see a few users only: theirs is built per request, uncached.
"""

from __future__ import annotations

import heapq
import threading
from array import array
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import orjson
from sqlalchemy import Connection, select, true
from sqlalchemy.orm import Session

from palaver.cache import Loaded, cached_component, columns
from palaver.lib.avatars import GRAVATAR, avatar_url_for, gravatar_enabled
from palaver.lib.users import accessible_user_filter, can_view_delivery_email, user_access_restricted
from palaver.models import CustomProfileField, CustomProfileFieldValue, EmailVisibility, Role, UserProfile
from palaver.models.requester import Requester
from palaver.timeutil import to_iso

# Table columns rather than ORM attributes: the rows then skip the ORM's loading machinery.
_USER_COLUMNS = tuple(
    UserProfile.__table__.c[name]
    for name in (
        "id",
        "email",
        "delivery_email",
        "full_name",
        "date_joined",
        "is_active",
        "role",
        "is_bot",
        "bot_type",
        "bot_owner_id",
        "timezone",
        "avatar_source",
        "avatar_version",
        "is_imported_stub",
        "email_address_visibility",
        "avatar_hash",
    )
)
_TABLES = frozenset({CustomProfileField.__tablename__, CustomProfileFieldValue.__tablename__}) | columns(
    UserProfile, "realm_id", *(column.name for column in _USER_COLUMNS)
)
_ADMIN_ROLES = (Role.OWNER, Role.ADMINISTRATOR)
_DELIVERY_EMAIL = b'"delivery_email":'
_AVATAR_URL = b'"avatar_url":'
# Variants kept per realm: (visible levels, client_gravatar) pairs; a realm sees a few.
_MAX_VARIANTS = 8


@dataclass(frozen=True, slots=True)
class _Entry:
    """One user's User object as JSON, cut around the two values that depend on the viewer."""

    user_id: int
    is_active: bool
    # Bots' addresses are visible to everyone.
    is_bot: bool
    visibility: int
    gravatar_hosted: bool
    # ``{"user_id":…,"delivery_email":`` | address | ``,…,"avatar_url":`` | URL | ``,…}``
    head: bytes
    email: bytes
    middle: bytes
    avatar: bytes
    tail: bytes
    # What it was built from (the user's row and profile data): a reload reuses the entry
    # when they are unchanged.
    source: tuple[tuple[Any, ...], dict[str, Any] | None]

    def encode(self, sees_email: bool, client_gravatar: bool) -> bytes:
        email = self.email if sees_email else b"null"
        # Clients that compute Gravatar URLs themselves need the real address to do so.
        avatar = b"null" if client_gravatar and sees_email and self.gravatar_hosted else self.avatar
        return b"".join((self.head, email, self.middle, avatar, self.tail))


@dataclass(frozen=True, slots=True)
class _JsonList:
    """A JSON array of users, and where each one's object ends in it (by user ID order)."""

    json: bytes
    ids: array[int]
    ends: array[int]

    def replaced(self, user_id: int, item: bytes) -> bytes:
        index = bisect_left(self.ids, user_id)
        if index == len(self.ids) or self.ids[index] != user_id:
            return self.json
        start = 1 if index == 0 else self.ends[index - 1] + 1
        return b"".join((self.json[:start], item, self.json[self.ends[index] :]))


def _json_list(items: Iterable[tuple[int, bytes]]) -> _JsonList:
    pieces = [b"["]
    ids: array[int] = array("q")
    ends: array[int] = array("q")
    position = 1
    for user_id, item in items:
        if ids:
            pieces.append(b",")
            position += 1
        pieces.append(item)
        position += len(item)
        ids.append(user_id)
        ends.append(position)
    pieces.append(b"]")
    return _JsonList(b"".join(pieces), ids, ends)


_Variant = tuple[frozenset[int], bool]


class RealmUserList:
    """Every user of a realm, encoded; shared by threads (assembled variants are memoized)."""

    def __init__(self, entries: list[_Entry], *, gravatar: bool) -> None:
        self.entries = tuple(entries)
        self.gravatar = gravatar
        self._ids = array("q", (e.user_id for e in self.entries))
        self._variants: dict[_Variant, tuple[_JsonList, _JsonList]] = {}
        self._lock = threading.Lock()

    def entry(self, user_id: int) -> _Entry | None:
        index = bisect_left(self._ids, user_id)
        found = index < len(self._ids) and self._ids[index] == user_id
        return self.entries[index] if found else None

    def lists(self, levels: frozenset[int], client_gravatar: bool) -> tuple[_JsonList, _JsonList]:
        key = (levels, client_gravatar)
        with self._lock:
            lists = self._variants.get(key)
        if lists is None:
            lists = _encode(self.entries, levels, client_gravatar, viewer_id=None)
            with self._lock:
                self._variants[key] = lists
                while len(self._variants) > _MAX_VARIANTS:
                    del self._variants[next(iter(self._variants))]
        return lists


def _encode(
    entries: Iterable[_Entry], levels: frozenset[int], client_gravatar: bool, *, viewer_id: int | None
) -> tuple[_JsonList, _JsonList]:
    active: list[tuple[int, bytes]] = []
    inactive: list[tuple[int, bytes]] = []
    for e in entries:
        sees = e.is_bot or e.visibility in levels or e.user_id == viewer_id
        (active if e.is_active else inactive).append((e.user_id, e.encode(sees, client_gravatar)))
    return _json_list(active), _json_list(inactive)


def _profile_data(conn: Connection, realm_id: int) -> dict[int, dict[str, dict[str, str]]]:
    data: dict[int, dict[str, dict[str, str]]] = defaultdict(dict)
    values = conn.execute(
        select(
            CustomProfileFieldValue.user_profile_id,
            CustomProfileFieldValue.field_id,
            CustomProfileFieldValue.value,
            CustomProfileFieldValue.rendered_value,
        )
        .join(CustomProfileField, CustomProfileField.id == CustomProfileFieldValue.field_id)
        .where(CustomProfileField.realm_id == realm_id)
    )
    for user_id, field_id, value, rendered in values:
        entry = {"value": value}
        if rendered is not None:
            entry["rendered_value"] = rendered
        data[user_id][str(field_id)] = entry
    return data


def _entries(
    conn: Connection,
    realm_id: int,
    *,
    gravatar: bool,
    condition: Any = None,
    previous: RealmUserList | None = None,
) -> list[_Entry]:
    """The users of the realm (those meeting ``condition``), in ID order, as ``format_user``
    formats them with ``include_custom_profile_fields``. A user whose row and profile data
    are those ``previous`` was built from keeps its entry from there."""
    profile_data = _profile_data(conn, realm_id)
    table = UserProfile.__table__
    rows = conn.execute(
        select(*_USER_COLUMNS)
        .where(table.c.realm_id == realm_id, true() if condition is None else condition)
        .order_by(table.c.id)
    )
    if previous is not None and previous.gravatar != gravatar:
        previous = None
    result = []
    for row in rows:
        source = (tuple(row), profile_data.get(row[0]))
        old = None if previous is None else previous.entry(row[0])
        if old is not None and old.source == source:
            result.append(old)
        else:
            result.append(_entry(realm_id, source, gravatar=gravatar))
    return result


def _entry(realm_id: int, source: tuple[tuple[Any, ...], dict[str, Any] | None], *, gravatar: bool) -> _Entry:
    row, profile = source
    (
        user_id,
        email,
        delivery_email,
        full_name,
        date_joined,
        is_active,
        role,
        is_bot,
        bot_type,
        bot_owner_id,
        timezone,
        avatar_source,
        avatar_version,
        is_imported_stub,
        visibility,
        avatar_hash,
    ) = row
    person: dict[str, Any] = {
        "user_id": user_id,
        "delivery_email": None,
        "email": email,
        "full_name": full_name,
        "date_joined": to_iso(date_joined),
        "is_active": is_active,
        "is_owner": role == Role.OWNER,
        "is_admin": role in _ADMIN_ROLES,
        "is_guest": role == Role.GUEST,
        "is_bot": is_bot,
        "bot_type": bot_type,
        "bot_owner_id": bot_owner_id,
        "role": role,
        "timezone": timezone,
        "avatar_url": None,
        "avatar_version": avatar_version,
        "is_imported_stub": is_imported_stub,
    }
    if not is_bot:
        person["profile_data"] = profile or {}
    # The two placeholders are the first "delivery_email" and "avatar_url" keys: a quote
    # inside a string value is escaped, so no value can contain them.
    dumps = orjson.dumps
    head, _, rest = dumps(person).partition(_DELIVERY_EMAIL + b"null")
    middle, _, tail = rest.partition(_AVATAR_URL + b"null")
    url = avatar_url_for(
        realm_id=realm_id,
        user_id=user_id,
        full_name=full_name,
        delivery_email=delivery_email,
        source=avatar_source,
        version=avatar_version,
        avatar_hash=avatar_hash,
        gravatar=gravatar,
    )
    return _Entry(
        user_id=user_id,
        is_active=is_active,
        is_bot=is_bot,
        visibility=visibility,
        gravatar_hosted=gravatar and avatar_source == GRAVATAR,
        head=head + _DELIVERY_EMAIL,
        email=dumps(delivery_email),
        middle=middle + _AVATAR_URL,
        avatar=dumps(url),
        tail=tail,
        source=source,
    )


def _load(conn: Connection, realm_id: int, *, gravatar: bool) -> RealmUserList:
    return RealmUserList(_entries(conn, realm_id, gravatar=gravatar), gravatar=gravatar)


def _reload(conn: Connection, realm_id: int, previous: RealmUserList, *, gravatar: bool) -> RealmUserList:
    """The list again after a write to users or profile fields: only the users whose row or
    profile data changed are encoded again (10,000 users, one name changed: 0.31 s of CPU
    for the next /register before, 0.09 s now, most of it reading the rows)."""
    return RealmUserList(_entries(conn, realm_id, gravatar=gravatar, previous=previous), gravatar=gravatar)


@cache
def _component(gravatar: bool) -> Loaded[RealmUserList]:
    """The list as a realm-state component; one per value of the server's Gravatar setting,
    which the loader needs (the store knows it by its name)."""
    return Loaded(
        "register_user_list",
        _TABLES,
        partial(_load, gravatar=gravatar),
        reload=partial(_reload, gravatar=gravatar),
    )


def visible_email_levels(viewer: UserProfile) -> frozenset[int]:
    """The ``email_address_visibility`` levels whose addresses this viewer sees."""
    # Asked of the one rule (lib/users.py) for a stand-in user at each level.
    return frozenset(
        level
        for level in EmailVisibility
        if can_view_delivery_email(
            Requester.of(viewer), UserProfile(id=0, is_bot=False, email_address_visibility=level)
        )
    )


def _viewer_lists(
    session: Session, viewer: UserProfile, client_gravatar: bool
) -> tuple[_JsonList, _JsonList, bytes | None]:
    """The active and the deactivated users the viewer may know about, and the viewer's own
    entry when it must differ from the list's (everyone sees their own address)."""
    realm_id = viewer.realm_id
    gravatar = gravatar_enabled(session)
    levels = visible_email_levels(viewer)
    if user_access_restricted(session, Requester.of(viewer)):
        entries = _entries(
            session.connection(),
            realm_id,
            gravatar=gravatar,
            condition=accessible_user_filter(session, Requester.of(viewer)),
        )
        active, inactive = _encode(entries, levels, client_gravatar, viewer_id=viewer.id)
        return active, inactive, None
    users = cached_component(session, realm_id, _component(gravatar))
    active, inactive = users.lists(levels, client_gravatar)
    own = users.entry(viewer.id)
    if own is not None and not (own.is_bot or own.visibility in levels):
        return active, inactive, own.encode(True, client_gravatar)
    return active, inactive, None


def realm_user_json(session: Session, viewer: UserProfile, *, client_gravatar: bool) -> tuple[bytes, bytes]:
    """The JSON arrays of the active and of the deactivated users the viewer may know about,
    as ``format_users(get_users(...), include_custom_profile_fields=True)`` formats them."""
    active, inactive, own = _viewer_lists(session, viewer, client_gravatar)
    if own is None:
        return active.json, inactive.json
    # In whichever of the two lists the viewer is (the other is returned as it is).
    return active.replaced(viewer.id, own), inactive.replaced(viewer.id, own)


def _items(users: _JsonList) -> Iterator[tuple[int, bytes]]:
    start = 1
    for user_id, end in zip(users.ids, users.ends, strict=True):
        yield user_id, users.json[start:end]
        start = end + 1


def realm_members_json(session: Session, viewer: UserProfile, *, client_gravatar: bool) -> bytes:
    """The JSON array of every user the viewer may know about, active or not, in ID order:
    GET /users's ``members`` as ``format_users(get_users(...),
    include_custom_profile_fields=True)`` formats them, from the list /register sends."""
    active, inactive, own = _viewer_lists(session, viewer, client_gravatar)
    # IDs are unique across both lists: the merge compares IDs only.
    items = (
        own if own is not None and user_id == viewer.id else item
        for user_id, item in heapq.merge(_items(active), _items(inactive))
    )
    return b"[" + b",".join(items) + b"]"
