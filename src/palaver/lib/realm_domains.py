"""Allowed email domains of an organization: reads and domain syntax."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.lib.exceptions import JsonableError
from palaver.models.realm_domains import RealmDomain

MAX_DOMAIN_LENGTH = 255
_LABEL_CHARS = re.compile(r"^[a-z0-9-]*$")


def domain_syntax_error(domain: str) -> str | None:
    """Why a lower-cased domain is not acceptable, or None when it is."""
    if not domain:
        return "Domain can't be empty."
    if "." not in domain:
        return "Domain must have at least one dot (.)"
    if len(domain) > MAX_DOMAIN_LENGTH:
        return "Domain is too long"
    if domain[0] == "." or domain[-1] == ".":
        return "Domain cannot start or end with a dot (.)"
    for label in domain.split("."):
        if not label:
            return "Consecutive '.' are not allowed."
        if label[0] == "-" or label[-1] == "-":
            return "Subdomains cannot start or end with a '-'."
        if _LABEL_CHARS.match(label) is None:
            return "Domain can only have letters, numbers, '.' and '-'s."
    return None


def check_domain(domain: str) -> str:
    domain = domain.strip().lower()
    error = domain_syntax_error(domain)
    if error is not None:
        raise JsonableError(f"Invalid domain: {error}")
    return domain


def get_realm_domains(session: Session, realm_id: int) -> list[RealmDomain]:
    return list(
        session.scalars(
            select(RealmDomain).where(RealmDomain.realm_id == realm_id).order_by(RealmDomain.domain)
        )
    )


def format_realm_domain(realm_domain: RealmDomain) -> dict[str, Any]:
    return {"domain": realm_domain.domain, "allow_subdomains": realm_domain.allow_subdomains}


def get_realm_domain(session: Session, realm_id: int, domain: str) -> RealmDomain | None:
    return session.scalars(
        select(RealmDomain).where(
            RealmDomain.realm_id == realm_id, RealmDomain.domain == domain.strip().lower()
        )
    ).one_or_none()


def access_realm_domain(session: Session, realm_id: int, domain: str) -> RealmDomain:
    found = get_realm_domain(session, realm_id, domain)
    if found is None:
        raise JsonableError(f"No entry found for domain {domain}.")
    return found
