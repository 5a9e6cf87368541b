"""Asking the web clients of an organization to reload (after a server upgrade)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.realm import active_user_ids
from palaver.models import Realm


def do_reload_web_clients(session: Session, realm: Realm, *, immediate: bool) -> None:
    """``immediate`` reloads at once; otherwise clients pick a quiet moment."""
    with transaction(session) as tx:
        tx.send_event(realm.id, ev.WebReloadClient(immediate=immediate), active_user_ids(session, realm.id))
