"""Custom emoji: GET /realm/emoji, POST/DELETE /realm/emoji/{name}, images at /user_avatars/."""

from __future__ import annotations

import json
from typing import Any

import pytest
from starlette.applications import Starlette

from palaver.api.realm_emoji import emoji_image_routes
from palaver.lib.realm_emoji import realm_emoji_for_reaction
from palaver.services import Services
from tests import helpers
from tests.client import TestClient
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success
from tests.images import GIF, PNG

BAD_CHARS = (
    "Emoji names must contain only lowercase English letters, digits, spaces, dashes, and underscores."
)


def upload(api: Api, user: helpers.TestUser, name: str, data: bytes = PNG) -> Any:
    return api.post(user, f"realm/emoji/{name}", files={"file": ("emoji.png", data, "image/png")})


def emoji(api: Api, user: helpers.TestUser) -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = assert_json_success(api.get(user, "realm/emoji"))["emoji"]
    return result


def test_upload_list_serve_deactivate(
    api: Api, realm: SeededRealm, events: EventRecorder, services: Services
) -> None:
    everyone = sorted(u.id for u in realm.users.values())
    assert_json_success(upload(api, realm.hamlet, "Green Tick"))
    assert_json_success(upload(api, realm.iago, "party-parrot", GIF))
    listed = emoji(api, realm.polonius)
    by_name = {e["name"]: e for e in listed.values()}
    tick, parrot = by_name["green_tick"], by_name["party-parrot"]
    assert tick == {
        "id": tick["id"],
        "name": "green_tick",
        "source_url": f"/user_avatars/{realm.id}/emoji/images/{tick['id']}.png",
        "still_url": None,
        "deactivated": False,
        "author_id": realm.hamlet.id,
    }
    assert parrot["source_url"].endswith(f"/{parrot['id']}.gif")
    assert set(listed) == {tick["id"], parrot["id"]}
    state = assert_json_success(api.post(realm.cordelia, "register", {"fetch_event_types": ["realm_emoji"]}))
    assert state["realm_emoji"] == listed
    event, users = events.of_type("realm_emoji", "update")[-1]
    assert event["realm_emoji"] == listed
    assert users == everyone

    app = Starlette(routes=emoji_image_routes(services))
    with TestClient(app, base_url=f"http://{realm.host}") as images:
        response = images.get(tick["source_url"])
        assert response.status_code == 200
        assert response.content == PNG
        assert response.headers["content-type"] == "image/png"
        assert images.get(f"/user_avatars/{realm.id}/emoji/images/999999.png").status_code == 404
        assert images.get("/user_avatars/../../etc/passwd").status_code == 404

    events.clear()
    # The author may deactivate their own emoji; others (not administrators) may not.
    assert_json_error(
        api.delete(realm.othello, "realm/emoji/green_tick"),
        "Must be an organization administrator or emoji author",
    )
    assert_json_error(
        api.delete(realm.hamlet, "realm/emoji/party-parrot"),
        "Must be an organization administrator or emoji author",
    )
    assert events.published == []
    assert_json_success(api.delete(realm.hamlet, "realm/emoji/green_tick"))
    [(event, users)] = events.of_type("realm_emoji", "update")
    assert event["realm_emoji"][tick["id"]]["deactivated"] is True
    assert users == everyone
    assert_json_success(api.delete(realm.iago, "realm/emoji/party-parrot"))
    assert all(e["deactivated"] for e in emoji(api, realm.hamlet).values())
    response = api.delete(realm.iago, "realm/emoji/party-parrot")
    assert_json_error(response, "Emoji 'party-parrot' does not exist", status=404)

    # A deactivated emoji's name may be taken again; the old one stays (old messages show it).
    assert_json_success(upload(api, realm.hamlet, "green_tick"))
    names = sorted((e["name"], e["deactivated"]) for e in emoji(api, realm.hamlet).values())
    assert names == [("green_tick", False), ("green_tick", True), ("party-parrot", True)]


