"""SAML sign-ins' state: assertions already used (against replays), and which IdP session
each browser session came from (for single logout)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.db.transaction import transaction
from palaver.lib.exceptions import JsonableError
from palaver.models import UserProfile
from palaver.models.auth import SamlAssertion, SamlSession
from palaver.models.web_sessions import WebSession


class AssertionReplayedError(JsonableError):
    code = "SSO_REFUSED"
    http_status = 403


def do_spend_saml_assertion(
    session: Session, *, assertion_key: str, expires: datetime, now: datetime
) -> None:
    """Use an assertion up: the same one again, while it would still be valid, is a replay.

    The unique key decides between two concurrent posts of one assertion: one insert wins.
    """
    with transaction(session):
        session.execute(delete(SamlAssertion).where(SamlAssertion.expires <= now))
        seen = session.scalars(
            select(SamlAssertion.id).where(SamlAssertion.assertion_key == assertion_key)
        ).first()
        if seen is None:
            try:
                with session.begin_nested():
                    session.add(SamlAssertion(assertion_key=assertion_key, expires=expires))
                    session.flush()
            except IntegrityError:
                seen = -1
    if seen is not None:
        raise AssertionReplayedError("This sign-in answer was already used. Sign in again.")


def do_link_saml_session(
    session: Session, *, web_session_id: int, provider: str, name_id_xml: str, session_index: str
) -> None:
    with transaction(session):
        session.add(
            SamlSession(
                web_session_id=web_session_id,
                provider=provider,
                name_id=name_id_xml,
                session_index=session_index,
            )
        )


def do_end_saml_sessions(
    session: Session, *, realm_id: int, provider: str, name_id: str, session_indexes: tuple[str, ...]
) -> int:
    """End the browser sessions an IdP's logout names: those its sign-ins made for ``name_id``
    (only those of the listed IdP sessions, when it lists any). Returns how many ended."""
    with transaction(session):
        links = session.scalars(select(SamlSession).where(SamlSession.provider == provider)).all()
        ended = [
            link.web_session_id
            for link in links
            if _name_id_text(link.name_id) == name_id
            and (not session_indexes or link.session_index in session_indexes)
        ]
        users = select(UserProfile.id).where(UserProfile.realm_id == realm_id)
        if ended:
            session.execute(
                delete(WebSession).where(WebSession.id.in_(ended), WebSession.user_profile_id.in_(users))
            )
    return len(ended)


def _name_id_text(xml: str) -> str:
    # pysaml2 loads with SAML itself (lib/saml.py), not when this module is imported.
    from saml2.saml import name_id_from_string  # noqa: PLC0415

    node = name_id_from_string(xml)
    return (node.text or "").strip() if node is not None else ""
