"""Uploads of every active type under hostile names and declared types: how each is served.

The browser test (tests/web/browser/test_upload_security.py) opens them in Chromium; this
checks the headers that make them safe, fast and without a browser.
"""

from __future__ import annotations

import pytest

from palaver.lib.user_content import detect_type
from tests.api.test_messages_send import create_channel, send_stream
from tests.helpers import Api, SeededRealm, assert_json_success
from tests.images import animated_gif, image_bytes
from tests.security.hostile_uploads import OCTET, TEXT, Hostile, hostile_uploads

SANDBOX = "default-src 'none'; sandbox"


@pytest.mark.parametrize("hostile", hostile_uploads(), ids=lambda h: h.mark)
def test_hostile_upload_is_served_safely(api: Api, realm: SeededRealm, hostile: Hostile) -> None:
    files = {"file": (hostile.file_name, hostile.data, hostile.declared)}
    url = assert_json_success(api.post(realm.hamlet, "user_uploads", files=files))["url"]
    path = url.removeprefix("/user_uploads/")
    temporary = assert_json_success(api.get(realm.hamlet, f"user_uploads/{path}"))["url"]
    for served in (api.get(realm.hamlet, url), api.get(None, temporary)):
        assert served.status_code == 200
        assert served.content == hostile.data
        assert served.headers["content-type"] == hostile.served_as
        assert served.headers["x-content-type-options"] == "nosniff"
        policy = served.headers["content-security-policy"]
        assert policy.startswith("default-src 'none'") and policy.endswith("; sandbox")
        disposition = served.headers["content-disposition"]
        assert disposition.startswith("inline;" if hostile.inline else "attachment;")
        # The name only RFC 5987-encoded: no quote, separator or line break of it in the header.
        assert disposition.split("filename*=UTF-8''", 1)[1].isascii()
        assert not any(c in disposition for c in '"\r\n<>')
        assert "x-injected" not in served.headers
    if hostile.served_as == OCTET:
        assert policy == SANDBOX


def test_thumbnails_of_non_images_are_not_served(api: Api, realm: SeededRealm) -> None:
    """The thumbnail URL of an SVG or a page never serves it (the original stands in for a
    missing thumbnail only when it is a raster image)."""
    by_mark = {h.mark: h for h in hostile_uploads()}
    create_channel(api, realm.hamlet, "pics", [realm.hamlet, realm.othello])
    for mark, status in (("svg", 404), ("html-as-png", 404), ("png-as-svg", 200)):
        h = by_mark[mark]
        url = assert_json_success(
            api.post(realm.hamlet, "user_uploads", files={"file": (h.file_name, h.data, h.declared)})
        )["url"]
        send_stream(api, realm.hamlet, "pics", "t", f"[x]({url})")
        thumb = "/user_uploads/thumbnail/" + url.removeprefix("/user_uploads/") + "/840x560.webp"
        response = api.get(realm.othello, thumb)
        assert response.status_code == status, mark
        if status == 200:
            assert response.headers["content-type"] == "image/png"
            assert (
                response.headers["content-security-policy"]
                == "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"
            )


def test_pictures_carry_the_user_content_headers(api: Api, realm: SeededRealm) -> None:
    picture = image_bytes(40, 40)
    files = {"file": ("me.png", picture, "image/png")}
    urls = [
        assert_json_success(api.post(realm.hamlet, "users/me/avatar", files=files))["avatar_url"],
        assert_json_success(api.post(realm.iago, "realm/icon", files=files))["icon_url"],
        assert_json_success(api.post(realm.iago, "realm/logo", files=files))["logo_url"],
        "/user_avatars/generated/1/AB.png",
        "/static/images/loading/loader-black.svg",
    ]
    assert_json_success(
        api.post(realm.iago, "realm/emoji/spin", files={"file": ("s.gif", animated_gif(20, 20))})
    )
    emoji = assert_json_success(api.get(realm.iago, "realm/emoji"))["emoji"]
    [spin] = [e for e in emoji.values() if e["name"] == "spin"]
    urls += [spin["source_url"], spin["still_url"]]
    for url in urls:
        response = api.get(None, url)
        assert response.status_code == 200, url
        assert response.headers["x-content-type-options"] == "nosniff", url
        assert response.headers["content-security-policy"].endswith("sandbox"), url


@pytest.mark.parametrize(
    ("data", "name", "expected"),
    [
        (b"\x89PNG\r\n\x1a\n....", "", "image/png"),
        (b"\xff\xd8\xff\xe0", "", "image/jpeg"),
        (b"GIF87a..", "", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "", "image/webp"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt ", "", "audio/wav"),
        (b"\x00\x00\x00\x1cftypavif", "", "image/avif"),
        (b"\x00\x00\x00\x1cftypisom", "", "video/mp4"),
        (b"\x00\x00\x00\x1cftypM4A ", "", "audio/mp4"),
        (b"\x00\x00\x00\x14ftypqt  ", "", "video/quicktime"),
        (b"\x1a\x45\xdf\xa3\x01", "a.webm", "video/webm"),
        (b"\x1a\x45\xdf\xa3\x01", "a.weba", "audio/webm"),
        (b"OggS\x00", "a.ogg", "audio/ogg"),
        (b"OggS\x00", "a.ogv", "video/ogg"),
        (b"ID3\x03", "", "audio/mpeg"),
        (b"fLaC", "", "audio/flac"),
        (b"%PDF-1.7", "", "application/pdf"),
        (b"plain words\n\tand tabs", "x.html", TEXT),
        ("Grüße, 日本".encode(), "", TEXT),
        (b"", "", TEXT),
        (("a" * 8191 + "é").encode(), "", TEXT),  # a character cut at the sample's end
        (b"  <svg/>", "x.txt", OCTET),
        (b"\xef\xbb\xbf<html>", "", OCTET),
        (b"text\x00with NUL", "", OCTET),
        (b"\x1b[31mescape", "", OCTET),
        (b"\xff\xfe<\x00h\x00", "", OCTET),  # UTF-16: not plain UTF-8 text
        (b"RIFF\x00\x00\x00\x00AVI ", "", OCTET),
    ],
)
def test_detect_type(data: bytes, name: str, expected: str) -> None:
    assert detect_type(data, name) == expected