def test_reaction_lookup(api: Api, realm: SeededRealm, services: Services) -> None:
    assert_json_success(upload(api, realm.hamlet, "tick"))
    [tick] = emoji(api, realm.hamlet).values()
    with services.db.session() as session:

        def find(name: str | None, code: str | None, adding: bool = True) -> int | None:
            found = realm_emoji_for_reaction(
                session, realm.id, emoji_name=name, emoji_code=code, adding=adding
            )
            return found.id if found else None

        assert find("tick", tick["id"]) == int(tick["id"])
        assert find("tick", None) == int(tick["id"])
        assert find(None, tick["id"]) == int(tick["id"])
        assert find("other", tick["id"]) is None
        assert find("tick", "99999999999999999999") is None
        assert find("tick", "\u0661") is None
        assert find("nope", None) is None
        assert (
            realm_emoji_for_reaction(
                session, realm.id + 1000, emoji_name="tick", emoji_code=None, adding=True
            )
            is None
        )
    assert_json_success(api.delete(realm.hamlet, "realm/emoji/tick"))
    with services.db.session() as session:
        assert (
            realm_emoji_for_reaction(session, realm.id, emoji_name="tick", emoji_code=tick["id"], adding=True)
            is None
        )
        removed = realm_emoji_for_reaction(
            session, realm.id, emoji_name="tick", emoji_code=tick["id"], adding=False
        )
        assert removed is not None


@pytest.mark.parametrize(
    ("name", "msg"),
    [
        (
            "bad!",
            BAD_CHARS,
        ),
        ("ends_", "Emoji names must end with either a letter or digit."),
        ("ends-", "Emoji names must end with either a letter or digit."),
        (
            "é",
            BAD_CHARS,
        ),
        ("%20", "Emoji name is missing"),
        ("x" * 61, "Emoji name is too long (limit: 60 characters)"),
    ],
)
def test_invalid_names(api: Api, realm: SeededRealm, events: EventRecorder, name: str, msg: str) -> None:
    assert_json_error(upload(api, realm.iago, name), msg)
    assert emoji(api, realm.iago) == {}
    assert events.published == []


def test_upload_errors(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    assert_json_error(upload(api, realm.iago, "text", b"hello world"), "Invalid image format")
    assert_json_error(api.post(realm.iago, "realm/emoji/nofile"), "Missing 'filename' argument")
    # Built-in names are for administrators to override.
    assert_json_error(upload(api, realm.hamlet, "smile"), "Only administrators can override default emoji.")
    assert_json_success(upload(api, realm.iago, "smile"))
    assert_json_error(upload(api, realm.iago, "smile"), "A custom emoji with this name already exists.")
    assert_json_error(api.delete(realm.iago, "realm/emoji/nope"), "Emoji 'nope' does not exist", status=404)
    # Guests are outside can_add_custom_emoji_group (members) by default.
    assert_json_error(upload(api, realm.polonius, "guest"), "Insufficient permission")
    assert len(emoji(api, realm.iago)) == 1
    # One change, published in both forms (the whole set, and the one emoji).
    assert [e["op"] for e, _ in events.of_type("realm_emoji")] == ["update", "add"]


def test_size_limit(
    api: Api, realm: SeededRealm, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = services.settings.model_copy(update={"max_file_upload_size_mib": 0})
    monkeypatch.setattr(services, "settings", small)
    msg = "Uploaded file is larger than the allowed limit of 0 MiB"
    assert_json_error(upload(api, realm.iago, "big"), msg)
    assert emoji(api, realm.iago) == {}


def test_individual_emoji_changes_capability(api: Api, realm: SeededRealm) -> None:
    """Clients with ``individual_emoji_changes`` (zulip-flutter) hear of one emoji at a time,
    ``add`` and ``update_one``; the others get the whole set on every change."""

    def queue(capabilities: dict[str, bool]) -> str:
        registered = api.post(
            realm.cordelia,
            "register",
            {"event_types": '["realm_emoji"]', "client_capabilities": json.dumps(capabilities)},
        )
        return str(assert_json_success(registered)["queue_id"])

    def received(queue_id: str) -> list[dict[str, Any]]:
        answer = api.get(
            realm.cordelia, "events", {"queue_id": queue_id, "last_event_id": -1, "dont_block": True}
        )
        return [{k: v for k, v in e.items() if k != "id"} for e in assert_json_success(answer)["events"]]

    individual, whole = queue({"individual_emoji_changes": True}), queue({})
    assert_json_success(upload(api, realm.hamlet, "tick"))
    assert_json_success(api.delete(realm.hamlet, "realm/emoji/tick"))
    [tick] = emoji(api, realm.hamlet).values()
    assert received(individual) == [
        {"type": "realm_emoji", "op": "add", "emoji": {**tick, "deactivated": False}},
        {"type": "realm_emoji", "op": "update_one", "emoji_id": tick["id"], "data": {"deactivated": True}},
    ]
    assert [e["op"] for e in received(whole)] == ["update", "update"]
    assert received(whole)[-1]["realm_emoji"] == {tick["id"]: tick}
