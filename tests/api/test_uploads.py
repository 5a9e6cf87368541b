"""POST /user_uploads, serving files at /user_uploads/..., and temporary URLs."""

from __future__ import annotations

import base64
import time
from typing import TYPE_CHECKING, Any

import httpx
import pytest

from palaver.services import Services
from tests.api.test_messages_send import create_channel, send_dm, send_stream
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success

if TYPE_CHECKING:
    from tests.helpers import TestUser


def upload(
    api: Api, user: TestUser, name: str = "notes.txt", data: bytes = b"hello", ctype: str = "text/plain"
) -> dict[str, Any]:
    return assert_json_success(api.post(user, "user_uploads", files={"file": (name, data, ctype)}))


def get_file(
    api: Api, user: TestUser | None, url: str, data: dict[str, Any] | None = None, **kw: Any
) -> httpx.Response:
    return api.get(user, url, data, **kw)


def test_upload_and_serve_to_uploader(api: Api, realm: SeededRealm, events: EventRecorder) -> None:
    body = upload(api, realm.hamlet, "my notes.txt", b"hello world")
    assert body["url"] == body["uri"]
    assert body["url"].startswith(f"/user_uploads/{realm.id}/")
    assert body["url"].endswith("/my-notes.txt")
    assert body["filename"] == "my-notes.txt"
    [(event, users)] = events.of_type("attachment", "add")
    assert users == [realm.hamlet.id]
    assert event["attachment"]["name"] == "my-notes.txt"
    assert event["attachment"]["size"] == 11
    assert event["attachment"]["message_ids"] == []
    assert event["upload_space_used"] == 11

    response = get_file(api, realm.hamlet, body["url"])
    assert response.status_code == 200
    assert response.content == b"hello world"
    assert response.headers["content-type"].startswith("text/plain")
    assert response.headers["x-content-type-options"] == "nosniff"
    # Nobody else may read it until a message links it.
    assert get_file(api, realm.othello, body["url"]).status_code == 404
    assert get_file(api, None, body["url"]).status_code == 401


def test_api_key_query_parameter(api: Api, realm: SeededRealm) -> None:
    url = upload(api, realm.hamlet)["url"]
    assert get_file(api, None, url, {"api_key": realm.hamlet.api_key}).content == b"hello"
    assert get_file(api, None, url, {"api_key": "wrong"}).status_code == 401
    assert get_file(api, None, url, {"api_key": realm.othello.api_key}).status_code == 404


def test_message_link_shares_the_file(api: Api, realm: SeededRealm) -> None:
    url = upload(api, realm.hamlet)["url"]
    create_channel(api, realm.hamlet, "files", [realm.hamlet, realm.othello])
    send_stream(api, realm.hamlet, "files", "docs", f"[notes]({url})")
    assert get_file(api, realm.othello, url).content == b"hello"
    # Public channel history: non-subscribers may read it too, guests may not.
    assert get_file(api, realm.cordelia, url).status_code == 200
    assert get_file(api, realm.polonius, url).status_code == 404


def test_direct_message_shares_only_with_participants(api: Api, realm: SeededRealm) -> None:
    url = upload(api, realm.hamlet)["url"]
    send_dm(api, realm.hamlet, [realm.othello], f"see [this]({url})")
    assert get_file(api, realm.othello, url).status_code == 200
    assert get_file(api, realm.cordelia, url).status_code == 404


def test_linking_someone_elses_unshared_file_does_not_share_it(api: Api, realm: SeededRealm) -> None:
    url = upload(api, realm.hamlet)["url"]
    send_dm(api, realm.cordelia, [realm.othello], f"guessed [it]({url})")
    assert get_file(api, realm.othello, url).status_code == 404


def test_upload_size_limit(api: Api, realm: SeededRealm, services: Services, monkeypatch: Any) -> None:
    limited = services.settings.model_copy(update={"max_file_upload_size_mib": 1})
    monkeypatch.setattr(services, "settings", limited)
    response = api.post(realm.hamlet, "user_uploads", files={"file": ("big.bin", b"x" * (1024 * 1024 + 1))})
    assert_json_error(response, "File is larger than this server's configured maximum upload size (1 MiB).")
    assert_json_success(api.post(realm.hamlet, "user_uploads", files={"f": ("ok.bin", b"x" * 1024)}))


