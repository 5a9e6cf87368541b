"""Whether what authenticated a credential is still current: the cache's snapshots of an
organization's users and realm row, compared by identity.

The users' snapshot holds every column authentication reads (the API key, the addresses,
whether active: ``components.USERS``), and the realm's whether the organization is active.
Any committed write to either table replaces the snapshot, in this process at commit and in
the others through ``transport`` or ``change_log``. So a version taken before a full
authentication read the database holds exactly as long as nothing that decided it changed:
a change committed before that read was seen by it; one committed after replaces a snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session

from palaver.cache.components import REALM, USERS
from palaver.cache.reads import realm_settings, realm_users
from palaver.cache.snapshots import RealmRow, RealmUsers
from palaver.cache.store import RealmStateStore


@dataclass(frozen=True, slots=True)
class CredentialVersion:
    """An organization's users and realm row as the cache held them at one moment."""

    realm_id: int
    users: RealmUsers
    realm: RealmRow


class CredentialVersions:
    """The versions of one process's cache (``api/known_credentials.py`` holds one)."""

    def __init__(self, store: RealmStateStore) -> None:
        self._store = store

    @property
    def listening(self) -> bool:
        """Whether the cache hears the other processes' changes: while it does not, its
        snapshots may be stale, and no version is current."""
        return self._store.accepting

    def current(self, realm_id: int) -> CredentialVersion | None:
        """The version cached now; None while not listening or not cached."""
        if not self._store.accepting:
            return None
        users = self._store.peek(realm_id, USERS)
        realm = self._store.peek(realm_id, REALM)
        return None if users is None or realm is None else CredentialVersion(realm_id, users, realm)

    def load(self, session: Session, realm_id: int) -> CredentialVersion | None:
        """``current``, after loading what is not cached (a server that has only answered
        polls may not have needed it)."""
        realm_users(session, realm_id)
        realm_settings(session, realm_id)
        return self.current(realm_id)

    def holds(self, version: CredentialVersion) -> bool:
        """Whether nothing in ``version`` has changed since it was taken."""
        store, realm_id = self._store, version.realm_id
        return (
            store.accepting
            and store.peek(realm_id, USERS) is version.users
            and store.peek(realm_id, REALM) is version.realm
        )
