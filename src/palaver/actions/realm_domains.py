"""Writes to an organization's allowed email domains (owners only).

Every active user hears each change as a realm_domains event.
"""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.events import types as ev
from palaver.lib.exceptions import JsonableError, OrganizationOwnerRequiredError
from palaver.lib.realm import active_user_ids, get_realm
from palaver.lib.realm_domains import (
    access_realm_domain,
    check_domain,
    get_realm_domain,
    get_realm_domains,
)
from palaver.models.realm_domains import RealmDomain
from palaver.models.requester import Requester


def _check_owner(user: Requester) -> None:
    if not user.is_realm_owner:
        raise OrganizationOwnerRequiredError()


def _duplicate(domain: str) -> JsonableError:
    return JsonableError(f"The domain {domain} is already a part of your organization.")


def do_add_realm_domain(
    session: Session, user: Requester, domain: str, *, allow_subdomains: bool
) -> RealmDomain:
    _check_owner(user)
    domain = check_domain(domain)
    try:
        with transaction(session) as tx:
            if get_realm_domain(session, user.realm_id, domain) is not None:
                raise _duplicate(domain)
            realm_domain = RealmDomain(
                realm_id=user.realm_id, domain=domain, allow_subdomains=allow_subdomains
            )
            session.add(realm_domain)
            session.flush()
            payload = ev.RealmDomainPayload(domain=domain, allow_subdomains=allow_subdomains)
            tx.send_event(
                user.realm_id,
                ev.RealmDomainsAdd(realm_domain=payload),
                active_user_ids(session, user.realm_id),
            )
    except IntegrityError:
        # Lost a race with a concurrent request adding the same domain.
        raise _duplicate(domain) from None
    return realm_domain


def do_change_realm_domain(session: Session, user: Requester, domain: str, *, allow_subdomains: bool) -> None:
    _check_owner(user)
    with transaction(session) as tx:
        realm_domain = access_realm_domain(session, user.realm_id, domain)
        if realm_domain.allow_subdomains == allow_subdomains:
            return
        realm_domain.allow_subdomains = allow_subdomains
        payload = ev.RealmDomainPayload(domain=realm_domain.domain, allow_subdomains=allow_subdomains)
        tx.send_event(
            user.realm_id,
            ev.RealmDomainsChange(realm_domain=payload),
            active_user_ids(session, user.realm_id),
        )


def do_remove_realm_domain(session: Session, user: Requester, domain: str) -> None:
    _check_owner(user)
    with transaction(session) as tx:
        realm_domain = access_realm_domain(session, user.realm_id, domain)
        session.delete(realm_domain)
        session.flush()
        realm = get_realm(session, user.realm_id)
        if realm.emails_restricted_to_domains and not get_realm_domains(session, realm.id):
            # The restriction means nothing without domains, and would later take effect
            # with whatever domain is added next; Zulip lifts it too.
            realm.emails_restricted_to_domains = False
            tx.send_event(
                realm.id,
                ev.RealmUpdate(property="emails_restricted_to_domains", value=False),
                active_user_ids(session, realm.id),
            )
        tx.send_event(
            user.realm_id,
            ev.RealmDomainsRemove(domain=realm_domain.domain),
            active_user_ids(session, user.realm_id),
        )
