"""user_content_url: uploads served from a separate origin, by signed one-minute URLs.

The organizations' hosts answer each upload, temporary URL and thumbnail with a redirect to
the user-content origin; that origin serves those signed URLs and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from palaver.app import create_app
from palaver.config import ConfigError, load_settings
from palaver.services import Services, build_services
from tests.api.test_messages_send import send_dm
from tests.client import TestClient
from tests.conftest import make_test_settings
from tests.helpers import Api, SeededRealm, assert_json_success, basic_auth, seed_realm
from tests.images import image_bytes
from tests.web.web_helpers import log_in

CONTENT = "http://usercontent.example.net"
CONTENT_HOST = "usercontent.example.net"


@pytest.fixture(scope="module")
def apart(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Services]:
    settings = make_test_settings(
        database_url, tmp_path_factory.mktemp("user-content"), user_content_url=CONTENT + "/"
    )
    built = build_services(settings)
    yield built
    built.close()


@pytest.fixture
def capi(apart: Services, realm: SeededRealm) -> Iterator[Api]:
    # Not entered as a context manager: the lifespan (and its workers) never starts.
    client = TestClient(create_app(apart.settings, apart), base_url="http://palaver.test")
    yield Api(client, realm)
    client.close()


def _on_content_host(api: Api, url: str, **headers: str) -> httpx.Response:
    assert url.startswith(CONTENT + "/"), url
    response: httpx.Response = api.client.get(
        url.removeprefix(CONTENT), headers={"host": CONTENT_HOST, **headers}
    )
    return response


def test_uploads_are_redirected_to_the_user_content_origin(capi: Api, realm: SeededRealm) -> None:
    picture = image_bytes(30, 20)
    url = assert_json_success(
        capi.post(realm.hamlet, "user_uploads", files={"file": ("photo.png", picture, "image/png")})
    )["url"]
    assert url.startswith(f"/user_uploads/{realm.id}/")  # clients link the organization's URL
    send_dm(capi, realm.hamlet, [realm.othello], f"[photo]({url})")
    path = url.removeprefix("/user_uploads/")
    thumbnail = f"/user_uploads/thumbnail/{path}/840x560.webp"
    temporary = assert_json_success(capi.get(realm.othello, f"user_uploads/{path}"))["url"]
    cookie_client = TestClient(capi.client.app, base_url=f"http://{realm.host}")
    log_in(cookie_client, realm.othello)
    redirects = [
        capi.get(realm.othello, url, follow_redirects=False),
        capi.get(None, url, {"api_key": realm.othello.api_key}, follow_redirects=False),
        cookie_client.get(url, follow_redirects=False),
        capi.get(None, temporary, follow_redirects=False),
        capi.get(realm.othello, thumbnail, follow_redirects=False),
        cookie_client.get(thumbnail, follow_redirects=False),
    ]
    cookie_client.close()
    for redirect in redirects:
        assert redirect.status_code == 302, redirect.text
        assert redirect.headers["cache-control"] == "private, no-store"
        served = _on_content_host(capi, redirect.headers["location"])
        assert served.status_code == 200
        # No thumbnail made yet: the (raster) original stands in for it.
        assert served.content == picture
        assert served.headers["content-type"] == "image/png"
        assert (
            served.headers["content-security-policy"]
            == "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox"
        )
        assert served.headers["x-content-type-options"] == "nosniff"
    # The access rules are the file's: no redirect for those who may not read it.
    assert capi.get(realm.cordelia, url, follow_redirects=False).status_code == 404
    assert capi.get(None, url, follow_redirects=False).status_code == 401
    # A signed URL is bound to its file and its variant: tampering is not found.
    location = redirects[0].headers["location"]
    assert _on_content_host(capi, location.replace("/photo.png", "/other.png")).status_code == 200
    token = location.removeprefix(CONTENT + "/user_uploads/temporary/").split("/")[0]
    *encoded, expires, signature = token.split(".")
    assert (
        _on_content_host(capi, location.replace(token, ".".join([*encoded, expires, "0" * 32]))).status_code
        == 404
    )
    bumped = ".".join([*encoded, str(int(expires) + 60), signature])
    assert _on_content_host(capi, location.replace(token, bumped)).status_code == 404


def test_temporary_urls_stay_bound_to_their_organization(
    capi: Api, apart: Services, realm: SeededRealm
) -> None:
    url = assert_json_success(
        capi.post(realm.hamlet, "user_uploads", files={"file": ("a.txt", b"hi", "text/plain")})
    )["url"]
    temporary = assert_json_success(
        capi.get(realm.hamlet, f"user_uploads/{url.removeprefix('/user_uploads/')}")
    )["url"]
    other = seed_realm(apart)
    assert Api(capi.client, other).get(None, temporary, follow_redirects=False).status_code == 404
    assert capi.get(None, temporary, follow_redirects=False).status_code == 302
    # On the user-content origin (no organization's), the signed URL alone decides.
    served = capi.client.get(temporary, headers={"host": CONTENT_HOST})
    assert served.status_code == 200 and served.content == b"hi"
    assert served.headers["content-type"] == "text/plain; charset=utf-8"


def test_the_user_content_origin_serves_nothing_else(capi: Api, realm: SeededRealm) -> None:
    url = assert_json_success(
        capi.post(realm.hamlet, "user_uploads", files={"file": ("a.txt", b"hi", "text/plain")})
    )["url"]
    auth = {"authorization": basic_auth(realm.hamlet)}
    for path, headers in [
        ("/", {}),
        ("/login/", {}),
        ("/accounts/password/reset/", {}),
        ("/api/v1/users/me", auth),
        ("/json/users/me", {}),
        (url, auth),
        ("/user_avatars/generated/1/AB.png", {}),
        ("/static/images/loading/loader-black.svg", {}),
    ]:
        response = capi.client.get(path, headers={"host": CONTENT_HOST, **headers})
        assert response.status_code in (401, 404), (path, response.status_code)
        assert realm.hamlet.email not in response.text
    # The guard stands in front of the API too, even of its endpoints that need no login.
    response = capi.client.get("/api/v1/server_settings", headers={"host": CONTENT_HOST})
    assert response.status_code == 404
    assert "realm_name" not in response.text


@pytest.mark.parametrize("host", ["[", "a]", "[::1"])
def test_a_malformed_host_is_some_other_host(capi: Api, realm: SeededRealm, host: str) -> None:
    # Told apart from the user-content origin as text: never a 500 for what no URL parser reads.
    for path in ("/", "/user_uploads/temporary/x.1.y/a.txt"):
        response = capi.client.get(path, headers={"host": host})
        assert response.status_code < 500, (path, response.status_code)


@pytest.mark.parametrize(
    "value",
    [
        "http://palaver.test",
        "http://r1.palaver.test",
        "https://x.palaver.test:8443",
        "ftp://files.net",
        "https://files.net/path",
    ],
)
def test_user_content_url_must_be_another_origin(value: str) -> None:
    with pytest.raises(ConfigError):
        load_settings(env={}, external_url="http://palaver.test", user_content_url=value)


def test_pages_allow_the_user_content_origin_for_pictures_and_media(capi: Api, realm: SeededRealm) -> None:
    """The web client's <img> and <video> of uploads follow redirects there."""
    page = capi.client.get("/", headers={"host": realm.host})
    policy = page.headers["content-security-policy"]
    assert f"img-src 'self' data: blob: https: {CONTENT};" in policy
    assert f"media-src 'self' {CONTENT};" in policy
    assert "connect-src 'self';" in policy and "script-src 'self';" in policy
