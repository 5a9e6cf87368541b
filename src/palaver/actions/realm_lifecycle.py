"""Deactivating and reactivating whole organizations (an operator's tool)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.actions.web_sessions import do_revoke_realm_web_sessions
from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError
from palaver.lib.realm import active_user_ids
from palaver.models import Realm


def do_deactivate_realm(session: Session, realm: Realm) -> None:
    """Log everyone out: requests get 401 ``REALM_DEACTIVATED`` from now on.

    Clients learn it from the ``realm``/``deactivated`` event, sent to every active user.
    """
    with transaction(session) as tx:
        tx.lock(realm)
        if realm.deactivated:
            raise JsonableError("Organization is already deactivated")
        realm.deactivated = True
        # Browsers are logged out with everyone else (their session rows go).
        do_revoke_realm_web_sessions(session, realm.id)
        tx.send_event(realm.id, ev.RealmDeactivated(realm_id=realm.id), active_user_ids(session, realm.id))


def do_reactivate_realm(session: Session, realm: Realm) -> None:
    # Nobody is connected to a deactivated realm, so there is no one to tell.
    with transaction(session) as tx:
        tx.lock(realm)
        if not realm.deactivated:
            raise JsonableError("Organization is already active")
        realm.deactivated = False
