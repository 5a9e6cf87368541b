"""Pieces built separately, checked working together through the real app."""

from __future__ import annotations

from tests.helpers import Api, SeededRealm, assert_json_success
from tests.images import PNG


def test_custom_emoji_images_are_served_by_the_app(api: Api, realm: SeededRealm) -> None:
    assert_json_success(
        api.post(realm.hamlet, "realm/emoji/green_tick", files={"file": ("e.png", PNG, "image/png")})
    )
    listed = assert_json_success(api.get(realm.hamlet, "realm/emoji"))["emoji"]
    (entry,) = [e for e in listed.values() if e["name"] == "green_tick"]
    response = api.get(None, entry["source_url"])
    assert response.status_code == 200
    assert response.content == PNG


def test_messages_are_rendered_with_the_realms_linkifiers(api: Api, realm: SeededRealm) -> None:
    assert_json_success(
        api.post(
            realm.iago,
            "realm/filters",
            {"pattern": r"#(?P<id>[0-9]+)", "url_template": "https://tracker.example.com/issues/{id}"},
        )
    )
    sent = assert_json_success(
        api.post(realm.hamlet, "messages", {"type": "direct", "to": [realm.othello.id], "content": "see #42"})
    )
    message = assert_json_success(api.get(realm.hamlet, f"messages/{sent['id']}"))["message"]
    assert "https://tracker.example.com/issues/42" in message["content"]
