"""What a company directory says about people beyond name and email: pictures, profile fields
and disabled accounts (Active Directory's userAccountControl, or an attribute), against a real
slapd loaded with AD's account attributes (tests/ldap_server.py)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from palaver.app import create_app
from palaver.lib.avatars import UPLOADED, uploaded_avatar_key
from palaver.lib.storage import make_storage
from palaver.models import Realm, UserProfile
from palaver.models.profile_fields import CustomProfileFieldValue
from palaver.services import Services, build_services
from palaver.workers.directory_sync import sync_all_realms
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success, seed_realm
from tests.images import decode, image_bytes
from tests.ldap_server import Directory, Person, running_directory


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Directory]:
    with running_directory(tmp_path_factory.mktemp("slapd")) as running:
        yield running


def _services(database_url: str, data: Path, table: dict[str, object]) -> Services:
    return build_services(make_test_settings(database_url, data, auth={"ldap": table}))


@pytest.fixture(scope="module")
def ad_services(
    database_url: str, directory: Directory, services: Services, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Services]:
    # ``services`` (the suite's) has migrated the shared database.
    table = directory.settings(
        avatar_attribute="jpegPhoto",
        profile_fields={"Phone": "telephoneNumber", "custom_profile_field__office": "roomNumber"},
        active_directory=True,
    )
    built = _services(database_url, tmp_path_factory.mktemp("ldap-ad-data"), table)
    yield built
    built.close()


@pytest.fixture(scope="module")
def ad_client(ad_services: Services) -> Iterator[TestClient]:
    with TestClient(create_app(ad_services.settings, ad_services), base_url="http://palaver.test") as client:
        yield client


@pytest.fixture
def org(ad_services: Services) -> SeededRealm:
    realm = seed_realm(ad_services)
    with ad_services.db.session() as session, session.begin():
        row = session.get(Realm, realm.id)
        assert row is not None
        row.invite_required = False
    return realm


@pytest.fixture
def api(ad_client: TestClient, org: SeededRealm) -> Api:
    return Api(ad_client, org)


@pytest.fixture
def recorder(ad_services: Services) -> Iterator[EventRecorder]:
    recording = EventRecorder()
    ad_services.bus.add_listener(recording)
    yield recording
    ad_services.bus.remove_listener(recording)


def _person(directory: Directory, **extra: object) -> Person:
    uid = f"p{uuid.uuid4().hex[:8]}"
    person = Person(uid, "Ada Lovelace", f"{uid}@corp.example.org", f"dir-{uid}-pw", extra)
    directory.add(person)
    return person


def _fetch(api: Api, person: Person):  # type: ignore[no-untyped-def]
    return api.post(None, "fetch_api_key", {"username": person.email, "password": person.password})


def _user(services: Services, user_id: int) -> UserProfile:
    with services.db.session() as session:
        user = session.get(UserProfile, user_id)
        assert user is not None
        session.expunge(user)
        return user


def _profile(services: Services, user_id: int) -> dict[str, str]:
    with services.db.session() as session:
        rows = session.execute(
            select(CustomProfileFieldValue.field_id, CustomProfileFieldValue.value).where(
                CustomProfileFieldValue.user_profile_id == user_id
            )
        ).all()
        return {str(field_id): value for field_id, value in rows}


def _field(api: Api, org: SeededRealm, name: str) -> str:
    body = assert_json_success(api.post(org.iago, "realm/profile_fields", {"name": name, "field_type": 1}))
    return str(body["id"])


def test_picture_and_profile_fields_on_first_sign_in_and_each_sync(
    api: Api, org: SeededRealm, directory: Directory, ad_services: Services, recorder: EventRecorder
) -> None:
    phone, office = _field(api, org, "Phone"), _field(api, org, "Office")
    photo = image_bytes(120, 80, "JPEG", "blue")
    person = _person(directory, jpegPhoto=photo, telephoneNumber="+44 20 7946 0000", roomNumber="B-12")
    user_id = assert_json_success(_fetch(api, person))["user_id"]

    user = _user(ad_services, user_id)
    assert user.avatar_source == UPLOADED and user.avatar_hash
    storage = make_storage(ad_services.settings)
    # The upload pipeline's square PNG: the directory's picture, cropped and re-encoded.
    stored = storage.read(uploaded_avatar_key(org.id, user.avatar_hash))
    assert stored is not None
    assert decode(stored).size == (100, 100)
    assert _profile(ad_services, user_id) == {phone: "+44 20 7946 0000", office: "B-12"}

    # The directory changes the picture and the phone; the sync follows, with events.
    recorder.clear()
    directory.modify(person, jpegPhoto=image_bytes(64, 64, "JPEG", "green"), telephoneNumber="+44 1")
    directory.modify_delete(person, "roomNumber")
    report = sync_all_realms(ad_services)[org.string_id]
    assert report.deactivated == [] and report.reactivated == []
    changed = _user(ad_services, user_id)
    assert changed.avatar_hash != user.avatar_hash and changed.avatar_version == user.avatar_version + 1
    assert _profile(ad_services, user_id) == {phone: "+44 1"}
    people = [
        e["person"] for e, _ in recorder.of_type("realm_user", "update") if e["person"]["user_id"] == user_id
    ]
    assert any("avatar_url" in p for p in people)
    assert {p["custom_profile_field"]["id"] for p in people if "custom_profile_field" in p} == {
        int(phone),
        int(office),
    }

    # An unchanged picture is not stored again.
    sync_all_realms(ad_services)
    assert _user(ad_services, user_id).avatar_version == changed.avatar_version


def test_disabled_account_is_deactivated_and_reactivated_when_enabled(
    api: Api, org: SeededRealm, directory: Directory, ad_services: Services
) -> None:
    person = _person(directory, userAccountControl="512")  # NORMAL_ACCOUNT
    user_id = assert_json_success(_fetch(api, person))["user_id"]

    directory.modify(person, userAccountControl="514")  # NORMAL_ACCOUNT | ACCOUNTDISABLE
    report = sync_all_realms(ad_services)[org.string_id]
    assert report.deactivated == [person.email]
    assert not _user(ad_services, user_id).is_active
    # The right password of a disabled account does not sign in.
    assert_json_error(_fetch(api, person), "Account is deactivated", 401, "USER_DEACTIVATED")

    directory.modify(person, userAccountControl="512")
    report = sync_all_realms(ad_services)[org.string_id]
    assert report.reactivated == [person.email]
    assert _user(ad_services, user_id).is_active
    assert_json_success(_fetch(api, person))


def test_a_departed_entry_made_again_reactivates_the_account_at_sign_in(
    api: Api, org: SeededRealm, directory: Directory, ad_services: Services
) -> None:
    person = _person(directory)
    user_id = assert_json_success(_fetch(api, person))["user_id"]
    directory.remove(person)
    assert sync_all_realms(ad_services)[org.string_id].deactivated == [person.email]
    # Back in the directory (a new entry, so a new entryUUID): signing in brings them back.
    directory.add(person)
    assert assert_json_success(_fetch(api, person))["user_id"] == user_id
    assert _user(ad_services, user_id).is_active
    # The link moved to the new entry: the next sync does not take them for departed.
    assert sync_all_realms(ad_services)[org.string_id].deactivated == []


def test_an_administrators_deactivation_is_not_undone_by_the_directory(
    api: Api, org: SeededRealm, directory: Directory, ad_services: Services
) -> None:
    person = _person(directory, userAccountControl="512")
    user_id = assert_json_success(_fetch(api, person))["user_id"]
    assert_json_success(api.delete(org.iago, f"users/{user_id}"))
    assert sync_all_realms(ad_services)[org.string_id].reactivated == []
    assert not _user(ad_services, user_id).is_active
    assert_json_error(_fetch(api, person), "Account is deactivated", 401, "USER_DEACTIVATED")


def test_a_disabled_attribute_and_active_directorys_thumbnail_photo(
    database_url: str, directory: Directory, tmp_path: Path, ad_services: Services
) -> None:
    org = seed_realm(ad_services)
    table = directory.settings(disabled_attribute="palaverTestDisabled", avatar_attribute="thumbnailPhoto")
    services = _services(database_url, tmp_path, table)
    try:
        with services.db.session() as session, session.begin():
            row = session.get(Realm, org.id)
            assert row is not None
            row.invite_required = False
        with TestClient(create_app(services.settings, services), base_url="http://palaver.test") as client:
            api = Api(client, org)
            photo = image_bytes(96, 96, "JPEG", "red")
            person = _person(directory, palaverTestDisabled="FALSE", thumbnailPhoto=photo)
            user_id = assert_json_success(_fetch(api, person))["user_id"]
            assert _user(services, user_id).avatar_source == UPLOADED
            directory.modify(person, palaverTestDisabled="TRUE")
            assert sync_all_realms(services)[org.string_id].deactivated == [person.email]
            assert not _user(services, user_id).is_active
            directory.modify(person, palaverTestDisabled="FALSE")
            assert sync_all_realms(services)[org.string_id].reactivated == [person.email]
    finally:
        services.close()
