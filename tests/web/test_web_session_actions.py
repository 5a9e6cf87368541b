"""The session actions on their own: hashing, revocation by user and by organization."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import func, select

from palaver.actions.web_sessions import (
    do_create_web_session,
    do_revoke_realm_web_sessions,
    do_revoke_user_web_sessions,
)
from palaver.lib.web_sessions import get_live_web_session, hash_token
from palaver.models import UserProfile
from palaver.models.web_sessions import WebSession
from palaver.services import Services
from palaver.timeutil import utcnow
from tests.helpers import SeededRealm


def _count(services: Services, user_id: int) -> int:
    with services.db.session() as session:
        query = select(func.count()).select_from(WebSession).where(WebSession.user_profile_id == user_id)
        return int(session.scalar(query) or 0)


def test_token_is_stored_only_hashed(services: Services, realm: SeededRealm) -> None:
    now = utcnow()
    with services.db.session() as session:
        user = session.get_one(UserProfile, realm.hamlet.id)
        token, row = do_create_web_session(session, user, now=now, lifetime=timedelta(days=1))
        assert row.token_hash == hash_token(token) != token
        assert get_live_web_session(session, token, now) is not None
        assert get_live_web_session(session, token, now + timedelta(days=2)) is None
        assert get_live_web_session(session, "x" * 500, now) is None


def test_revoke_user_keeps_only_the_named_session(services: Services, realm: SeededRealm) -> None:
    now = utcnow()
    with services.db.session() as session:
        user = session.get_one(UserProfile, realm.hamlet.id)
        _, keep = do_create_web_session(session, user, now=now, lifetime=timedelta(days=1))
        do_create_web_session(session, user, now=now, lifetime=timedelta(days=1))
        do_revoke_user_web_sessions(session, user.id, keep_id=keep.id)
    assert _count(services, realm.hamlet.id) == 1


def test_revoke_realm_ends_every_session_there(services: Services, realm: SeededRealm) -> None:
    now = utcnow()
    with services.db.session() as session:
        for name in ("hamlet", "othello"):
            user = session.get_one(UserProfile, realm.users[name].id)
            do_create_web_session(session, user, now=now, lifetime=timedelta(days=1))
        do_revoke_realm_web_sessions(session, realm.id)
    assert _count(services, realm.hamlet.id) == _count(services, realm.othello.id) == 0


def test_expired_sessions_are_forgotten_at_the_next_login(services: Services, realm: SeededRealm) -> None:
    now = utcnow()
    with services.db.session() as session:
        user = session.get_one(UserProfile, realm.iago.id)
        do_create_web_session(session, user, now=now, lifetime=timedelta(days=1))
        do_create_web_session(session, user, now=now + timedelta(days=3), lifetime=timedelta(days=1))
    assert _count(services, realm.iago.id) == 1
