"""Reading browser sessions: the cookie names, token hashing, and finding a live session."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from contextvars import ContextVar
from datetime import datetime

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from palaver.models.web_sessions import WebSession

SESSION_COOKIE = "palaver_session"
CSRF_COOKIE = "csrftoken"
CSRF_HEADER = "x-csrftoken"
CSRF_FORM_FIELD = "csrfmiddlewaretoken"

# The session a request authenticated with, so that changing one's password from the
# browser signs out every other session but not the one that made the change.
current_web_session_id: ContextVar[int | None] = ContextVar("current_web_session_id", default=None)


def new_token() -> str:
    return secrets.token_urlsafe(32)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def tokens_match(expected: str, given: str | None) -> bool:
    """Constant-time comparison, so the token cannot be guessed byte by byte from timings."""
    return given is not None and hmac.compare_digest(expected.encode(), given.encode("utf-8", "replace"))


_BY_HASH = select(WebSession).where(WebSession.token_hash == bindparam("token_hash"))


def get_live_web_session(session: Session, token: str | None, now: datetime) -> WebSession | None:
    """The unexpired session a cookie names, or None (missing, unknown, expired)."""
    # Tokens are 43 characters; anything far longer is not ours and need not be hashed.
    if not token or len(token) > 128:
        return None
    found = session.scalars(_BY_HASH, {"token_hash": hash_token(token)}).one_or_none()
    if found is None or found.expires <= now:
        return None
    return found
