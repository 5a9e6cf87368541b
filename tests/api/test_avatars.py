"""Avatars: upload/delete, /avatar/ redirects, generated defaults, and organization images."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from palaver.app import create_app
from palaver.config import Settings
from palaver.lib.avatars import colour_index, initials
from palaver.services import Services, build_services
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success
from tests.images import decode, image_bytes


@pytest.fixture(scope="module")
def offline(
    database_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Settings, Services]]:
    """Services with the server defaults for media: no Gravatar."""
    settings = make_test_settings(database_url, tmp_path_factory.mktemp("offline"), gravatar=False)
    built = build_services(settings)
    yield settings, built
    built.close()


@pytest.fixture
def offline_api(offline: tuple[Settings, Services], realm: SeededRealm) -> Iterator[Api]:
    settings, services = offline
    with TestClient(create_app(settings, services), base_url="http://palaver.test") as client:
        yield Api(client, realm)


def upload_avatar(api: Api, user: Any, data: bytes) -> Any:
    return api.post(user, "users/me/avatar", files={"file": ("me.jpg", data, "image/jpeg")})


def test_upload_crops_resizes_and_announces(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    body = assert_json_success(upload_avatar(api, realm.hamlet, image_bytes(300, 200, "JPEG")))
    url = body["avatar_url"]
    assert url.startswith(f"/user_avatars/{realm.id}/avatars/") and url.endswith("?version=2")
    small = api.get(None, url)
    assert small.status_code == 200 and small.headers["content-type"] == "image/png"
    assert decode(small.content).size == (100, 100)
    medium_url = url.replace(".png?", "-medium.png?")
    assert decode(api.get(None, medium_url).content).size == (500, 500)

    [(event, recipients)] = events.of_type("realm_user", "update")
    assert event["person"] == {
        "user_id": realm.hamlet.id,
        "avatar_source": "U",
        "avatar_url": url,
        "avatar_url_medium": medium_url,
        "avatar_version": 2,
    }
    assert realm.othello.id in recipients
    # Every reader of users now shows the upload, even to clients computing Gravatar URLs.
    me = assert_json_success(api.get(realm.hamlet, "users/me"))
    assert me["avatar_url"] == url
    listed = assert_json_success(api.get(realm.othello, "users", {"client_gravatar": "true"}))["members"]
    assert next(m for m in listed if m["user_id"] == realm.hamlet.id)["avatar_url"] == url
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": '["realm_user"]'}))
    assert state["avatar_source"] == "U" and state["avatar_url_medium"] == medium_url
    assert next(u for u in state["realm_users"] if u["user_id"] == realm.hamlet.id)["avatar_url"] == url

    # A new upload replaces the files; the old URL stops working.
    events.clear()
    second = assert_json_success(upload_avatar(api, realm.hamlet, image_bytes(50, 80, colour="blue")))
    assert second["avatar_url"].endswith("?version=3")
    assert api.get(None, url).status_code == 404
    assert decode(api.get(None, second["avatar_url"]).content).size == (100, 100)

    # Deleting goes back to the default picture.
    events.clear()
    deleted = assert_json_success(api.delete(realm.hamlet, "users/me/avatar"))["avatar_url"]
    assert deleted.startswith("https://secure.gravatar.com/avatar/") and "version=4" in deleted
    [(event, _)] = events.of_type("realm_user", "update")
    assert event["person"]["avatar_source"] == "G"
    assert api.get(None, second["avatar_url"]).status_code == 404


def test_upload_errors(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_error(api.post(realm.hamlet, "users/me/avatar"), "You must upload exactly one avatar.")
    assert_json_error(
        upload_avatar(api, realm.hamlet, b"not an image at all"),
        "Could not decode image; did you upload an image file?",
    )
    too_big = b"\x89PNG" + b"\x00" * (5 * 1024 * 1024 + 1)
    assert_json_error(
        upload_avatar(api, realm.hamlet, too_big), "Uploaded file is larger than the allowed limit of 5 MiB"
    )
    assert events.of_type("realm_user") == []


def test_avatar_redirects(api: Api, realm: SeededRealm) -> None:
    url = assert_json_success(upload_avatar(api, realm.othello, image_bytes(20, 20)))["avatar_url"]
    response = api.get(realm.hamlet, f"/avatar/{realm.othello.id}", follow_redirects=False)
    assert response.status_code == 302 and response.headers["location"] == url
    medium = api.get(realm.hamlet, f"/avatar/{realm.othello.email}/medium", follow_redirects=False)
    assert medium.headers["location"] == url.replace(".png?", "-medium.png?")
    # The query string is passed on (clients add sizes), the API key is not.
    query = {"api_key": realm.hamlet.api_key, "s": "50"}
    keyed = api.get(None, f"/avatar/{realm.othello.id}", query, follow_redirects=False)
    assert keyed.headers["location"] == url + "&s=50"
    # Someone unknown: Gravatar's guess for the address, as Zulip does.
    unknown = api.get(realm.hamlet, "/avatar/nobody@example.com", follow_redirects=False)
    assert unknown.headers["location"].startswith("https://secure.gravatar.com/avatar/")
    # Without credentials only organizations open to spectators answer, and by ID only.
    assert api.get(None, f"/avatar/{realm.othello.id}", follow_redirects=False).status_code == 401
    assert api.get(None, f"/avatar/{realm.othello.id}", {"api_key": "wrong"}).status_code == 401


def test_generated_default_avatars_without_gravatar(offline_api: Api, realm: SeededRealm) -> None:
    api = offline_api
    # client_gravatar cannot apply: there is no Gravatar to compute.
    members = assert_json_success(api.get(realm.hamlet, "users", {"client_gravatar": "true"}))["members"]
    hamlet = next(m for m in members if m["user_id"] == realm.hamlet.id)
    expected = f"/user_avatars/generated/{colour_index(realm.hamlet.id)}/{initials(realm.hamlet.full_name)}"
    assert hamlet["avatar_url"] == f"{expected}.png?version=1"
    state = assert_json_success(
        api.post(realm.hamlet, "register", {"fetch_event_types": '["realm_user"]', "client_gravatar": "true"})
    )
    assert all(u["avatar_url"] for u in state["realm_users"])
    assert state["avatar_url_medium"] == f"{expected}-medium.png?version=1"

    picture = api.get(None, hamlet["avatar_url"])
    assert picture.status_code == 200 and picture.headers["content-type"] == "image/png"
    image = decode(picture.content).convert("RGB")
    assert image.size == (100, 100)
    # White initials on the colour: the corner is the background, the centre has white in it.
    assert image.getpixel((2, 2)) != (255, 255, 255)
    assert (255, 255, 255) in {image.getpixel((x, y)) for x in range(30, 70) for y in range(30, 70)}
    assert decode(api.get(None, state["avatar_url_medium"]).content).size == (500, 500)
    # Only initials the URL could hold are drawn; anything else is not found.
    assert api.client.get("/user_avatars/generated/99/AB.png").status_code == 404
    assert api.client.get("/user_avatars/generated/1/ABC.png").status_code == 404
    assert api.client.get("/user_avatars/generated/1/ab.png").status_code == 404
    assert api.client.get("/user_avatars/generated/1/_.png").status_code == 200

    # Messages carry the generated URL too.
    sent = api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "hi"})
    message_id = assert_json_success(sent)["id"]
    fetched = assert_json_success(api.get(realm.othello, f"messages/{message_id}"))["message"]
    assert fetched["avatar_url"] == hamlet["avatar_url"]
    # Unknown people redirect to a blank generated picture, not to the Internet.
    unknown = api.get(realm.hamlet, "/avatar/nobody@example.com", follow_redirects=False)
    assert unknown.headers["location"].startswith("/user_avatars/generated/")


def test_initials() -> None:
    assert initials("King Hamlet") == "KH"
    assert initials("Cher") == "C"
    assert initials("jean-luc de la Tour") == "JT"
    assert initials("Ödön Horváth") == "OH"
    assert initials("王小明") == ""
    assert initials("Zoë 王") == "Z"
    assert initials("") == ""


def test_realm_icon_and_logos(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_error(
        api.post(realm.hamlet, "realm/icon", files={"f": ("i.png", image_bytes(10, 10), "image/png")}),
        "Must be an organization administrator",
    )
    icon = assert_json_success(
        api.post(realm.iago, "realm/icon", files={"f": ("i.png", image_bytes(300, 120), "image/png")})
    )["icon_url"]
    assert icon == f"/user_avatars/{realm.id}/realm/icon.png?version=2"
    assert decode(api.get(None, icon).content).size == (100, 100)
    [(event, recipients)] = events.of_type("realm", "update_dict")
    assert event["data"] == {"icon_url": icon, "icon_source": "U"}
    assert realm.polonius.id in recipients

    logo = assert_json_success(
        api.post(realm.iago, "realm/logo", {"night": "true"}, files={"f": ("l.png", image_bytes(1600, 400))})
    )["logo_url"]
    assert logo == f"/user_avatars/{realm.id}/realm/night_logo.png?version=2"
    assert decode(api.get(None, logo).content).size == (400, 100)
    assert events.of_type("realm", "update_dict")[-1][0]["data"] == {
        "night_logo_url": logo,
        "night_logo_source": "U",
    }
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": '["realm"]'}))
    assert state["realm_icon_url"] == icon and state["realm_icon_source"] == "U"
    assert state["realm_night_logo_url"] == logo and state["realm_night_logo_source"] == "U"
    assert state["realm_logo_source"] == "D"
    settings = assert_json_success(api.get(None, "server_settings"))
    assert settings["realm_icon"] == icon

    events.clear()
    assert_json_success(api.delete(realm.iago, "realm/logo", {"night": "true"}))
    assert_json_success(api.delete(realm.iago, "realm/icon"))
    data = [event["data"] for event, _ in events.of_type("realm", "update_dict")]
    assert data[0]["night_logo_source"] == "D"
    assert data[1]["icon_source"] == "G" and data[1]["icon_url"].startswith("https://secure.gravatar.com/")
    assert api.get(None, icon).status_code == 404
    assert_json_error(api.post(realm.iago, "realm/logo"), "You must upload exactly one logo.")


def test_inline_preview_settings(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": '["realm"]'}))
    assert state["realm_inline_image_preview"] is True
    assert state["realm_inline_url_embed_preview"] is False
    assert_json_success(api.patch(realm.iago, "realm", {"inline_url_embed_preview": True}))
    [(event, _)] = events.of_type("realm")
    assert event["property"] == "inline_url_embed_preview" and event["value"] is True


def test_avatar_files_are_not_served_outside_their_place(api: Api, realm: SeededRealm) -> None:
    assert api.get(None, f"/user_avatars/{realm.id}/uploads/x.png").status_code == 404
    assert api.get(None, f"/user_avatars/{realm.id}/avatars/missing.png").status_code == 404
    assert api.get(None, f"/user_avatars/{realm.id}/avatars/x.txt").status_code == 404
