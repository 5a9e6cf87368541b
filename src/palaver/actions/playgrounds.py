"""Writes to code playgrounds; every active user hears the realm's new list."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError, OrganizationAdministratorRequiredError
from palaver.lib.playgrounds import access_playground, check_playground, format_playground, get_playgrounds
from palaver.lib.realm import active_user_ids
from palaver.models.names import name_key
from palaver.models.playgrounds import RealmPlayground
from palaver.models.requester import Requester

_DUPLICATE = "Realm playground with this Realm, Pygments language and Name already exists."


def _check_admin(user: Requester) -> None:
    if not user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()


def _notify(tx: Tx, session: Session, realm_id: int) -> None:
    session.flush()
    payloads = [ev.RealmPlaygroundPayload(**format_playground(p)) for p in get_playgrounds(session, realm_id)]
    tx.send_event(
        realm_id, ev.RealmPlaygrounds(realm_playgrounds=payloads), active_user_ids(session, realm_id)
    )


def do_add_playground(
    session: Session, user: Requester, *, name: str, pygments_language: str, url_template: str
) -> RealmPlayground:
    _check_admin(user)
    name, pygments_language, url_template = check_playground(name, pygments_language, url_template)
    try:
        return _add_playground(session, user, name, pygments_language, url_template)
    except IntegrityError:
        # A concurrent request added the same playground between our check and insert.
        raise JsonableError(_DUPLICATE) from None


def _add_playground(
    session: Session, user: Requester, name: str, pygments_language: str, url_template: str
) -> RealmPlayground:
    with transaction(session) as tx:
        duplicate = session.scalar(
            select(RealmPlayground.id).where(
                RealmPlayground.realm_id == user.realm_id,
                RealmPlayground.pygments_language == pygments_language,
                RealmPlayground.name_key == name_key(name),
            )
        )
        if duplicate is not None:
            raise JsonableError(_DUPLICATE)
        playground = RealmPlayground(
            realm_id=user.realm_id, name=name, pygments_language=pygments_language, url_template=url_template
        )
        session.add(playground)
        _notify(tx, session, user.realm_id)
    return playground


def do_remove_playground(session: Session, user: Requester, playground_id: int) -> None:
    with transaction(session) as tx:
        _check_admin(user)
        session.delete(access_playground(session, user.realm_id, playground_id))
        _notify(tx, session, user.realm_id)
