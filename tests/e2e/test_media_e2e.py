"""Pictures against ``palaver serve`` with the ``zulip`` client: avatars (uploaded and the
generated default, no Gravatar), Unicode emoji pictures and the emoji data file."""

from __future__ import annotations

import io
from typing import Any

import pytest
import zulip
from PIL import Image

# The session's demo server and its owner's client, shared by the e2e modules (tests/e2e/demo.py).
from tests.e2e.demo import client, server, server_database_url  # noqa: F401
from tests.images import image_bytes
from tests.servers import RunningServer, http_get

pytestmark = pytest.mark.e2e


def ok(result: dict[str, Any]) -> dict[str, Any]:
    assert result["result"] == "success", result
    return result


def picture(base: str, url: str) -> Image.Image:
    response = http_get(base + url if url.startswith("/") else url, trust_env=False)
    assert response.status_code == 200, (url, response.status_code)
    assert response.headers["content-type"].startswith("image/")
    return Image.open(io.BytesIO(response.content))


def test_pictures_without_network(client: zulip.Client, server: RunningServer) -> None:  # noqa: F811
    base = server.url
    # The default: generated on this server, never an Internet address.
    state = ok(client.register(event_types=["realm_user"], fetch_event_types=["realm", "realm_user"]))
    urls = [u["avatar_url"] for u in state["realm_users"]]
    assert urls and all(u.startswith("/user_avatars/generated/") for u in urls)
    assert picture(base, urls[0]).size == (100, 100)
    assert picture(base, state["realm_icon_url"]).size == (100, 100)

    photo = io.BytesIO(image_bytes(640, 480, "JPEG"))
    photo.name = "me.jpg"
    uploaded = ok(client.call_endpoint("users/me/avatar", method="POST", files=[photo]))["avatar_url"]
    assert picture(base, uploaded).size == (100, 100)
    assert ok(client.get_profile())["avatar_url"] == uploaded

    data_url = state["server_emoji_data_url"]
    names = http_get(data_url, trust_env=False).json()["code_to_names"]
    assert names["1f600"][0] == "grinning"
    assert picture(base, "/static/generated/emoji/images-google-64/1f600.png").size == (64, 64)
