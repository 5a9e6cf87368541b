"""Writes to linkifiers (administrators); every active user hears the realm's ordered list."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.db.transaction import Tx, transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError, OrganizationAdministratorRequiredError
from palaver.lib.linkifiers import access_linkifier, check_linkifier, format_linkifier, get_linkifiers
from palaver.lib.realm import active_user_ids
from palaver.models.linkifiers import RealmFilter
from palaver.models.requester import Requester
from palaver.models.users import UserProfile

_DUPLICATE = "Linkifier with this Pattern already exists."


def _check_admin(user: UserProfile | Requester) -> None:
    if not user.is_realm_admin:
        raise OrganizationAdministratorRequiredError()


def _notify(tx: Tx, session: Session, realm_id: int) -> None:
    session.flush()
    payloads = [ev.LinkifierPayload(**format_linkifier(f)) for f in get_linkifiers(session, realm_id)]
    tx.send_event(realm_id, ev.RealmLinkifiers(realm_linkifiers=payloads), active_user_ids(session, realm_id))


def _check_unique(session: Session, realm_id: int, pattern: str, exclude_id: int | None = None) -> None:
    query = select(RealmFilter.id).where(RealmFilter.realm_id == realm_id, RealmFilter.pattern == pattern)
    if exclude_id is not None:
        query = query.where(RealmFilter.id != exclude_id)
    if session.scalar(query) is not None:
        raise JsonableError(_DUPLICATE)


def do_add_linkifier(
    session: Session, user: UserProfile | Requester, pattern: str, url_template: str
) -> RealmFilter:
    _check_admin(user)
    pattern, url_template = check_linkifier(pattern, url_template)
    try:
        with transaction(session) as tx:
            _check_unique(session, user.realm_id, pattern)
            last = session.scalar(
                select(func.max(RealmFilter.order)).where(RealmFilter.realm_id == user.realm_id)
            )
            # New linkifiers apply after the existing ones.
            linkifier = RealmFilter(
                realm_id=user.realm_id, pattern=pattern, url_template=url_template, order=(last or 0) + 1
            )
            session.add(linkifier)
            _notify(tx, session, user.realm_id)
    except IntegrityError:
        raise JsonableError(_DUPLICATE) from None
    return linkifier


def do_update_linkifier(
    session: Session, user: Requester, linkifier_id: int, pattern: str, url_template: str
) -> None:
    _check_admin(user)
    try:
        with transaction(session) as tx:
            linkifier = access_linkifier(session, user.realm_id, linkifier_id)
            pattern, url_template = check_linkifier(pattern, url_template)
            _check_unique(session, user.realm_id, pattern, exclude_id=linkifier.id)
            linkifier.pattern, linkifier.url_template = pattern, url_template
            _notify(tx, session, user.realm_id)
    except IntegrityError:
        raise JsonableError(_DUPLICATE) from None


def do_remove_linkifier(session: Session, user: Requester, linkifier_id: int) -> None:
    _check_admin(user)
    with transaction(session) as tx:
        session.delete(access_linkifier(session, user.realm_id, linkifier_id))
        _notify(tx, session, user.realm_id)


def do_reorder_linkifiers(session: Session, user: Requester, ordered_ids: list[int]) -> None:
    _check_admin(user)
    with transaction(session) as tx:
        linkifiers = {f.id: f for f in get_linkifiers(session, user.realm_id)}
        if len(set(ordered_ids)) != len(ordered_ids) or set(ordered_ids) != set(linkifiers):
            raise JsonableError("The ordered list must enumerate all existing linkifiers exactly once")
        if not linkifiers:
            return
        for position, linkifier_id in enumerate(ordered_ids):
            linkifiers[linkifier_id].order = position
        _notify(tx, session, user.realm_id)
