"""DELETE /users/{id}/two_factor: an administrator's reset of someone's authenticator."""

from __future__ import annotations

import pyotp
from sqlalchemy import select

from palaver.actions.two_factor import do_confirm_two_factor_enrolment, do_start_two_factor_enrolment
from palaver.lib.two_factor import confirmed_device
from palaver.models import UserProfile
from palaver.services import Services
from palaver.timeutil import utcnow
from tests import helpers
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success


def _enrol(services: Services, user: helpers.TestUser) -> None:
    with services.db.session() as session:
        profile = session.get(UserProfile, user.id)
        assert profile is not None
        secret = do_start_two_factor_enrolment(session, profile)
        do_confirm_two_factor_enrolment(session, profile, pyotp.TOTP(secret).now(), utcnow())


def _enrolled(services: Services, user: helpers.TestUser) -> bool:
    with services.db.session() as session:
        return confirmed_device(session, user.id) is not None


def test_an_administrator_resets_a_members_second_factor(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    _enrol(services, realm.hamlet)
    body = assert_json_success(api.delete(realm.iago, f"users/{realm.hamlet.id}/two_factor"))
    assert body["had_two_factor"] is True
    assert not _enrolled(services, realm.hamlet)
    # In the audit log, with who did it.
    logins = assert_json_success(api.get(realm.iago, "realm/logins", {"user_id": realm.hamlet.id}))["logins"]
    assert (logins[0]["method"], logins[0]["channel"], logins[0]["acting_user_id"]) == (
        "two_factor_reset",
        "admin",
        realm.iago.id,
    )
    # Again: nothing left to reset, said so.
    body = assert_json_success(api.delete(realm.iago, f"users/{realm.hamlet.id}/two_factor"))
    assert body["had_two_factor"] is False


def test_only_administrators_and_only_owners_for_owners(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    _enrol(services, realm.desdemona)
    _enrol(services, realm.othello)
    response = api.delete(realm.hamlet, f"users/{realm.othello.id}/two_factor")
    assert_json_error(response, "Must be an organization administrator", 400)
    response = api.delete(realm.iago, f"users/{realm.desdemona.id}/two_factor")
    assert_json_error(response, "Must be an organization owner", 400)
    assert _enrolled(services, realm.desdemona) and _enrolled(services, realm.othello)
    assert_json_success(api.delete(realm.desdemona, f"users/{realm.desdemona.id}/two_factor"))
    assert_json_error(api.delete(realm.iago, "users/999999/two_factor"), "No such user")
    with services.db.session() as session:
        bot = session.scalars(
            select(UserProfile).where(UserProfile.realm_id == realm.id, UserProfile.is_bot)
        ).first()
        assert bot is not None
        assert_json_error(api.delete(realm.iago, f"users/{bot.id}/two_factor"), "No such user")
