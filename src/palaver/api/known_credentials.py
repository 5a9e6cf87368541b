"""Requests by a known API key, authenticated without the database.

A client sends the same credentials with every request: a long-poll again as soon as each
answer arrives (one message to a channel of a thousand online members is a thousand polls
at once), a page of history, a mark-read. Each took the database's look-up of its API key
and a load of the whole user row through the ORM, to learn again what the previous request
learned. Here a request that presents the same credentials to the same host as an earlier
one that passed is known to belong to the same user, **as long as nothing that decided it
has changed since**: the API key, email and activity of users live in ``user_profile`` and
whether the organization is active in ``realm``, and any committed write to either replaces
the realm-state cache's snapshot of it (in this process at commit, in the others through the
invalidation channel). So an entry remembers the version of those snapshots that was
current *before* its full authentication read the database, and holds only while the cache
still holds that version (``cache/credentials.py``).

A full authentication takes the snapshots of the organization the request's host names
(or, once an entry exists, the entry's) before it reads the user; when it finds the user in
that organization, the entry holds from then on, so every request after a credential's
first skips the look-up. An entry keeps the ``Requester`` that full authentication built,
and a known request's view gets that same value: its role, activity and settings are in
``user_profile`` too, so they are as current as the key. The view loads the
``UserProfile`` only if it asks for it (``Ctx.me``). Only API-key (HTTP Basic) requests
take this path; the browser's cookie sessions are authenticated in full each time.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from palaver.api.pipeline import Prepared, PrepareObserver, RequestInfo
from palaver.cache.credentials import CredentialVersion, CredentialVersions
from palaver.config import Settings
from palaver.lib.realm import get_realm_by_string_id, subdomain_for_host
from palaver.models.requester import Requester

# Credentials remembered at most (each entry is a few hundred bytes); past it, forgotten
# all at once and learned again by the next full authentication of each.
MAX_ENTRIES = 50_000

_Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class _Entry:
    requester: Requester
    # The realm's cached users and realm row as they were before the full authentication
    # that made the entry; None when it could not be taken (not confirmed).
    version: CredentialVersion | None = None


class KnownCredentials:
    """Per process (``create_app``): credentials that recently authenticated a request."""

    def __init__(self, versions: CredentialVersions, settings: Settings) -> None:
        self._versions = versions
        self._settings = settings
        self._entries: dict[_Key, _Entry] = {}

    @staticmethod
    def _key(info: RequestInfo) -> _Key | None:
        if info.web is not None or not info.authorization:
            return None
        return (info.host, info.authorization)

    def requester(self, info: RequestInfo) -> Requester | None:
        """Who a request is known to come from, or None to authenticate it in full."""
        key = self._key(info)
        entry = None if key is None else self._entries.get(key)
        if entry is None or entry.version is None or not self._versions.holds(entry.version):
            return None
        return entry.requester

    def recorder(self, info: RequestInfo) -> PrepareObserver | None:
        """For a request authenticated in full: what remembers its outcome. None while deaf
        to other processes: no entry could be confirmed, and taking the snapshots would load
        the realm's users from the database for every request."""
        key = self._key(info)
        return None if key is None or not self._versions.listening else _Recorder(self, key)

    def _remember(self, key: _Key, entry: _Entry) -> None:
        if len(self._entries) >= MAX_ENTRIES:
            self._entries.clear()
        self._entries[key] = entry


class _Recorder:
    """One full authentication: the snapshots before it, the user after."""

    def __init__(self, known: KnownCredentials, key: _Key) -> None:
        self._known = known
        self._key = key
        self._earlier = known._entries.get(key)
        self._realm_id: int | None = None
        self._before: CredentialVersion | None = None

    def before(self, session: Session) -> None:
        known = self._known
        if self._earlier is not None:
            realm_id: int | None = self._earlier.requester.realm_id
        else:
            # A credential's first request: the organization its host names. That read's
            # transaction ends here, so on SQLite the authentication reads a database no
            # older than the snapshots below (a change committed in between replaced them).
            realm = get_realm_by_string_id(session, subdomain_for_host(known._settings, self._key[0]))
            realm_id = None if realm is None else realm.id
            session.rollback()
        if realm_id is None:
            return
        self._realm_id = realm_id
        self._before = known._versions.load(session, realm_id)

    def after(self, prepared: Prepared) -> None:
        requester = prepared.ctx.requester_or_none
        if requester is None:
            return
        before = self._before
        confirmed = before is not None and self._realm_id == requester.realm_id
        self._known._remember(self._key, _Entry(requester, before if confirmed else None))
