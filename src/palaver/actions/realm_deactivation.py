"""Deactivating and reactivating an organization.

Every user's clients are told with a ``realm`` ``deactivated`` event; the event queues of
the realm are then closed by the queue backend (``events/queues.py``), and every later
request of its users is refused with REALM_DEACTIVATED.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.db import transaction
from palaver.events import types as ev
from palaver.lib.realm import active_user_ids
from palaver.models import Realm


def do_deactivate_realm(session: Session, realm: Realm) -> None:
    with transaction(session) as tx:
        if realm.deactivated:
            return
        realm.deactivated = True
        session.flush()
        tx.send_event(realm.id, ev.RealmDeactivated(realm_id=realm.id), active_user_ids(session, realm.id))


def do_reactivate_realm(session: Session, realm: Realm) -> None:
    # Nobody is listening: the realm's queues closed when it was deactivated.
    with transaction(session):
        realm.deactivated = False
        session.flush()
