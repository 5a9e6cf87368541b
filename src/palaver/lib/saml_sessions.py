"""Which IdP session a browser session came from, and the logout request that ends it."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from palaver.config import Settings
from palaver.lib import saml
from palaver.models.auth import SamlSession
from palaver.models.web_sessions import WebSession


def saml_logout_url(settings: Settings, session: Session, row: WebSession, realm_url: str) -> str | None:
    """Where to send the browser so that its IdP session ends too (SP-initiated single logout);
    None for a session no SAML sign-in made, or an IdP without a logout endpoint."""
    link = session.scalars(select(SamlSession).where(SamlSession.web_session_id == row.id)).one_or_none()
    if link is None:
        return None
    idp = settings.auth.saml.get(link.provider.removeprefix("saml/"))
    if idp is None:
        return None
    return saml.logout_url(idp, realm_url, link.name_id, link.session_index)
