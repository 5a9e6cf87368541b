"""Names that differ only in case, in any script, are one name: every create and rename
endpoint refuses the second with its own duplicate-name error (never a 500), and the
database's unique indexes hold the same rule (models/names.py)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from palaver.models import UserGroup
from palaver.models.channels import ChannelFolder, Stream
from palaver.models.names import name_key
from palaver.models.playgrounds import RealmPlayground
from palaver.services import Services
from tests.api.test_channel_folders import create_folder
from tests.api.test_channels import create_channel
from tests.api.test_realm_emoji import upload
from tests.api.test_user_groups import create_group
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success

# (first, second): different strings, the same name to a reader.
PAIRS = [
    ("Ärger", "ärger"),
    ("ABC", "abc"),
    ("Straße", "STRASSE"),
    ("Ǆemal", "ǆemal"),
    ("ΣΊΣΥΦΟΣ", "σίσυφος"),
]


def test_the_key() -> None:
    for first, second in PAIRS:
        assert name_key(first) == name_key(second)
    # NFKC: composed and decomposed, full-width and ASCII are one name too.
    assert name_key("A\u0308rger") == name_key("Ärger")
    assert name_key("\uff27eneral") == name_key("general")
    assert name_key("Ärger") != name_key("Arger")


def _unique(first: str, second: str) -> tuple[str, str]:
    tail = uuid.uuid4().hex[:6]
    return f"{first} {tail}", f"{second} {tail}"


Create = Callable[[Api, SeededRealm, str], httpx.Response]
Rename = Callable[[Api, SeededRealm, str, str], httpx.Response]


def _channel(api: Api, realm: SeededRealm, name: str) -> httpx.Response:
    return api.post(realm.iago, "channels/create", {"name": name, "subscribers": [realm.iago.id]})


def _subscribe(api: Api, realm: SeededRealm, name: str) -> httpx.Response:
    return api.post(realm.iago, "users/me/subscriptions", {"subscriptions": json.dumps([{"name": name}])})


def _folder(api: Api, realm: SeededRealm, name: str) -> httpx.Response:
    return api.post(realm.iago, "channel_folders/create", {"name": name})


def _group(api: Api, realm: SeededRealm, name: str) -> httpx.Response:
    return api.post(realm.iago, "user_groups/create", {"name": name, "description": "", "members": "[]"})


def _playground(api: Api, realm: SeededRealm, name: str) -> httpx.Response:
    data = {"name": name, "pygments_language": "Python", "url_template": "https://py.example/?c={code}"}
    return api.post(realm.iago, "realm/playgrounds", data)


CREATES: dict[str, tuple[Create, str]] = {
    "channel": (_channel, "Channel '{}' already exists"),
    "folder": (_folder, "Channel folder name already in use"),
    "group": (_group, "User group '{}' already exists."),
    "playground": (
        _playground,
        "Realm playground with this Realm, Pygments language and Name already exists.",
    ),
}


@pytest.mark.parametrize("kind", sorted(CREATES))
@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_create_refuses_a_casefold_equal_name(
    api: Api, realm: SeededRealm, kind: str, first: str, second: str
) -> None:
    create, message = CREATES[kind]
    first, second = _unique(first, second)
    assert_json_success(create(api, realm, first))
    assert_json_error(create(api, realm, second), message.format(second))
    assert_json_error(create(api, realm, first), message.format(first))


@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_subscribing_by_a_casefold_equal_name_makes_no_second_channel(
    api: Api, realm: SeededRealm, services: Services, first: str, second: str
) -> None:
    first, second = _unique(first, second)
    assert_json_success(_channel(api, realm, first))
    # The existing channel, found as the unique index compares names: nothing new is made.
    body = assert_json_success(_subscribe(api, realm, second))
    assert list(body["already_subscribed"].values()) == [[first]], body
    assert body["subscribed"] == {}, body
    with services.db.session() as session:
        keys = [s.name for s in session.query(Stream).filter_by(realm_id=realm.id, name_key=name_key(first))]
    assert keys == [first]


def test_two_spellings_in_one_request_are_one_new_channel(
    api: Api, realm: SeededRealm, services: Services
) -> None:
    first, second = _unique("Straße", "STRASSE")
    subscriptions = json.dumps([{"name": first}, {"name": second}])
    response = api.post(realm.iago, "users/me/subscriptions", {"subscriptions": subscriptions})
    body = assert_json_success(response)
    assert list(body["subscribed"].values()) == [[first]], body
    with services.db.session() as session:
        names = [s.name for s in session.query(Stream).filter_by(realm_id=realm.id, name_key=name_key(first))]
    assert names == [first]


def _rename_channel(api: Api, realm: SeededRealm, target: str, name: str) -> httpx.Response:
    other = create_channel(api, realm.iago, f"other {uuid.uuid4().hex[:6]}")
    return api.patch(realm.iago, f"streams/{other}", {"new_name": name})


def _rename_folder(api: Api, realm: SeededRealm, target: str, name: str) -> httpx.Response:
    other = create_folder(api, realm.iago, f"other {uuid.uuid4().hex[:6]}")
    return api.patch(realm.iago, f"channel_folders/{other}", {"name": name})


def _rename_group(api: Api, realm: SeededRealm, target: str, name: str) -> httpx.Response:
    other = create_group(api, realm.iago, f"other {uuid.uuid4().hex[:6]}", [])
    return api.patch(realm.iago, f"user_groups/{other}", {"name": name})


RENAMES: dict[str, tuple[Create, Rename, str]] = {
    "channel": (_channel, _rename_channel, "Channel name already in use."),
    "folder": (_folder, _rename_folder, "Channel folder name already in use"),
    "group": (_group, _rename_group, "User group '{}' already exists."),
}


@pytest.mark.parametrize("kind", sorted(RENAMES))
@pytest.mark.parametrize(("first", "second"), PAIRS)
def test_rename_refuses_a_casefold_equal_name(
    api: Api, realm: SeededRealm, kind: str, first: str, second: str
) -> None:
    create, rename, message = RENAMES[kind]
    first, second = _unique(first, second)
    assert_json_success(create(api, realm, first))
    assert_json_error(rename(api, realm, first, second), message.format(second))


def test_emoji_names_are_one_case_by_rule(api: Api, realm: SeededRealm) -> None:
    # Emoji names are lower-case ASCII once normalized, so the existing index is casefold-complete.
    name = f"party_{uuid.uuid4().hex[:6]}"
    assert_json_success(upload(api, realm.iago, name))
    assert_json_error(upload(api, realm.iago, name.upper()), "A custom emoji with this name already exists.")


def test_linkifier_patterns_are_compared_exactly(api: Api, realm: SeededRealm) -> None:
    # A pattern is a regular expression, where case is meaning (\d and \D): only an exact
    # duplicate is one.
    data = {"pattern": r"#(?P<id>\d+)", "url_template": "https://t.example/{id}"}
    assert_json_success(api.post(realm.iago, "realm/filters", data))
    assert_json_error(
        api.post(realm.iago, "realm/filters", data), "Linkifier with this Pattern already exists."
    )
    assert_json_success(api.post(realm.iago, "realm/filters", {**data, "pattern": r"#(?P<id>\D+)"}))


def _stream(session: Session, realm_id: int, name: str) -> Stream:
    # The permission settings of an existing channel: a row needs every one.
    model = session.scalars(select(Stream).where(Stream.realm_id == realm_id)).first()
    assert model is not None
    settings = {c.name: getattr(model, c.name) for c in Stream.__table__.columns if c.name.startswith("can_")}
    return Stream(realm_id=realm_id, name=name, description="", **settings)


MODELS: dict[str, Callable[[Session, int, str], Any]] = {
    "stream": _stream,
    "channel_folder": lambda _, realm_id, name: ChannelFolder(realm_id=realm_id, name=name),
    "user_group": lambda _, realm_id, name: UserGroup(realm_id=realm_id, name=name),
    "realm_playground": lambda _, realm_id, name: RealmPlayground(
        realm_id=realm_id, name=name, pygments_language="Python", url_template="https://x.example/{code}"
    ),
}


@pytest.mark.parametrize("table", sorted(MODELS))
def test_the_database_holds_the_rule(api: Api, services: Services, realm: SeededRealm, table: str) -> None:
    create_channel(api, realm.iago, f"model {uuid.uuid4().hex[:6]}")
    first, second = _unique("Ärger", "äRGER")
    with services.db.session() as session:
        session.add(MODELS[table](session, realm.id, first))
        session.commit()
        session.add(MODELS[table](session, realm.id, second))
        with pytest.raises(IntegrityError):
            session.commit()
        session.rollback()
