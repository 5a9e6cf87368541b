"""Unicode emoji pictures, the emoji data file, and custom emoji resizing."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import orjson

from tests.api.test_realm_emoji import upload
from tests.helpers import Api, SeededRealm, assert_json_success
from tests.images import animated_gif, decode, image_bytes


def test_unicode_emoji_pictures(api: Api) -> None:
    response = api.client.get("/static/generated/emoji/images-google-64/1f44d.png")
    assert response.status_code == 200 and response.headers["content-type"] == "image/png"
    picture = decode(response.content).convert("RGBA")
    assert picture.size == (64, 64)
    # Drawn, not blank: a good share of the square is opaque and coloured.
    raw = picture.tobytes()
    opaque = [tuple(raw[i : i + 4]) for i in range(0, len(raw), 4) if raw[i + 3] > 200]
    assert len(opaque) > 64 * 64 // 4
    assert any(r > 200 and g > 150 and b < 100 for r, g, b, _ in opaque)  # the yellow thumb
    # Sequences (flags, ZWJ families) and every emoji set but "text".
    for path in ("images-twitter-64/1f1fa-1f1f8.png", "images-google-64/1f468-200d-1f469-200d-1f467.png"):
        assert decode(api.client.get(f"/static/generated/emoji/{path}").content).size == (64, 64)
    for missing in ("images-text-64/1f44d.png", "images-google-64/zzzz.png", "images-google-64/1f44d.gif"):
        assert api.client.get(f"/static/generated/emoji/{missing}").status_code == 404
    # By name, as older clients and Zulip's own emoji use.
    assert api.client.get("/static/generated/emoji/images/emoji/unicode/tada.png").status_code == 200
    assert api.client.get("/static/generated/emoji/images/emoji/unicode/zulip.png").status_code == 200


def test_emoji_data_file(api: Api, realm: SeededRealm) -> None:
    state = assert_json_success(api.post(realm.hamlet, "register", {"fetch_event_types": '["realm"]'}))
    url: str = state["server_emoji_data_url"]
    assert url.startswith("http://") and url.endswith("/static/generated/emoji/emoji_api.json")
    response = api.client.get(urlsplit(url).path)
    assert response.status_code == 200
    data: dict[str, Any] = orjson.loads(response.content)
    assert list(data) == ["code_to_names"]
    names = data["code_to_names"]
    assert names["1f44d"][0] == "+1" and "thumbs_up" in names["1f44d"]
    assert names["1f389"][0] == "tada"
    assert len(names) > 1500


def test_custom_emoji_are_resized_and_animated_ones_get_a_still(api: Api, realm: SeededRealm) -> None:
    assert_json_success(upload(api, realm.hamlet, "wide", image_bytes(200, 100)))
    assert_json_success(upload(api, realm.hamlet, "small", image_bytes(20, 20)))
    assert_json_success(upload(api, realm.hamlet, "spin", animated_gif(128, 128, frames=4)))
    listed = assert_json_success(api.get(realm.hamlet, "realm/emoji"))["emoji"]
    by_name = {e["name"]: e for e in listed.values()}
    assert decode(api.get(None, by_name["wide"]["source_url"]).content).size == (64, 32)
    assert decode(api.get(None, by_name["small"]["source_url"]).content).size == (20, 20)
    assert by_name["wide"]["still_url"] is None
    spin = by_name["spin"]
    animated = decode(api.get(None, spin["source_url"]).content)
    assert animated.size == (64, 64) and getattr(animated, "n_frames", 1) == 4
    assert spin["still_url"] == f"/user_avatars/{realm.id}/emoji/images/still/{spin['id']}.png"
    still = decode(api.get(None, spin["still_url"]).content)
    assert still.format == "PNG" and still.size == (64, 64)
