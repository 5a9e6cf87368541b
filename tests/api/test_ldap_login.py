"""Signing in with a company directory's password: a real slapd (tests/ldap_server.py)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from palaver.actions.external_logins import do_sync_directory
from palaver.app import create_app
from palaver.auth_config import LdapSettings
from palaver.lib import ldap_directory
from palaver.lib.storage import make_storage
from palaver.models import Realm, UserProfile
from palaver.models.auth import ExternalIdentity, LoginRecord
from palaver.services import Services, build_services
from palaver.workers.directory_sync import sync_all_realms
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success, seed_realm
from tests.ldap_server import Directory, Person, running_directory
from tests.web.web_helpers import post_login

WRONG = "Your username or password is incorrect"


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Directory]:
    with running_directory(tmp_path_factory.mktemp("slapd")) as running:
        yield running


@pytest.fixture(scope="module")
def ldap_services(
    database_url: str, directory: Directory, services: Services, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Services]:
    # ``services`` (the suite's) has migrated the shared database.
    settings = make_test_settings(
        database_url, tmp_path_factory.mktemp("ldap-data"), auth={"ldap": directory.settings()}
    )
    services = build_services(settings)
    yield services
    services.close()


@pytest.fixture(scope="module")
def ldap_client(ldap_services: Services) -> Iterator[TestClient]:
    with TestClient(
        create_app(ldap_services.settings, ldap_services), base_url="http://palaver.test"
    ) as client:
        yield client


@pytest.fixture
def org(ldap_services: Services) -> SeededRealm:
    return seed_realm(ldap_services)


@pytest.fixture
def api(ldap_client: TestClient, org: SeededRealm) -> Api:
    return Api(ldap_client, org)


def new_person(directory: Directory, email: str | None = None, name: str = "Ada Lovelace") -> Person:
    uid = f"p{uuid.uuid4().hex[:8]}"
    person = Person(uid, name, email or f"{uid}@corp.example.org", f"dir-{uid}-pw")
    directory.add(person)
    return person


def open_signup(services: Services, org: SeededRealm, *, invite_required: bool = False) -> None:
    with services.db.session() as session, session.begin():
        realm = session.get(Realm, org.id)
        assert realm is not None
        realm.invite_required = invite_required


def user_by_email(services: Services, org: SeededRealm, email: str) -> UserProfile | None:
    with services.db.session() as session:
        return session.scalars(
            select(UserProfile).where(UserProfile.realm_id == org.id, UserProfile.delivery_email == email)
        ).one_or_none()


def fetch(api: Api, username: str, password: str):  # type: ignore[no-untyped-def]
    return api.post(None, "fetch_api_key", {"username": username, "password": password})


def test_directory_password_signs_in_and_makes_the_account(
    api: Api, org: SeededRealm, directory: Directory, ldap_services: Services
) -> None:
    open_signup(ldap_services, org)
    person = new_person(directory)
    body = assert_json_success(fetch(api, person.email, person.password))
    user = user_by_email(ldap_services, org, person.email)
    assert user is not None and user.id == body["user_id"] and user.full_name == "Ada Lovelace"
    # No Palaver password: the directory's is the only one.
    assert user.password is None
    me = api.client.get("/api/v1/users/me", headers={"host": org.host}, auth=(body["email"], body["api_key"]))
    assert me.json()["email"] == body["email"]
    with ldap_services.db.session() as session:
        record = session.scalars(select(LoginRecord).where(LoginRecord.user_profile_id == user.id)).one()
        assert (record.method, record.channel) == ("ldap", "api")


def test_wrong_directory_password_and_empty_password(
    api: Api, org: SeededRealm, directory: Directory
) -> None:
    person = new_person(directory)
    assert_json_error(fetch(api, person.email, "not-" + person.password), WRONG, 401, "AUTHENTICATION_FAILED")
    # An empty password would be an anonymous bind, which the directory accepts.
    assert_json_error(fetch(api, person.email, ""), WRONG, 401, "AUTHENTICATION_FAILED")


def test_invite_only_organization_needs_an_account_or_invitation(
    api: Api, org: SeededRealm, directory: Directory, ldap_services: Services
) -> None:
    open_signup(ldap_services, org, invite_required=True)
    person = new_person(directory)
    response = fetch(api, person.email, person.password)
    assert response.status_code == 403
    assert "invitation-only" in response.json()["msg"]
    assert user_by_email(ldap_services, org, person.email) is None
    # An administrator's invitation to that address lets the directory's password in.
    iago = org.iago
    assert_json_success(api.post(iago, "invites", {"invitee_emails": person.email, "stream_ids": "[]"}))
    assert_json_success(fetch(api, person.email, person.password))
    assert user_by_email(ldap_services, org, person.email) is not None


def test_existing_account_is_linked_and_follows_the_directory(
    api: Api, org: SeededRealm, directory: Directory, ldap_services: Services
) -> None:
    hamlet_email = user_by_email_of(ldap_services, org, "hamlet")
    person = new_person(directory, email=hamlet_email, name="Hamlet, Prince of Denmark")
    body = assert_json_success(fetch(api, hamlet_email, person.password))
    assert body["user_id"] == org.hamlet.id
    # The Palaver password still works too (the Email method is on).
    assert_json_success(fetch(api, hamlet_email, org.hamlet.password))
    user = user_by_email(ldap_services, org, hamlet_email)
    assert user is not None and user.full_name == "Hamlet, Prince of Denmark"
    # The directory changes the address: the linked account follows at the next sign-in.
    new_email = f"prince-{uuid.uuid4().hex[:6]}@corp.example.org"
    directory.modify(person, mail=new_email)
    body = assert_json_success(fetch(api, new_email, person.password))
    assert body["user_id"] == org.hamlet.id
    user = user_by_email(ldap_services, org, new_email)
    assert user is not None and user.id == org.hamlet.id


def user_by_email_of(services: Services, org: SeededRealm, name: str) -> str:
    with services.db.session() as session:
        user = session.get(UserProfile, org.users[name].id)
        assert user is not None
        return user.delivery_email


def test_deactivated_user_cannot_come_back_through_the_directory(
    api: Api, org: SeededRealm, directory: Directory, ldap_services: Services
) -> None:
    email = user_by_email_of(ldap_services, org, "othello")
    person = new_person(directory, email=email)
    assert_json_success(api.delete(org.iago, f"users/{org.othello.id}"))
    response = fetch(api, email, person.password)
    assert_json_error(response, "Account is deactivated", 401, "USER_DEACTIVATED")


def test_organization_can_turn_the_directory_off(
    api: Api, org: SeededRealm, directory: Directory, ldap_services: Services
) -> None:
    open_signup(ldap_services, org)
    settings = assert_json_success(api.get(None, "server_settings"))
    assert settings["authentication_methods"]["ldap"] is True
    assert settings["authentication_methods"]["password"] is True
    person = new_person(directory)
    owner = org.desdemona
    assert_json_success(api.patch(owner, "realm", {"authentication_methods": '{"LDAP": false}'}))
    assert_json_error(fetch(api, person.email, person.password), WRONG, 401, "AUTHENTICATION_FAILED")
    settings = assert_json_success(api.get(None, "server_settings"))
    assert settings["authentication_methods"]["ldap"] is False
    state = assert_json_success(api.post(owner, "register", {"fetch_event_types": '["realm"]'}))
    assert state["realm_authentication_methods"]["LDAP"] == {"enabled": False, "available": True}
    assert state["realm_authentication_methods"]["GitHub"]["available"] is False
    # Turning off the last method is refused; unknown and unconfigured methods too.
    response = api.patch(owner, "realm", {"authentication_methods": '{"Email": false}'})
    assert_json_error(response, "At least one authentication method must be enabled.")
    response = api.patch(owner, "realm", {"authentication_methods": '{"GitHub": true}'})
    assert_json_error(response, "Authentication method GitHub is not available on this server.")
    assert_json_success(api.patch(owner, "realm", {"authentication_methods": '{"LDAP": true}'}))
    assert_json_success(fetch(api, person.email, person.password))


def test_no_account_when_the_organization_says_so(
    api: Api, org: SeededRealm, directory: Directory, ldap_services: Services
) -> None:
    open_signup(ldap_services, org)
    assert_json_success(api.patch(org.desdemona, "realm", {"external_signup": "false"}))
    person = new_person(directory)
    response = fetch(api, person.email, person.password)
    assert response.status_code == 403 and response.json()["code"] == "NO_ACCOUNT"
    assert user_by_email(ldap_services, org, person.email) is None


def test_login_by_uid_over_ldaps(
    database_url: str, directory: Directory, tmp_path: Path, org: SeededRealm, ldap_services: Services
) -> None:
    table = directory.settings(url=directory.ldaps_url, start_tls=False, login_attribute="uid")
    settings = make_test_settings(database_url, tmp_path, auth={"ldap": table})
    services = build_services(settings)
    try:
        with TestClient(create_app(settings, services), base_url="http://palaver.test") as client:
            api = Api(client, org)
            open_signup(services, org)
            assert (
                assert_json_success(api.get(None, "server_settings"))["require_email_format_usernames"]
                is False
            )
            person = new_person(directory)
            body = assert_json_success(fetch(api, person.uid, person.password))
            assert user_by_email(services, org, person.email) is not None
            assert body["user_id"] == user_by_email(services, org, person.email).id  # type: ignore[union-attr]
    finally:
        services.close()


def test_unverifiable_certificate_is_an_outage_not_a_login(
    database_url: str, directory: Directory, tmp_path: Path, org: SeededRealm
) -> None:
    # No ca_file: the self-signed certificate cannot be verified, so nothing is sent.
    table = directory.settings(ca_file=None)
    settings = make_test_settings(database_url, tmp_path, auth={"ldap": table})
    services = build_services(settings)
    try:
        with TestClient(create_app(settings, services), base_url="http://palaver.test") as client:
            person = new_person(directory)
            response = fetch(Api(client, org), person.email, person.password)
            assert_json_error(response, response.json()["msg"], 503, "DIRECTORY_UNAVAILABLE")
    finally:
        services.close()


def test_sync_ldap_updates_names_and_deactivates_the_departed(
    directory: Directory, org: SeededRealm, ldap_services: Services, api: Api, tmp_path: Path
) -> None:
    open_signup(ldap_services, org)
    stays, leaves = new_person(directory, name="Grace Hopper"), new_person(directory, name="Alan Turing")
    assert_json_success(fetch(api, stays.email, stays.password))
    assert_json_success(fetch(api, leaves.email, leaves.password))
    directory.modify(stays, cn="Rear Admiral Grace Hopper")
    directory.remove(leaves)
    config = tmp_path / "palaver.toml"
    settings = ldap_services.settings
    table = directory.settings()
    lines = [f'database_url = "{settings.database_url}"', f'data_dir = "{tmp_path}"', "", "[auth.ldap]"]
    lines += [f"{key} = {_toml(value)}" for key, value in table.items() if key != "bind_password"]
    lines.append('bind_password_env = "TEST_LDAP_BIND_PASSWORD"')
    config.write_text("\n".join(lines) + "\n")
    result = subprocess.run(
        [sys.executable, "-m", "palaver.cli", "--config", str(config), "sync-ldap", "--realm", org.string_id],
        check=False,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "TEST_LDAP_BIND_PASSWORD": str(table["bind_password"])},
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert f"deactivated {leaves.email} (no longer in the directory)" in result.stdout
    gone = user_by_email(ldap_services, org, leaves.email)
    kept = user_by_email(ldap_services, org, stays.email)
    assert gone is not None and not gone.is_active
    assert kept is not None and kept.is_active and kept.full_name == "Rear Admiral Grace Hopper"
    with ldap_services.db.session() as session:
        linked = session.scalars(select(ExternalIdentity).where(ExternalIdentity.realm_id == org.id)).all()
        assert {row.user_profile_id for row in linked} >= {gone.id, kept.id}


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def test_login_form_takes_the_directory_password(
    ldap_client: TestClient, org: SeededRealm, directory: Directory, ldap_services: Services
) -> None:
    open_signup(ldap_services, org)
    person = new_person(directory)
    # The module's app on the organization's host, with a cookie jar of its own (no second lifespan).
    browser = TestClient(ldap_client.app, base_url=f"http://{org.host}")
    try:
        wrong = post_login(browser, person.email, "not-" + person.password)
        assert wrong.status_code == 401 and "Incorrect email or password." in wrong.text
        response = post_login(browser, person.email, person.password)
        assert response.status_code == 302, response.text
        me = browser.get("/json/users/me").json()
        assert me["email"] == person.email or me["delivery_email"] == person.email
    finally:
        browser.close()
    with ldap_services.db.session() as session:
        user = session.scalars(
            select(UserProfile).where(
                UserProfile.realm_id == org.id, UserProfile.delivery_email == person.email
            )
        ).one()
        methods = session.scalars(
            select(LoginRecord.channel).where(LoginRecord.user_profile_id == user.id)
        ).all()
        assert "web" in methods


def test_administrators_read_the_sign_in_audit_log(
    api: Api, org: SeededRealm, directory: Directory, ldap_services: Services
) -> None:
    open_signup(ldap_services, org)
    person = new_person(directory)
    body = assert_json_success(fetch(api, person.email, person.password))
    assert_json_success(fetch(api, user_by_email_of(ldap_services, org, "hamlet"), org.hamlet.password))
    logins = assert_json_success(api.get(org.iago, "realm/logins"))["logins"]
    latest = {(row["user_id"], row["method"], row["channel"]) for row in logins[:2]}
    assert latest == {(body["user_id"], "ldap", "api"), (org.hamlet.id, "password", "api")}
    assert all(row["ip_address"] for row in logins[:2])
    mine = assert_json_success(api.get(org.iago, "realm/logins", {"user_id": org.hamlet.id}))["logins"]
    assert {row["user_id"] for row in mine} == {org.hamlet.id}
    older = assert_json_success(api.get(org.iago, "realm/logins", {"before_id": logins[0]["id"], "limit": 1}))
    assert [row["id"] for row in older["logins"]] == [logins[1]["id"]]
    # Members may not read it.
    assert_json_error(api.get(org.hamlet, "realm/logins"), "Must be an organization administrator", 400)


def test_the_periodic_worker_syncs_every_organization_on_the_directory(
    directory: Directory, org: SeededRealm, ldap_services: Services, api: Api
) -> None:
    open_signup(ldap_services, org)
    person = new_person(directory, name="Katherine Johnson")
    assert_json_success(fetch(api, person.email, person.password))
    directory.remove(person)
    reports = sync_all_realms(ldap_services)
    assert person.email in reports[org.string_id].deactivated
    gone = user_by_email(ldap_services, org, person.email)
    assert gone is not None and not gone.is_active


def test_a_search_that_finds_nobody_deactivates_nobody(
    directory: Directory, org: SeededRealm, ldap_services: Services, api: Api
) -> None:
    # A wrong filter (or search base) answers with no entries: that is not everyone leaving.
    open_signup(ldap_services, org)
    person = new_person(directory, name="Dorothy Vaughan")
    assert_json_success(fetch(api, person.email, person.password))
    wrong = LdapSettings.model_validate(directory.settings(user_filter="(uid=nobody-has-this-uid)"))
    people = ldap_directory.all_people(wrong)
    assert people == []
    with ldap_services.db.session() as session:
        realm = session.get(Realm, org.id)
        assert realm is not None
        report = do_sync_directory(
            session,
            realm,
            people,
            provider=ldap_directory.PROVIDER,
            email_host="palaver.test",
            storage=make_storage(ldap_services.settings),
        )
    assert report.empty_directory and report.deactivated == []
    kept = user_by_email(ldap_services, org, person.email)
    assert kept is not None and kept.is_active
