"""Linkifier reads, validation, and the form the Markdown renderer takes them in."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.cache import realm_linkifiers
from palaver.lib.exceptions import JsonableError
from palaver.lib.ids import get_row
from palaver.lib.linkifier_regex import LinkifierPatternError, check_pattern
from palaver.lib.markdown.contract import LinkifierRef
from palaver.lib.url_templates import InvalidUrlTemplateError, url_template_variables
from palaver.models.linkifiers import RealmFilter

MAX_PATTERN_LENGTH = 1000
MAX_URL_TEMPLATE_LENGTH = 1000


def get_linkifiers(session: Session, realm_id: int) -> list[RealmFilter]:
    """The realm's linkifiers in the order they apply."""
    return list(
        session.scalars(
            select(RealmFilter)
            .where(RealmFilter.realm_id == realm_id)
            .order_by(RealmFilter.order, RealmFilter.id)
        )
    )


def linkifiers_for_realm(session: Session, realm_id: int) -> list[LinkifierRef]:
    """What ``MarkdownContext.linkifiers`` needs to render the realm's messages and topics."""
    return [
        LinkifierRef(pattern=f.pattern, url_template=f.url_template)
        for f in realm_linkifiers(session, realm_id)
    ]


def format_linkifier(linkifier: RealmFilter) -> dict[str, Any]:
    return {"id": linkifier.id, "pattern": linkifier.pattern, "url_template": linkifier.url_template}


def access_linkifier(session: Session, realm_id: int, linkifier_id: int) -> RealmFilter:
    linkifier = get_row(session, RealmFilter, linkifier_id)
    if linkifier is None or linkifier.realm_id != realm_id:
        raise JsonableError("Linkifier not found.")
    return linkifier


def check_linkifier(pattern: str, url_template: str) -> tuple[str, str]:
    """Check a pattern and template belong together: the template's variables are exactly
    the pattern's named groups. Returns them stripped of surrounding whitespace."""
    pattern = pattern.strip()
    url_template = url_template.strip()
    if not pattern:
        raise JsonableError("Pattern cannot be blank.")
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise JsonableError(f"pattern is too long (limit: {MAX_PATTERN_LENGTH} characters)")
    if len(url_template) > MAX_URL_TEMPLATE_LENGTH:
        raise JsonableError(f"url_template is too long (limit: {MAX_URL_TEMPLATE_LENGTH} characters)")
    try:
        groups = check_pattern(pattern)
    except LinkifierPatternError as e:
        raise JsonableError(f"Bad regular expression: {e}") from None
    try:
        variables = set(url_template_variables(url_template))
    except InvalidUrlTemplateError:
        raise JsonableError("Invalid URL template.") from None
    if variables - groups:
        raise JsonableError(
            f"Group {min(variables - groups)!r} in URL template is not present in linkifier pattern."
        )
    if groups - variables:
        raise JsonableError(
            f"Group {min(groups - variables)!r} in linkifier pattern is not present in URL template."
        )
    return pattern, url_template