def test_upload_needs_a_file(api: Api, realm: SeededRealm) -> None:
    assert_json_error(api.post(realm.hamlet, "user_uploads"), "Missing 'filename' argument")


def test_unsafe_names_are_sanitized(api: Api, realm: SeededRealm) -> None:
    body = upload(api, realm.hamlet, "../../etc/pass wd?.txt")
    assert body["filename"] == "pass-wd.txt"
    assert upload(api, realm.hamlet, "..")["filename"] == "uploaded-file"
    assert upload(api, realm.hamlet, "résumé.pdf", ctype="application/pdf")["filename"] == "résumé.pdf"


def test_html_is_downloaded_not_rendered(api: Api, realm: SeededRealm) -> None:
    url = upload(api, realm.hamlet, "page.html", b"<script>1</script>", "text/html")["url"]
    response = get_file(api, realm.hamlet, url)
    assert response.headers["content-disposition"].startswith("attachment;")


def test_temporary_url(api: Api, realm: SeededRealm, monkeypatch: Any) -> None:
    url = upload(api, realm.hamlet)["url"]
    path = url.removeprefix("/user_uploads/")
    temp = assert_json_success(api.get(realm.hamlet, f"user_uploads/{path}"))["url"]
    assert temp.startswith("/user_uploads/temporary/")
    assert temp.endswith("/notes.txt")
    # No credentials needed for the temporary URL, on the organization's own host.
    assert api.get(None, temp).content == b"hello"
    # Tampering or expiry makes it unknown.
    _encoded, expires, _signature = temp.split("/")[3].split(".")
    forged = temp.replace(f".{expires}.", f".{int(expires) + 1000}.")
    assert api.get(None, forged).status_code == 404
    monkeypatch.setattr(time, "time", lambda: float(expires) + 1)  # the clock of attachments' signed URLs
    assert api.get(None, temp).status_code == 404
    # Others get a temporary URL only for files they may read.
    assert_json_error(api.get(realm.othello, f"user_uploads/{path}"), "File not found", status=404)
    assert_json_error(api.get(realm.hamlet, "user_uploads/999/ab/cd/x.txt"), "File not found", status=404)


@pytest.mark.parametrize("digits", ["\u00b2", "\u0661", "99999999999"])
def test_ids_in_urls_that_name_no_row_are_not_found(api: Api, realm: SeededRealm, digits: str) -> None:
    # "²" passes str.isdigit() but not int(), U+0661 is Arabic-Indic 1, the last too large for a row.
    token = base64.urlsafe_b64encode(f"{digits}/ab/cd/notes.txt".encode()).decode().rstrip("=")
    expires = int(time.time()) + 60
    temporary = f"/user_uploads/temporary/{token}.{expires}.{'0' * 32}/notes.txt"
    assert api.get(None, temporary).status_code == 404
    assert api.get(None, f"/user_avatars/{digits}/emoji/images/1.png").status_code == 404
    # Someone unknown, as /avatar/ answers for an address it does not know.
    avatar = api.get(realm.hamlet, f"/avatar/{digits}", follow_redirects=False)
    assert avatar.status_code == 302
    assert avatar.headers["location"].startswith("https://secure.gravatar.com/avatar/")


def test_other_realm_cannot_read(api: Api, realm: SeededRealm, services: Services) -> None:
    from tests.helpers import seed_realm

    url = upload(api, realm.hamlet)["url"]
    other = seed_realm(services)
    other_api = Api(api.client, other)
    assert other_api.get(other.hamlet, url).status_code == 404
    token = base64.b64encode(f"{realm.hamlet.email}:{realm.hamlet.api_key}".encode()).decode()
    foreign = other_api.get(None, url, headers={"authorization": f"Basic {token}"})
    assert foreign.status_code == 401


@pytest.mark.parametrize("path", ["/user_uploads/1/../../etc/passwd", "/user_uploads/abc/x.txt"])
def test_malformed_paths(api: Api, realm: SeededRealm, path: str) -> None:
    assert get_file(api, realm.hamlet, path).status_code == 404
